/* Upgrade suite (issue 32: upgrades under a live job): for every schema version in schema/, a
 * database of that version holding a half-done job -- verified units with their valid results and
 * credit, results awaiting their replica, live leases (with a progress report where the version
 * has them), a disputed unit, pending units -- is taken through the migrations to the current
 * schema by the store's open, checked (every counter against a recount: srv_store_check and the
 * fixtures' invariants), and finished through the scheduler with true results to the published
 * totals: the lease holder's result is taken as its own, the dispute resolves by more replicas,
 * nobody computes a verified unit again.
 *
 * The job is written as a server of schema 001 wrote it (its SQL below), then brought to version
 * K by the migration files up to K (what a K-era server that had been upgraded step by step
 * held), and given the data only version K has (a progress report, a client's software). */
#include "fx_store.h"
#include "nq/nq.h"
#include "nq/unit.h"
#include "sched.h"
#include "store_api.h"
#include "store_int.h"
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nq/files.h"

#define N 8
#define DEPTH 3
#define MAX_UNITS 64
#define NCL 5

static const char *const names[NCL] = {"a", "b", "c", "d", "e"};

typedef struct old_job_s {
  srv_store_t *st;
  int n;
  char text[MAX_UNITS][NQ_UNIT_TEXT_MAX];
} old_job_t;

static int gen_cb(const nq_unit_t *u, void *arg) {
  old_job_t *o = arg;
  ck_assert_int_lt(o->n, MAX_UNITS);
  ck_assert_int_gt(nq_unit_format(u, o->text[o->n], NQ_UNIT_TEXT_MAX), 0);
  char sql[512];
  snprintf(sql, sizeof sql, "INSERT INTO units(job_id, idx, text, part, bound1, need) "
           "VALUES (1, %d, '%s', '%c', %d, 2)", o->n, o->text[o->n],
           u->part == NQ_PART_CORNER ? 'c' : 's', u->bound1);
  o->n++;
  return srv_store_exec(o->st, sql);
}

static void exec(srv_store_t *st, const char *sql) {
  ck_assert_msg(srv_store_exec(st, sql) == 0, "%s: %s", sql, srv_store_errmsg(st));
}

/* One assignment of unit `u` (1-based id) to client `c` as schema 001 stored it: state, and the
 * counts when it has a result. */
static void old_asg(old_job_t *o, int u, int c, const char *state, const nq_counts_t *k) {
  char sql[600];
  if (k)
    snprintf(sql, sizeof sql, "INSERT INTO assignments(unit_id, client_id, issued, deadline, "
             "state, c2, c4, c8, nodes, seconds, solver, reported_at) VALUES (%d, %d, %d, %d, "
             "'%s', %llu, %llu, %llu, %llu, 0.5, '%s', %d)", u, c, T0, T0 + 3600, state,
             (unsigned long long)k->c2, (unsigned long long)k->c4, (unsigned long long)k->c8,
             (unsigned long long)k->nodes, NQ_SOLVER_VERSION, T0 + 10);
  else
    snprintf(sql, sizeof sql, "INSERT INTO assignments(unit_id, client_id, issued, deadline, "
             "state) VALUES (%d, %d, %d, %d, '%s')", u, c, T0, T0 + 3600, state);
  exec(o->st, sql);
}

/* The half-done job as the server of schema 001 left it. Units 1..V verified by clients 1 and 2
 * (both valid), unit V+1 awaiting (client 1 reported, need 1), V+2 leased to client 3, V+3
 * disputed (max_results 3 results that disagree: clients 1, 2, 3, one of them right), the rest
 * pending. */
