/* Store suite (server/store/store.c, store_work.c): schema and migrations, job creation and resume, unit
 * lists, group commit and rollback, what survives a kill, the client registry. The scheduler's
 * rules have their own suite (test_sched.c); both use the fixtures of tests/fx_store.c. Every
 * test gets a fresh database in its own temp dir; the clock is simulated. */
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/unit.h"
#include "sched.h"
#include "fx_store.h"
#include "store_api.h"
#include "store_int.h"
#include "testutil.h"

#include <dirent.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int count_units_cb(const nq_unit_t *u, void *arg) {
  (void)u;
  (*(int64_t *)arg)++;
  return 0;
}

/* ---- schema / jobs ------------------------------------------------------------------------ */

/* The migration files in schema/: how many, and the newest version (the numbers need not be
 * contiguous: helpers working in parallel reserve theirs). */
static void schema_files(int *count, int *newest) {
  DIR *d = opendir(SCHEMA);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  *count = *newest = 0;
  while ((e = readdir(d)) != NULL) {
    int v;
    char tail[8];
    if (sscanf(e->d_name, "%3d_%*[^.]%7s", &v, tail) == 2 && !strcmp(tail, ".sql")) {
      (*count)++;
      if (v > *newest) *newest = v;
    }
  }
  closedir(d);
  ck_assert_int_gt(*count, 0);
}

