/* nq-server: the store's sign-ups (see store_signup.h; schema 022, docs/store.md "Sign-ups"). */
#include "store_signup.h"
#include "store_int.h"

#include <string.h>

static const char *const state_names[SRV_SIGNUP_NSTATES] = {
#define SRV_SIGNUP_NAME_ONE(e, name) name,
    SRV_SIGNUP_STATE_MAP(SRV_SIGNUP_NAME_ONE)
#undef SRV_SIGNUP_NAME_ONE
};

const char *srv_signup_state_name(srv_signup_state_t s) {
  return (unsigned)s < SRV_SIGNUP_NSTATES ? state_names[s] : "?";
}

static srv_signup_state_t state_parse(const char *name) {
  int i = nq_name_index(state_names, SRV_SIGNUP_NSTATES, name);
  return i < 0 ? SRV_SIGNUP_PENDING : (srv_signup_state_t)i;
}

int srv_signup_window(srv_store_t *st, srv_signup_by_t by, const char *key, int64_t since,
                      int64_t *count, int64_t *oldest) {
  static const char *const sql[] = {
      "SELECT count(*), coalesce(min(at), 0) FROM signups WHERE addr = ?2 AND at > ?1",
      "SELECT count(*), coalesce(min(at), 0) FROM signups WHERE net = ?2 AND at > ?1",
      "SELECT count(*), coalesce(min(at), 0) FROM signups WHERE at > ?1"};
  sqlite3_stmt *s;
  if ((unsigned)by > SRV_SIGNUP_BY_ALL || (by != SRV_SIGNUP_BY_ALL && !key))
    return srv_store_failf(st, NQ_EINVAL, "sign-up window: bad key");
  int rc = srv_store_stmt(st, sql[by], &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, since);
  if (by != SRV_SIGNUP_BY_ALL) sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
  if (sqlite3_step(s) == SQLITE_ROW) {
    *count = col_i64(s, 0);
    *oldest = col_i64(s, 1);
  } else {
    rc = srv_store_fail(st, "sign-up window");
  }
  sqlite3_reset(s);
  return rc;
}

int srv_signup_pending_count(srv_store_t *st, int64_t *n) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT count(*) FROM signups WHERE state IN ('pending', 'approved')", &s);
  if (rc) return rc;
  if (sqlite3_step(s) == SQLITE_ROW) *n = col_i64(s, 0);
  else rc = srv_store_fail(st, "pending sign-ups");
  sqlite3_reset(s);
  return rc;
}

static void bind_opt(sqlite3_stmt *s, int i, const char *v) {
  if (v && *v) sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
  else sqlite3_bind_null(s, i);
}

int srv_signup_add(srv_store_t *st, const srv_signup_t *su, const char *ticket_hash,
                   int64_t *id) {
  sqlite3_stmt *s;
  if (su->state != SRV_SIGNUP_PENDING && su->state != SRV_SIGNUP_JOINED)
    return srv_store_failf(st, NQ_EINVAL, "a new sign-up is pending or joined");
  int rc = srv_store_stmt(st, "INSERT INTO signups(at, addr, net, state, ticket_hash, "
                              "client_name, public_name, team, owner_id) "
                              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, su->at);
  sqlite3_bind_text(s, 2, su->addr, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 3, su->net, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 4, srv_signup_state_name(su->state), -1, SQLITE_STATIC);
  bind_opt(s, 5, ticket_hash);
  sqlite3_bind_text(s, 6, su->client_name, -1, SQLITE_STATIC);
  bind_opt(s, 7, su->public_name);
  bind_opt(s, 8, su->team);
  if (su->owner_id > 0) sqlite3_bind_int64(s, 9, su->owner_id);
  else sqlite3_bind_null(s, 9);
  if ((rc = srv_store_step(st, s, "sign-up insert")) != 0) return rc;
  if (id) *id = sqlite3_last_insert_rowid(st->db);
  return 0;
}

#define SIGNUP_COLS "id, at, addr, net, state, client_name, public_name, team, " \
                    "coalesce(owner_id, 0), coalesce(decided, 0)"

static void signup_row(sqlite3_stmt *s, void *out) {
  srv_signup_t *su = out;
  char state[16];
  memset(su, 0, sizeof *su);
  su->id = col_i64(s, 0);
  su->at = col_i64(s, 1);
  col_str(s, 2, su->addr, sizeof su->addr);
  col_str(s, 3, su->net, sizeof su->net);
  col_str(s, 4, state, sizeof state);
  su->state = state_parse(state);
  col_str(s, 5, su->client_name, sizeof su->client_name);
  col_str(s, 6, su->public_name, sizeof su->public_name);
  col_str(s, 7, su->team, sizeof su->team);
  su->owner_id = col_i64(s, 8);
  su->decided = col_i64(s, 9);
}

