/* nq-server: owners, and the store's side of re-opening units (schema 006): who a
 * client belongs to, where it connects from, its suspicion, and a verified unit taken back (see
 * store_owners.h, layer 3 of store.h; docs/store.md for the model, docs/reliability.md for the
 * threat model). */
#include "store_owners.h"
#include "store_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- owners ------------------------------------------------------------------------------- */

#define OWNER_COLS "o.id, o.name, o.created, o.banned, o.enrol_hash IS NOT NULL, " \
                   "(SELECT count(*) FROM clients c WHERE c.owner_id = o.id), o.trusted, " \
                   "o.self_joined, o.public_name"

static void owner_row(sqlite3_stmt *s, srv_owner_t *o) {
  memset(o, 0, sizeof *o);
  o->id = col_i64(s, 0);
  col_str(s, 1, o->name, sizeof o->name);
  o->created = col_i64(s, 2);
  o->banned = sqlite3_column_int(s, 3);
  o->has_key = sqlite3_column_int(s, 4);
  o->clients = col_i64(s, 5);
  o->trusted = sqlite3_column_int(s, 6);
  o->self_joined = sqlite3_column_int(s, 7);
  col_str(s, 8, o->public_name, sizeof o->public_name);
}

static void owner_row_v(sqlite3_stmt *s, void *out) { owner_row(s, out); }

/* One owner by a text (text != NULL) or an integer key. */
static int owner_query(srv_store_t *st, const char *sql, const char *text, int64_t num,
                       srv_owner_t *out) {
  return srv_store_one(st, sql, text, num, owner_row_v, out, "owner");
}

int srv_owner_find_name(srv_store_t *st, const char *name, srv_owner_t *out) {
  if (!name) return NQ_EINVAL;
  return owner_query(st, "SELECT " OWNER_COLS " FROM owners o WHERE o.name = ?1", name, 0, out);
}

int srv_owner_find_key(srv_store_t *st, const char *enrol_hash, srv_owner_t *out) {
  if (!enrol_hash) return NQ_EINVAL;
  return owner_query(st, "SELECT " OWNER_COLS " FROM owners o WHERE o.enrol_hash = ?1",
                     enrol_hash, 0, out);
}

int srv_owner_get(srv_store_t *st, int64_t owner_id, srv_owner_t *out) {
  return owner_query(st, "SELECT " OWNER_COLS " FROM owners o WHERE o.id = ?1", NULL, owner_id,
                     out);
}

int srv_owner_create(srv_store_t *st, const char *name, const char *enrol_hash, int64_t now,
                     srv_owner_t *out) {
  if (!nq_proto_name_valid(name)) return srv_store_failf(st, NQ_EINVAL, "bad owner name");
  if (enrol_hash && (!*enrol_hash || strlen(enrol_hash) > SRV_HASH_MAX))
    return srv_store_failf(st, NQ_EINVAL, "bad enrolment key hash");
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "INSERT INTO owners(name, enrol_hash, created) VALUES (?1, ?2, ?3)",
                          &s);
  if (rc) return rc;
  sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
  if (enrol_hash) sqlite3_bind_text(s, 2, enrol_hash, -1, SQLITE_STATIC);
  else sqlite3_bind_null(s, 2);
  sqlite3_bind_int64(s, 3, now);
  if ((rc = srv_store_step(st, s, "owner insert")) != 0) return rc;
  srv_owner_t tmp;
  return srv_owner_get(st, sqlite3_last_insert_rowid(st->db), out ? out : &tmp);
}

int srv_owner_list(srv_store_t *st, srv_owner_cb cb, void *arg) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT " OWNER_COLS " FROM owners o ORDER BY o.name", &s);
  if (rc) return rc;
  int sr = SQLITE_DONE;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    srv_owner_t o;
    owner_row(s, &o);
    rc = cb(&o, arg);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "owner list");
  sqlite3_reset(s);
  return rc;
}

/* One flag of an owner's row (sql: ?1 = id, ?2 = 0 or 1). NQ_ENOTFOUND for no such owner. */
static int owner_flag_set(srv_store_t *st, const char *sql, int64_t owner_id, int on,
                          const char *what) {
  return srv_store_update_one(st, sql, owner_id, on ? 1 : 0, what, "owner");
}

int srv_owner_set_banned(srv_store_t *st, int64_t owner_id, int banned) {
  return owner_flag_set(st, "UPDATE owners SET banned = ?2 WHERE id = ?1", owner_id, banned,
                        "owner ban");
}