static int make_old_job(srv_store_t *st, old_job_t *o) {
  o->st = st;
  o->n = 0;
  exec(st, "INSERT INTO jobs(id, n, depth, quorum, max_results, created) VALUES (1, 8, 3, 2, 3, "
           "1700000000)");
  ck_assert_int_eq(nq_units_generate(N, DEPTH, gen_cb, o), 0);
  char sql[256];
  snprintf(sql, sizeof sql, "UPDATE jobs SET units = %d WHERE id = 1", o->n);
  exec(st, sql);
  for (int i = 0; i < NCL; i++) {
    snprintf(sql, sizeof sql, "INSERT INTO clients(name, token_hash, created, last_seen) VALUES "
             "('%s', 'hash-of-%s', %d, %d)", names[i], names[i], T0, T0 + 10);
    exec(st, sql);
  }
  int v = o->n / 2;
  for (int u = 1; u <= v; u++) {
    nq_counts_t k = fx_solve(o->text[u - 1]);
    old_asg(o, u, 1, "valid", &k);
    old_asg(o, u, 2, "valid", &k);
    snprintf(sql, sizeof sql, "UPDATE units SET state = 'verified', results = 2, best = 2, "
             "need = 0, c2 = %llu, c4 = %llu, c8 = %llu, nodes = %llu, verified_at = %d WHERE "
             "id = %d", (unsigned long long)k.c2, (unsigned long long)k.c4,
             (unsigned long long)k.c8, (unsigned long long)k.nodes, T0 + 10, u);
    exec(st, sql);
  }
  nq_counts_t k = fx_solve(o->text[v]);
  old_asg(o, v + 1, 1, "reported", &k);
  snprintf(sql, sizeof sql, "UPDATE units SET state = 'awaiting', results = 1, best = 1, need = 1 "
           "WHERE id = %d", v + 1);
  exec(st, sql);
  old_asg(o, v + 2, 3, "leased", NULL);
  snprintf(sql, sizeof sql, "UPDATE units SET state = 'leased', live = 1, need = 1 WHERE id = %d",
           v + 2);
  exec(st, sql);
  k = fx_solve(o->text[v + 2]);
  nq_counts_t l1 = fx_lie(o->text[v + 2]), l2 = l1;
  l2.c8++;
  l2.nodes++;
  old_asg(o, v + 3, 1, "reported", &k);
  old_asg(o, v + 3, 2, "reported", &l1);
  old_asg(o, v + 3, 3, "reported", &l2);
  snprintf(sql, sizeof sql, "UPDATE units SET state = 'disputed', results = 3, best = 1, need = 0 "
           "WHERE id = %d", v + 3);
  exec(st, sql);
  exec(st, "UPDATE clients SET valid = (SELECT count(*) FROM assignments a WHERE a.client_id = "
           "clients.id AND a.state = 'valid')");
  return v;
}

/* A directory holding the schema files up to version k; the newest version in schema/. */
static void schema_upto(const char *dir, int k) {
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  DIR *d = opendir(SCHEMA);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int v = 0;
    if (strlen(e->d_name) < 5 || sscanf(e->d_name, "%3d_", &v) != 1 || v < 1 || v > k ||
        !strstr(e->d_name, ".sql"))
      continue;
    char from[600], to[700];
    snprintf(from, sizeof from, "%s/%s", SCHEMA, e->d_name);
    snprintf(to, sizeof to, "%s/%s", dir, e->d_name);
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    ck_assert(in && out);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    ck_assert_int_eq(fclose(out), 0);
  }
  closedir(d);
}

static int versions(int *out, int max) {
  int n = 0;
  DIR *d = opendir(SCHEMA);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int v = 0;
    if (sscanf(e->d_name, "%3d_", &v) == 1 && v > 0 && strstr(e->d_name, ".sql") && n < max)
      out[n++] = v;
  }
  closedir(d);
  for (int i = 1; i < n; i++) /* insertion sort: a handful */
    for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
      int t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return n;
}

