/* nq-server: the store's job queue (contracts in store_queue.h). */
#include "store_queue.h"

#include "store_int.h"

#include <string.h>

static const char *const state_names[SRV_QUEUE_NSTATES] = {
    SRV_QUEUE_STATE_MAP(NQ_ENUM_NAME_OF)};

const char *srv_queue_state_name(srv_queue_state_t s) {
  return (unsigned)s < SRV_QUEUE_NSTATES ? state_names[s] : "?";
}

#define QUEUE_COLS "id, n, depth, unit_seconds, max_depth, quorum, max_results, state, added, " \
                   "changed, coalesce(job_id, 0), coalesce(error, ''), diverse_kernels"

static void queue_row(sqlite3_stmt *s, void *out) {
  srv_queued_t *q = out;
  char state[16];
  memset(q, 0, sizeof *q);
  q->id = col_i64(s, 0);
  q->opts.n = sqlite3_column_int(s, 1);
  q->opts.depth = sqlite3_column_int(s, 2);
  q->opts.unit_seconds = sqlite3_column_double(s, 3);
  q->opts.max_depth = sqlite3_column_int(s, 4);
  q->opts.quorum = sqlite3_column_int(s, 5);
  q->opts.max_results = sqlite3_column_int(s, 6);
  q->opts.diverse_kernels = sqlite3_column_int(s, 12);
  col_str(s, 7, state, sizeof state);
  q->state = SRV_QUEUE_QUEUED;
  for (int i = 0; i < SRV_QUEUE_NSTATES; i++)
    if (!strcmp(state, state_names[i])) q->state = (srv_queue_state_t)i;
  q->added = col_i64(s, 8);
  q->changed = col_i64(s, 9);
  q->job_id = col_i64(s, 10);
  col_str(s, 11, q->error, sizeof q->error);
}

int srv_queue_get(srv_store_t *st, int64_t id, srv_queued_t *out) {
  return srv_store_one(st, "SELECT " QUEUE_COLS " FROM job_queue WHERE id = ?1", NULL, id,
                       queue_row, out, "queued job");
}

int srv_queue_next(srv_store_t *st, srv_queued_t *out) {
  return srv_store_one(st, "SELECT " QUEUE_COLS " FROM job_queue WHERE state = 'queued' AND "
                       "id > ?1 ORDER BY id LIMIT 1", NULL, 0, queue_row, out, "queued job");
}

int srv_queue_list(srv_store_t *st, int all, srv_queue_cb cb, void *arg) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, all ? "SELECT " QUEUE_COLS " FROM job_queue ORDER BY id"
                                  : "SELECT " QUEUE_COLS " FROM job_queue WHERE state = 'queued' "
                                    "ORDER BY id", &s);
  if (rc) return rc;
  int sr = SQLITE_DONE;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    srv_queued_t q;
    queue_row(s, &q);
    rc = cb(&q, arg);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "job queue");
  sqlite3_reset(s);
  return rc;
}

int srv_queue_add(srv_store_t *st, const nq_jobopts_t *o, int64_t now, srv_queued_t *out) {
  char err[256];
  int rc = nq_jobopts_check(o, err, sizeof err);
  if (rc) return srv_store_failf(st, rc, "%s", err);
  sqlite3_stmt *s;
  if ((rc = srv_store_savepoint(st)) != 0) return rc;
  rc = srv_store_stmt(st, "INSERT INTO job_queue(n, depth, unit_seconds, max_depth, quorum, "
                          "max_results, added, diverse_kernels) "
                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", &s);
  if (rc == 0) {
    sqlite3_bind_int(s, 1, o->n);
    sqlite3_bind_int(s, 2, o->depth);
    sqlite3_bind_double(s, 3, o->unit_seconds);
    sqlite3_bind_int(s, 4, o->max_depth);
    sqlite3_bind_int(s, 5, o->quorum);
    sqlite3_bind_int(s, 6, o->max_results);
    sqlite3_bind_int64(s, 7, now);
    sqlite3_bind_int(s, 8, o->diverse_kernels);
    rc = srv_store_step(st, s, "job queue add");
  }
  int64_t id = rc == 0 ? sqlite3_last_insert_rowid(st->db) : 0;
  if (rc == 0 && out) rc = srv_queue_get(st, id, out);
  return srv_store_release(st, rc);
}

/* Move a queued entry to `state`; NQ_ESTATE (with a message) when it is not queued. */
static int queue_move(srv_store_t *st, int64_t id, srv_queue_state_t state, int64_t job_id,
                      const char *error, int64_t now) {
  srv_queued_t q;
  int rc = srv_queue_get(st, id, &q);
  if (rc) return rc;
  if (q.state != SRV_QUEUE_QUEUED) {
    if (q.state == SRV_QUEUE_STARTED)
      return srv_store_failf(st, NQ_ESTATE, "queued job %lld has started (job %lld, N=%d): it is "
                             "no longer in the queue; a running job is stopped by archiving it "
                             "(nq-admin job archive %d --force) once its server is stopped",
                             (long long)id, (long long)q.job_id, q.opts.n, q.opts.n);
    return srv_store_failf(st, NQ_ESTATE, "queued job %lld is %s, not queued", (long long)id,
                           srv_queue_state_name(q.state));
  }
  sqlite3_stmt *s;
  if ((rc = srv_store_stmt(st, "UPDATE job_queue SET state = ?2, changed = ?3, job_id = "
                               "nullif(?4, 0), error = ?5 WHERE id = ?1 AND state = 'queued'",
                           &s)) != 0)
    return rc;
  sqlite3_bind_int64(s, 1, id);
  sqlite3_bind_text(s, 2, state_names[state], -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, now);
  sqlite3_bind_int64(s, 4, job_id);
  if (error) sqlite3_bind_text(s, 5, error, -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(s, 5);
  return srv_store_step(st, s, "job queue");
}

int srv_queue_cancel(srv_store_t *st, int64_t id, int64_t now, srv_queued_t *out) {
  int rc = srv_store_savepoint(st);
  if (rc) return rc;
  rc = queue_move(st, id, SRV_QUEUE_CANCELLED, 0, NULL, now);
  if (rc == 0 && out) rc = srv_queue_get(st, id, out);
  return srv_store_release(st, rc);
}

int srv_queue_mark(srv_store_t *st, int64_t id, srv_queue_state_t state, int64_t job_id,
                   const char *error, int64_t now) {
  if (state != SRV_QUEUE_STARTED && state != SRV_QUEUE_FAILED)
    return srv_store_failf(st, NQ_EINVAL, "a queued job is marked started or failed");
  int rc = srv_store_savepoint(st);
  if (rc) return rc;
  return srv_store_release(st, queue_move(st, id, state, job_id, error, now));
}
