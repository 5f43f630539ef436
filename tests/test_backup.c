/* Backup suite (server/store/store_backup.c, server/core/backup.c; nq/backup.h): a backup of a half-done job
 * is checked good and, restored, finishes the job exactly (the restore drill); it is one snapshot
 * of what was committed, taken while the writer holds an open transaction, and never makes it
 * wait; the check finds every kind of broken counter and refuses what is not a database; rotation
 * keeps the K newest; a restore refuses a locked data directory and moves the old database
 * aside with its -wal; nq-admin backup / restore drive the same code. */
#include "datadir.h"
#include "fx_store.h"
#include "nq/backup.h"
#include "nq/nq.h"
#include "sched.h"
#include "store_api.h"
#include "testutil.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A half-done job of N=8 (depth 3, quorum 2): about half the units verified, a few with one
 * result (awaiting), a few leased, the rest pending. Three clients; *now moves on. */
static void half_done(fx_t *f, int64_t cl[3], int64_t *now) {
  fx_init(f, 8, 3, 2, 3, NULL);
  cl[0] = fx_client(f, "a");
  cl[1] = fx_client(f, "b");
  cl[2] = fx_client(f, "c");
  *now = T0;
  srv_work_t w[4];
  int verified = 0;
  while (verified < (int)f->job.units / 2) {
    for (int i = 0; i < 2; i++) {
      int n = fx_work(f, cl[i], 1, (*now)++, w, NULL);
      ck_assert_int_eq(n, 1);
      srv_result_info_t info;
      ck_assert_int_eq(fx_report_true(f, cl[i], &w[0], (*now)++, &info), 0);
      verified += info.unit_verified;
    }
  }
  /* One result in, its replica out; and a client holding leases. */
  ck_assert_int_eq(fx_work(f, cl[0], 2, (*now)++, w, NULL), 2);
  ck_assert_int_eq(fx_report_true(f, cl[0], &w[0], (*now)++, NULL), 0);
  ck_assert_int_eq(fx_work(f, cl[2], 3, (*now)++, w, NULL), 3);
}

static char *path_in(const char *dir, const char *name) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  ck_assert_ptr_nonnull(p);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

/* The restore drill: back up a half-done job, open the backup as the server would, and finish
 * the job from there: same totals as the published ones, and the results the backup held
 * still count (nobody computes a verified unit again). */
START_TEST(backup_restores_and_finishes_exactly) {
  fx_t f;
  int64_t cl[3], now;
  half_done(&f, cl, &now);
  int64_t verified = fx_q1(f.path, "SELECT count(*) FROM units WHERE state = 'verified'");
  int64_t results = fx_q1(f.path, "SELECT count(*) FROM assignments WHERE reported_at IS NOT "
                                   "NULL");
  char *dest = path_in(f.dir, "one.db");
  nq_backup_info_t info;
  char err[512] = "";
  ck_assert_msg(nq_backup_take(f.path, dest, now, &info, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(info.taken, now);
  ck_assert_int_eq(info.units, f.job.units);
  ck_assert_int_eq(info.results, results);
  ck_assert_int_eq(info.clients, 3);
  ck_assert_int_gt(info.bytes, 0);
  struct stat sb;
  ck_assert_int_eq(stat(dest, &sb), 0);
  ck_assert_int_eq(sb.st_mode & 0777, 0600); /* it holds the token hashes */
  char *tmp = path_in(f.dir, ".one.db.tmp");
  ck_assert_int_ne(stat(tmp, &sb), 0);
  /* No -wal beside it: one self-contained file. */
  char *wal = path_in(f.dir, "one.db-wal");
  ck_assert_int_ne(stat(wal, &sb), 0);
  /* The original goes on (and is thrown away): the backup is what survives. */
  srv_store_close(f.st);
  ck_assert_int_eq(unlink(f.path), 0);
  nq_backup_info_t back;
  char *data = path_in(f.dir, "data");
  char aside[600];
  ck_assert_msg(nq_backup_restore(dest, data, now, &back, aside, sizeof aside, err, sizeof err) ==
                    0, "%s", err);
  ck_assert_str_eq(aside, "");
  ck_assert_int_eq(back.units, info.units);
  snprintf(f.path, sizeof f.path, "%s/nq.db", data);
  fx_reopen(&f);
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &f.job), 0);
  ck_assert_int_eq(srv_sched_init(&f.sched, f.st, f.job.id, NULL), 0);
  fx_check_counters(&f);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM units WHERE state = 'verified'"),
                   verified);
  /* Leases held at the backup are still the clients' own after the restore: the holder's result
   * is accepted as it would have been. */
  srv_work_t w[3];
  ck_assert_int_eq(fx_work(&f, cl[2], 3, now++, w, NULL), 3);
  for (int i = 0; i < 3; i++) ck_assert_int_eq(w[i].resent, 1);
  int64_t before = fx_q1(f.path, "SELECT count(*) FROM assignments");
  fx_run_to_done(&f, cl, 3, &now);
  fx_check_n8_totals(&f);
  fx_check_counters(&f);
  fx_check_invariants(&f);
  /* Every verified unit of the backup kept its results: the finish added at most quorum
   * assignments to each unit that was not verified yet. */
  int64_t after = fx_q1(f.path, "SELECT count(*) FROM assignments");
  ck_assert_int_le(after - before, 2 * (f.job.units - verified));
  free(dest);
  free(tmp);
  free(wal);
  free(data);
  fx_done(&f);
}
END_TEST