/* The half-done job at schema version `k`, upgraded and finished. */
static void upgrade_from(int k) {
  fx_t f;
  memset(&f, 0, sizeof f);
  f.dir = tu_tmpdir("upgrade");
  f.t0 = T0;
  snprintf(f.path, sizeof f.path, "%s/nq.db", f.dir);
  char d1[600], dk[600], err[256] = "";
  snprintf(d1, sizeof d1, "%s/schema-001", f.dir);
  snprintf(dk, sizeof dk, "%s/schema-%03d", f.dir, k);
  schema_upto(d1, 1);
  if (k > 1) schema_upto(dk, k);
  srv_store_t *st = NULL;
  ck_assert_msg(srv_store_open(&st, f.path, d1, err, sizeof err) == 0, "open 001: %s", err);
  static old_job_t o;
  int v = make_old_job(st, &o);
  srv_store_close(st);
  /* The K-era server: its migrations, and what only it writes. */
  ck_assert_msg(srv_store_open(&st, f.path, dk, err, sizeof err) == 0, "open %03d: %s", k, err);
  int ver = 0;
  ck_assert_int_eq(srv_store_schema_version(st, &ver), 0);
  ck_assert_int_eq(ver, k);
  char sql[256];
  if (k >= 4) {
    snprintf(sql, sizeof sql, "UPDATE assignments SET progress = 0.5, progress_seconds = 1, "
             "progress_nodes = 1000, progress_at = %d WHERE state = 'leased'", T0 + 20);
    exec(st, sql);
  }
  if (k >= 8) exec(st, "UPDATE clients SET software = 'nq-client 0.0.9', protocol = 1");
  if (k >= 9) exec(st, "UPDATE clients SET public_name = 'alice' WHERE name = 'a'");
  if (k >= 10) exec(st, "UPDATE assignments SET backend = 'avx2' WHERE reported_at IS NOT NULL");
  srv_store_close(st);
  /* Today's server opens it: every later migration, then the checks. */
  fx_reopen(&f);
  ck_assert_int_eq(srv_store_schema_version(f.st, &ver), 0);
  ck_assert_int_gt(ver, 8);
  ck_assert_int_eq(srv_job_get(f.st, 1, &f.job), 0);
  ck_assert_int_eq(f.job.units, o.n);
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.quorum_distinct = SRV_DISTINCT_CLIENT; /* every old client is owner `default` now */
  cfg.seed = 0x6e71;
  cfg.spot_check = 0;
  ck_assert_int_eq(srv_sched_init(&f.sched, f.st, f.job.id, &cfg), 0);
  /* As nq-server does at start (srv.c): without it the old dispute never takes a replica. */
  int recounted = 0;
  ck_assert_int_eq(srv_sched_recount_disputed(&f.sched, T0 + 50, &recounted), 0);
  ck_assert_int_eq(recounted, 1);
  fx_check_invariants(&f);
  ck_assert_int_eq(fx_q1(f.path, "SELECT verified FROM job_stats"), v);
  ck_assert_int_eq(fx_q1(f.path, "SELECT disputed FROM job_stats"), 1);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM clients WHERE credit_lo > 0"), 2);
  /* The lease held across the upgrade is still its holder's: its result counts as its own. */
  int64_t now = T0 + 100;
  srv_work_t w[4];
  ck_assert_int_eq(fx_work(&f, 3, 4, now++, w, NULL), 4);
  ck_assert_int_eq(w[0].resent, 1);
  ck_assert_int_eq(w[0].unit_id, v + 2);
  srv_result_info_t info;
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(fx_report_true(&f, 3, &w[i], now++, &info), 0);
    ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
  }
  int64_t cl[NCL];
  for (int i = 0; i < NCL; i++) cl[i] = i + 1;
  fx_run_to_done(&f, cl, NCL, &now);
  fx_check_n8_totals(&f);
  fx_check_invariants(&f);
  /* The verified units of the old job got no new assignment; the dispute was settled for the
   * true answer (the two liars judged invalid). */
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments WHERE unit_id <= (SELECT "
                                  "count(*) FROM units) / 2 AND issued > 1700000000"), 0);
  snprintf(sql, sizeof sql, "SELECT count(*) FROM assignments WHERE unit_id = %d AND state = "
           "'invalid'", v + 3);
  ck_assert_int_eq(fx_q1(f.path, sql), 2);
  fx_done(&f);
}

START_TEST(upgrade_each_version_and_finish) {
  int vs[64];
  int n = versions(vs, 64);
  ck_assert_int_ge(n, 8);
  for (int i = 0; i < n; i++) upgrade_from(vs[i]);
}
END_TEST

/* Wait for a child's exit (up to limit_s); its exit status, or -1 when it did not exit. */
static int wait_exit(pid_t pid, double limit_s) {
  double t0 = tu_now_s();
  int st = 0;
  while (tu_now_s() - t0 < limit_s) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    tu_sleep_ms(100);
  }
  return -1;
}

