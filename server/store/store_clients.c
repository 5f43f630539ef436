/* nq-server: the store's clients (contracts in store_clients.h; layer 3 of store.h). */
#include "store_clients.h"

#include <stdio.h>
#include <string.h>

#include "store_int.h"

#define CLIENT_COLS "c.id, c.name, c.created, c.last_seen, c.valid, c.invalid, c.banned, " \
  "(SELECT count(*) FROM assignments a WHERE a.client_id = c.id AND a.state = 'leased'), " \
  "c.owner_id, c.suspect, c.net, coalesce(c.software, ''), coalesce(c.protocol, 0), c.lapses"

static void client_row(sqlite3_stmt *s, srv_client_t *c) {
  memset(c, 0, sizeof *c);
  c->id = col_i64(s, 0);
  col_str(s, 1, c->name, sizeof c->name);
  c->created = col_i64(s, 2);
  c->last_seen = col_i64(s, 3);
  c->valid = col_i64(s, 4);
  c->invalid = col_i64(s, 5);
  c->banned = sqlite3_column_int(s, 6);
  c->outstanding = col_i64(s, 7);
  c->owner_id = col_i64(s, 8);
  c->suspect = sqlite3_column_int(s, 9);
  col_str(s, 10, c->net, sizeof c->net);
  col_str(s, 11, c->software, sizeof c->software);
  c->protocol = sqlite3_column_int(s, 12);
  c->lapses = col_i64(s, 13);
}

static void client_row_v(sqlite3_stmt *s, void *out) { client_row(s, out); }

static int client_query(srv_store_t *st, const char *sql, const char *text, int64_t num,
                        srv_client_t *out) {
  return srv_store_one(st, sql, text, num, client_row_v, out, "client");
}

int srv_client_find_token(srv_store_t *st, const char *token_hash, srv_client_t *out) {
  if (!token_hash) return NQ_EINVAL;
  return client_query(st, "SELECT " CLIENT_COLS " FROM clients c WHERE c.token_hash = ?1",
                      token_hash, 0, out);
}

int srv_client_find_name(srv_store_t *st, const char *name, srv_client_t *out) {
  if (!name) return NQ_EINVAL;
  return client_query(st, "SELECT " CLIENT_COLS " FROM clients c WHERE c.name = ?1", name, 0, out);
}

int srv_client_get(srv_store_t *st, int64_t client_id, srv_client_t *out) {
  return client_query(st, "SELECT " CLIENT_COLS " FROM clients c WHERE c.id = ?1", NULL,
                      client_id, out);
}

int srv_client_create(srv_store_t *st, const char *name, const char *token_hash, int64_t now,
                      srv_client_t *out) {
  if (!nq_proto_name_valid(name)) return srv_store_failf(st, NQ_EINVAL, "bad client name");
  if (!token_hash || !*token_hash || strlen(token_hash) > SRV_HASH_MAX)
    return srv_store_failf(st, NQ_EINVAL, "bad token hash");
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "INSERT INTO clients(name, token_hash, created, last_seen) "
                              "VALUES (?1, ?2, ?3, ?3)", &s);
  if (rc) return rc;
  sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, token_hash, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, now);
  if ((rc = srv_store_step(st, s, "client insert")) != 0) return rc;
  srv_client_t tmp;
  return srv_client_get(st, sqlite3_last_insert_rowid(st->db), out ? out : &tmp);
}

int srv_client_enrol(srv_store_t *st, const char *name, const char *token_hash, int64_t now,
                     srv_client_t *out) {
  if (!nq_proto_name_valid(name)) return srv_store_failf(st, NQ_EINVAL, "bad client name");
  srv_client_t other;
  int rc = srv_client_find_token(st, token_hash, &other);
  if (rc == 0) return srv_store_failf(st, NQ_EEXIST, "token hash already enrolled");
  if (rc != NQ_ENOTFOUND) return rc;
  char cand[SRV_NAME_MAX + 1];
  snprintf(cand, sizeof cand, "%s", name);
  for (int i = 2; i < 100000; i++) {
    if ((rc = srv_client_find_name(st, cand, &other)) == NQ_ENOTFOUND)
      return srv_client_create(st, cand, token_hash, now, out);
    if (rc) return rc;
    /* Keep the suffix whole: shorten the base if name + "-i" would pass the limit. */
    char suffix[16];
    int slen = snprintf(suffix, sizeof suffix, "-%d", i);
    int base = (int)strlen(name);
    if (base + slen > SRV_NAME_MAX) base = SRV_NAME_MAX - slen;
    snprintf(cand, sizeof cand, "%.*s%s", base, name, suffix);
  }
  return srv_store_failf(st, NQ_EEXIST, "no free name for %s", name);
}