/* Online: the writer holds an open transaction with uncommitted work while the backup runs. The
 * backup does not wait for it, and holds exactly what was committed. */
START_TEST(backup_is_a_committed_snapshot) {
  fx_t f;
  int64_t cl[3], now;
  half_done(&f, cl, &now);
  int64_t asg = fx_q1(f.path, "SELECT count(*) FROM assignments");
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  srv_work_t w[2];
  int n = 0;
  srv_nowork_t why;
  ck_assert_int_eq(srv_sched_get_work(&f.sched, cl[1], 2, now, w, &n, &why), 0);
  ck_assert_int_eq(n, 2);
  char *dest = path_in(f.dir, "snap.db");
  nq_backup_info_t info;
  char err[512] = "";
  double t0 = tu_now_s();
  ck_assert_msg(nq_backup_take(f.path, dest, now, &info, err, sizeof err) == 0, "%s", err);
  ck_assert_double_lt(tu_now_s() - t0, 4.0); /* no busy wait on the writer's lock (5 s) */
  ck_assert_int_eq(info.assignments, asg);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  /* The writer committed after the snapshot; the backup did not change, the database did. */
  ck_assert_int_eq(fx_q1(dest, "SELECT count(*) FROM assignments"), asg);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments"), asg + 2);
  free(dest);
  fx_done(&f);
}
END_TEST

/* Copy the database at src to dst and run `sql` on the copy (a damaged backup). */
static void damaged_copy(const char *src, const char *dst, const char *sql) {
  char err[512] = "";
  ck_assert_msg(srv_store_backup_copy(src, dst, 1, err, sizeof err) == 0, "%s", err);
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(dst, &db), SQLITE_OK);
  char *msg = NULL;
  ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", sql, msg);
  sqlite3_close(db);
}

/* Each kind of broken counter is found, and named; a failed backup leaves nothing. */
START_TEST(check_finds_broken_counters) {
  fx_t f;
  int64_t cl[3], now;
  half_done(&f, cl, &now);
  static const struct {
    const char *sql, *expect;
  } cases[] = {
      {"UPDATE job_stats SET verified = verified + 1", "job counters"},
      {"UPDATE job_stats SET c8_lo = c8_lo + 1", "job counters"},
      {"DROP TRIGGER IF EXISTS units_stats; UPDATE units SET live = live + 1 WHERE id = "
       "(SELECT min(id) FROM units WHERE state = 'leased')", "live leases or results"},
      {"DROP TRIGGER IF EXISTS assignments_rate; UPDATE job_rate SET results = results + 1",
       "rate buckets"},
      {"UPDATE clients SET credit_lo = credit_lo + 7 WHERE id = 1", "credit"},
      {"UPDATE jobs SET units = units + 1", "unit count"},
      {"DROP TRIGGER IF EXISTS units_stats; UPDATE units SET c2 = NULL WHERE id = (SELECT "
       "min(id) FROM units WHERE state = 'verified')", "without their counts"},
  };
  char err[512];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[32];
    snprintf(name, sizeof name, "bad%zu.db", i);
    char *bad = path_in(f.dir, name);
    damaged_copy(f.path, bad, cases[i].sql);
    err[0] = 0;
    ck_assert_int_eq(nq_backup_verify(bad, NULL, err, sizeof err), NQ_ECORRUPT);
    ck_assert_msg(strstr(err, cases[i].expect), "case %zu: %s", i, err);
    /* Taking a backup of it fails the same way and leaves no file. */
    char *dest = path_in(f.dir, "from-bad.db");
    ck_assert_int_eq(nq_backup_take(bad, dest, now, NULL, err, sizeof err), NQ_ECORRUPT);
    struct stat sb;
    ck_assert_int_ne(stat(dest, &sb), 0);
    char *tmp = path_in(f.dir, ".from-bad.db.tmp");
    ck_assert_int_ne(stat(tmp, &sb), 0);
    free(tmp);
    free(dest);
    free(bad);
  }
  /* Not a database at all, a truncated one, and none. */
  char *junk = path_in(f.dir, "junk.db");
  FILE *j = fopen(junk, "w");
  ck_assert_ptr_nonnull(j);
  for (int i = 0; i < 512; i++) fputs("not a database ", j);
  fclose(j);
  ck_assert_int_eq(nq_backup_verify(junk, NULL, err, sizeof err), NQ_EIO);
  char *cut = path_in(f.dir, "cut.db");
  char *good = path_in(f.dir, "good.db");
  ck_assert_int_eq(nq_backup_take(f.path, good, now, NULL, err, sizeof err), 0);
  ck_assert_int_eq(nq_backup_verify(good, NULL, err, sizeof err), 0);
  struct stat sb;
  ck_assert_int_eq(stat(good, &sb), 0);
  damaged_copy(good, cut, "SELECT 1");
  ck_assert_int_eq(truncate(cut, sb.st_size / 2), 0);
  int rc = nq_backup_verify(cut, NULL, err, sizeof err);
  ck_assert_msg(rc == NQ_ECORRUPT || rc == NQ_EIO, "truncated: %d %s", rc, err);
  char *none = path_in(f.dir, "none.db");
  ck_assert_int_eq(nq_backup_verify(none, NULL, err, sizeof err), NQ_EIO);
  ck_assert_int_ne(stat(none, &sb), 0); /* the check creates nothing */
  free(junk);
  free(cut);
  free(good);
  free(none);
  fx_done(&f);
}
END_TEST