START_TEST(schema_applied_once) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int v = 0, files, newest;
  schema_files(&files, &newest);
  ck_assert_int_eq(srv_store_schema_version(f.st, &v), 0);
  ck_assert_int_eq(v, newest);
  srv_store_close(f.st);
  fx_reopen(&f); /* the second open applies nothing and keeps the data */
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM schema_version"), files);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM jobs"), 1);
  ck_assert_int_eq(srv_meta_set(f.st, "k", "v1"), 0);
  ck_assert_int_eq(srv_meta_set(f.st, "k", "v2"), 0);
  char buf[16];
  ck_assert_int_eq(srv_meta_get(f.st, "k", buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "v2");
  ck_assert_int_eq(srv_meta_get(f.st, "nope", buf, sizeof buf), NQ_ENOTFOUND);
  /* WAL is a property of the file; foreign keys are enforced on the store's connection. */
  char mode[16];
  fx_qs(f.path, "PRAGMA journal_mode", mode, sizeof mode);
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

typedef struct old_ins_s {
  srv_store_t *st;
  int64_t idx;
} old_ins_t;

/* Insert a unit the way the server of schema 001 did (job 1, need = quorum 2). */
static int old_insert_cb(const nq_unit_t *u, void *arg) {
  old_ins_t *o = arg;
  char text[NQ_UNIT_TEXT_MAX], sql[512];
  ck_assert_int_gt(nq_unit_format(u, text, sizeof text), 0);
  snprintf(sql, sizeof sql, "INSERT INTO units(job_id, idx, text, part, bound1, need) "
           "VALUES (1, %lld, '%s', '%c', %d, 2)", (long long)o->idx++, text,
           u->part == NQ_PART_CORNER ? 'c' : 's', u->bound1);
  return srv_store_exec(o->st, sql);
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
  /* The job as a server of schema 001 made it: its row and its units in generator order. */
  srv_job_t job;
  memset(&job, 0, sizeof job);
  job.id = 1;
  ck_assert_int_eq(srv_store_exec(st, "INSERT INTO jobs(id, n, depth, quorum, max_results, "
                                      "created) VALUES (1, 8, 3, 2, 3, 1700000000)"), 0);
  old_ins_t oi = {st, 0};
  ck_assert_int_eq(nq_units_generate(8, 3, old_insert_cb, &oi), 0);
  job.units = oi.idx;
  char sql[128];
  snprintf(sql, sizeof sql, "UPDATE jobs SET units = %lld WHERE id = 1", (long long)job.units);
  ck_assert_int_eq(srv_store_exec(st, sql), 0);
  int v = 0;
  ck_assert_int_eq(srv_store_schema_version(st, &v), 0);
  ck_assert_int_eq(v, 1);
  srv_store_close(st);
  ck_assert_int_eq(fx_q1(path, "SELECT count(*) FROM pragma_table_info('units') "
                            "WHERE name = 'extra_results'"), 0);
  /* The current server opens it: every later file is applied once (005 rebuilds the jobs and
   * units tables), the units keep their rows, extra 0, the assignments get their (empty)
   * progress columns. */
  int files = 0, newest = 0;
  schema_files(&files, &newest);
  ck_assert_msg(srv_store_open(&st, path, SCHEMA, err, sizeof err) == 0, "open: %s", err);
  ck_assert_int_eq(srv_store_schema_version(st, &v), 0);
  ck_assert_int_eq(v, newest);
  srv_store_close(st);
  ck_assert_msg(srv_store_open(&st, path, SCHEMA, err, sizeof err) == 0, "reopen: %s", err);
  srv_store_close(st);
  ck_assert_int_eq(fx_q1(path, "SELECT count(*) FROM schema_version"), files);
  ck_assert_int_eq(fx_q1(path, "SELECT max(version) FROM schema_version"), newest);
  /* 008: the clients' software and protocol columns, empty until their next hello. */
  ck_assert_int_eq(fx_q1(path, "SELECT count(*) FROM pragma_table_info('clients') "
                            "WHERE name IN ('software', 'protocol')"), 2);
  ck_assert_int_eq(fx_q1(path, "SELECT count(*) FROM pragma_table_info('assignments') "
                            "WHERE name LIKE 'progress%'"), 4);
  ck_assert_int_eq(fx_q1(path, "SELECT count(*) FROM units"), job.units);
  ck_assert_int_eq(fx_q1(path, "SELECT count(*) FROM units WHERE extra_results != 0"), 0);
  /* 005 gave the old job its counters, its id range and (at the open) its split nodes: the 5
   * depth-2 corner and side nodes of N=8 above depth 3. */
  ck_assert_int_eq(fx_q1(path, "SELECT pending FROM job_stats WHERE job_id = 1"), job.units);
  ck_assert_int_eq(fx_q1(path, "SELECT first_unit FROM jobs WHERE id = 1"), 1);
  uint64_t d2 = 0;
  ck_assert_int_eq(nq_units_count(8, 2, &d2), 0);
  ck_assert_int_eq(fx_q1(path, "SELECT internal FROM jobs WHERE id = 1"), (int64_t)d2);
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
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM units WHERE state = 'pending'"), expect);
  fx_check_invariants(&f);
  /* Resume after a restart: same job, stored quorum kept. */
  srv_store_close(f.st);
  fx_reopen(&f);
  srv_job_t again;
  ck_assert_int_eq(srv_job_ensure(f.st, 10, 3, 3, 7, T0 + 50, &again), 0);
  ck_assert_int_eq(again.id, f.job.id);
  ck_assert_int_eq(again.quorum, 2);
  ck_assert_int_eq(again.units, expect);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM units"), expect);
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

static int collect_units_cb(const srv_unit_info_t *u, void *arg) {
  int64_t *v = arg;
  v[v[0] + 1] = u->id;
  v[0]++;
  return 0;
}

START_TEST(unit_list_by_state) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = fx_client(&f, "a");
  srv_work_t w[2];
  ck_assert_int_eq(fx_work(&f, a, 2, T0, w, NULL), 2);
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

/* ---- transactions ------------------------------------------------------------------------ */

/* Several results in ONE transaction; a refused one in the middle leaves no trace and does not
 * spoil the others. A rolled-back group leaves nothing at all. */
START_TEST(group_commit_and_rollback) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = fx_client(&f, "a");
  srv_work_t w[3];
  ck_assert_int_eq(fx_work(&f, a, 3, T0, w, NULL), 3);
  nq_counts_t c0 = fx_solve(w[0].unit), c2 = fx_solve(w[2].unit), bad = fx_solve(w[1].unit);
  bad.nodes = 0;
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_store_begin(f.st), NQ_ETXN);
  ck_assert(srv_store_in_tx(f.st));
  ck_assert_int_eq(fx_sched_result(&f.sched, a, w[0].id, w[0].unit, &c0, 1, NQ_SOLVER_VERSION, NULL, T0, NULL), 0);
  ck_assert_int_eq(fx_sched_result(&f.sched, a, w[1].id, w[1].unit, &bad, 1, NQ_SOLVER_VERSION, NULL, T0, NULL),
                   NQ_EINVAL);
  ck_assert_int_eq(fx_sched_result(&f.sched, a, w[2].id, w[2].unit, &c2, 1, NQ_SOLVER_VERSION, NULL, T0, NULL), 0);
  /* Not visible to other connections before the commit. */
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments WHERE reported_at IS NOT NULL"), 0);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments WHERE reported_at IS NOT NULL"), 2);
  ck_assert_int_eq(fx_asg_state(&f, w[1].id), SRV_ASG_LEASED);
  /* A group that is rolled back leaves nothing. */
  nq_counts_t c1 = fx_solve(w[1].unit);
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(fx_sched_result(&f.sched, a, w[1].id, w[1].unit, &c1, 1, NQ_SOLVER_VERSION, NULL, T0, NULL), 0);
  ck_assert_int_eq(srv_store_rollback(f.st), 0);
  ck_assert_int_eq(fx_asg_state(&f, w[1].id), SRV_ASG_LEASED);
  ck_assert_int_eq(srv_store_commit(f.st), NQ_ETXN);
  ck_assert_int_eq(srv_store_rollback(f.st), NQ_ETXN);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* kill -9 in the middle of a job: committed work survives, the open transaction vanishes, no unit
 * is lost or doubled, and the job can still be finished to the right totals. */
