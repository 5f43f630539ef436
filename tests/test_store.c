/* Store and scheduler suite: schema and migrations, job creation and resume, a whole N = 8 job
 * computed by simulated clients through the scheduler, quorum and trust (mismatch, dispute,
 * auto-ban), leases (expiry, reissue, progress, cap), result validation, group commit and what
 * survives a kill. Every test gets a fresh database in its own temp dir; the clock is simulated. */
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/unit.h"
#include "sched.h"
#include "store.h"
#include "testutil.h"

#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define T0 1700000000 /* the simulated clock starts here */
#define SCHEMA NQ_SOURCE_DIR "/schema"

typedef struct fx_s {
  char *dir;
  char path[600];
  srv_store_t *st;
  srv_job_t job;
  srv_sched_t sched;
} fx_t;

static void fx_reopen(fx_t *f) {
  char err[256] = "";
  int rc = srv_store_open(&f->st, f->path, SCHEMA, err, sizeof err);
  ck_assert_msg(rc == 0, "open: %s", err);
}

/* A fresh store with one job; cfg NULL = scheduler defaults. */
static void fx_init(fx_t *f, int n, int depth, int quorum, int max_results,
                    const srv_sched_config_t *cfg) {
  memset(f, 0, sizeof *f);
  f->dir = tu_tmpdir("store");
  ck_assert_ptr_nonnull(f->dir);
  snprintf(f->path, sizeof f->path, "%s/nq.db", f->dir);
  fx_reopen(f);
  int rc = srv_job_ensure(f->st, n, depth, quorum, max_results, T0, &f->job);
  ck_assert_msg(rc == 0, "job: %s", srv_store_errmsg(f->st));
  ck_assert_int_eq(srv_sched_init(&f->sched, f->st, f->job.id, cfg), 0);
}

static void fx_done(fx_t *f) {
  srv_store_close(f->st);
  tu_rmtree(f->dir);
  free(f->dir);
}

static int64_t mk_client(fx_t *f, const char *name) {
  char hash[80];
  snprintf(hash, sizeof hash, "hash-of-%s", name);
  srv_client_t c;
  ck_assert_int_eq(srv_client_create(f->st, name, hash, T0, &c), 0);
  return c.id;
}

/* get_work in its own transaction, as the network layer would do it. */
static int work(fx_t *f, int64_t client, int want, int64_t now, srv_work_t *out,
                srv_nowork_t *why) {
  int n = -1;
  srv_nowork_t w;
  ck_assert_int_eq(srv_store_begin(f->st), 0);
  int rc = srv_sched_get_work(&f->sched, client, want, now, out, &n, why ? why : &w);
  ck_assert_int_eq(srv_store_commit(f->st), 0);
  return rc == 0 ? n : rc;
}

static int report_secs(fx_t *f, int64_t client, int64_t asg, const char *unit,
                       const nq_counts_t *c, double seconds, const char *solver, int64_t now,
                       srv_result_info_t *info) {
  ck_assert_int_eq(srv_store_begin(f->st), 0);
  int rc = srv_sched_result(&f->sched, client, asg, unit, c, seconds, solver, now, info);
  ck_assert_int_eq(srv_store_commit(f->st), 0);
  return rc;
}

static int report(fx_t *f, int64_t client, int64_t asg, const char *unit, const nq_counts_t *c,
                  const char *solver, int64_t now, srv_result_info_t *info) {
  return report_secs(f, client, asg, unit, c, 0.5, solver, now, info);
}

/* The true counts of a unit, by the fast solver. */
static nq_counts_t solve(const char *text) {
  nq_unit_t u;
  nq_counts_t c;
  ck_assert_int_eq(nq_unit_parse(text, &u, NULL, 0), 0);
  ck_assert_int_eq(nq_fast_solve_unit(&u, &c), 0);
  return c;
}

/* A wrong answer that still passes validation: one more COUNT8 solution. */
static nq_counts_t lie(const char *text) {
  nq_counts_t c = solve(text);
  c.c8++;
  if (c.c2 + c.c4 + c.c8 > c.nodes) c.nodes = c.c2 + c.c4 + c.c8;
  return c;
}

static int report_true(fx_t *f, int64_t client, const srv_work_t *w, int64_t now,
                       srv_result_info_t *info) {
  nq_counts_t c = solve(w->unit);
  return report(f, client, w->id, w->unit, &c, NQ_SOLVER_VERSION, now, info);
}

static srv_unit_info_t unit_of(fx_t *f, int64_t unit_id) {
  srv_unit_info_t u;
  ck_assert_int_eq(srv_unit_get(f->st, unit_id, &u), 0);
  return u;
}

static srv_client_t client_of(fx_t *f, int64_t id) {
  srv_client_t c;
  ck_assert_int_eq(srv_client_get(f->st, id, &c), 0);
  return c;
}

