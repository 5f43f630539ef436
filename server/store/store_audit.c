/* nq-server: the store's side of the audit (contracts in store_audit.h). */
#include <stdlib.h>
#include <string.h>

#include "nq/nq.h"
#include "store_audit.h"
#include "store_int.h"

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

#define AUDIT_SAMPLE_MAX 10000 /* the draw is quadratic in it; 10,000 reference recounts is a lot already */

int srv_audit_draw(srv_store_t *st, int64_t job_id, int sample, uint64_t seed, int64_t *verified,
                   int (*cb)(const nq_admin_audit_unit_t *u, void *arg), void *arg) {
  sqlite3_stmt *q;
  *verified = 0;
  if (sample < 0 || sample > AUDIT_SAMPLE_MAX)
    return srv_store_failf(st, NQ_ERANGE, "sample %d outside 0..%d", sample, AUDIT_SAMPLE_MAX);
  int rc = srv_store_stmt(st, "SELECT count(*) FROM units WHERE job_id = ?1 AND "
                              "state = 'verified'", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, job_id);
  if (sqlite3_step(q) == SQLITE_ROW) *verified = sqlite3_column_int64(q, 0);
  else rc = srv_store_fail(st, "audit count");
  sqlite3_reset(q);
  if (rc || *verified == 0 || sample == 0) return rc;
  int64_t m = *verified, k = sample < m ? sample : m;
  /* k distinct offsets: a partial Fisher-Yates over 0..m-1 kept sparse (only the swapped
   * entries), so a million verified units cost k entries, not m. */
  int64_t *from = calloc((size_t)k * 2, sizeof *from), *to = from + k;
  int nswap = 0;
  if (!from) return srv_store_failf(st, NQ_ENOMEM, "audit: out of memory");
  for (int64_t i = 0; i < k && rc == 0; i++) {
    int64_t j = i + (int64_t)(splitmix(&seed) % (uint64_t)(m - i));
    /* value at position p: its swapped value if recorded, else p */
    int64_t vi = i, vj = j;
    for (int s = 0; s < nswap; s++) {
      if (from[s] == i) vi = to[s];
      if (from[s] == j) vj = to[s];
    }
    /* position j now holds vi; position i (never looked at again) is drawn: vj */
    int found = 0;
    for (int s = 0; s < nswap && !found; s++)
      if (from[s] == j) to[s] = vi, found = 1;
    if (!found) from[nswap] = j, to[nswap++] = vi;
    if ((rc = srv_store_stmt(st,
             "SELECT u.id, u.text, u.c2, u.c4, u.c8, u.nodes, coalesce((SELECT a.solver FROM "
             "assignments a WHERE a.unit_id = u.id AND a.state = 'valid' AND a.nodes = u.nodes "
             "ORDER BY a.id LIMIT 1), "
             "'') FROM units u WHERE u.job_id = ?1 AND u.state = 'verified' ORDER BY u.id "
             "LIMIT 1 OFFSET ?2", &q)) != 0)
      break;
    sqlite3_bind_int64(q, 1, job_id);
    sqlite3_bind_int64(q, 2, vj);
    nq_admin_audit_unit_t u;
    memset(&u, 0, sizeof u);
    int sr = sqlite3_step(q);
    if (sr == SQLITE_ROW) {
      u.id = col_i64(q, 0);
      col_str(q, 1, u.text, sizeof u.text);
      u.stored.c2 = col_u64(q, 2);
      u.stored.c4 = col_u64(q, 3);
      u.stored.c8 = col_u64(q, 4);
      u.stored.nodes = col_u64(q, 5);
      col_str(q, 6, u.solver, sizeof u.solver);
    } else if (sr != SQLITE_DONE) {
      rc = srv_store_fail(st, "audit draw");
    }
    sqlite3_reset(q);
    /* A unit re-opened meanwhile (a server runs beside) leaves its offset empty: skipped. */
    if (rc == 0 && sr == SQLITE_ROW) rc = cb(&u, arg);
  }
  free(from);
  return rc;
}

int srv_audit_record(srv_store_t *st, int64_t job_id, const nq_admin_audit_t *a, int64_t *id) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "INSERT INTO audits(job_id, at, sample, seed, checked, mismatched, "
                              "seconds, outcome, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                              "?9)", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, job_id);
  sqlite3_bind_int64(q, 2, a->at);
  sqlite3_bind_int(q, 3, a->sample);
  sqlite3_bind_int64(q, 4, (int64_t)a->seed);
  sqlite3_bind_int(q, 5, a->checked);
  sqlite3_bind_int(q, 6, a->mismatched);
  sqlite3_bind_double(q, 7, a->seconds);
  sqlite3_bind_text(q, 8, a->outcome, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(q, 9, a->detail, -1, SQLITE_TRANSIENT);
  if ((rc = srv_store_step(st, q, "record audit")) == 0) *id = sqlite3_last_insert_rowid(st->db);
  return rc;
}

int srv_audit_summary(srv_store_t *st, int64_t job_id, int64_t *count, int64_t *disagreed,
                      nq_admin_audit_t *last) {
  memset(last, 0, sizeof *last);
  *count = *disagreed = 0;
  int v = 0;
  if (srv_store_schema_version(st, &v) != 0 || v < 16) return 0;
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "SELECT count(*), coalesce(sum(outcome = 'disagree'), 0) FROM "
                              "audits WHERE job_id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, job_id);
  if (sqlite3_step(q) == SQLITE_ROW) {
    *count = col_i64(q, 0);
    *disagreed = col_i64(q, 1);
  } else {
    rc = srv_store_fail(st, "audit summary");
  }
  sqlite3_reset(q);
  if (rc || *count == 0) return rc;
  if ((rc = srv_store_stmt(st, "SELECT at, sample, seed, checked, mismatched, seconds, outcome, "
                               "detail FROM audits WHERE job_id = ?1 ORDER BY id DESC LIMIT 1",
                           &q)) != 0)
    return rc;
  sqlite3_bind_int64(q, 1, job_id);
  if (sqlite3_step(q) == SQLITE_ROW) {
    last->at = col_i64(q, 0);
    last->sample = sqlite3_column_int(q, 1);
    last->seed = (uint64_t)col_i64(q, 2);
    last->checked = sqlite3_column_int(q, 3);
    last->mismatched = sqlite3_column_int(q, 4);
    last->seconds = sqlite3_column_double(q, 5);
    col_str(q, 6, last->outcome, sizeof last->outcome);
    col_str(q, 7, last->detail, sizeof last->detail);
  } else {
    rc = srv_store_fail(st, "last audit");
  }
  sqlite3_reset(q);
  return rc;
}