START_TEST(kill_safety) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t cl[3] = {fx_client(&f, "a"), fx_client(&f, "b"), fx_client(&f, "c")};
  srv_store_close(f.st);
  f.st = NULL;
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    fx_t g = f;
    fx_reopen(&g);
    ck_assert_int_eq(srv_sched_init(&g.sched, g.st, g.job.id, NULL), 0);
    srv_work_t w[2];
    ck_assert_int_eq(fx_work(&g, cl[0], 2, T0, w, NULL), 2);
    ck_assert_int_eq(fx_report_true(&g, cl[0], &w[0], T0 + 1, NULL), 0); /* committed */
    ck_assert_int_eq(srv_store_begin(g.st), 0);
    nq_counts_t c = fx_solve(w[1].unit);
    ck_assert_int_eq(fx_sched_result(&g.sched, cl[0], w[1].id, w[1].unit, &c, 1,
                                      NQ_SOLVER_VERSION, "avx2", T0 + 2, NULL), 0);
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
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments"), 2);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments WHERE reported_at IS NOT NULL"), 1);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments WHERE state = 'leased'"), 1);
  fx_check_invariants(&f);
  /* Client a comes back and gets its surviving lease re-sent, then everyone finishes the job. */
  srv_work_t w[2];
  ck_assert_int_eq(fx_work(&f, cl[0], 2, T0 + 10, w, NULL), 2);
  ck_assert_int_eq(w[0].resent, 1);
  int64_t now = T0 + 20;
  fx_run_to_done(&f, cl, 3, &now);
  fx_check_n8_totals(&f);
  fx_check_invariants(&f);
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
  ck_assert_int_eq(fx_client_of(&f, c.id).last_seen, T0 + 99);
  ck_assert_int_eq(srv_client_touch(f.st, 9999, T0), NQ_ENOTFOUND);
  /* What it runs: unknown until a hello says; a hello without software keeps the last one. */
  ck_assert_str_eq(fx_client_of(&f, c.id).software, "");
  ck_assert_int_eq(fx_client_of(&f, c.id).protocol, 0);
  ck_assert_int_eq(srv_client_hello(f.st, c.id, T0 + 120, "nq-client 0.1.0", 1), 0);
  ck_assert_str_eq(fx_client_of(&f, c.id).software, "nq-client 0.1.0");
  ck_assert_int_eq(fx_client_of(&f, c.id).protocol, 1);
  ck_assert_int_eq(fx_client_of(&f, c.id).last_seen, T0 + 120);
  ck_assert_int_eq(srv_client_hello(f.st, c.id, T0 + 121, NULL, 2), 0);
  ck_assert_str_eq(fx_client_of(&f, c.id).software, "nq-client 0.1.0");
  ck_assert_int_eq(fx_client_of(&f, c.id).protocol, 2);
  char longsw[NQ_PROTO_SOFTWARE_MAX + 2];
  memset(longsw, 'v', sizeof longsw - 1);
  longsw[sizeof longsw - 1] = '\0';
  ck_assert_int_eq(srv_client_hello(f.st, c.id, T0, longsw, 1), NQ_EINVAL);
  ck_assert_int_eq(srv_client_hello(f.st, 9999, T0, "x", 1), NQ_ENOTFOUND);
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