/* The same half-done job of a schema-001 server, finished by today's programs: nq-server opens
 * the old database in its data directory (migrations, the recount of the old dispute) and two
 * real nq-clients, enrolled afresh, finish the job to the published totals. The old clients never
 * come back: their lease expires and is reissued. */
START_TEST(upgrade_from_001_with_real_clients) {
  char *dir = tu_tmpdir("upgrade-real");
  char data[600], db[700], d1[600], err[256] = "";
  snprintf(data, sizeof data, "%s/data", dir);
  snprintf(db, sizeof db, "%s/nq.db", data);
  snprintf(d1, sizeof d1, "%s/schema-001", dir);
  ck_assert_int_eq(mkdir(data, 0700), 0);
  schema_upto(d1, 1);
  srv_store_t *st = NULL;
  ck_assert_msg(srv_store_open(&st, db, d1, err, sizeof err) == 0, "open 001: %s", err);
  static old_job_t o;
  make_old_job(st, &o);
  srv_store_close(st);
  const char *bin = tu_bin_dir();
  char server[600], client[600], listen[64], srvlog[700], port_s[16];
  snprintf(server, sizeof server, "%s/nq-server", bin);
  snprintf(client, sizeof client, "%s/nq-client", bin);
  int port = tu_free_port();
  snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
  snprintf(port_s, sizeof port_s, "%d", port);
  snprintf(srvlog, sizeof srvlog, "%s/server.log", dir);
  /* --new-ca: the old job's clients were written into the database, never given a CA (a server
   * refuses to make one for a database with clients otherwise: a restore without its keys). */
  char *sargv[] = {server, "--n", "8", "--depth", "3", "--quorum-distinct", "client",
                   "--listen", listen, "--data", data, "--http", "off", "--lease-seconds", "2",
                   "--lease-min", "2", "--exit-when-done", "--new-ca", NULL};
  int spid = tu_spawn(sargv, srvlog);
  ck_assert_int_gt(spid, 0);
  char ca[700], key[700], enrol[200] = "";
  snprintf(ca, sizeof ca, "%s/ca.pem", data);
  snprintf(key, sizeof key, "%s/enrol.key", data);
  for (int i = 0; i < 300; i++) {
    int fd = nq_file_read_line(key, enrol, sizeof enrol) == 0 ? tu_tcp_connect(port) : -1;
    if (fd >= 0) {
      close(fd);
      break;
    }
    enrol[0] = 0;
    tu_sleep_ms(100);
  }
  ck_assert_msg(enrol[0], "the server did not start (see %s)", srvlog);
  int cpid[2];
  for (int i = 0; i < 2; i++) {
    char state[700], name[16], clog[700], srv[64];
    snprintf(state, sizeof state, "%s/state-%d", dir, i);
    snprintf(name, sizeof name, "new-%d", i);
    snprintf(clog, sizeof clog, "%s/client-%d.log", dir, i);
    snprintf(srv, sizeof srv, "127.0.0.1:%d", port);
    char *cargv[] = {client, "--server", srv, "--ca", ca, "--enrol", enrol, "--name", name,
                     "--threads", "1", "--priority", "normal", "--state", state, NULL};
    cpid[i] = tu_spawn(cargv, clog);
    ck_assert_int_gt(cpid[i], 0);
  }
  int rc = wait_exit(spid, 120);
  for (int i = 0; i < 2; i++) {
    kill(cpid[i], SIGTERM);
    waitpid(cpid[i], NULL, 0);
  }
  if (rc < 0) kill(spid, SIGKILL);
  ck_assert_msg(rc == 0, "nq-server: %d (see %s)", rc, srvlog);
  char total[64] = "";
  fx_qs(db, "SELECT total || ' ' || uniq FROM jobs WHERE id = 1", total, sizeof total);
  ck_assert_str_eq(total, "92 12");
  ck_assert_int_eq(fx_q1(db, "SELECT count(*) FROM units WHERE state != 'verified'"), 0);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("upgrade");
  TCase *tc = tcase_create("upgrade");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, upgrade_each_version_and_finish);
  tcase_add_test(tc, upgrade_from_001_with_real_clients);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run_suite(suite());
}