/* One integer from a query on a separate read-only connection. */
static int64_t q1(const char *path, const char *sql) {
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

static void qs(const char *path, const char *sql, char *buf, size_t len) {
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
static void check_invariants(fx_t *f) {
  const char *p = f->path;
  ck_assert_int_eq(q1(p, "SELECT count(*) FROM units"), f->job.units);
  ck_assert_int_eq(q1(p, "SELECT count(DISTINCT text) FROM units"), f->job.units);
  ck_assert_int_eq(q1(p, "SELECT count(DISTINCT idx) FROM units"), f->job.units);
  ck_assert_int_eq(q1(p, "SELECT count(*) FROM units u WHERE live != (SELECT count(*) FROM "
                         "assignments a WHERE a.unit_id = u.id AND a.state = 'leased') OR "
                         "results != (SELECT count(*) FROM assignments a WHERE a.unit_id = u.id "
                         "AND a.reported_at IS NOT NULL)"), 0);
  ck_assert_int_eq(q1(p, "SELECT count(*) FROM units u JOIN jobs j ON j.id = u.job_id WHERE "
                         "u.state = 'verified' AND (SELECT count(*) FROM assignments a WHERE "
                         "a.unit_id = u.id AND a.state = 'valid') < j.quorum"), 0);
  ck_assert_int_eq(q1(p, "SELECT count(*) FROM (SELECT unit_id, client_id FROM assignments "
                         "GROUP BY unit_id, client_id HAVING count(*) > 1)"), 0);
  ck_assert_int_eq(q1(p, "SELECT count(*) FROM units WHERE state IN ('verified', 'disputed') "
                         "AND (live > 0 OR need > 0)"), 0);
  ck_assert_int_eq(q1(p, "SELECT count(*) FROM units WHERE state = 'pending' "
                         "AND (live > 0 OR results > 0)"), 0);
}

static int count_units_cb(const nq_unit_t *u, void *arg) {
  (void)u;
  (*(int64_t *)arg)++;
  return 0;
}

/* ---- schema / jobs ------------------------------------------------------------------------ */

START_TEST(schema_applied_once) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int v = 0;
  ck_assert_int_eq(srv_store_schema_version(f.st, &v), 0);
  ck_assert_int_eq(v, 3);
  srv_store_close(f.st);
  fx_reopen(&f); /* the second open applies nothing and keeps the data */
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM schema_version"), 3);
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM jobs"), 1);
  ck_assert_int_eq(srv_meta_set(f.st, "k", "v1"), 0);
  ck_assert_int_eq(srv_meta_set(f.st, "k", "v2"), 0);
  char buf[16];
  ck_assert_int_eq(srv_meta_get(f.st, "k", buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "v2");
  ck_assert_int_eq(srv_meta_get(f.st, "nope", buf, sizeof buf), NQ_ENOTFOUND);
  /* WAL is a property of the file; foreign keys are enforced on the store's connection. */
  char mode[16];
  qs(f.path, "PRAGMA journal_mode", mode, sizeof mode);
  ck_assert_str_eq(mode, "wal");
  ck_assert_int_eq(srv_store_exec(f.st, "INSERT INTO units(job_id, idx, text, part, bound1) "
                                        "VALUES (999, 0, 'x', 'c', 2)"), NQ_EIO);
  fx_done(&f);
}
END_TEST

START_TEST(schema_dir_errors) {
  char *dir = tu_tmpdir("schema");
  char path[600], err[256] = "";
  snprintf(path, sizeof path, "%s/nq.db", dir);
  srv_store_t *st = (srv_store_t *)1;
  ck_assert_int_eq(srv_store_open(&st, path, "/nonexistent/schema", err, sizeof err), NQ_EIO);
  ck_assert_ptr_null(st);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/schema"));
  /* A database newer than the files is refused rather than half understood. */
  ck_assert_int_eq(srv_store_open(&st, path, SCHEMA, err, sizeof err), 0);
  ck_assert_int_eq(srv_store_exec(st, "INSERT INTO schema_version VALUES (99, 'x', 0)"), 0);
  srv_store_close(st);
  ck_assert_int_eq(srv_store_open(&st, path, SCHEMA, err, sizeof err), NQ_ESCHEMA);
  ck_assert_ptr_nonnull(strstr(err, "newer"));
  /* $NQ_SCHEMA_DIR is used when no dir is given. */
  char path2[600];
  snprintf(path2, sizeof path2, "%s/nq2.db", dir);
  setenv("NQ_SCHEMA_DIR", "/nonexistent/env", 1);
  ck_assert_int_eq(srv_store_open(&st, path2, NULL, err, sizeof err), NQ_EIO);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/env"));
  setenv("NQ_SCHEMA_DIR", SCHEMA, 1);
  ck_assert_int_eq(srv_store_open(&st, path2, NULL, err, sizeof err), 0);
  srv_store_close(st);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  ck_assert_ptr_nonnull(in);
  ck_assert_ptr_nonnull(out);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
  fclose(in);
  ck_assert_int_eq(fclose(out), 0);
}

/* A database made by a server that knew only 001 is brought to the current schema at open, in
 * place, with its data; an old server then refuses the newer database. */
START_TEST(schema_migrates_from_001) {
  char *dir = tu_tmpdir("schema");
  char old_dir[600], path[600], err[256] = "";
  snprintf(old_dir, sizeof old_dir, "%s/schema-001", dir);
  snprintf(path, sizeof path, "%s/nq.db", dir);
  ck_assert_int_eq(mkdir(old_dir, 0700), 0);
  char to[700];
  snprintf(to, sizeof to, "%s/001_init.sql", old_dir);
  copy_file(SCHEMA "/001_init.sql", to);
  srv_store_t *st = NULL;
  ck_assert_msg(srv_store_open(&st, path, old_dir, err, sizeof err) == 0, "open: %s", err);
  srv_job_t job;
  ck_assert_int_eq(srv_job_ensure(st, 8, 3, 2, 3, T0, &job), 0);
  int v = 0;
  ck_assert_int_eq(srv_store_schema_version(st, &v), 0);
  ck_assert_int_eq(v, 1);
  srv_store_close(st);
  ck_assert_int_eq(q1(path, "SELECT count(*) FROM pragma_table_info('units') "
                            "WHERE name = 'extra_results'"), 0);
  /* The current server opens it: 002 and 003 are applied once, the units keep their rows, extra 0. */
  ck_assert_msg(srv_store_open(&st, path, SCHEMA, err, sizeof err) == 0, "open: %s", err);
  ck_assert_int_eq(srv_store_schema_version(st, &v), 0);
  ck_assert_int_eq(v, 3);
  srv_store_close(st);
  ck_assert_msg(srv_store_open(&st, path, SCHEMA, err, sizeof err) == 0, "reopen: %s", err);
  srv_store_close(st);
  ck_assert_int_eq(q1(path, "SELECT count(*) FROM schema_version"), 3);
  ck_assert_int_eq(q1(path, "SELECT max(version) FROM schema_version"), 3);
  ck_assert_int_eq(q1(path, "SELECT count(*) FROM units"), job.units);
  ck_assert_int_eq(q1(path, "SELECT count(*) FROM units WHERE extra_results != 0"), 0);
  /* The migrated database works: a unit is leased through the scheduler. */
  ck_assert_int_eq(srv_store_open(&st, path, SCHEMA, err, sizeof err), 0);
  srv_sched_t sch;
  ck_assert_int_eq(srv_sched_init(&sch, st, job.id, NULL), 0);
  srv_client_t c;
  ck_assert_int_eq(srv_client_create(st, "a", "hash-a", T0, &c), 0);
  srv_work_t w;
  srv_nowork_t why;
  int n = 0;
  ck_assert_int_eq(srv_store_begin(st), 0);
  ck_assert_int_eq(srv_sched_get_work(&sch, c.id, 1, T0, &w, &n, &why), 0);
  ck_assert_int_eq(srv_store_commit(st), 0);
  ck_assert_int_eq(n, 1);
  srv_store_close(st);
  /* A server that knows only 001 must not write the newer schema. */
  ck_assert_int_eq(srv_store_open(&st, path, old_dir, err, sizeof err), NQ_ESCHEMA);
  ck_assert_ptr_null(st);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(job_create_resume_depth) {
  fx_t f;
  fx_init(&f, 10, 3, 2, 5, NULL);
  int64_t expect = 0;
  ck_assert_int_eq(nq_units_generate(10, 3, count_units_cb, &expect), 0);
  ck_assert_int_gt(expect, 10);
  ck_assert_int_eq(f.job.units, expect);
  ck_assert_int_eq(f.job.n, 10);
  ck_assert_int_eq(f.job.depth, 3);
  ck_assert_int_eq(f.job.state, SRV_JOB_RUNNING);
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM units WHERE state = 'pending'"), expect);
  check_invariants(&f);
  /* Resume after a restart: same job, stored quorum kept. */
  srv_store_close(f.st);
  fx_reopen(&f);
  srv_job_t again;
  ck_assert_int_eq(srv_job_ensure(f.st, 10, 3, 3, 7, T0 + 50, &again), 0);
  ck_assert_int_eq(again.id, f.job.id);
  ck_assert_int_eq(again.quorum, 2);
  ck_assert_int_eq(again.units, expect);
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM units"), expect);
  /* Depth 20 means N-1 = 9 for N = 10: a different split, refused with a clear message. */
  ck_assert_int_eq(srv_job_ensure(f.st, 10, 4, 2, 5, T0, &again), NQ_EEXIST);
  ck_assert_ptr_nonnull(strstr(srv_store_errmsg(f.st), "depth 3"));
  ck_assert_int_eq(srv_job_ensure(f.st, 3, 3, 2, 5, T0, &again), NQ_ERANGE);
  ck_assert_int_eq(srv_job_ensure(f.st, 12, 3, 0, 5, T0, &again), NQ_ERANGE);
  ck_assert_int_eq(srv_job_ensure(f.st, 12, 3, 3, 2, T0, &again), NQ_ERANGE);
  ck_assert_int_eq(srv_job_find_n(f.st, 12, &again), NQ_ENOTFOUND);
  fx_done(&f);
}
END_TEST

/* ---- a whole job -------------------------------------------------------------------------- */

/* Clients take turns asking for work (2 at a time), compute each unit with the fast solver and
 * report, until the job is done. Returns the number of results reported. */
static int run_to_done(fx_t *f, const int64_t *cl, int ncl, int64_t *now) {
  srv_work_t w[2];
  int done = 0, rounds = 0, reports = 0;
  while (!done && rounds++ < 10000) {
    for (int i = 0; i < ncl && !done; i++) {
      srv_nowork_t why;
      int n = work(f, cl[i], 2, (*now)++, w, &why);
      ck_assert_int_ge(n, 0);
      for (int k = 0; k < n; k++) {
        srv_result_info_t info;
        ck_assert_int_eq(report_true(f, cl[i], &w[k], *now, &info), 0);
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

static void check_n8_totals(fx_t *f) {
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
  qs(f->path, "SELECT total || '/' || uniq FROM jobs", txt, sizeof txt);
  ck_assert_str_eq(txt, "92/12");
}

/* N = 8 end to end with three clients: the job must finish with the published totals. */
START_TEST(full_job_n8_three_clients) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.max_outstanding = 3;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t cl[3] = {mk_client(&f, "a"), mk_client(&f, "b"), mk_client(&f, "c")};
  int64_t now = T0;
  int reports = run_to_done(&f, cl, 3, &now);
  ck_assert_int_eq(reports, 2 * f.job.units); /* honest clients: exactly quorum per unit */
  check_n8_totals(&f);
  srv_stats_t stats;
  ck_assert_int_eq(srv_store_stats(f.st, f.job.id, now, 60, 3600, &stats), 0);
  ck_assert_int_eq(stats.units[SRV_UNIT_VERIFIED], f.job.units);
  ck_assert_int_eq(stats.results, reports);
  ck_assert_int_eq(stats.recent_results, reports);
  ck_assert_int_eq(stats.clients_known, 3);
  ck_assert_int_eq(stats.clients_active, 3);
  ck_assert(nq_totals_total(&stats.verified) == 92);
  int64_t valid = 0;
  for (int i = 0; i < 3; i++) {
    srv_client_t c = client_of(&f, cl[i]);
    ck_assert_int_eq(c.invalid, 0);
    ck_assert_int_eq(c.outstanding, 0);
    valid += c.valid;
  }
  ck_assert_int_eq(valid, reports);
  /* A finished job hands out nothing and says so. */
  srv_work_t w[4];
  srv_nowork_t why;
  ck_assert_int_eq(work(&f, cl[0], 4, now, w, &why), 0);
  ck_assert_int_eq(why, SRV_NOWORK_DONE);
  ck_assert_str_eq(nq_nowork_reason_name(srv_nowork_code(why)), "done");
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* ---- quorum and trust -------------------------------------------------------------------- */

static int64_t asg_state(fx_t *f, int64_t asg_id) {
  srv_asg_info_t a;
  ck_assert_int_eq(srv_asg_get(f->st, asg_id, &a), 0);
  return a.state;
}

/* A liar's result blocks the quorum; a third replica goes out, agrees with the honest one, the
 * unit is verified with the true counts and the liar loses trust. */
START_TEST(mismatch_escalates_to_third_replica) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = mk_client(&f, "a"), b = mk_client(&f, "b"), c = mk_client(&f, "c");
  srv_work_t wa, wb, wc, other;
  ck_assert_int_eq(work(&f, a, 1, T0, &wa, NULL), 1);
  ck_assert_int_eq(work(&f, b, 1, T0, &wb, NULL), 1);
  ck_assert_int_eq(wb.unit_id, wa.unit_id); /* in-progress units go out first */
  ck_assert_int_eq(unit_of(&f, wa.unit_id).state, SRV_UNIT_LEASED);
  ck_assert_int_eq(report_true(&f, a, &wa, T0 + 1, NULL), 0);
  ck_assert_int_eq(unit_of(&f, wa.unit_id).state, SRV_UNIT_AWAITING);
  nq_counts_t bad = lie(wb.unit);
  srv_result_info_t info;
  ck_assert_int_eq(report(&f, b, wb.id, wb.unit, &bad, NQ_SOLVER_VERSION, T0 + 2, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
  ck_assert(!info.unit_verified);
  ck_assert_int_eq(unit_of(&f, wa.unit_id).state, SRV_UNIT_AWAITING);
  /* Neither a nor b may have the unit again; both get other units. */
  ck_assert_int_eq(work(&f, a, 1, T0 + 3, &other, NULL), 1);
  ck_assert_int_ne(other.unit_id, wa.unit_id);
  ck_assert_int_eq(work(&f, b, 1, T0 + 3, &other, NULL), 1);
  ck_assert_int_ne(other.unit_id, wa.unit_id);
  ck_assert_int_eq(work(&f, c, 1, T0 + 4, &wc, NULL), 1);
  ck_assert_int_eq(wc.unit_id, wa.unit_id);
  ck_assert_int_eq(report_true(&f, c, &wc, T0 + 5, &info), 0);
  ck_assert(info.unit_verified);
  srv_unit_info_t u = unit_of(&f, wa.unit_id);
  nq_counts_t truth = solve(wa.unit);
  ck_assert_int_eq(u.state, SRV_UNIT_VERIFIED);
  ck_assert_int_eq(u.counts.c8, truth.c8);
  ck_assert_int_eq(u.counts.nodes, truth.nodes);
  ck_assert_int_eq(u.results, 3);
  ck_assert_int_eq(asg_state(&f, wa.id), SRV_ASG_VALID);
  ck_assert_int_eq(asg_state(&f, wb.id), SRV_ASG_INVALID);
  ck_assert_int_eq(asg_state(&f, wc.id), SRV_ASG_VALID);
  ck_assert_int_eq(client_of(&f, a).valid, 1);
  ck_assert_int_eq(client_of(&f, b).invalid, 1);
  ck_assert_int_eq(client_of(&f, b).valid, 0);
  ck_assert_int_eq(client_of(&f, c).valid, 1);
  ck_assert_int_eq(client_of(&f, b).banned, 0); /* one loss is below the threshold */
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* Results agree on counts across solver versions; within one version the nodes must match. */
START_TEST(agreement_rule_solver_versions) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = mk_client(&f, "a"), b = mk_client(&f, "b"), c = mk_client(&f, "c");
  srv_work_t wa[2], wb[2], wc;
  ck_assert_int_eq(work(&f, a, 2, T0, wa, NULL), 2);
  ck_assert_int_eq(work(&f, b, 2, T0, wb, NULL), 2);
  ck_assert_int_eq(wa[0].unit_id, wb[0].unit_id);
  ck_assert_int_eq(wa[1].unit_id, wb[1].unit_id);
  /* Unit 0: same counts, different nodes, different solvers -> agree. */
  nq_counts_t t0 = solve(wa[0].unit), t0b = t0;
  t0b.nodes += 5;
  srv_result_info_t info;
  ck_assert_int_eq(report(&f, a, wa[0].id, wa[0].unit, &t0, "solver-x", T0, &info), 0);
  ck_assert_int_eq(report(&f, b, wb[0].id, wb[0].unit, &t0b, "solver-y", T0, &info), 0);
  ck_assert(info.unit_verified);
  /* Unit 1: same counts, different nodes, same solver -> disagree; c breaks the tie. */
  nq_counts_t t1 = solve(wa[1].unit), t1b = t1;
  t1b.nodes += 1;
  ck_assert_int_eq(report(&f, a, wa[1].id, wa[1].unit, &t1, "solver-x", T0, &info), 0);
  ck_assert_int_eq(report(&f, b, wb[1].id, wb[1].unit, &t1b, "solver-x", T0, &info), 0);
  ck_assert(!info.unit_verified);
  ck_assert_int_eq(work(&f, c, 1, T0, &wc, NULL), 1);
  ck_assert_int_eq(wc.unit_id, wa[1].unit_id);
  ck_assert_int_eq(report(&f, c, wc.id, wc.unit, &t1, "solver-x", T0, &info), 0);
  ck_assert(info.unit_verified);
  ck_assert_int_eq(asg_state(&f, wb[1].id), SRV_ASG_INVALID);
  ck_assert_int_eq(client_of(&f, a).valid, 2);
  ck_assert_int_eq(client_of(&f, b).valid, 1);
  ck_assert_int_eq(client_of(&f, b).invalid, 1);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* No two results agree: after max_results the unit is disputed, shown to the operator, and not
 * handed out again; a late result for it is kept for the record. */
START_TEST(dispute_after_max_results) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  fx_init(&f, 8, 3, 2, 3, &cfg);
  int64_t cl[5];
  char name[8];
  for (int i = 0; i < 5; i++) {
    snprintf(name, sizeof name, "c%d", i);
    cl[i] = mk_client(&f, name);
  }
  srv_work_t w[5];
  /* c0 takes the unit and goes silent; after expiry c1..c3 take it in turn. */
  ck_assert_int_eq(work(&f, cl[0], 1, T0, &w[0], NULL), 1);
  int64_t now = T0 + 200;
  srv_result_info_t info;
  for (int i = 1; i <= 3; i++) {
    ck_assert_int_eq(work(&f, cl[i], 1, now, &w[i], NULL), 1);
    ck_assert_int_eq(w[i].unit_id, w[0].unit_id);
    nq_counts_t c = solve(w[i].unit);
    c.c8 += (uint64_t)i; /* three different answers */
    c.nodes += 10;
    ck_assert_int_eq(report(&f, cl[i], w[i].id, w[i].unit, &c, NQ_SOLVER_VERSION, now, &info), 0);
    ck_assert_int_eq(info.unit_disputed, i == 3);
  }
  srv_unit_info_t u = unit_of(&f, w[0].unit_id);
  ck_assert_int_eq(u.state, SRV_UNIT_DISPUTED);
  ck_assert_int_eq(u.results, 3);
  /* Nobody gets it again. */
  ck_assert_int_eq(work(&f, cl[4], 1, now, &w[4], NULL), 1);
  ck_assert_int_ne(w[4].unit_id, w[0].unit_id);
  /* The silent client's late result is kept, not judged. */
  ck_assert_int_eq(report_true(&f, cl[0], &w[0], now + 1, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_LATE);
  ck_assert_int_eq(asg_state(&f, w[0].id), SRV_ASG_LATE);
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(client_of(&f, cl[i]).valid, 0);
    ck_assert_int_eq(client_of(&f, cl[i]).invalid, 0);
  }
  /* The operator sees it in the disputed list and in the status. */
  srv_stats_t stats;
  ck_assert_int_eq(srv_store_stats(f.st, f.job.id, now, 60, 60, &stats), 0);
  ck_assert_int_eq(stats.units[SRV_UNIT_DISPUTED], 1);
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM units WHERE state = 'disputed'"), 1);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* The operator's way out of a dispute: the unit is re-opened with more results allowed, new
 * replicas go only to clients that never had it, a retry without a quorum disputes it again, a
 * second retry and two agreeing results verify it, and the job finishes with the exact totals.
 * Units that are not disputed are refused. */
START_TEST(dispute_retry_to_quorum) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  fx_init(&f, 8, 3, 2, 3, &cfg);
  int64_t cl[8];
  char name[8];
  for (int i = 0; i < 8; i++) {
    snprintf(name, sizeof name, "c%d", i);
    cl[i] = mk_client(&f, name);
  }
  srv_work_t w[8];
  srv_result_info_t info;
  /* As in dispute_after_max_results: c0 goes silent, c1..c3 give three different answers. */
  ck_assert_int_eq(work(&f, cl[0], 1, T0, &w[0], NULL), 1);
  const int64_t unit = w[0].unit_id;
  int64_t now = T0 + 200;
  for (int i = 1; i <= 3; i++) {
    ck_assert_int_eq(work(&f, cl[i], 1, now, &w[i], NULL), 1);
    ck_assert_int_eq(w[i].unit_id, unit);
    nq_counts_t c = solve(w[i].unit);
    c.c8 += (uint64_t)i;
    c.nodes += 10;
    ck_assert_int_eq(report(&f, cl[i], w[i].id, w[i].unit, &c, NQ_SOLVER_VERSION, now, &info), 0);
  }
  ck_assert(info.unit_disputed);
  /* c0's true result arrives while disputed: kept as late, counted in results, not a vote. */
  ck_assert_int_eq(report_true(&f, cl[0], &w[0], now, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_LATE);
  ck_assert_int_eq(unit_of(&f, unit).results, 4);

  /* Refusals: a unit that is not disputed (c4 just leased it), no such unit, extra out of range.
   * Nothing changes. */
  srv_work_t other;
  ck_assert_int_eq(work(&f, cl[4], 1, now, &other, NULL), 1);
  ck_assert_int_ne(other.unit_id, unit);
  ck_assert_int_eq(srv_unit_retry(f.st, other.unit_id, 2, now, NULL), NQ_ESTATE);
  ck_assert_ptr_nonnull(strstr(srv_store_errmsg(f.st), "leased, not disputed"));
  ck_assert_int_eq(srv_unit_retry(f.st, 999999, 2, now, NULL), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_unit_retry(f.st, unit, 0, now, NULL), NQ_EINVAL);
  ck_assert_int_eq(srv_unit_retry(f.st, unit, SRV_RETRY_EXTRA_MAX + 1, now, NULL), NQ_EINVAL);
  ck_assert_int_eq(unit_of(&f, unit).state, SRV_UNIT_DISPUTED);
  ck_assert_int_eq(unit_of(&f, other.unit_id).state, SRV_UNIT_LEASED);
  char q[200];
  snprintf(q, sizeof q, "SELECT need FROM units WHERE id = %lld", (long long)unit);

  /* Retry for one more result (outside a transaction: it commits by itself). The cap is relative
   * to every result it has: 4 now (one late), so 5. */
  srv_unit_info_t u;
  ck_assert_int_eq(srv_unit_retry(f.st, unit, 1, now, &u), 0);
  ck_assert_int_eq(u.state, SRV_UNIT_AWAITING);
  ck_assert_int_eq(u.extra_results, 2);
  ck_assert_int_eq(q1(f.path, q), 1);
  ck_assert_int_eq(srv_unit_retry(f.st, unit, 1, now, NULL), NQ_ESTATE); /* no longer disputed */
  check_invariants(&f);
  /* Nobody who had it gets it again: c1 is given another unit. */
  srv_work_t w1;
  ck_assert_int_eq(work(&f, cl[1], 1, now + 1, &w1, NULL), 1);
  ck_assert_int_ne(w1.unit_id, unit);
  /* c5 gets it (open units first) and disagrees with everyone: disputed again at 5 results. */
  ck_assert_int_eq(work(&f, cl[5], 1, now + 2, &w[5], NULL), 1);
  ck_assert_int_eq(w[5].unit_id, unit);
  nq_counts_t bad = solve(w[5].unit);
  bad.c8 += 7;
  bad.nodes += 10;
  ck_assert_int_eq(report(&f, cl[5], w[5].id, w[5].unit, &bad, NQ_SOLVER_VERSION, now + 3, &info),
                   0);
  ck_assert(info.unit_disputed);
  ck_assert_int_eq(unit_of(&f, unit).state, SRV_UNIT_DISPUTED);
  ck_assert_int_eq(q1(f.path, q), 0);

  /* Second retry, inside a transaction (as the server's admin handler runs it): the default
   * allowance of a quorum's worth, 2 more results. */
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_unit_retry(f.st, unit, f.job.quorum, now + 4, &u), 0);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  ck_assert_int_eq(u.extra_results, 4); /* 5 results - 3 + 2 */
  ck_assert_int_eq(u.results, 5);
  ck_assert_int_eq(q1(f.path, q), 1);   /* quorum 2 - best 1 */
  ck_assert_int_eq(work(&f, cl[6], 1, now + 5, &w[6], NULL), 1);
  ck_assert_int_eq(w[6].unit_id, unit);
  ck_assert_int_eq(report_true(&f, cl[6], &w[6], now + 6, &info), 0);
  ck_assert(!info.unit_verified && !info.unit_disputed); /* c0's late result does not vote */
  ck_assert_int_eq(work(&f, cl[7], 1, now + 7, &w[7], NULL), 1);
  ck_assert_int_eq(w[7].unit_id, unit);
  ck_assert_int_eq(report_true(&f, cl[7], &w[7], now + 8, &info), 0);
  ck_assert(info.unit_verified);
  u = unit_of(&f, unit);
  ck_assert_int_eq(u.state, SRV_UNIT_VERIFIED);
  nq_counts_t truth = solve(w[0].unit);
  ck_assert(u.counts.c2 == truth.c2 && u.counts.c4 == truth.c4 && u.counts.c8 == truth.c8);
  ck_assert_int_eq(asg_state(&f, w[6].id), SRV_ASG_VALID);
  ck_assert_int_eq(asg_state(&f, w[7].id), SRV_ASG_VALID);
  for (int i = 1; i <= 3; i++) ck_assert_int_eq(asg_state(&f, w[i].id), SRV_ASG_INVALID);
  ck_assert_int_eq(asg_state(&f, w[5].id), SRV_ASG_INVALID);
  ck_assert_int_eq(asg_state(&f, w[0].id), SRV_ASG_LATE);
  ck_assert_int_eq(client_of(&f, cl[0]).valid + client_of(&f, cl[0]).invalid, 0);
  ck_assert_int_eq(srv_unit_retry(f.st, unit, 2, now + 9, NULL), NQ_ESTATE); /* verified */
  check_invariants(&f);

  /* Everyone (the earlier wrong ones included, now honest) finishes the job: exact totals. */
  now += 10;
  run_to_done(&f, cl + 1, 7, &now);
  check_n8_totals(&f);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

static int collect_units_cb(const srv_unit_info_t *u, void *arg) {
  int64_t *v = arg;
  v[v[0] + 1] = u->id;
  v[0]++;
  return 0;
}

START_TEST(unit_list_by_state) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = mk_client(&f, "a");
  srv_work_t w[2];
  ck_assert_int_eq(work(&f, a, 2, T0, w, NULL), 2);
  int64_t v[64] = {0};
  ck_assert_int_eq(srv_unit_list(f.st, f.job.id, SRV_UNIT_LEASED, 0, collect_units_cb, v), 0);
  ck_assert_int_eq(v[0], 2);
  ck_assert_int_eq(v[1], w[0].unit_id);
  memset(v, 0, sizeof v);
  ck_assert_int_eq(srv_unit_list(f.st, f.job.id, -1, 5, collect_units_cb, v), 0);
  ck_assert_int_eq(v[0], 5);
  ck_assert_int_eq(srv_unit_state_parse("disputed"), SRV_UNIT_DISPUTED);
  ck_assert_int_eq(srv_unit_state_parse("nope"), NQ_EINVAL);
  ck_assert_str_eq(srv_unit_state_name(SRV_UNIT_AWAITING), "awaiting");
  fx_done(&f);
}
END_TEST

/* ---- leases ------------------------------------------------------------------------------ */

/* A silent client's lease expires and the unit is reissued; its late result still counts while
 * the unit is open, and is LATE (but judged) once it is verified. */
START_TEST(expiry_reissue_and_late_results) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t a = mk_client(&f, "a"), b = mk_client(&f, "b"), c = mk_client(&f, "c");
  srv_work_t wa, wb, wc;
  ck_assert_int_eq(work(&f, a, 1, T0, &wa, NULL), 1);
  ck_assert_int_eq(wa.deadline, T0 + 100);
  ck_assert_int_eq(work(&f, b, 1, T0 + 150, &wb, NULL), 1); /* also sweeps a's lease */
  ck_assert_int_eq(wb.unit_id, wa.unit_id);
  ck_assert_int_eq(asg_state(&f, wa.id), SRV_ASG_EXPIRED);
  int64_t n = -1;
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_expire(&f.sched, T0 + 150, &n), 0);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  ck_assert_int_eq(n, 0); /* already swept */
  int64_t next = 0;
  ck_assert_int_eq(srv_sched_next_deadline(&f.sched, &next), 0);
  ck_assert_int_eq(next, T0 + 250);
  /* The unit still needs a second replica: c gets it (the reissue of a's). */
  ck_assert_int_eq(work(&f, c, 1, T0 + 160, &wc, NULL), 1);
  ck_assert_int_eq(wc.unit_id, wa.unit_id);
  ck_assert_int_eq(unit_of(&f, wa.unit_id).live, 2);
  /* a's late result is accepted: the unit is not verified yet. */
  srv_result_info_t info;
  ck_assert_int_eq(report_true(&f, a, &wa, T0 + 170, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
  ck_assert(!info.unit_verified);
  ck_assert_int_eq(report_true(&f, b, &wb, T0 + 180, &info), 0);
  ck_assert(info.unit_verified);
  ck_assert_int_eq(asg_state(&f, wa.id), SRV_ASG_VALID);
  /* c's lease was released at verification: progress tells it the work is no longer needed. */
  int64_t dl;
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_progress(&f.sched, c, wc.id, T0 + 185, &dl), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  /* ... and its result, if it sends one anyway, is LATE but judged. */
  ck_assert_int_eq(report_true(&f, c, &wc, T0 + 190, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_LATE);
  ck_assert_int_eq(asg_state(&f, wc.id), SRV_ASG_VALID);
  ck_assert_int_eq(client_of(&f, c).valid, 1);
  srv_asg_info_t ai;
  ck_assert_int_eq(srv_asg_get(f.st, wc.id, &ai), 0);
  ck_assert_int_eq(ai.late, 1);
  ck_assert_int_eq(unit_of(&f, wa.unit_id).results, 3);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* A client whose lease expired (no result) may get the unit again, on the same assignment: with
 * exactly `quorum` clients the unit would otherwise never be verified. */
START_TEST(expired_lease_leased_again_to_same_client) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t a = mk_client(&f, "a"), b = mk_client(&f, "b");
  srv_work_t wa, wb, again;
  ck_assert_int_eq(work(&f, a, 1, T0, &wa, NULL), 1);
  ck_assert_int_eq(work(&f, b, 1, T0 + 120, &wb, NULL), 1); /* sweeps a's lease */
  ck_assert_int_eq(wb.unit_id, wa.unit_id);
  ck_assert_int_eq(asg_state(&f, wa.id), SRV_ASG_EXPIRED);
  ck_assert_int_eq(report_true(&f, b, &wb, T0 + 130, NULL), 0);
  /* Only a can give the second result: it gets the unit back, same id, a fresh deadline. */
  ck_assert_int_eq(work(&f, a, 1, T0 + 140, &again, NULL), 1);
  ck_assert_int_eq(again.unit_id, wa.unit_id);
  ck_assert_int_eq(again.id, wa.id);
  ck_assert_int_eq(again.deadline, T0 + 140 + 100);
  ck_assert_int_eq(asg_state(&f, wa.id), SRV_ASG_LEASED);
  ck_assert_int_eq(unit_of(&f, wa.unit_id).live, 1);
  srv_result_info_t info;
  ck_assert_int_eq(report_true(&f, a, &again, T0 + 150, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
  ck_assert(info.unit_verified);
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM assignments"), 2);
  /* A client that reported a unit never gets it again. */
  srv_work_t w[4];
  int n = work(&f, b, 4, T0 + 160, w, NULL);
  for (int i = 0; i < n; i++) ck_assert_int_ne(w[i].unit_id, wa.unit_id);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* A late wrong result for a verified unit counts against its client. */
START_TEST(late_wrong_result_is_invalid) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t a = mk_client(&f, "a"), b = mk_client(&f, "b"), c = mk_client(&f, "c");
  srv_work_t wa, wb, wc;
  ck_assert_int_eq(work(&f, a, 1, T0, &wa, NULL), 1);
  ck_assert_int_eq(work(&f, b, 1, T0 + 200, &wb, NULL), 1);
  ck_assert_int_eq(work(&f, c, 1, T0 + 200, &wc, NULL), 1);
  ck_assert_int_eq(wc.unit_id, wa.unit_id);
  ck_assert_int_eq(report_true(&f, b, &wb, T0 + 210, NULL), 0);
  ck_assert_int_eq(report_true(&f, c, &wc, T0 + 210, NULL), 0);
  nq_counts_t bad = lie(wa.unit);
  srv_result_info_t info;
  ck_assert_int_eq(report(&f, a, wa.id, wa.unit, &bad, NQ_SOLVER_VERSION, T0 + 220, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_LATE);
  ck_assert_int_eq(asg_state(&f, wa.id), SRV_ASG_INVALID);
  ck_assert_int_eq(client_of(&f, a).invalid, 1);
  /* Verified counts are not touched by a late result. */
  ck_assert_int_eq(unit_of(&f, wa.unit_id).counts.c8, solve(wa.unit).c8);
  fx_done(&f);
}
END_TEST

/* progress extends the client's own lease, revives an expired one nobody replaced, and refuses
 * everything else as unknown_assignment. */
START_TEST(progress_extends_and_revives) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t a = mk_client(&f, "a"), b = mk_client(&f, "b"), c = mk_client(&f, "c");
  srv_work_t wa, wb, wc;
  int64_t dl = 0;
  ck_assert_int_eq(work(&f, a, 1, T0, &wa, NULL), 1);
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_progress(&f.sched, a, wa.id, T0 + 50, &dl), 0);
  ck_assert_int_eq(dl, T0 + 150);
  /* An old progress arriving later never shortens the lease. */
  ck_assert_int_eq(srv_sched_progress(&f.sched, a, wa.id, T0 + 40, &dl), 0);
  ck_assert_int_eq(dl, T0 + 150);
  ck_assert_int_eq(srv_sched_progress(&f.sched, b, wa.id, T0 + 50, &dl), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_sched_progress(&f.sched, a, 999999, T0 + 50, &dl), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_sched_expire(&f.sched, T0 + 200, NULL), 0);
  ck_assert_int_eq(asg_state(&f, wa.id), SRV_ASG_EXPIRED);
  ck_assert_int_eq(unit_of(&f, wa.unit_id).state, SRV_UNIT_PENDING);
  /* Nobody took the unit: a's lease comes back to life. */
  ck_assert_int_eq(srv_sched_progress(&f.sched, a, wa.id, T0 + 210, &dl), 0);
  ck_assert_int_eq(dl, T0 + 310);
  ck_assert_int_eq(asg_state(&f, wa.id), SRV_ASG_LEASED);
  ck_assert_int_eq(unit_of(&f, wa.unit_id).state, SRV_UNIT_LEASED);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  /* Expire again; b and c now hold both replicas the quorum needs: a cannot come back. */
  ck_assert_int_eq(work(&f, b, 1, T0 + 400, &wb, NULL), 1);
  ck_assert_int_eq(work(&f, c, 1, T0 + 400, &wc, NULL), 1);
  ck_assert_int_eq(wb.unit_id, wa.unit_id);
  ck_assert_int_eq(wc.unit_id, wa.unit_id);
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_progress(&f.sched, a, wa.id, T0 + 410, &dl), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  /* A reported assignment takes no progress either. */
  ck_assert_int_eq(report_true(&f, b, &wb, T0 + 420, NULL), 0);
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_progress(&f.sched, b, wb.id, T0 + 430, &dl), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* One client never gets two replicas of one unit, however often it asks; what it holds is
 * re-sent first, with the same ids. */
START_TEST(no_two_replicas_and_resend) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.max_outstanding = 256;
  fx_init(&f, 8, 3, 3, 5, &cfg);
  int64_t a = mk_client(&f, "a");
  srv_work_t w[256], again[256];
  srv_nowork_t why;
  int n = work(&f, a, 256, T0, w, &why);
  ck_assert_int_eq(n, f.job.units);
  ck_assert_int_eq(why, SRV_NOWORK_NONE);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(w[i].resent, 0);
    for (int k = 0; k < i; k++) ck_assert_int_ne(w[i].unit_id, w[k].unit_id);
  }
  int m = work(&f, a, 256, T0 + 1, again, &why);
  ck_assert_int_eq(m, n);
  ck_assert_int_eq(why, SRV_NOWORK_PENDING); /* nothing new: every unit is a's already */
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(again[i].id, w[i].id);
    ck_assert_int_eq(again[i].resent, 1);
    ck_assert_int_eq(again[i].deadline, w[i].deadline);
  }
  for (int i = 0; i < n; i++) ck_assert_int_eq(report_true(&f, a, &w[i], T0 + 2, NULL), 0);
  ck_assert_int_eq(work(&f, a, 256, T0 + 3, again, &why), 0);
  ck_assert_int_eq(why, SRV_NOWORK_PENDING);
  ck_assert_str_eq(nq_nowork_reason_name(srv_nowork_code(why)), "none_pending");
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM assignments"), n);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

START_TEST(per_client_cap) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.max_outstanding = 3;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t a = mk_client(&f, "a");
  srv_work_t w[10], again[10];
  srv_nowork_t why;
  ck_assert_int_eq(work(&f, a, 10, T0, w, &why), 3);
  ck_assert_int_eq(work(&f, a, 10, T0, again, &why), 3);
  ck_assert_int_eq(why, SRV_NOWORK_CAP);
  ck_assert_int_eq(work(&f, a, 2, T0, again, &why), 2); /* the first two it holds */
  ck_assert_int_eq(again[1].id, w[1].id);
  ck_assert_int_eq(client_of(&f, a).outstanding, 3);
  ck_assert_int_eq(report_true(&f, a, &w[0], T0 + 1, NULL), 0);
  ck_assert_int_eq(work(&f, a, 10, T0 + 2, again, &why), 3);
  ck_assert_int_eq(why, SRV_NOWORK_NONE);
  ck_assert_int_eq(again[0].resent + again[1].resent + again[2].resent, 2);
  ck_assert_int_eq(work(&f, a, 0, T0, again, &why), NQ_EINVAL);
  ck_assert_int_eq(work(&f, a, 257, T0, again, &why), NQ_EINVAL);
  fx_done(&f);
}
END_TEST

/* Leases follow the expected cost: the longest lease while a client has too few results in the
 * job, then lease_min + LEASE_SLACK x its mean solve time x its queue position, capped. */
START_TEST(lease_sized_from_expected_cost) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 3600;
  cfg.lease_min = 60;
  fx_init(&f, 10, 3, 2, 5, &cfg);
  int64_t a = mk_client(&f, "a"), b = mk_client(&f, "b");
  srv_work_t w[8];
  /* Unknown cost: the full lease, for every assignment of the batch. */
  ck_assert_int_eq(work(&f, a, 2, T0, w, NULL), 2);
  ck_assert_int_eq(w[0].deadline, T0 + 3600);
  ck_assert_int_eq(w[1].deadline, T0 + 3600);
  /* Three results of 8, 10 and 12 s (mean 10): known from the third on. */
  nq_counts_t c = solve(w[0].unit);
  ck_assert_int_eq(report_secs(&f, a, w[0].id, w[0].unit, &c, 8.0, NQ_SOLVER_VERSION, T0 + 8, NULL), 0);
  c = solve(w[1].unit);
  ck_assert_int_eq(report_secs(&f, a, w[1].id, w[1].unit, &c, 12.0, NQ_SOLVER_VERSION, T0 + 20, NULL), 0);
  ck_assert_int_eq(work(&f, a, 1, T0 + 20, w, NULL), 1);
  ck_assert_int_eq(w[0].deadline, T0 + 20 + 3600); /* two results: still unknown */
  c = solve(w[0].unit);
  ck_assert_int_eq(report_secs(&f, a, w[0].id, w[0].unit, &c, 10.0, NQ_SOLVER_VERSION, T0 + 30, NULL), 0);
  /* Holding nothing, four new ones: 60 + 4 x 10 x (position + 1). */
  ck_assert_int_eq(work(&f, a, 4, T0 + 30, w, NULL), 4);
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(w[i].resent, 0);
    ck_assert_int_eq(w[i].deadline, T0 + 30 + 60 + 40 * (i + 1));
  }
  /* Holding those four: they are re-sent unchanged and the two new ones queue behind them. */
  ck_assert_int_eq(work(&f, a, 6, T0 + 31, w, NULL), 6);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(w[i].deadline, T0 + 30 + 60 + 40 * (i + 1));
  ck_assert_int_eq(w[4].deadline, T0 + 31 + 60 + 40 * 5);
  ck_assert_int_eq(w[5].deadline, T0 + 31 + 60 + 40 * 6);
  /* Progress turns a short lease into the full one. */
  int64_t dl = 0;
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_progress(&f.sched, a, w[0].id, T0 + 40, &dl), 0);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  ck_assert_int_eq(dl, T0 + 40 + 3600);
  /* A slow client (three 1000 s results) is capped at the longest lease. */
  for (int i = 0; i < 3; i++) {
    srv_work_t x;
    ck_assert_int_eq(work(&f, b, 1, T0 + 100 * i, &x, NULL), 1);
    c = solve(x.unit);
    ck_assert_int_eq(report_secs(&f, b, x.id, x.unit, &c, 1000.0, NQ_SOLVER_VERSION, T0 + 100 * i + 50, NULL), 0);
  }
  ck_assert_int_eq(work(&f, b, 1, T0 + 400, w, NULL), 1);
  ck_assert_int_eq(w[0].deadline, T0 + 400 + 3600);
  /* The rule itself: the minimum never exceeds the longest lease; unknown cost = longest. */
  ck_assert_int_eq(srv_sched_lease_for(&cfg, -1, 0), 3600);
  ck_assert_int_eq(srv_sched_lease_for(&cfg, 0, 5), 60);
  ck_assert_int_eq(srv_sched_lease_for(&cfg, 0.1, 0), 61);
  cfg.lease_seconds = 3;
  ck_assert_int_eq(srv_sched_lease_for(&cfg, 0.001, 0), 3);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* ---- results: validation and ownership ---------------------------------------------------- */

START_TEST(duplicate_counted_once) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = mk_client(&f, "a");
  srv_work_t w;
  ck_assert_int_eq(work(&f, a, 1, T0, &w, NULL), 1);
  srv_result_info_t info;
  ck_assert_int_eq(report_true(&f, a, &w, T0 + 1, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
  ck_assert_int_eq(report_true(&f, a, &w, T0 + 2, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_DUPLICATE);
  ck_assert_str_eq(nq_ack_status_name(srv_result_ack(info.status)), "duplicate");
  /* Even with other numbers: the first report stands. */
  nq_counts_t bad = lie(w.unit);
  ck_assert_int_eq(report(&f, a, w.id, w.unit, &bad, NQ_SOLVER_VERSION, T0 + 3, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_DUPLICATE);
  srv_asg_info_t ai;
  ck_assert_int_eq(srv_asg_get(f.st, w.id, &ai), 0);
  ck_assert_int_eq(ai.counts.c8, solve(w.unit).c8);
  ck_assert_int_eq(ai.reported_at, T0 + 1);
  ck_assert_int_eq(unit_of(&f, w.unit_id).results, 1);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

START_TEST(foreign_and_unknown_refused) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = mk_client(&f, "a"), b = mk_client(&f, "b");
  srv_work_t w;
  ck_assert_int_eq(work(&f, a, 1, T0, &w, NULL), 1);
  nq_counts_t c = solve(w.unit);
  ck_assert_int_eq(report(&f, b, w.id, w.unit, &c, NQ_SOLVER_VERSION, T0, NULL), NQ_EAUTH);
  ck_assert_int_eq(report(&f, b, 424242, w.unit, &c, NQ_SOLVER_VERSION, T0, NULL), NQ_ENOTFOUND);
  ck_assert_int_eq(asg_state(&f, w.id), SRV_ASG_LEASED);
  ck_assert_int_eq(unit_of(&f, w.unit_id).results, 0);
  ck_assert_int_eq(report(&f, a, w.id, w.unit, &c, NQ_SOLVER_VERSION, T0, NULL), 0);
  fx_done(&f);
}
END_TEST

/* Impossible numbers are refused and change nothing. */
START_TEST(impossible_numbers_refused) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = mk_client(&f, "a");
  srv_work_t w;
  ck_assert_int_eq(work(&f, a, 1, T0, &w, NULL), 1);
  ck_assert_ptr_nonnull(strstr(w.unit, ":c:")); /* the first unit is a corner unit */
  const nq_counts_t good = solve(w.unit);
  struct { nq_counts_t c; const char *unit, *solver; double secs; } bad[12];
  for (int i = 0; i < 12; i++) {
    bad[i].c = good;
    bad[i].unit = w.unit;
    bad[i].solver = NQ_SOLVER_VERSION;
    bad[i].secs = 1.0;
  }
  bad[0].unit = "8:c:2:0,2,4";
  bad[1].unit = NULL;
  bad[2].c.nodes = 0;
  bad[3].c.c8 = good.nodes + 1;
  bad[4].c.c2 = 1; /* corner units have COUNT8 only */
  bad[5].c.c4 = 1;
  bad[6].c.count1 = 1;
  bad[7].c.c8 = (uint64_t)INT64_MAX + 1;
  bad[7].c.nodes = UINT64_MAX;
  bad[8].secs = -1;
  bad[9].secs = NAN;
  bad[10].solver = "";
  bad[11].solver = "0123456789012345678901234567890123456789012345678901234567890123456789";
  if (strcmp(w.unit, bad[0].unit) == 0) bad[0].unit = "8:c:3:0,3,5";
  for (int i = 0; i < 12; i++) {
    ck_assert_int_eq(srv_store_begin(f.st), 0);
    int rc = srv_sched_result(&f.sched, a, w.id, bad[i].unit, &bad[i].c, bad[i].secs,
                              bad[i].solver, T0, NULL);
    ck_assert_int_eq(srv_store_commit(f.st), 0);
    ck_assert_msg(rc == NQ_EINVAL, "case %d: %d", i, rc);
  }
  ck_assert_int_eq(asg_state(&f, w.id), SRV_ASG_LEASED);
  ck_assert_int_eq(unit_of(&f, w.unit_id).results, 0);
  ck_assert_int_eq(report(&f, a, w.id, w.unit, &good, NQ_SOLVER_VERSION, T0, NULL), 0);
  fx_done(&f);
}
END_TEST

/* ---- bans --------------------------------------------------------------------------------- */

START_TEST(banned_client_gets_nothing) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = mk_client(&f, "a"), b = mk_client(&f, "b");
  srv_work_t w[2], wb[2];
  ck_assert_int_eq(work(&f, a, 2, T0, w, NULL), 2);
  ck_assert_int_eq(srv_client_ban(f.st, a, T0 + 1), 0);
  ck_assert_int_eq(srv_client_ban(f.st, a, T0 + 1), 0); /* idempotent */
  ck_assert_int_eq(client_of(&f, a).banned, 1);
  ck_assert_int_eq(client_of(&f, a).outstanding, 0);
  ck_assert_int_eq(asg_state(&f, w[0].id), SRV_ASG_EXPIRED);
  ck_assert_int_eq(unit_of(&f, w[0].unit_id).state, SRV_UNIT_PENDING);
  ck_assert_int_eq(work(&f, a, 2, T0 + 2, wb, NULL), NQ_EBANNED);
  ck_assert_int_eq(report_true(&f, a, &w[0], T0 + 2, NULL), NQ_EBANNED);
  int64_t dl;
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_progress(&f.sched, a, w[0].id, T0 + 2, &dl), NQ_EBANNED);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  /* The released units go to the next client at once. */
  ck_assert_int_eq(work(&f, b, 2, T0 + 3, wb, NULL), 2);
  ck_assert_int_eq(wb[0].unit_id, w[0].unit_id);
  ck_assert_int_eq(wb[1].unit_id, w[1].unit_id);
  ck_assert_int_eq(srv_client_ban(f.st, 9999, T0), NQ_ENOTFOUND);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* A client whose wrong results reach the threshold (and outnumber its right ones) is banned by
 * the result that proves it, and its other leases go back to the pool. */
START_TEST(auto_ban_past_threshold) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.ban_threshold = 2;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t liar = mk_client(&f, "liar"), h1 = mk_client(&f, "h1"), h2 = mk_client(&f, "h2");
  srv_work_t wl[3], w1[2], w2[2];
  ck_assert_int_eq(work(&f, liar, 3, T0, wl, NULL), 3);
  ck_assert_int_eq(work(&f, h1, 2, T0, w1, NULL), 2);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(w1[i].unit_id, wl[i].unit_id);
    nq_counts_t bad = lie(wl[i].unit);
    ck_assert_int_eq(report(&f, liar, wl[i].id, wl[i].unit, &bad, NQ_SOLVER_VERSION, T0, NULL), 0);
    ck_assert_int_eq(report_true(&f, h1, &w1[i], T0, NULL), 0);
  }
  ck_assert_int_eq(work(&f, h2, 2, T0, w2, NULL), 2);
  srv_result_info_t info;
  ck_assert_int_eq(w2[0].unit_id, wl[0].unit_id);
  ck_assert_int_eq(report_true(&f, h2, &w2[0], T0, &info), 0);
  ck_assert(info.unit_verified);
  ck_assert_int_eq(info.banned, 0);
  ck_assert_int_eq(client_of(&f, liar).invalid, 1);
  ck_assert_int_eq(w2[1].unit_id, wl[1].unit_id);
  ck_assert_int_eq(report_true(&f, h2, &w2[1], T0, &info), 0);
  ck_assert_int_eq(info.banned, 1);
  srv_client_t l = client_of(&f, liar);
  ck_assert_int_eq(l.invalid, 2);
  ck_assert_int_eq(l.banned, 1);
  ck_assert_int_eq(l.outstanding, 0);
  ck_assert_int_eq(asg_state(&f, wl[2].id), SRV_ASG_EXPIRED);
  ck_assert_int_eq(unit_of(&f, wl[2].unit_id).state, SRV_UNIT_PENDING);
  ck_assert_int_eq(client_of(&f, h1).banned, 0);
  ck_assert_int_eq(client_of(&f, h1).valid, 2);
  srv_work_t x;
  ck_assert_int_eq(work(&f, liar, 1, T0, &x, NULL), NQ_EBANNED);
  srv_stats_t stats;
  ck_assert_int_eq(srv_store_stats(f.st, f.job.id, T0, 60, 60, &stats), 0);
  ck_assert_int_eq(stats.clients_banned, 1);
  ck_assert_int_eq(stats.clients_active, 2);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* ---- transactions ------------------------------------------------------------------------ */

/* Several results in ONE transaction; a refused one in the middle leaves no trace and does not
 * spoil the others. A rolled-back group leaves nothing at all. */
START_TEST(group_commit_and_rollback) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = mk_client(&f, "a");
  srv_work_t w[3];
  ck_assert_int_eq(work(&f, a, 3, T0, w, NULL), 3);
  nq_counts_t c0 = solve(w[0].unit), c2 = solve(w[2].unit), bad = solve(w[1].unit);
  bad.nodes = 0;
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_store_begin(f.st), NQ_ETXN);
  ck_assert(srv_store_in_tx(f.st));
  ck_assert_int_eq(srv_sched_result(&f.sched, a, w[0].id, w[0].unit, &c0, 1, "s", T0, NULL), 0);
  ck_assert_int_eq(srv_sched_result(&f.sched, a, w[1].id, w[1].unit, &bad, 1, "s", T0, NULL),
                   NQ_EINVAL);
  ck_assert_int_eq(srv_sched_result(&f.sched, a, w[2].id, w[2].unit, &c2, 1, "s", T0, NULL), 0);
  /* Not visible to other connections before the commit. */
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM assignments WHERE reported_at IS NOT NULL"), 0);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM assignments WHERE reported_at IS NOT NULL"), 2);
  ck_assert_int_eq(asg_state(&f, w[1].id), SRV_ASG_LEASED);
  /* A group that is rolled back leaves nothing. */
  nq_counts_t c1 = solve(w[1].unit);
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_result(&f.sched, a, w[1].id, w[1].unit, &c1, 1, "s", T0, NULL), 0);
  ck_assert_int_eq(srv_store_rollback(f.st), 0);
  ck_assert_int_eq(asg_state(&f, w[1].id), SRV_ASG_LEASED);
  ck_assert_int_eq(srv_store_commit(f.st), NQ_ETXN);
  ck_assert_int_eq(srv_store_rollback(f.st), NQ_ETXN);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* The scheduler never commits on its own: without the caller's transaction it refuses. */
START_TEST(sched_requires_transaction) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = mk_client(&f, "a");
  srv_work_t w;
  int n = 0;
  srv_nowork_t why;
  int64_t dl;
  nq_counts_t c = {0, 0, 1, 0, 1};
  ck_assert_int_eq(srv_sched_get_work(&f.sched, a, 1, T0, &w, &n, &why), NQ_ETXN);
  ck_assert_int_eq(srv_sched_progress(&f.sched, a, 1, T0, &dl), NQ_ETXN);
  ck_assert_int_eq(srv_sched_result(&f.sched, a, 1, "x", &c, 1, "s", T0, NULL), NQ_ETXN);
  ck_assert_int_eq(srv_sched_expire(&f.sched, T0, NULL), NQ_ETXN);
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM assignments"), 0);
  ck_assert_int_eq(work(&f, 4242, 1, T0, &w, NULL), NQ_ENOTFOUND);
  fx_done(&f);
}
END_TEST

/* kill -9 in the middle of a job: committed work survives, the open transaction vanishes, no unit
 * is lost or doubled, and the job can still be finished to the right totals. */
START_TEST(kill_safety) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t cl[3] = {mk_client(&f, "a"), mk_client(&f, "b"), mk_client(&f, "c")};
  srv_store_close(f.st);
  f.st = NULL;
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    fx_t g = f;
    fx_reopen(&g);
    ck_assert_int_eq(srv_sched_init(&g.sched, g.st, g.job.id, NULL), 0);
    srv_work_t w[2];
    ck_assert_int_eq(work(&g, cl[0], 2, T0, w, NULL), 2);
    ck_assert_int_eq(report_true(&g, cl[0], &w[0], T0 + 1, NULL), 0); /* committed */
    ck_assert_int_eq(srv_store_begin(g.st), 0);
    nq_counts_t c = solve(w[1].unit);
    ck_assert_int_eq(srv_sched_result(&g.sched, cl[0], w[1].id, w[1].unit, &c, 1,
                                      NQ_SOLVER_VERSION, T0 + 2, NULL), 0);
    srv_work_t wb[2];
    int n = 0;
    srv_nowork_t why;
    ck_assert_int_eq(srv_sched_get_work(&g.sched, cl[1], 2, T0 + 2, wb, &n, &why), 0);
    ck_assert_int_eq(n, 2);
    raise(SIGKILL); /* no commit, no close */
    _exit(1);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  fx_reopen(&f);
  ck_assert_int_eq(srv_sched_init(&f.sched, f.st, f.job.id, NULL), 0);
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM assignments"), 2);
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM assignments WHERE reported_at IS NOT NULL"), 1);
  ck_assert_int_eq(q1(f.path, "SELECT count(*) FROM assignments WHERE state = 'leased'"), 1);
  check_invariants(&f);
  /* Client a comes back and gets its surviving lease re-sent, then everyone finishes the job. */
  srv_work_t w[2];
  ck_assert_int_eq(work(&f, cl[0], 2, T0 + 10, w, NULL), 2);
  ck_assert_int_eq(w[0].resent, 1);
  int64_t now = T0 + 20;
  run_to_done(&f, cl, 3, &now);
  check_n8_totals(&f);
  check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* ---- clients ------------------------------------------------------------------------------ */

static int count_clients_cb(const srv_client_t *c, void *arg) {
  (void)c;
  (*(int *)arg)++;
  return 0;
}

START_TEST(client_registry) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  srv_client_t c, d;
  ck_assert_int_eq(srv_client_create(f.st, "alpha", "h1", T0, &c), 0);
  ck_assert_str_eq(c.name, "alpha");
  ck_assert_int_eq(srv_client_create(f.st, "alpha", "h2", T0, &d), NQ_EEXIST);
  ck_assert_int_eq(srv_client_create(f.st, "beta", "h1", T0, &d), NQ_EEXIST);
  ck_assert_int_eq(srv_client_create(f.st, "a b", "h3", T0, &d), NQ_EINVAL);
  ck_assert_int_eq(srv_client_create(f.st, "", "h3", T0, &d), NQ_EINVAL);
  ck_assert_int_eq(srv_client_enrol(f.st, "alpha", "h4", T0, &d), 0);
  ck_assert_str_eq(d.name, "alpha-2");
  ck_assert_int_eq(srv_client_enrol(f.st, "alpha", "h5", T0, &d), 0);
  ck_assert_str_eq(d.name, "alpha-3");
  ck_assert_int_eq(srv_client_enrol(f.st, "zeta", "h5", T0, &d), NQ_EEXIST);
  char longname[SRV_NAME_MAX + 1];
  memset(longname, 'x', SRV_NAME_MAX);
  longname[SRV_NAME_MAX] = '\0';
  ck_assert_int_eq(srv_client_enrol(f.st, longname, "h6", T0, &d), 0);
  ck_assert_int_eq(srv_client_enrol(f.st, longname, "h7", T0, &d), 0);
  ck_assert_int_eq((int)strlen(d.name), SRV_NAME_MAX);
  ck_assert_str_eq(d.name + SRV_NAME_MAX - 2, "-2");
  ck_assert_int_eq(srv_client_find_token(f.st, "h4", &d), 0);
  ck_assert_str_eq(d.name, "alpha-2");
  ck_assert_int_eq(srv_client_find_token(f.st, "nope", &d), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_client_find_name(f.st, "alpha", &d), 0);
  ck_assert_int_eq(d.id, c.id);
  ck_assert_int_eq(srv_client_touch(f.st, c.id, T0 + 99), 0);
  ck_assert_int_eq(srv_client_touch(f.st, c.id, T0 + 5), 0); /* never goes back */
  ck_assert_int_eq(client_of(&f, c.id).last_seen, T0 + 99);
  ck_assert_int_eq(srv_client_touch(f.st, 9999, T0), NQ_ENOTFOUND);
  int count = 0;
  ck_assert_int_eq(srv_client_list(f.st, count_clients_cb, &count), 0);
  ck_assert_int_eq(count, 5);
  srv_stats_t stats;
  ck_assert_int_eq(srv_store_stats(f.st, f.job.id, T0 + 100, 10, 10, &stats), 0);
  ck_assert_int_eq(stats.clients_known, 5);
  ck_assert_int_eq(stats.clients_active, 1);
  fx_done(&f);
}
END_TEST