/* Archive and delete: refused while clients hold leases (nothing changes), forced through by
 * releasing them; an archived job keeps its rows and frees N for a new job (another depth);
 * delete, in small batches, removes exactly one job's rows and leaves the others whole. */
START_TEST(job_archive_and_delete) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  srv_job_t other, again, j;
  ck_assert_int_eq(srv_job_ensure(f.st, 9, 3, 2, 5, T0, &other), 0);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b");
  srv_work_t w[3];
  ck_assert_int_eq(fx_work(&f, a, 3, T0 + 1, w, NULL), 3);
  srv_result_info_t info;
  ck_assert_int_eq(fx_report_true(&f, a, &w[0], T0 + 2, &info), 0);
  ck_assert_int_eq(fx_work(&f, b, 1, T0 + 3, w, NULL), 1);
  int64_t leases = 0;
  ck_assert_int_eq(srv_job_leases(f.st, &f.job, &leases), 0);
  ck_assert_int_eq(leases, 3);
  /* Refused while leased: the message says how many and names --force; nothing changed. */
  ck_assert_int_eq(srv_job_archive(f.st, f.job.id, 0, T0 + 4), NQ_EBUSY);
  ck_assert_ptr_nonnull(strstr(srv_store_errmsg(f.st), "3 lease(s)"));
  ck_assert_ptr_nonnull(strstr(srv_store_errmsg(f.st), "--force"));
  ck_assert_int_eq(srv_job_delete(f.st, f.job.id, 0, 5), NQ_EBUSY);
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &j), 0);
  ck_assert_int_eq(j.state, SRV_JOB_RUNNING);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments WHERE state = 'leased'"), 3);
  /* Forced: the leases are released, the rows stay, the counters still equal the scans. */
  ck_assert_int_eq(srv_job_archive(f.st, f.job.id, 1, T0 + 5), 0);
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &j), 0);
  ck_assert_int_eq(j.state, SRV_JOB_ARCHIVED);
  ck_assert_int_eq(j.archived, T0 + 5);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments WHERE state = 'leased'"), 0);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments"), 4);
  ck_assert_int_eq(srv_job_leases(f.st, &f.job, &leases), 0);
  ck_assert_int_eq(leases, 0);
  fx_check_counters(&f);
  ck_assert_int_eq(srv_job_archive(f.st, f.job.id, 0, T0 + 6), NQ_ESTATE);
  /* N=8 is free: a new job, at another depth, in the same store. */
  ck_assert_int_eq(srv_job_find_n(f.st, 8, &j), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_job_ensure(f.st, 8, 4, 2, 5, T0 + 7, &again), 0);
  ck_assert_int_ne(again.id, f.job.id);
  ck_assert_int_eq(again.depth, 4);
  int64_t units_all = fx_q1(f.path, "SELECT count(*) FROM units");
  ck_assert_int_eq(units_all, f.job.units + other.units + again.units);
  /* Delete the archived job in batches of 5 units: its rows go, the two others' stay. */
  ck_assert_int_eq(srv_job_delete(f.st, f.job.id, 0, 5), 0);
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &j), NQ_ENOTFOUND);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM units"), other.units + again.units);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments"), 0);
  char sql[200];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM job_stats WHERE job_id = %lld",
           (long long)f.job.id);
  ck_assert_int_eq(fx_q1(f.path, sql), 0);
  snprintf(sql, sizeof sql, "SELECT count(*) FROM units WHERE job_id = %lld", (long long)again.id);
  ck_assert_int_eq(fx_q1(f.path, sql), again.units);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM job_stats"), 2);
  ck_assert_int_eq(srv_job_find_n(f.st, 8, &j), 0);
  ck_assert_int_eq(j.id, again.id);
  ck_assert_int_eq(srv_job_delete(f.st, f.job.id, 0, 5), NQ_ENOTFOUND);
  /* Not inside a transaction: delete commits batch by batch. */
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_job_delete(f.st, other.id, 0, 5), NQ_ETXN);
  ck_assert_int_eq(srv_store_rollback(f.st), 0);
  fx_done(&f);
}
END_TEST