static void touch(const char *dir, const char *name) {
  char *p = path_in(dir, name);
  FILE *fp = fopen(p, "w");
  ck_assert_ptr_nonnull(fp);
  fclose(fp);
  free(p);
}

static int exists(const char *dir, const char *name) {
  char *p = path_in(dir, name);
  struct stat sb;
  int e = stat(p, &sb) == 0;
  free(p);
  return e;
}

/* Rotation keeps the K newest scheduled backups and touches nothing else. */
START_TEST(rotation_keeps_the_newest) {
  char *dir = tu_tmpdir("bkrot");
  char name[NQ_BACKUP_NAME_MAX];
  nq_backup_name(1700000000, name, sizeof name);
  ck_assert_str_eq(name, "nq-20231114T221320Z.db");
  int64_t t[5] = {1700000000, 1700003600, 1700007200, 1700010800, 1700086400};
  for (int i = 0; i < 5; i++) {
    nq_backup_name(t[i], name, sizeof name);
    touch(dir, name);
  }
  touch(dir, "nq-operator-copy.db");
  touch(dir, "nq-20231114T221320Z.db.keep");
  touch(dir, "other.db");
  char newest[600], err[256];
  int64_t taken = 0;
  ck_assert_int_eq(nq_backup_newest(dir, newest, sizeof newest, &taken), 0);
  ck_assert_int_eq(taken, t[4]);
  ck_assert_ptr_nonnull(strstr(newest, "nq-20231115T221320Z.db"));
  int removed = -1;
  ck_assert_int_eq(nq_backup_rotate(dir, 2, &removed, err, sizeof err), 0);
  ck_assert_int_eq(removed, 3);
  for (int i = 0; i < 5; i++) {
    nq_backup_name(t[i], name, sizeof name);
    ck_assert_int_eq(exists(dir, name), i >= 3);
  }
  ck_assert(exists(dir, "nq-operator-copy.db"));
  ck_assert(exists(dir, "nq-20231114T221320Z.db.keep"));
  ck_assert(exists(dir, "other.db"));
  char *missing = path_in(dir, "missing");
  ck_assert_int_eq(nq_backup_newest(missing, newest, sizeof newest, &taken), NQ_ENOTFOUND);
  free(missing);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A restore is refused while a server holds the data directory; otherwise the database it
 * replaces (and its -wal) is moved aside, not lost. */
START_TEST(restore_refuses_a_live_server_and_keeps_the_old) {
  fx_t f;
  int64_t cl[3], now;
  half_done(&f, cl, &now);
  char err[512] = "", aside[700] = "";
  char *dest = path_in(f.dir, "b.db");
  ck_assert_int_eq(nq_backup_take(f.path, dest, now, NULL, err, sizeof err), 0);
  /* More work after the backup, committed to the WAL: the old database differs. */
  srv_work_t w[1];
  ck_assert_int_eq(fx_work(&f, cl[1], 1, now++, w, NULL), 1);
  int64_t old_asg = fx_q1(f.path, "SELECT count(*) FROM assignments");
  int fd = -1;
  ck_assert_int_eq(srv_datadir_lock(f.dir, &fd, err, sizeof err), 0);
  ck_assert_int_eq(nq_backup_restore(dest, f.dir, now, NULL, aside, sizeof aside, err,
                                     sizeof err), NQ_EBUSY);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments"), old_asg);
  close(fd);
  /* A damaged backup is refused before anything moves. */
  char *bad = path_in(f.dir, "bad.db");
  damaged_copy(dest, bad, "UPDATE job_stats SET pending = pending + 1");
  ck_assert_int_eq(nq_backup_restore(bad, f.dir, now, NULL, aside, sizeof aside, err, sizeof err),
                   NQ_ECORRUPT);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments"), old_asg);
  /* The "server" stops without a checkpoint (kill -9): its WAL stays. */
  srv_store_close(f.st);
  f.st = NULL;
  nq_backup_info_t info;
  ck_assert_msg(nq_backup_restore(dest, f.dir, now, &info, aside, sizeof aside, err, sizeof err) ==
                    0, "%s", err);
  ck_assert_ptr_nonnull(strstr(aside, "nq.db.before-restore-"));
  ck_assert_int_eq(fx_q1(aside, "SELECT count(*) FROM assignments"), old_asg);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments"), old_asg - 1);
  fx_reopen(&f);
  fx_check_counters(&f);
  free(dest);
  free(bad);
  fx_done(&f);
}
END_TEST

/* Run a shell command; its exit status. */
static int sh(const char *cmd) {
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* nq-admin backup / restore: the same code from the command line, with its refusals. */
START_TEST(admin_backup_and_restore) {
  fx_t f;
  int64_t cl[3], now;
  half_done(&f, cl, &now);
  const char *bin = tu_bin_dir();
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' backup --data '%s' --to '%s/x.db' --json > '%s/out' "
           "2>&1", bin, f.dir, f.dir, f.dir);
  ck_assert_int_eq(sh(cmd), 0);
  char *out = path_in(f.dir, "out");
  char buf[2048] = "";
  FILE *fp = fopen(out, "r");
  ck_assert_ptr_nonnull(fp);
  size_t n = fread(buf, 1, sizeof buf - 1, fp);
  buf[n] = 0;
  fclose(fp);
  ck_assert_msg(strstr(buf, "\"units\": ") && strstr(buf, "\"schema\": "), "%s", buf);
  /* Usage errors and refusals. */
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' backup --data '%s' 2>/dev/null", bin, f.dir);
  ck_assert_int_eq(sh(cmd), 2);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' backup --server 127.0.0.1:1 --to x 2>/dev/null", bin);
  ck_assert_int_eq(sh(cmd), 2);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' backup --data '%s/none' --to '%s/y.db' 2>/dev/null",
           bin, f.dir, f.dir);
  ck_assert_int_eq(sh(cmd), 1);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' restore --data '%s/d2' '%s/nq.db-missing' "
           "2>/dev/null", bin, f.dir, f.dir);
  ck_assert_int_eq(sh(cmd), 1);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' restore --data '%s/d2' '%s/x.db' > /dev/null "
           "2> '%s/err'", bin, f.dir, f.dir, f.dir);
  ck_assert_int_eq(sh(cmd), 1); /* the database is restored, the fleet is not: no CA kept */
  char *d2 = path_in(f.dir, "d2/nq.db");
  ck_assert_int_eq(fx_q1(d2, "SELECT count(*) FROM units"), f.job.units);
  /* A new directory has the database only, and the fixture's data directory had no keys to
   * keep beside x.db: restore names the keys to copy and exits 1 (the server would refuse a
   * database with clients and no CA). */
  char *errf = path_in(f.dir, "err");
  fp = fopen(errf, "r");
  ck_assert_ptr_nonnull(fp);
  n = fread(buf, 1, sizeof buf - 1, fp);
  buf[n] = 0;
  fclose(fp);
  ck_assert_msg(strstr(buf, "ERROR") && strstr(buf, "ca.pem ca.key server.pem server.key") &&
                strstr(buf, "refuses this database, which has enrolled clients"), "%s", buf);
  free(errf);
  free(d2);
  free(out);
  fx_done(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("backup");
  TCase *tc = tcase_create("backup");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, backup_restores_and_finishes_exactly);
  tcase_add_test(tc, backup_is_a_committed_snapshot);
  tcase_add_test(tc, check_finds_broken_counters);
  tcase_add_test(tc, rotation_keeps_the_newest);
  tcase_add_test(tc, restore_refuses_a_live_server_and_keeps_the_old);
  tcase_add_test(tc, admin_backup_and_restore);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run_suite(suite());
}