static int count_jobs_cb(const srv_job_t *j, void *arg) {
  (void)j;
  (*(int *)arg)++;
  return 0;
}

START_TEST(two_jobs_listed) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  srv_job_t j;
  ck_assert_int_eq(srv_job_ensure(f.st, 9, 3, 2, 5, T0, &j), 0);
  ck_assert_int_ne(j.id, f.job.id);
  int count = 0;
  ck_assert_int_eq(srv_job_list(f.st, count_jobs_cb, &count), 0);
  ck_assert_int_eq(count, 2);
  fx_done(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("store");
  TCase *tc = tcase_create("store");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, schema_applied_once);
  tcase_add_test(tc, schema_dir_errors);
  tcase_add_test(tc, job_create_resume_depth);
  tcase_add_test(tc, full_job_n8_three_clients);
  tcase_add_test(tc, mismatch_escalates_to_third_replica);
  tcase_add_test(tc, agreement_rule_solver_versions);
  tcase_add_test(tc, dispute_after_max_results);
  tcase_add_test(tc, dispute_retry_to_quorum);
  tcase_add_test(tc, schema_migrates_from_001);
  tcase_add_test(tc, unit_list_by_state);
  tcase_add_test(tc, expiry_reissue_and_late_results);
  tcase_add_test(tc, late_wrong_result_is_invalid);
  tcase_add_test(tc, progress_extends_and_revives);
  tcase_add_test(tc, no_two_replicas_and_resend);
  tcase_add_test(tc, per_client_cap);
  tcase_add_test(tc, expired_lease_leased_again_to_same_client);
  tcase_add_test(tc, lease_sized_from_expected_cost);
  tcase_add_test(tc, duplicate_counted_once);
  tcase_add_test(tc, foreign_and_unknown_refused);
  tcase_add_test(tc, impossible_numbers_refused);
  tcase_add_test(tc, banned_client_gets_nothing);
  tcase_add_test(tc, auto_ban_past_threshold);
  tcase_add_test(tc, group_commit_and_rollback);
  tcase_add_test(tc, sched_requires_transaction);
  tcase_add_test(tc, kill_safety);
  tcase_add_test(tc, client_registry);
  tcase_add_test(tc, two_jobs_listed);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
