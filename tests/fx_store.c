/* Store fixtures shared by the suites of the store, the scheduler and the admin API
 * (test_store.c, test_sched.c, test_admin.c): a fresh database in its own temp dir with one job,
 * clients, get_work and results each in their own transaction as the network layer would run
 * them, true and false counts, and a checker of the store's invariants. */
#include "fx_store.h"

#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/unit.h"
#include "store_int.h"
#include "testutil.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The store commits with synchronous=FULL: an fsync per transaction, which is what a power cut
 * needs and no test here can tell apart (a killed process loses nothing either way: its writes
 * are in the kernel). The suites run thousands of transactions on a disk-backed /tmp, so the
 * fixtures' databases skip the fsyncs. */
void fx_reopen(fx_t *f) {
  char err[256] = "";
  int rc = srv_store_open(&f->st, f->path, SCHEMA, err, sizeof err);
  ck_assert_msg(rc == 0, "open: %s", err);
  ck_assert_int_eq(srv_store_exec(f->st, "PRAGMA synchronous=OFF"), 0);
}

void fx_open(fx_t *f, const char *tag, int64_t t0) {
  memset(f, 0, sizeof *f);
  f->dir = tu_tmpdir(tag);
  ck_assert_ptr_nonnull(f->dir);
  snprintf(f->path, sizeof f->path, "%s/nq.db", f->dir);
  f->t0 = t0;
  fx_reopen(f);
}

void fx_job(fx_t *f, int n, int depth, int quorum, int max_results, const srv_sched_config_t *cfg) {
  int rc = srv_job_ensure(f->st, n, depth, quorum, max_results, f->t0, &f->job);
  ck_assert_msg(rc == 0, "job: %s", srv_store_errmsg(f->st));
  /* A fixed spot-check seed: the tests replay the same draws every run. */
  srv_sched_config_t c;
  if (cfg) c = *cfg;
  else srv_sched_config_default(&c);
  if (c.seed == 0) c.seed = 0x6e71;
  ck_assert_int_eq(srv_sched_init(&f->sched, f->st, f->job.id, &c), 0);
}

void fx_init(fx_t *f, int n, int depth, int quorum, int max_results,
             const srv_sched_config_t *cfg) {
  fx_open(f, "store", T0);
  fx_job(f, n, depth, quorum, max_results, cfg);
}

void fx_done(fx_t *f) {
  srv_store_close(f->st);
  tu_rmtree(f->dir);
  free(f->dir);
}

int64_t fx_client(fx_t *f, const char *name) {
  char hash[80];
  snprintf(hash, sizeof hash, "hash-of-%s", name);
  srv_client_t c;
  srv_owner_t o;
  ck_assert_int_eq(srv_client_create(f->st, name, hash, f->t0, &c), 0);
  /* Each client its own owner, so that quorums by owner (the default) behave as by client. */
  char oname[80];
  snprintf(oname, sizeof oname, "o-%s", name);
  ck_assert_int_eq(srv_owner_create(f->st, oname, NULL, f->t0, &o), 0);
  ck_assert_int_eq(srv_client_set_owner(f->st, c.id, o.id), 0);
  return c.id;
}

int64_t fx_client_of_owner(fx_t *f, const char *name, int64_t owner_id) {
  char hash[80];
  snprintf(hash, sizeof hash, "hash-of-%s", name);
  srv_client_t c;
  ck_assert_int_eq(srv_client_create(f->st, name, hash, f->t0, &c), 0);
  ck_assert_int_eq(srv_client_set_owner(f->st, c.id, owner_id), 0);
  return c.id;
}

/* get_work in its own transaction, as the network layer would do it. */
int fx_work(fx_t *f, int64_t client, int want, int64_t now, srv_work_t *out, srv_nowork_t *why) {
  int n = -1;
  srv_nowork_t w;
  ck_assert_int_eq(srv_store_begin(f->st), 0);
  int rc = srv_sched_get_work(&f->sched, client, want, now, out, &n, why ? why : &w);
  ck_assert_int_eq(srv_store_commit(f->st), 0);
  return rc == 0 ? n : rc;
}