int srv_owner_set_trusted(srv_store_t *st, int64_t owner_id, int trusted) {
  return owner_flag_set(st, "UPDATE owners SET trusted = ?2 WHERE id = ?1", owner_id, trusted,
                        "owner trust");
}

int srv_owner_set_key(srv_store_t *st, int64_t owner_id, const char *enrol_hash) {
  if (!enrol_hash || !*enrol_hash || strlen(enrol_hash) > SRV_HASH_MAX)
    return srv_store_failf(st, NQ_EINVAL, "bad enrolment key hash");
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "UPDATE owners SET enrol_hash = ?2 WHERE id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, owner_id);
  sqlite3_bind_text(s, 2, enrol_hash, -1, SQLITE_STATIC);
  if ((rc = srv_store_step(st, s, "owner rekey")) == 0 && sqlite3_changes(st->db) == 0)
    rc = srv_store_failf(st, NQ_ENOTFOUND, "no such owner");
  return rc;
}

int srv_owner_clients(srv_store_t *st, int64_t owner_id, int64_t **ids, int *n) {
  return srv_store_id_list(st, "SELECT id FROM clients WHERE owner_id = ?1 ORDER BY id", owner_id,
                           0, ids, n);
}

/* ---- clients ------------------------------------------------------------------------------ */

/* One UPDATE of one client that must find it. */
static int client_update(srv_store_t *st, const char *sql, int64_t client_id, int64_t v,
                         const char *what) {
  return srv_store_update_one(st, sql, client_id, v, what, "client");
}

int srv_client_set_owner(srv_store_t *st, int64_t client_id, int64_t owner_id) {
  return client_update(st, "UPDATE clients SET owner_id = ?2 WHERE id = ?1", client_id, owner_id,
                       "client owner");
}

int srv_client_set_suspect(srv_store_t *st, int64_t client_id, int suspect) {
  return client_update(st, "UPDATE clients SET suspect = ?2 WHERE id = ?1", client_id,
                       suspect ? 1 : 0, "client suspect");
}

int srv_client_unban(srv_store_t *st, int64_t client_id) {
  return client_update(st, "UPDATE clients SET banned = 0, suspect = 0 WHERE id = ?1", client_id,
                       0, "client unban");
}

int srv_client_set_net(srv_store_t *st, int64_t client_id, const char *net) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "UPDATE clients SET net = ?2 WHERE id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, client_id);
  if (net && *net) sqlite3_bind_text(s, 2, net, -1, SQLITE_STATIC);
  else sqlite3_bind_null(s, 2);
  return srv_store_step(st, s, "client net");
}

/* One statement per state with the state as a literal: 'valid' meets the partial index
 * assignments_valid, the others assignments_client. */
int srv_client_units(srv_store_t *st, int64_t client_id, srv_asg_state_t state, int64_t **ids,
                     int *n) {
  static const char *const sql[SRV_ASG_NSTATES] = {
      [SRV_ASG_REPORTED] = "SELECT unit_id FROM assignments WHERE client_id = ?1 "
                           "AND state = 'reported' ORDER BY unit_id",
      [SRV_ASG_VALID] = "SELECT unit_id FROM assignments WHERE client_id = ?1 "
                        "AND state = 'valid' ORDER BY unit_id",
      [SRV_ASG_INVALID] = "SELECT unit_id FROM assignments WHERE client_id = ?1 "
                          "AND state = 'invalid' ORDER BY unit_id"};
  if ((unsigned)state >= SRV_ASG_NSTATES || !sql[state])
    return srv_store_failf(st, NQ_EINVAL, "client units: state %s not supported",
                           srv_asg_state_name(state));
  return srv_store_id_list(st, sql[state], client_id, 0, ids, n);
}

int srv_units_disputed(srv_store_t *st, int64_t job_id, int64_t client_id, int64_t **ids,
                       int *n) {
  if (client_id > 0)
    return srv_store_id_list(st, "SELECT id FROM units u WHERE job_id = ?1 AND "
                             "state = 'disputed' AND EXISTS (SELECT 1 FROM assignments a "
                             "WHERE a.unit_id = u.id AND a.client_id = ?2 AND "
                             "a.reported_at IS NOT NULL) ORDER BY id",
                             job_id, client_id, ids, n);
  return srv_store_id_list(st, "SELECT id FROM units WHERE job_id = ?1 AND state = 'disputed' "
                           "ORDER BY id", job_id, 0, ids, n);
}