int srv_client_count(srv_store_t *st, int64_t *n) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT count(*) FROM clients", &s);
  if (rc) return rc;
  if (sqlite3_step(s) == SQLITE_ROW) *n = sqlite3_column_int64(s, 0);
  else rc = srv_store_fail(st, "client count");
  sqlite3_reset(s);
  return rc;
}

int srv_client_touch(srv_store_t *st, int64_t client_id, int64_t now) {
  return srv_client_hello(st, client_id, now, NULL, 0);
}

int srv_client_hello(srv_store_t *st, int64_t client_id, int64_t now, const char *software,
                     int64_t protocol) {
  if (software && strlen(software) > NQ_PROTO_SOFTWARE_MAX)
    return srv_store_failf(st, NQ_EINVAL, "software string too long");
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "UPDATE clients SET last_seen = max(last_seen, ?2), "
                              "software = coalesce(nullif(?3, ''), software), "
                              "protocol = coalesce(nullif(?4, 0), protocol) "
                              "WHERE id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, client_id);
  sqlite3_bind_int64(s, 2, now);
  if (software) sqlite3_bind_text(s, 3, software, -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(s, 3);
  sqlite3_bind_int64(s, 4, protocol);
  if ((rc = srv_store_step(st, s, "client hello")) != 0) return rc;
  return sqlite3_changes(st->db) ? 0 : srv_store_failf(st, NQ_ENOTFOUND, "no such client");
}

int srv_client_ban(srv_store_t *st, int64_t client_id, int64_t now) {
  int rc = srv_store_savepoint(st);
  if (rc) return rc;
  if ((rc = srv_store_exec3(st, "UPDATE clients SET banned = 1 WHERE id = ?1", client_id, 0, 0,
                            "ban")) != 0)
    goto out;
  if (sqlite3_changes(st->db) == 0) {
    rc = srv_store_failf(st, NQ_ENOTFOUND, "no such client");
    goto out;
  }
  rc = srv_client_release_leases(st, client_id, NULL);
out:
  return srv_store_release(st, rc);
}

int srv_client_list(srv_store_t *st, srv_client_cb cb, void *arg) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT " CLIENT_COLS " FROM clients c ORDER BY c.name", &s);
  if (rc) return rc;
  int sr = SQLITE_DONE;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    srv_client_t c;
    client_row(s, &c);
    rc = cb(&c, arg);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "client list");
  sqlite3_reset(s);
  return rc;
}

int srv_client_pause(srv_store_t *st, int64_t client_id, int paused, int64_t now,
                     int64_t lease_s, int64_t hold_s) {
  if (!srv_store_schema_has(st, 19)) return 0;
  if (!paused)
    return srv_store_exec3(st, "UPDATE clients SET paused_since = 0 WHERE id = ?1 AND "
                               "paused_since != 0", client_id, 0, 0, "client resumed");
  int rc = srv_store_exec3(st, "UPDATE clients SET paused_since = ?2 WHERE id = ?1", client_id,
                           now, 0, "client paused");
  if (rc) return rc;
  sqlite3_stmt *q;
  rc = srv_store_stmt(st, "UPDATE assignments SET deadline = max(deadline, min(?2 + ?3, "
                          "CASE WHEN hold_until > 0 THEN hold_until ELSE issued + ?4 END)) "
                          "WHERE client_id = ?1 AND state = 'leased'", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, client_id);
  sqlite3_bind_int64(q, 2, now);
  sqlite3_bind_int64(q, 3, lease_s);
  sqlite3_bind_int64(q, 4, hold_s);
  return srv_store_step(st, q, "paused leases");
}

int srv_clients_paused(srv_store_t *st, int64_t since, int64_t *n) {
  *n = 0;
  if (!srv_store_schema_has(st, 19)) return 0;
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "SELECT count(*) FROM clients WHERE paused_since > 0 AND "
                              "banned = 0 AND last_seen >= ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, since);
  if (sqlite3_step(q) == SQLITE_ROW) *n = col_i64(q, 0);
  else rc = srv_store_fail(st, "paused clients");
  sqlite3_reset(q);
  return rc;
}

int srv_clients_count(srv_store_t *st, int64_t *n) {
  *n = 0;
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "SELECT count(*) FROM clients", &q);
  if (rc) return rc;
  if (sqlite3_step(q) == SQLITE_ROW) *n = col_i64(q, 0);
  else rc = srv_store_fail(st, "clients count");
  sqlite3_reset(q);
  return rc;
}