int fx_sched_result(srv_sched_t *s, int64_t client, int64_t asg, const char *unit,
                    const nq_counts_t *c, double seconds, const char *solver, const char *backend,
                    int64_t now, srv_result_info_t *info) {
  nq_result_t r;
  memset(&r, 0, sizeof r);
  r.id = asg;
  snprintf(r.unit, sizeof r.unit, "%s", unit ? unit : "");
  r.counts = *c;
  r.seconds = seconds;
  snprintf(r.solver, sizeof r.solver, "%s", solver ? solver : "");
  snprintf(r.backend, sizeof r.backend, "%s", backend ? backend : "");
  return srv_sched_result(s, client, &r, now, info);
}

int fx_report_secs(fx_t *f, int64_t client, int64_t asg, const char *unit, const nq_counts_t *c,
                   double seconds, const char *solver, int64_t now, srv_result_info_t *info) {
  ck_assert_int_eq(srv_store_begin(f->st), 0);
  int rc = fx_sched_result(&f->sched, client, asg, unit, c, seconds, solver, NULL, now, info);
  ck_assert_int_eq(srv_store_commit(f->st), 0);
  return rc;
}

int fx_report(fx_t *f, int64_t client, int64_t asg, const char *unit, const nq_counts_t *c,
              const char *solver, int64_t now, srv_result_info_t *info) {
  return fx_report_secs(f, client, asg, unit, c, 0.5, solver, now, info);
}

/* The true counts of a unit, by the fast solver. */
nq_counts_t fx_solve(const char *text) {
  nq_unit_t u;
  nq_counts_t c;
  ck_assert_int_eq(nq_unit_parse(text, &u, NULL, 0), 0);
  ck_assert_int_eq(nq_fast_solve_unit(&u, &c), 0);
  return c;
}

/* A wrong answer that still passes validation: one more COUNT8 solution. */
nq_counts_t fx_lie(const char *text) {
  nq_counts_t c = fx_solve(text);
  c.c8++;
  if (c.c2 + c.c4 + c.c8 > c.nodes) c.nodes = c.c2 + c.c4 + c.c8;
  return c;
}

int fx_report_true(fx_t *f, int64_t client, const srv_work_t *w, int64_t now,
                   srv_result_info_t *info) {
  nq_counts_t c = fx_solve(w->unit);
  return fx_report(f, client, w->id, w->unit, &c, NQ_SOLVER_VERSION, now, info);
}

srv_unit_info_t fx_unit(fx_t *f, int64_t unit_id) {
  srv_unit_info_t u;
  ck_assert_int_eq(srv_unit_get(f->st, unit_id, &u), 0);
  return u;
}

srv_client_t fx_client_of(fx_t *f, int64_t id) {
  srv_client_t c;
  ck_assert_int_eq(srv_client_get(f->st, id, &c), 0);
  return c;
}

/* One integer from a query on a separate read-only connection. */
int64_t fx_q1(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *s = NULL;
  ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
                sqlite3_errmsg(db));
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  int64_t v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