int srv_signup_find_ticket(srv_store_t *st, const char *ticket_hash, srv_signup_t *out) {
  if (!ticket_hash) return NQ_EINVAL;
  return srv_store_one(st, "SELECT " SIGNUP_COLS " FROM signups WHERE ticket_hash = ?1",
                       ticket_hash, 0, signup_row, out, "sign-up");
}

int srv_signup_get(srv_store_t *st, int64_t id, srv_signup_t *out) {
  return srv_store_one(st, "SELECT " SIGNUP_COLS " FROM signups WHERE id = ?1", NULL, id,
                       signup_row, out, "sign-up");
}

int srv_signup_decide(srv_store_t *st, int64_t id, srv_signup_state_t to, int64_t now) {
  srv_signup_t su;
  if (to != SRV_SIGNUP_APPROVED && to != SRV_SIGNUP_REJECTED)
    return srv_store_failf(st, NQ_EINVAL, "a decision approves or rejects");
  int rc = srv_signup_get(st, id, &su);
  if (rc) return rc;
  if (su.state != SRV_SIGNUP_PENDING)
    return srv_store_failf(st, NQ_ESTATE, "sign-up %lld is %s, not pending", (long long)id,
                           srv_signup_state_name(su.state));
  sqlite3_stmt *s;
  if ((rc = srv_store_stmt(st, "UPDATE signups SET state = ?2, decided = ?3 WHERE id = ?1",
                           &s)) != 0)
    return rc;
  sqlite3_bind_int64(s, 1, id);
  sqlite3_bind_text(s, 2, srv_signup_state_name(to), -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, now);
  return srv_store_step(st, s, "sign-up decision");
}

int srv_signup_joined(srv_store_t *st, int64_t id, int64_t owner_id) {
  return srv_store_exec3(st, "UPDATE signups SET state = 'joined', owner_id = ?2, "
                             "ticket_hash = NULL WHERE id = ?1",
                         id, owner_id, 0, "sign-up joined");
}

int srv_signup_list(srv_store_t *st, int state, int limit, srv_signup_cb cb, void *arg) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT " SIGNUP_COLS " FROM signups WHERE ?1 IS NULL OR "
                              "state = ?1 ORDER BY id LIMIT ?2", &s);
  if (rc) return rc;
  if (state >= 0 && state < SRV_SIGNUP_NSTATES)
    sqlite3_bind_text(s, 1, state_names[state], -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(s, 1);
  sqlite3_bind_int64(s, 2, limit > 0 ? limit : -1);
  int sr = SQLITE_DONE;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    srv_signup_t su;
    signup_row(s, &su);
    rc = cb(&su, arg);
  }
  if (rc == 0 && sr != SQLITE_DONE && sr != SQLITE_ROW) rc = srv_store_fail(st, "sign-up list");
  sqlite3_reset(s);
  return rc;
}

int srv_signup_prune(srv_store_t *st, int64_t before, int64_t *n) {
  int rc = srv_store_exec3(st, "DELETE FROM signups WHERE at < ?1 AND state != 'pending' AND "
                               "state != 'approved'", before, 0, 0, "sign-up prune");
  if (rc == 0 && n) *n = sqlite3_changes(st->db);
  return rc;
}

int srv_owner_set_joined(srv_store_t *st, int64_t owner_id, const char *public_name) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "UPDATE owners SET self_joined = 1, public_name = ?2 WHERE id = ?1",
                          &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, owner_id);
  bind_opt(s, 2, public_name);
  return srv_store_step(st, s, "owner joined");
}

int srv_public_name_taken(srv_store_t *st, const char *public_name, int *taken) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT EXISTS (SELECT 1 FROM owners WHERE public_name = ?1) OR "
                              "EXISTS (SELECT 1 FROM signups WHERE public_name = ?1 AND "
                              "state IN ('pending', 'approved'))", &s);
  if (rc) return rc;
  sqlite3_bind_text(s, 1, public_name, -1, SQLITE_STATIC);
  if (sqlite3_step(s) == SQLITE_ROW) *taken = sqlite3_column_int(s, 0);
  else rc = srv_store_fail(st, "public name");
  sqlite3_reset(s);
  return rc;
}
