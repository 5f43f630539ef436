/* nq-server: the store's jobs -- creation from a plan in batches, resume, lookups, the removal of
 * their rows, diverse_kernels (contracts in store_jobs.h, layer 1 of store.h; docs/store.md for
 * the model). */
#include "store_jobs.h"

#include "store_int.h"

#include "nq/estimate.h"
#include "nq/plan.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const job_state_names[SRV_JOB_NSTATES] = {
    SRV_JOB_STATE_MAP(NQ_ENUM_NAME_OF)};

const char *srv_job_state_name(srv_job_state_t s) {
  return (unsigned)s < SRV_JOB_NSTATES ? job_state_names[s] : "?";
}

static srv_job_state_t job_state_parse(const char *name) {
  int i = nq_name_index(job_state_names, SRV_JOB_NSTATES, name);
  return i < 0 ? SRV_JOB_RUNNING : (srv_job_state_t)i;
}

/* ---- lookups ------------------------------------------------------------------------------ */

#define JOB_COLS "id, n, depth, quorum, max_results, state, created, finished, units, " \
                 "c2, c4, c8, nodes, min_depth, unit_seconds, seed, internal, est_nodes, " \
                 "est_se, first_unit, archived"

static void job_row(sqlite3_stmt *s, srv_job_t *j) {
  char state[16];
  memset(j, 0, sizeof *j);
  j->id = col_i64(s, 0);
  j->n = sqlite3_column_int(s, 1);
  j->depth = sqlite3_column_int(s, 2);
  j->quorum = sqlite3_column_int(s, 3);
  j->max_results = sqlite3_column_int(s, 4);
  col_str(s, 5, state, sizeof state);
  j->state = job_state_parse(state);
  j->created = col_i64(s, 6);
  j->finished = col_i64(s, 7);
  j->units = col_i64(s, 8);
  j->totals.c2 = col_u128(s, 9);
  j->totals.c4 = col_u128(s, 10);
  j->totals.c8 = col_u128(s, 11);
  j->totals.nodes = col_u128(s, 12);
  j->min_depth = sqlite3_column_int(s, 13);
  j->unit_seconds = sqlite3_column_double(s, 14);
  j->seed = (uint64_t)col_i64(s, 15);
  j->has_internal = sqlite3_column_type(s, 16) != SQLITE_NULL;
  j->internal = col_u64(s, 16);
  j->est_nodes = sqlite3_column_double(s, 17);
  j->est_se = sqlite3_column_double(s, 18);
  j->first_unit = col_i64(s, 19);
  j->archived = col_i64(s, 20);
}

/* Run a job query with one integer parameter and read one row. */
static int job_query1(srv_store_t *st, const char *sql, int64_t arg, srv_job_t *job) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, sql, &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, arg);
  int sr = sqlite3_step(s);
  if (sr == SQLITE_ROW) job_row(s, job);
  else if (sr == SQLITE_DONE) rc = srv_store_failf(st, NQ_ENOTFOUND, "no such job");
  else rc = srv_store_fail(st, "job lookup");
  sqlite3_reset(s);
  return rc;
}

int srv_job_is_done(const srv_job_t *job) {
  return job->state == SRV_JOB_DONE || (job->state == SRV_JOB_ARCHIVED && job->finished > 0);
}

int srv_job_get(srv_store_t *st, int64_t job_id, srv_job_t *job) {
  return job_query1(st, "SELECT " JOB_COLS " FROM jobs WHERE id = ?1", job_id, job);
}

int srv_job_find_n(srv_store_t *st, int n, srv_job_t *job) {
  return job_query1(st, "SELECT " JOB_COLS " FROM jobs WHERE n = ?1 AND state != 'archived'", n,
                    job);
}

int srv_job_list(srv_store_t *st, srv_job_cb cb, void *arg) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT " JOB_COLS " FROM jobs ORDER BY id", &s);
  if (rc) return rc;
  int sr = SQLITE_DONE;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    srv_job_t j;
    job_row(s, &j);
    rc = cb(&j, arg);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "job list");
  sqlite3_reset(s);
  return rc;
}

/* A job made before schema 5 learns its split nodes at the next open: for a flat job at depth d
 * they are the nodes on rows 2..d-1 (nq_units_count), exactly what a plan would have counted. */