/* After an outage (srv_outage.h) the leases live at the last stamp get the time back, deadline
 * and issue together; leases already due then, results and other states do not move. */
START_TEST(leases_shift_after_outage) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b"), c = fx_client(&f, "c");
  srv_work_t wa[2], wb[1], wc[1];
  ck_assert_int_eq(fx_work(&f, a, 2, T0, wa, NULL), 2);       /* due T0 + 3600 */
  ck_assert_int_eq(fx_work(&f, b, 1, T0, wb, NULL), 1);
  ck_assert_int_eq(fx_report_true(&f, b, &wb[0], T0 + 1, NULL), 0);
  ck_assert_int_eq(fx_work(&f, c, 1, T0 + 3000, wc, NULL), 1); /* due T0 + 6600 */
  int64_t n = -1;
  ck_assert_int_eq(srv_asg_shift_leases(f.st, T0 + 4000, 0, &n), 0);
  ck_assert_int_eq(n, 0);
  ck_assert_int_eq(srv_asg_shift_leases(f.st, T0 + 4000, 500, &n), 0);
  ck_assert_int_eq(n, 1);
  srv_asg_info_t i;
  ck_assert_int_eq(srv_asg_get(f.st, wc[0].id, &i), 0);
  ck_assert_int_eq(i.deadline, T0 + 7100);
  ck_assert_int_eq(i.issued, T0 + 3500);
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(srv_asg_get(f.st, wa[k].id, &i), 0);
    ck_assert_int_eq(i.deadline, T0 + 3600);
    ck_assert_int_eq(i.issued, T0);
  }
  ck_assert_int_eq(srv_asg_get(f.st, wb[0].id, &i), 0);
  ck_assert_int_eq(i.issued, T0);
  /* The sweep at the old deadline takes a's leases (already due at the stamp), not c's. */
  int64_t swept = 0;
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_expire(&f.sched, T0 + 6600, &swept), 0);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  ck_assert_int_eq(swept, 2);
  ck_assert_int_eq(fx_asg_state(&f, wc[0].id), SRV_ASG_LEASED);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* Sign-ups (schema 022): the windows count what was admitted, by address, network and in all;
 * a decision moves only a pending request; pruning keeps pending and approved rows. */