void fx_qs(const char *path, const char *sql, char *buf, size_t len) {
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *s = NULL;
  ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  snprintf(buf, len, "%s", (const char *)sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
}

/* The store's invariants: each generated unit exists exactly once; the maintained counters
 * equal a recount; a verified unit has at least `quorum` valid results; no client holds two
 * assignments of one unit; live leases only on open units. */
void fx_check_invariants(fx_t *f) {
  const char *p = f->path;
  ck_assert_int_eq(fx_q1(p, "SELECT count(*) FROM units"), f->job.units);
  ck_assert_int_eq(fx_q1(p, "SELECT count(DISTINCT text) FROM units"), f->job.units);
  ck_assert_int_eq(fx_q1(p, "SELECT count(DISTINCT idx) FROM units"), f->job.units);
  ck_assert_int_eq(fx_q1(p, "SELECT count(*) FROM units u WHERE live != (SELECT count(*) FROM "
                            "assignments a WHERE a.unit_id = u.id AND a.state = 'leased') OR "
                            "results != (SELECT count(*) FROM assignments a WHERE a.unit_id = u.id "
                            "AND a.reported_at IS NOT NULL)"),
                   0);
  ck_assert_int_eq(fx_q1(p, "SELECT count(*) FROM units u JOIN jobs j ON j.id = u.job_id WHERE "
                            "u.state = 'verified' AND u.contest < 2 AND (SELECT count(*) FROM "
                            "assignments a WHERE a.unit_id = u.id AND a.state = 'valid') "
                            "< j.quorum"),
                   0);
  ck_assert_int_eq(fx_q1(p, "SELECT count(*) FROM (SELECT unit_id, client_id FROM assignments "
                            "GROUP BY unit_id, client_id, evidence HAVING count(*) > 1)"),
                   0);
  /* A verified unit takes nothing more; a disputed one keeps taking replicas (schema 006). */
  ck_assert_int_eq(fx_q1(p, "SELECT count(*) FROM units WHERE state = 'verified' "
                            "AND (live > 0 OR need > 0)"),
                   0);
  ck_assert_int_eq(fx_q1(p, "SELECT count(*) FROM units WHERE state = 'pending' "
                            "AND (live > 0 OR results > 0)"),
                   0);
  fx_check_counters(f);
}

void fx_check_counters(fx_t *f) {
  const char *p = f->path;
  /* Every counter equals the scan it stands for (the store's own check, the one a backup
   * passes: job_stats, job_rate, the units' live and results, credit; srv_store_check). */
  srv_store_t *ro = NULL;
  char err[256] = "";
  ck_assert_msg(srv_store_open_ro(&ro, p, err, sizeof err) == 0, "open: %s", err);
  srv_check_t c;
  ck_assert_msg(srv_store_check(ro, &c) == 0, "check: %s", srv_store_errmsg(ro));
  ck_assert_msg(c.problems == 0, "%lld problem(s): %s", (long long)c.problems, c.first);
  srv_store_close(ro);
  /* A unit is touched once it has an assignment; every unit below its job's fresh cursor is. */
  ck_assert_int_eq(fx_q1(p, "SELECT count(*) FROM units u WHERE touched != EXISTS (SELECT 1 "
                            "FROM assignments a WHERE a.unit_id = u.id)"), 0);
  ck_assert_int_eq(fx_q1(p, "SELECT count(*) FROM units u JOIN job_stats s ON s.job_id = "
                            "u.job_id WHERE u.touched = 0 AND u.id < s.fresh"), 0);
}

/* Clients take turns asking for work (2 at a time), compute each unit with the fast solver and
 * report, until the job is done. Returns the number of results reported. */
int fx_run_to_done(fx_t *f, const int64_t *cl, int ncl, int64_t *now) {
  srv_work_t w[2];
  int done = 0, rounds = 0, reports = 0;
  while (!done && rounds++ < 10000) {
    for (int i = 0; i < ncl && !done; i++) {
      srv_nowork_t why;
      int n = fx_work(f, cl[i], 2, (*now)++, w, &why);
      ck_assert_int_ge(n, 0);
      for (int k = 0; k < n; k++) {
        srv_result_info_t info;
        ck_assert_int_eq(fx_report_true(f, cl[i], &w[k], *now, &info), 0);
        ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
        reports++;
        done |= info.job_done;
      }
      if (n == 0 && why == SRV_NOWORK_DONE) done = 1;
    }
  }
  ck_assert(done);
  return reports;
}

void fx_check_n8_totals(fx_t *f) {
  srv_job_t j;
  ck_assert_int_eq(srv_job_get(f->st, f->job.id, &j), 0);
  ck_assert_int_eq(j.state, SRV_JOB_DONE);
  ck_assert_int_gt(j.finished, 0);
  const nq_known_t *k = nq_known(8);
  char buf[40];
  ck_assert_str_eq(nq_u128_str(nq_totals_total(&j.totals), buf), k->total);
  ck_assert_str_eq(nq_u128_str(nq_totals_unique(&j.totals), buf), k->unique);
  ck_assert_str_eq(nq_u128_str(j.totals.c2, buf), k->c2);
  ck_assert_str_eq(nq_u128_str(j.totals.c4, buf), k->c4);
  ck_assert_str_eq(nq_u128_str(j.totals.c8, buf), k->c8);
  char txt[40];
  fx_qs(f->path, "SELECT total || '/' || uniq FROM jobs", txt, sizeof txt);
  ck_assert_str_eq(txt, "92/12");
}

int64_t fx_asg_state(fx_t *f, int64_t asg_id) {
  srv_asg_info_t a;
  ck_assert_int_eq(srv_asg_get(f->st, asg_id, &a), 0);
  return a.state;
}