int srv_job_fill_internal(srv_store_t *st) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT id, n, depth FROM jobs WHERE internal IS NULL "
                              "AND unit_seconds = 0 AND state != 'creating'", &s);
  if (rc) return rc;
  int64_t ids[64], internal[64];
  int k = 0, sr;
  while (k < 64 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    int n = sqlite3_column_int(s, 1), depth = sqlite3_column_int(s, 2);
    uint64_t sum = 0, c;
    for (int d = 2; d < depth && rc == 0; d++)
      if ((rc = nq_units_count(n, d, &c)) == 0) sum += c;
    if (rc) break;
    ids[k] = col_i64(s, 0);
    internal[k++] = (int64_t)sum;
  }
  sqlite3_reset(s);
  if (rc) return srv_store_failf(st, rc, "split nodes of an old job: %s", nq_strerror(rc));
  for (int i = 0; i < k && rc == 0; i++) {
    if ((rc = srv_store_stmt(st, "UPDATE jobs SET internal = ?2 WHERE id = ?1", &s)) != 0) break;
    sqlite3_bind_int64(s, 1, ids[i]);
    sqlite3_bind_int64(s, 2, internal[i]);
    rc = srv_store_step(st, s, "job internal");
  }
  return rc;
}

/* ---- creation ----------------------------------------------------------------------------- */

/* The plan options for a spec; NQ_ERANGE with the reason in errbuf. */
static int spec_plan(const srv_job_spec_t *sp, nq_plan_opts_t *o, char *errbuf, size_t errlen) {
  memset(o, 0, sizeof *o);
  o->n = sp->job.n;
  o->seed = sp->seed ? sp->seed : NQ_EST_DEFAULT_SEED;
  o->max_units = sp->max_units;
  int rc;
  if (sp->job.depth > 0) {
    /* A flat job: every node at `depth` is a unit, whatever its estimate. */
    if ((rc = nq_unit_depth_check(sp->job.n, sp->job.depth, errbuf, errlen)) != 0) return rc;
    o->start_depth = o->max_depth = sp->job.depth;
    return 0;
  }
  double secs = sp->job.unit_seconds > 0 ? sp->job.unit_seconds : NQ_PLAN_DEFAULT_UNIT_SECONDS;
  if ((rc = nq_plan_seconds_to_nodes(secs, &o->target_nodes, errbuf, errlen)) != 0) return rc;
  if ((rc = nq_unit_depth_check(sp->job.n, 2, errbuf, errlen)) != 0) return rc;
  o->max_depth = sp->job.max_depth ? sp->job.max_depth : sp->job.n - 1;
  if (sp->job.max_depth && (rc = nq_unit_depth_check(sp->job.n, sp->job.max_depth, errbuf, errlen)) != 0)
    return nq_errorf(errbuf, errlen, rc, "max %s", errbuf);
  return 0;
}

typedef struct creator_s {
  srv_store_t *st;
  const srv_job_spec_t *sp;
  sqlite3_stmt *ins;
  int64_t job_id, first;
  uint64_t done;          /* committed units */
  uint64_t count;         /* units inserted (committed or in the open batch) */
  uint64_t est_hi, est_lo; /* the open batch's estimates, split at 2^32 */
  double est_sum;         /* every unit's estimate so far (for the progress fraction) */
  double whole;           /* a whole-N estimate (for the progress fraction) */
  int batch;
  int min_depth, max_depth;
  double t0;
} creator_t;

static void creator_progress(creator_t *c, int done) {
  if (!c->sp->progress) return;
  srv_job_progress_t p = {c->done, c->whole > 0 ? c->est_sum / c->whole : 0,
                          nq_now_mono() - c->t0, done};
  if (p.fraction > 1) p.fraction = 1;
  c->sp->progress(&p, c->sp->progress_arg);
}

/* Commit the open batch: the job's unit count and the counters of the units it added (they are
 * all pending), in the same transaction as the units, so a crash keeps them consistent. */