START_TEST(signup_windows_and_decisions) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  srv_signup_t a = {.at = T0, .addr = "10.0.0.1", .net = "10.0.0.0/24",
                    .state = SRV_SIGNUP_JOINED, .client_name = "a"};
  int64_t id = 0, n = 0, oldest = 0;
  ck_assert_int_eq(srv_signup_add(f.st, &a, NULL, &id), 0);
  a.at = T0 + 10;
  ck_assert_int_eq(srv_signup_add(f.st, &a, NULL, &id), 0);
  srv_signup_t b = {.at = T0 + 20, .addr = "10.0.0.2", .net = "10.0.0.0/24",
                    .state = SRV_SIGNUP_PENDING, .client_name = "b", .public_name = "Bee"};
  int64_t pid = 0;
  ck_assert_int_eq(srv_signup_add(f.st, &b, "feed", &pid), 0);
  ck_assert_int_eq(srv_signup_window(f.st, SRV_SIGNUP_BY_ADDR, "10.0.0.1", T0 - 1, &n, &oldest), 0);
  ck_assert_int_eq(n, 2);
  ck_assert_int_eq(oldest, T0);
  ck_assert_int_eq(srv_signup_window(f.st, SRV_SIGNUP_BY_ADDR, "10.0.0.1", T0, &n, &oldest), 0);
  ck_assert_int_eq(n, 1); /* the window is (since, now] */
  ck_assert_int_eq(srv_signup_window(f.st, SRV_SIGNUP_BY_NET, "10.0.0.0/24", T0 - 1, &n, &oldest), 0);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(srv_signup_window(f.st, SRV_SIGNUP_BY_ALL, NULL, T0 - 1, &n, &oldest), 0);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(srv_signup_pending_count(f.st, &n), 0);
  ck_assert_int_eq(n, 1);
  int taken = 0;
  ck_assert_int_eq(srv_public_name_taken(f.st, "Bee", &taken), 0);
  ck_assert_int_eq(taken, 1);
  srv_signup_t got;
  ck_assert_int_eq(srv_signup_find_ticket(f.st, "feed", &got), 0);
  ck_assert_int_eq(got.id, pid);
  ck_assert_str_eq(got.public_name, "Bee");
  ck_assert_int_eq(srv_signup_decide(f.st, id, SRV_SIGNUP_APPROVED, T0), NQ_ESTATE); /* joined */
  ck_assert_int_eq(srv_signup_decide(f.st, pid, SRV_SIGNUP_APPROVED, T0 + 30), 0);
  ck_assert_int_eq(srv_signup_decide(f.st, pid, SRV_SIGNUP_REJECTED, T0 + 31), NQ_ESTATE);
  ck_assert_int_eq(srv_signup_decide(f.st, 999, SRV_SIGNUP_REJECTED, T0), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_signup_pending_count(f.st, &n), 0);
  ck_assert_int_eq(n, 1); /* approved, not collected: still held */
  ck_assert_int_eq(srv_signup_prune(f.st, T0 + 1000, &n), 0);
  ck_assert_int_eq(n, 2); /* the two joined rows; the approved one stays */
  srv_owner_t o;
  ck_assert_int_eq(srv_owner_create(f.st, "v-1", "kh", T0, &o), 0);
  ck_assert_int_eq(srv_signup_joined(f.st, pid, o.id), 0);
  ck_assert_int_eq(srv_signup_find_ticket(f.st, "feed", &got), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_owner_set_joined(f.st, o.id, "Bee"), 0);
  ck_assert_int_eq(srv_owner_get(f.st, o.id, &o), 0);
  ck_assert_int_eq(o.self_joined, 1);
  ck_assert_str_eq(o.public_name, "Bee");
  srv_owner_t o2;
  ck_assert_int_eq(srv_owner_create(f.st, "v-2", "kh2", T0, &o2), 0);
  ck_assert_int_eq(srv_owner_set_joined(f.st, o2.id, "Bee"), NQ_EEXIST);
  fx_done(&f);
}
END_TEST