/* ---- re-opening --------------------------------------------------------------------------- */

int srv_asg_void(srv_store_t *st, int64_t asg_id) {
  return srv_store_exec3(st, "UPDATE assignments SET voided = 1 WHERE id = ?1", asg_id, 0, 0,
                         "void result");
}

/* The judged results of a unit go back to reported, and their clients' trust counts lose them:
 * the unit is judged again when it is decided again, so nothing is counted twice. */
static int unjudge(srv_store_t *st, int64_t unit_id) {
  static const char *const sql[] = {
      "UPDATE clients SET valid = valid - (SELECT count(*) FROM assignments a "
      "WHERE a.unit_id = ?1 AND a.client_id = clients.id AND a.state = 'valid') "
      "WHERE id IN (SELECT client_id FROM assignments WHERE unit_id = ?1 AND state = 'valid')",
      "UPDATE clients SET invalid = invalid - (SELECT count(*) FROM assignments a "
      "WHERE a.unit_id = ?1 AND a.client_id = clients.id AND a.state = 'invalid') "
      "WHERE id IN (SELECT client_id FROM assignments WHERE unit_id = ?1 AND state = 'invalid')",
      "UPDATE assignments SET state = 'reported' WHERE unit_id = ?1 "
      "AND (state = 'valid' OR state = 'invalid' OR state = 'late')"};
  int rc = 0;
  for (size_t i = 0; i < sizeof sql / sizeof sql[0] && rc == 0; i++)
    rc = srv_store_exec3(st, sql[i], unit_id, 0, 0, "unjudge");
  return rc;
}

static int reopen_locked(srv_store_t *st, int64_t unit_id, int extra, int *job_reopened) {
  srv_unit_info_t u;
  int rc = srv_unit_get(st, unit_id, &u);
  if (rc) return rc;
  int decided = u.state == SRV_UNIT_VERIFIED || u.state == SRV_UNIT_DISPUTED;
  if (decided && (rc = unjudge(st, unit_id)) != 0) return rc;
  if ((rc = srv_store_unit_refresh(st, unit_id)) != 0) return rc;
  /* One UPDATE takes the counts away and changes the state, so the trigger (schema 005) takes
   * the unit's counts out of the job's verified sums exactly once. */
  rc = srv_store_exec3(st, "UPDATE units SET state = CASE WHEN state = 'verified' "
                           "THEN 'awaiting' ELSE state END, c2 = NULL, c4 = NULL, c8 = NULL, "
                           "nodes = NULL, verified_at = NULL, spot = 0, "
                           "extra_results = max(0, results - (SELECT max_results FROM jobs j "
                           "WHERE j.id = units.job_id)) + ?2 WHERE id = ?1",
                       unit_id, extra, 0, "reopen");
  if (rc == 0) rc = srv_store_unit_refresh(st, unit_id);
  /* A finished job is not finished any more: its totals are gone until it finishes again. */
  if (rc == 0)
    rc = srv_store_exec3(st, "UPDATE jobs SET state = 'running', finished = 0, c2 = NULL, "
                             "c4 = NULL, c8 = NULL, nodes = NULL, total = NULL, uniq = NULL "
                             "WHERE id = ?1 AND state = 'done'", u.job_id, 0, 0, "job reopen");
  if (rc == 0 && job_reopened) *job_reopened = sqlite3_changes(st->db) > 0;
  return rc;
}

int srv_unit_reopen(srv_store_t *st, int64_t unit_id, int extra, int *job_reopened) {
  if (job_reopened) *job_reopened = 0;
  if (extra < 0 || extra > SRV_RETRY_EXTRA_MAX)
    return srv_store_failf(st, NQ_EINVAL, "extra %d outside 0..%d", extra, SRV_RETRY_EXTRA_MAX);
  int rc = srv_store_savepoint(st);
  if (rc) return rc;
  return srv_store_release(st, reopen_locked(st, unit_id, extra, job_reopened));
}

int srv_job_spot_pending(srv_store_t *st, int64_t job_id, int64_t *n) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT count(*) FROM units WHERE job_id = ?1 AND "
                              "(spot = 1 OR spot = 2)", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, job_id);
  if (sqlite3_step(s) == SQLITE_ROW) *n = col_i64(s, 0);
  else rc = srv_store_fail(st, "spot pending");
  sqlite3_reset(s);
  return rc;
}