static int creator_flush(creator_t *c, int reopen) {
  srv_store_t *st = c->st;
  sqlite3_stmt *s;
  uint64_t k = c->count - c->done;
  int rc = srv_store_stmt(st, "UPDATE job_stats SET pending = pending + ?2, est_units = "
                              "est_units + ?2, est_hi = est_hi + ?3, est_lo = est_lo + ?4 "
                              "WHERE job_id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, c->job_id);
  sqlite3_bind_int64(s, 2, (int64_t)k);
  sqlite3_bind_int64(s, 3, (int64_t)c->est_hi);
  sqlite3_bind_int64(s, 4, (int64_t)c->est_lo);
  if ((rc = srv_store_step(st, s, "job counters")) != 0) return rc;
  if ((rc = srv_store_stmt(st, "UPDATE jobs SET units = ?2 WHERE id = ?1", &s)) != 0) return rc;
  sqlite3_bind_int64(s, 1, c->job_id);
  sqlite3_bind_int64(s, 2, (int64_t)c->count);
  if ((rc = srv_store_step(st, s, "job units")) != 0) return rc;
  if ((rc = srv_store_commit(st)) != 0) return rc;
  c->done = c->count;
  c->est_hi = c->est_lo = 0;
  creator_progress(c, 0);
  return reopen ? srv_store_begin(st) : 0;
}

static int creator_unit(const nq_plan_unit_t *pu, void *arg) {
  creator_t *c = arg;
  srv_store_t *st = c->st;
  char text[NQ_UNIT_TEXT_MAX];
  int len = nq_unit_format(&pu->unit, text, sizeof text);
  if (len < 0) return srv_store_failf(st, len, "unit format failed");
  /* The guard keeps every accepted estimate far below 2^63; clamp anyway. */
  double e = pu->est_nodes < 0 ? 0 : nearbyint(pu->est_nodes);
  int64_t est = e >= 9.2e18 ? INT64_MAX : (int64_t)e;
  sqlite3_stmt *s = c->ins;
  sqlite3_reset(s);
  sqlite3_bind_int64(s, 1, c->first + (int64_t)pu->index);
  sqlite3_bind_int64(s, 2, c->job_id);
  sqlite3_bind_int64(s, 3, (int64_t)pu->index);
  sqlite3_bind_text(s, 4, text, len, SQLITE_TRANSIENT);
  sqlite3_bind_text(s, 5, pu->unit.part == NQ_PART_CORNER ? "c" : "s", 1, SQLITE_STATIC);
  sqlite3_bind_int(s, 6, pu->unit.bound1);
  sqlite3_bind_int(s, 7, c->sp->job.quorum);
  sqlite3_bind_int64(s, 8, est);
  int rc = srv_store_step(st, s, "unit insert");
  if (rc) return rc;
  c->count++;
  c->est_hi += (uint64_t)est >> 32;
  c->est_lo += (uint64_t)est & 0xffffffffu;
  c->est_sum += pu->est_nodes;
  if (c->count == 1 || pu->unit.depth < c->min_depth) c->min_depth = pu->unit.depth;
  if (pu->unit.depth > c->max_depth) c->max_depth = pu->unit.depth;
  return c->count - c->done >= (uint64_t)c->batch ? creator_flush(c, 1) : 0;
}

/* The job row (state creating) and its counters, committed before any unit: a crash from here on
 * leaves a `creating` job that the next open deletes and makes again. */
static int creator_begin(creator_t *c, int64_t now, uint64_t seed) {
  srv_store_t *st = c->st;
  const srv_job_spec_t *sp = c->sp;
  sqlite3_stmt *s;
  int rc = srv_store_begin(st);
  if (rc) return rc;
  if ((rc = srv_store_stmt(st, "SELECT coalesce(max(id), 0) + 1 FROM units", &s)) != 0) goto out;
  if (sqlite3_step(s) == SQLITE_ROW) c->first = col_i64(s, 0);
  else rc = srv_store_fail(st, "first unit id");
  sqlite3_reset(s);
  if (rc) goto out;
  rc = srv_store_stmt(st, "INSERT INTO jobs(n, depth, min_depth, quorum, max_results, state, "
                          "created, unit_seconds, seed, first_unit) VALUES (?1, ?2, ?2, ?3, ?4, "
                          "'creating', ?5, ?6, ?7, ?8)", &s);
  if (rc) goto out;
  sqlite3_bind_int(s, 1, sp->job.n);
  sqlite3_bind_int(s, 2, sp->job.depth > 0 ? sp->job.depth : 2);
  sqlite3_bind_int(s, 3, sp->job.quorum);
  sqlite3_bind_int(s, 4, sp->job.max_results);
  sqlite3_bind_int64(s, 5, now);
  sqlite3_bind_double(s, 6, sp->job.depth > 0 ? 0.0
                            : sp->job.unit_seconds > 0 ? sp->job.unit_seconds
                                                   : NQ_PLAN_DEFAULT_UNIT_SECONDS);
  sqlite3_bind_int64(s, 7, (int64_t)seed);
  sqlite3_bind_int64(s, 8, c->first);
  if ((rc = srv_store_step(st, s, "job insert")) != 0) goto out;
  c->job_id = sqlite3_last_insert_rowid(st->db);
  if (sp->job.diverse_kernels && (rc = srv_job_kernels_set(st, c->job_id, sp->job.diverse_kernels)) != 0)
    goto out;
  rc = srv_store_stmt(st, "INSERT INTO job_stats(job_id, fresh) VALUES (?1, ?2)", &s);
  if (rc) goto out;
  sqlite3_bind_int64(s, 1, c->job_id);
  sqlite3_bind_int64(s, 2, c->first);
  rc = srv_store_step(st, s, "job counters");
out:
  if (rc) {
    srv_store_rollback(st);
    return rc;
  }
  return srv_store_commit(st);
}

/* The last batch, the plan's summary, and the job becomes running. */
static int creator_end(creator_t *c, const nq_plan_summary_t *sum) {
  srv_store_t *st = c->st;
  sqlite3_stmt *s;
  int rc = creator_flush(c, 1);
  if (rc) return rc;
  rc = srv_store_stmt(st, "UPDATE jobs SET state = 'running', depth = ?2, min_depth = ?3, "
                          "internal = ?4, est_nodes = ?5, est_se = ?6 WHERE id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, c->job_id);
  sqlite3_bind_int(s, 2, c->max_depth);
  sqlite3_bind_int(s, 3, c->min_depth);
  sqlite3_bind_int64(s, 4, (int64_t)sum->internal);
  sqlite3_bind_double(s, 5, sum->est_nodes);
  sqlite3_bind_double(s, 6, sum->est_se);
  if ((rc = srv_store_step(st, s, "job ready")) != 0) return rc;
  if ((rc = srv_store_commit(st)) != 0) return rc;
  creator_progress(c, 1);
  /* The batches went through the WAL; fold it into the database so the disk holds one copy. */
  sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
  return 0;
}


/* ---- the plan's thread: planning and inserting run side by side ---------------------------- */

/* The plan (probes, about half of a unit's cost) runs on its own thread and hands its units over
 * in chunks through a small ring; the store's thread inserts them. Memory: PIPE_SLOTS chunks. */
#define PIPE_CHUNK 4096
#define PIPE_SLOTS 8

typedef struct pipe_s {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  nq_plan_unit_t *slot[PIPE_SLOTS];
  int count[PIPE_SLOTS];
  unsigned head, tail; /* chunks handed over / taken back; head - tail <= PIPE_SLOTS */
  int stop;            /* the inserting side failed: the plan stops at its next unit */
  int done;            /* the plan has ended (rc, err, sum say how) */
  int rc;
  char err[400];
  nq_plan_summary_t sum;
  const nq_plan_opts_t *o;
  pthread_t thread;
} pipe_t;

/* The plan's callback: fill the chunk at head; hand it over when full, waiting for room. */
static int pipe_unit(const nq_plan_unit_t *pu, void *arg) {
  pipe_t *p = arg;
  unsigned k = p->head % PIPE_SLOTS; /* the producer owns slot head (head - tail < PIPE_SLOTS) */
  p->slot[k][p->count[k]++] = *pu;
  if (p->count[k] < PIPE_CHUNK) return 0;
  pthread_mutex_lock(&p->lock);
  p->head++;
  pthread_cond_broadcast(&p->cond);
  while (p->head - p->tail == PIPE_SLOTS && !p->stop) pthread_cond_wait(&p->cond, &p->lock);
  int stop = p->stop;
  if (!stop) p->count[p->head % PIPE_SLOTS] = 0;
  pthread_mutex_unlock(&p->lock);
  return stop ? NQ_ECANCELED : 0;
}

static void *pipe_main(void *arg) {
  pipe_t *p = arg;
  int rc = nq_plan_run(p->o, pipe_unit, p, &p->sum, p->err, sizeof p->err);
  pthread_mutex_lock(&p->lock);
  if (rc == 0 && p->count[p->head % PIPE_SLOTS] > 0) p->head++; /* the last, partial chunk */
  p->rc = rc;
  p->done = 1;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

static int pipe_start(pipe_t *p, const nq_plan_opts_t *o) {
  memset(p, 0, sizeof *p);
  p->o = o;
  for (int i = 0; i < PIPE_SLOTS; i++)
    if (!(p->slot[i] = malloc(PIPE_CHUNK * sizeof *p->slot[i]))) goto fail;
  if (pthread_mutex_init(&p->lock, NULL) != 0) goto fail;
  if (pthread_cond_init(&p->cond, NULL) != 0) {
    pthread_mutex_destroy(&p->lock);
    goto fail;
  }
  if (pthread_create(&p->thread, NULL, pipe_main, p) == 0) return 0;
  pthread_cond_destroy(&p->cond);
  pthread_mutex_destroy(&p->lock);
fail:
  for (int i = 0; i < PIPE_SLOTS; i++) free(p->slot[i]);
  return NQ_ENOMEM;
}

/* The next full chunk (*n units), or NULL once the plan has ended and every chunk was taken. */
static const nq_plan_unit_t *pipe_next(pipe_t *p, int *n) {
  pthread_mutex_lock(&p->lock);
  while (p->tail == p->head && !p->done) pthread_cond_wait(&p->cond, &p->lock);
  const nq_plan_unit_t *c = NULL;
  if (p->tail != p->head) {
    c = p->slot[p->tail % PIPE_SLOTS];
    *n = p->count[p->tail % PIPE_SLOTS];
  }
  pthread_mutex_unlock(&p->lock);
  return c;
}

/* Give the chunk pipe_next returned back to the plan. */
static void pipe_release(pipe_t *p) {
  pthread_mutex_lock(&p->lock);
  p->tail++;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
}

/* Stop (after a failure of the inserting side: stop set), join, free. Returns the plan's code. */
static int pipe_end(pipe_t *p, int stop) {
  pthread_mutex_lock(&p->lock);
  if (stop) p->stop = 1;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  pthread_join(p->thread, NULL);
  pthread_cond_destroy(&p->cond);
  pthread_mutex_destroy(&p->lock);
  for (int i = 0; i < PIPE_SLOTS; i++) free(p->slot[i]);
  return p->rc;
}

/* Run the plan on its thread and insert what it hands over; *sum as nq_plan_run's. */
static int plan_insert(creator_t *c, const nq_plan_opts_t *o, nq_plan_summary_t *sum, char *err,
                       size_t errlen) {
  pipe_t p;
  int rc = pipe_start(&p, o);
  if (rc) return srv_store_failf(c->st, rc, "cannot start the plan's thread");
  const nq_plan_unit_t *chunk;
  int n = 0;
  while (rc == 0 && (chunk = pipe_next(&p, &n)) != NULL) {
    for (int i = 0; i < n && rc == 0; i++) rc = creator_unit(&chunk[i], c);
    pipe_release(&p);
  }
  int prc = pipe_end(&p, rc != 0);
  if (rc) return rc;
  if (prc) {
    snprintf(err, errlen, "%s", p.err[0] ? p.err : nq_strerror(prc));
    return srv_store_failf(c->st, prc, "%s", err);
  }
  *sum = p.sum;
  return 0;
}

static int job_create(srv_store_t *st, const srv_job_spec_t *sp, int64_t now, int64_t *job_id) {
  nq_plan_opts_t o;
  char err[400] = "";
  int rc = spec_plan(sp, &o, err, sizeof err);
  if (rc) return srv_store_failf(st, rc, "%s", err);
  creator_t c;
  memset(&c, 0, sizeof c);
  c.st = st;
  c.sp = sp;
  c.batch = sp->batch > 0 ? sp->batch : SRV_JOB_BATCH;
  c.t0 = nq_now_mono();
  if (sp->progress) {
    /* A quick whole-N estimate (about a millisecond) turns the units' estimates into a share. */
    nq_est_opts_t eo = {sp->job.n, 2, o.seed, 0, 0, 0};
    nq_est_report_t rep;
    if (nq_estimate_n(&eo, &rep) == 0) c.whole = rep.nodes;
  }
  if ((rc = creator_begin(&c, now, o.seed)) != 0) return rc;
  *job_id = c.job_id;
  rc = srv_store_stmt(st, "INSERT INTO units(id, job_id, idx, text, part, bound1, need, "
                          "est_nodes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", &c.ins);
  /* The units' one foreign key (job_id) is this job's, by construction; checking it for every
   * insert makes SQLite open a statement journal per row, a third of the insert's cost. */
  if (rc == 0) rc = srv_store_exec(st, "PRAGMA foreign_keys=OFF");
  if (rc == 0) rc = srv_store_begin(st);
  nq_plan_summary_t sum;
  memset(&sum, 0, sizeof sum);
  /* The plan's own refusals (guard, max_units) carry their message in err. */
  if (rc == 0) rc = plan_insert(&c, &o, &sum, err, sizeof err);
  if (rc == 0) rc = creator_end(&c, &sum);
  if (srv_store_in_tx(st)) srv_store_rollback(st);
  if (srv_store_exec(st, "PRAGMA foreign_keys=ON") != 0 && rc == 0) rc = NQ_EIO;
  if (rc == 0) return 0;
  /* Leave nothing behind: the committed batches go again, in batches. */
  char keep[sizeof st->err];
  memcpy(keep, st->err, sizeof keep);
  if (srv_store_in_tx(st)) srv_store_rollback(st);
  srv_job_t j;
  if (srv_job_get(st, c.job_id, &j) == 0) srv_job_drop(st, &j, c.batch);
  memcpy(st->err, keep, sizeof keep);
  return rc;
}

/* Do the stored job's units come from this spec? A spec without depth or seconds resumes any. */
static int spec_matches(srv_store_t *st, const srv_job_spec_t *sp, const srv_job_t *j) {
  char have[96], want[96];
  if (sp->job.depth == 0 && sp->job.unit_seconds <= 0) return 0;
  if (j->unit_seconds > 0)
    snprintf(have, sizeof have, "units of --unit-seconds %g (depths %d-%d)", j->unit_seconds,
             j->min_depth, j->depth);
  else
    snprintf(have, sizeof have, "depth %d", j->depth);
  if (sp->job.depth > 0) snprintf(want, sizeof want, "depth %d", sp->job.depth);
  else snprintf(want, sizeof want, "--unit-seconds %g", sp->job.unit_seconds);
  int same = sp->job.depth > 0 ? j->unit_seconds == 0 && j->depth == sp->job.depth
                           : j->unit_seconds == sp->job.unit_seconds;
  if (same) return 0;
  return srv_store_failf(st, NQ_EEXIST, "job for N=%d exists with %s, not %s (start with the "
                         "same setting to resume it, or archive it first: nq-admin job archive %d)",
                         j->n, have, want, j->n);
}

int srv_job_open(srv_store_t *st, const srv_job_spec_t *sp, int64_t now, srv_job_t *job) {
  if (sp->job.n < NQ_UNIT_MIN_N || sp->job.n > NQ_MAX_N || sp->job.quorum < 1 ||
      sp->job.max_results < sp->job.quorum || sp->job.depth < 0)
    return srv_store_failf(st, NQ_ERANGE, "job: N %d, quorum %d, max_results %d out of range",
                           sp->job.n, sp->job.quorum, sp->job.max_results);
  if (srv_store_in_tx(st))
    return srv_store_failf(st, NQ_ETXN, "job creation inside a transaction");
  int rc = srv_job_find_n(st, sp->job.n, job);
  if (rc == 0 && job->state == SRV_JOB_CREATING) {
    /* A creation cut off by a crash: its units are a prefix of a plan; start over. */
    if ((rc = srv_job_drop(st, job, sp->batch)) != 0) return rc;
    rc = NQ_ENOTFOUND;
  } else if (rc == 0) {
    return spec_matches(st, sp, job);
  }
  if (rc != NQ_ENOTFOUND) return rc;
  int64_t id = 0;
  if ((rc = job_create(st, sp, now, &id)) != 0) return rc;
  return srv_job_get(st, id, job);
}

int srv_job_ensure(srv_store_t *st, int n, int depth, int quorum, int max_results, int64_t now,
                   srv_job_t *job) {
  srv_job_spec_t sp = {.job = {.n = n, .depth = depth, .quorum = quorum, .max_results = max_results}};
  if (depth < 1)
    return srv_store_failf(st, NQ_ERANGE, "depth %d is out of range for N=%d", depth, n);
  return srv_job_open(st, &sp, now, job);
}

/* Delete the job's rows, `batch` units per transaction, then the job itself. */
int srv_job_drop(srv_store_t *st, const srv_job_t *job, int batch) {
  static const char *const del[] = {
      "DELETE FROM assignments WHERE unit_id BETWEEN ?2 AND ?3 AND unit_id IN "
      "(SELECT id FROM units WHERE id BETWEEN ?2 AND ?3 AND job_id = ?1)",
      "DELETE FROM units WHERE id BETWEEN ?2 AND ?3 AND job_id = ?1"};
  static const char *const tail[] = {"DELETE FROM job_rate WHERE job_id = ?1",
                                     "DELETE FROM job_history WHERE job_id = ?1",
                                     "DELETE FROM job_stats WHERE job_id = ?1",
                                     "DELETE FROM jobs WHERE id = ?1"};
  if (batch <= 0) batch = SRV_JOB_BATCH;
  int rc = 0;
  sqlite3_stmt *s;
  int64_t end = job->first_unit + job->units;
  for (int64_t lo = job->first_unit; lo < end && rc == 0; lo += batch) {
    if ((rc = srv_store_begin(st)) != 0) break;
    for (size_t i = 0; i < 2 && rc == 0; i++) {
      if ((rc = srv_store_stmt(st, del[i], &s)) != 0) break;
      sqlite3_bind_int64(s, 1, job->id);
      sqlite3_bind_int64(s, 2, lo);
      sqlite3_bind_int64(s, 3, lo + batch - 1 < end - 1 ? lo + batch - 1 : end - 1);
      rc = srv_store_step(st, s, "job delete");
    }
    rc = rc ? (srv_store_rollback(st), rc) : srv_store_commit(st);
  }
  /* The job's row goes last; a unit of it outside its id range would be a bug, and the
   * foreign key then refuses the delete rather than leave the unit orphaned. */
  if (rc == 0) rc = srv_store_begin(st);
  for (size_t i = 0; i < sizeof tail / sizeof *tail && rc == 0; i++) {
    if ((rc = srv_store_stmt(st, tail[i], &s)) != 0) break;
    sqlite3_bind_int64(s, 1, job->id);
    rc = srv_store_step(st, s, "job delete");
  }
  if (srv_store_in_tx(st)) rc = rc ? (srv_store_rollback(st), rc) : srv_store_commit(st);
  if (rc == 0) sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
  return rc;
}

/* ---- archive (srv_job_archive, store_api.c) and diverse_kernels (schema 016) -------------- */

int srv_job_set_archived(srv_store_t *st, int64_t job_id, int64_t now) {
  return srv_store_exec3(st, "UPDATE jobs SET state = 'archived', archived = ?2 WHERE id = ?1",
                         job_id, now, 0, "job archive");
}

#define KERNELS_SCHEMA 16

int srv_job_kernels_get(srv_store_t *st, int64_t job_id, int *k) {
  *k = 0;
  if (!srv_store_schema_has(st, KERNELS_SCHEMA)) return 0;
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "SELECT diverse_kernels FROM jobs WHERE id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, job_id);
  int sr = sqlite3_step(q);
  if (sr == SQLITE_ROW) *k = sqlite3_column_int(q, 0);
  else if (sr == SQLITE_DONE) rc = srv_store_failf(st, NQ_ENOTFOUND, "no job %lld", (long long)job_id);
  else rc = srv_store_fail(st, "job kernels");
  sqlite3_reset(q);
  return rc;
}

int srv_job_kernels_set(srv_store_t *st, int64_t job_id, int k) {
  if (k < 0 || k > SRV_KERNELS_MAX)
    return srv_store_failf(st, NQ_ERANGE, "diverse kernels %d outside 0..%d", k, SRV_KERNELS_MAX);
  if (!srv_store_schema_has(st, KERNELS_SCHEMA))
    return srv_store_failf(st, NQ_ESCHEMA, "diverse kernels need schema %d", KERNELS_SCHEMA);
  return srv_store_exec3(st, "UPDATE jobs SET diverse_kernels = ?2 WHERE id = ?1", job_id, k, 0,
                         "job kernels");
}