static int vol_cb(const srv_volunteer_t *v, void *arg) {
  srv_volunteer_t *out = arg;
  if (v->owner_id == out->owner_id) *out = *v;
  return 0;
}

static int news_count_cb(const srv_news_t *n, void *arg) {
  (void)n;
  (*(int *)arg)++;
  return 0;
}

/* News and teams (schema 023). */
START_TEST(news_and_teams) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  srv_news_t n;
  ck_assert_int_eq(srv_news_add(f.st, "one", T0, &n), 0);
  ck_assert_int_eq(srv_news_add(f.st, "two", T0 + 1, NULL), 0);
  ck_assert_int_eq(srv_news_add(f.st, "a\nb", T0, NULL), NQ_EINVAL);
  ck_assert_int_eq(srv_news_add(f.st, "", T0, NULL), NQ_EINVAL);
  int k = 0;
  ck_assert_int_eq(srv_news_list(f.st, 1, news_count_cb, &k), 0);
  ck_assert_int_eq(k, 1);
  ck_assert_int_eq(srv_news_remove(f.st, n.id), 0);
  ck_assert_int_eq(srv_news_remove(f.st, n.id), NQ_ENOTFOUND);
  k = 0;
  ck_assert_int_eq(srv_news_list(f.st, 0, news_count_cb, &k), 0);
  ck_assert_int_eq(k, 1);
  srv_team_t t;
  ck_assert_int_eq(srv_team_add(f.st, "lab", T0, &t), 0);
  ck_assert_int_eq(srv_team_add(f.st, "lab", T0, NULL), NQ_EEXIST);
  ck_assert_int_eq(srv_team_add(f.st, "a b", T0, NULL), NQ_EINVAL);
  srv_owner_t o;
  ck_assert_int_eq(srv_owner_create(f.st, "alice", "k1", T0, &o), 0);
  ck_assert_int_eq(srv_owner_set_team(f.st, o.id, t.id), 0);
  int64_t c = fx_client(&f, "alice-1");
  ck_assert_int_eq(srv_client_set_owner(f.st, c, o.id), 0);
  ck_assert_int_eq(srv_team_rename(f.st, "lab", "lab2"), 0);
  ck_assert_int_eq(srv_team_rename(f.st, "lab", "lab3"), NQ_ENOTFOUND);
  char name[SRV_NAME_MAX + 1];
  ck_assert_int_eq(srv_owner_team(f.st, o.id, name, sizeof name), 0);
  ck_assert_str_eq(name, "lab2");
  srv_volunteer_t v = {.owner_id = o.id};
  ck_assert_int_eq(srv_volunteer_list(f.st, vol_cb, &v), 0);
  ck_assert_int_eq(v.machines, 1);
  ck_assert_str_eq(v.team, "lab2");
  ck_assert_int_eq(v.named, 0);
  ck_assert(strncmp(v.display, "anonymous-", 10) == 0);
  ck_assert_int_eq(srv_team_remove(f.st, "lab2"), 0);
  ck_assert_int_eq(srv_owner_team(f.st, o.id, name, sizeof name), 0);
  ck_assert_str_eq(name, "");
  ck_assert_int_eq(srv_team_remove(f.st, "lab2"), NQ_ENOTFOUND);
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
  tcase_add_test(tc, schema_migrates_from_001);
  tcase_add_test(tc, unit_list_by_state);
  tcase_add_test(tc, group_commit_and_rollback);
  tcase_add_test(tc, kill_safety);
  tcase_add_test(tc, client_registry);
  tcase_add_test(tc, two_jobs_listed);
  tcase_add_test(tc, job_archive_and_delete);
  tcase_add_test(tc, leases_shift_after_outage);
  tcase_add_test(tc, signup_windows_and_decisions);
  tcase_add_test(tc, news_and_teams);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
