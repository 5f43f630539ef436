/* nq-server: the store's part of the public view -- volunteer credit, public names and the job's
 * sampled history (schema 009; contracts in store_public.h, layer 3 of store.h). */
#include <stdio.h>
#include <string.h>

#include "nq/certs.h"
#include "store_public.h"
#include "nq/hash.h"
#include "store_int.h"

/* ---- credit ---- */

/* The columns every credit read selects, in credit_row's order. */
#define CREDIT_COLS "id, credit_hi, credit_lo, valid, banned, public_name, token_hash"

static void credit_row(sqlite3_stmt *s, void *out) {
  srv_credit_t *c = out;
  memset(c, 0, sizeof *c);
  c->client_id = col_i64(s, 0);
  c->credit = col_split(s, 1);
  c->valid = col_i64(s, 3);
  c->banned = col_i64(s, 4) != 0;
  const char *pub = (const char *)sqlite3_column_text(s, 5);
  if (pub && *pub) {
    c->named = 1;
    snprintf(c->display, sizeof c->display, "%s", pub);
    return;
  }
  /* A hash of the token's hash: stable for the client, useless for finding its token or name. */
  char h[65] = "000000";
  const char *th = (const char *)sqlite3_column_text(s, 6);
  if (th) nq_sha256_hex(th, h);
  snprintf(c->display, sizeof c->display, "anonymous-%.6s", h);
}

int srv_credit_get(srv_store_t *st, int64_t client_id, srv_credit_t *out) {
  return srv_store_one(st, "SELECT " CREDIT_COLS " FROM clients WHERE id = ?1", NULL, client_id,
                       credit_row, out, "client");
}

int srv_owner_credit(srv_store_t *st, int64_t owner_id, nq_u128 *out) {
  sqlite3_stmt *s;
  /* Each part summed apart, as the clients hold them: both sums stay far below 2^63. */
  int rc = srv_store_stmt(st, "SELECT coalesce(sum(credit_hi), 0), coalesce(sum(credit_lo), 0) "
                              "FROM clients WHERE owner_id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, owner_id);
  if (sqlite3_step(s) == SQLITE_ROW) *out = col_split(s, 0);
  else rc = srv_store_fail(st, "owner credit");
  sqlite3_reset(s);
  return rc;
}

int srv_credit_top(srv_store_t *st, int limit, srv_credit_cb cb, void *arg) {
  if (limit < 1 || limit > 1000) return srv_store_failf(st, NQ_EINVAL, "credit: bad limit");
  sqlite3_stmt *s;
  /* The expression is the index's (clients_credit), so the walk reads the top of the index. */
  int rc = srv_store_stmt(st, "SELECT " CREDIT_COLS " FROM clients WHERE banned = 0 "
                              "ORDER BY credit_hi * 4294967296.0 + credit_lo DESC, id LIMIT ?1",
                          &s);
  if (rc) return rc;
  sqlite3_bind_int(s, 1, limit);
  int sr = SQLITE_DONE, rank = 0;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    srv_credit_t c;
    credit_row(s, &c);
    rc = cb(&c, ++rank, arg);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "credit list");
  sqlite3_reset(s);
  return rc;
}

int srv_client_set_public_name(srv_store_t *st, int64_t client_id, const char *name) {
  if (name && !nq_proto_name_valid(name))
    return srv_store_failf(st, NQ_EINVAL, "bad public name");
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "UPDATE clients SET public_name = ?2 WHERE id = ?1 "
                              "AND public_name IS NOT ?2", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, client_id);
  if (name) sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
  else sqlite3_bind_null(s, 2);
  return srv_store_step(st, s, "public name");
}

/* ---- history ---- */

int srv_history_add(srv_store_t *st, int64_t job_id, const srv_history_t *h) {
  static const char *const prune[] = {
      /* Older than a day: one sample an hour. */
      "DELETE FROM job_history WHERE job_id = ?1 AND minute < ?2 - ?3 / 60 AND minute % 60 != 0",
      /* And never more than the cap: the oldest go. */
      "DELETE FROM job_history WHERE job_id = ?1 AND minute <= (SELECT minute FROM job_history "
      "WHERE job_id = ?1 ORDER BY minute DESC LIMIT 1 OFFSET ?4)"};
  int rc = srv_store_savepoint(st);
  if (rc) return rc;
  sqlite3_stmt *s;
  int64_t minute = h->t / 60;
  rc = srv_store_stmt(st, "INSERT OR REPLACE INTO job_history (job_id, minute, verified, results, "
                          "nodes_hi, nodes_lo, share) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", &s);
  if (rc == 0) {
    sqlite3_bind_int64(s, 1, job_id);
    sqlite3_bind_int64(s, 2, minute);
    sqlite3_bind_int64(s, 3, h->verified);
    sqlite3_bind_int64(s, 4, h->results);
    sqlite3_bind_int64(s, 5, (int64_t)(h->nodes >> 32));
    sqlite3_bind_int64(s, 6, (int64_t)(h->nodes & 0xffffffffu));
    sqlite3_bind_double(s, 7, h->share);
    rc = srv_store_step(st, s, "history");
  }
  for (size_t i = 0; i < sizeof prune / sizeof *prune && rc == 0; i++) {
    if ((rc = srv_store_stmt(st, prune[i], &s)) != 0) break;
    int np = sqlite3_bind_parameter_count(s);
    sqlite3_bind_int64(s, 1, job_id);
    if (np >= 2) sqlite3_bind_int64(s, 2, minute);
    if (np >= 3) sqlite3_bind_int64(s, 3, SRV_HISTORY_FINE_S);
    if (np >= 4) sqlite3_bind_int64(s, 4, SRV_HISTORY_MAX);
    rc = srv_store_step(st, s, "history prune");
  }
  return srv_store_release(st, rc);
}

int srv_history_list(srv_store_t *st, int64_t job_id, srv_history_cb cb, void *arg) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT minute, verified, results, nodes_hi, nodes_lo, share "
                              "FROM job_history WHERE job_id = ?1 ORDER BY minute", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, job_id);
  int sr = SQLITE_DONE;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    srv_history_t h = {col_i64(s, 0) * 60, col_i64(s, 1), col_i64(s, 2), col_split(s, 3),
                       sqlite3_column_double(s, 5)};
    rc = cb(&h, arg);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "history list");
  sqlite3_reset(s);
  return rc;
}

int srv_history_count(srv_store_t *st, int64_t job_id, int64_t *n) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT count(*) FROM job_history WHERE job_id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, job_id);
  if (sqlite3_step(s) == SQLITE_ROW) *n = col_i64(s, 0);
  else rc = srv_store_fail(st, "history count");
  sqlite3_reset(s);
  return rc;
}
