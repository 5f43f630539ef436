/* tests/test_journal.c: the client's on-disk journal (client/journal.c). */
#include "journal.h"
#include "testutil.h"
#include "worker.h"

#include "nq/files.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/solver_pool.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void write_file(const char *dir, const char *sub, const char *name, const char *text) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s/%s", dir, sub, name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static int file_exists(const char *dir, const char *sub, const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s/%s", dir, sub, name);
  return access(p, F_OK) == 0;
}

static nq_result_t mk_result(int64_t id, uint64_t c8) {
  nq_result_t r;
  memset(&r, 0, sizeof r);
  r.id = id;
  snprintf(r.unit, sizeof r.unit, "12:c:%d:0,%d,5", 3, 3);
  r.counts.c8 = c8;
  r.counts.nodes = 1000 + c8;
  r.seconds = 1.5;
  snprintf(r.solver, sizeof r.solver, "%s", NQ_SOLVER_VERSION);
  return r;
}

START_TEST(round_trip) {
  char *dir = tu_tmpdir("journal");
  char state[600];
  snprintf(state, sizeof state, "%s/state/nested", dir);
  cli_journal_t j;
  ck_assert_int_eq(cli_journal_open(state, &j), 0);
  nq_result_t a = mk_result(42, 7), b = mk_result(7, 9), c = mk_result(1000000000000LL, 0);
  c.counts.c2 = 3;
  c.counts.c4 = 4;
  c.counts.nodes = (uint64_t)INT64_MAX;
  ck_assert_int_eq(cli_journal_put(&j, &a), 0);
  ck_assert_int_eq(cli_journal_put(&j, &b), 0);
  ck_assert_int_eq(cli_journal_put(&j, &c), 0);
  ck_assert(cli_journal_has(&j, 42));
  ck_assert(!cli_journal_has(&j, 43));

  nq_result_t *v = NULL;
  size_t n = 0, bad = 99;
  ck_assert_int_eq(cli_journal_list(&j, &v, &n, &bad), 0);
  ck_assert_uint_eq(n, 3);
  ck_assert_uint_eq(bad, 0);
  ck_assert_int_eq(v[0].id, 7); /* sorted by id */
  ck_assert_int_eq(v[1].id, 42);
  ck_assert_int_eq(v[2].id, 1000000000000LL);
  ck_assert_str_eq(v[1].unit, a.unit);
  ck_assert_uint_eq(v[1].counts.c8, 7);
  ck_assert_uint_eq(v[1].counts.nodes, 1007);
  ck_assert_str_eq(v[1].solver, NQ_SOLVER_VERSION);
  ck_assert(v[1].seconds > 1.49 && v[1].seconds < 1.51);
  ck_assert_uint_eq(v[2].counts.c2, 3);
  ck_assert_uint_eq(v[2].counts.c4, 4);
  ck_assert_uint_eq(v[2].counts.nodes, (uint64_t)INT64_MAX);
  free(v);

  /* Replacing an entry keeps one file per id. */
  a.counts.c8 = 8;
  ck_assert_int_eq(cli_journal_put(&j, &a), 0);
  ck_assert_int_eq(cli_journal_remove(&j, 7), 0);
  ck_assert_int_eq(cli_journal_remove(&j, 7), NQ_ENOTFOUND);
  ck_assert_int_eq(cli_journal_list(&j, &v, &n, NULL), 0);
  ck_assert_uint_eq(n, 2);
  ck_assert_int_eq(v[0].id, 42);
  ck_assert_uint_eq(v[0].counts.c8, 8);
  free(v);
  ck_assert_int_eq(cli_journal_remove(&j, 42), 0);
  ck_assert_int_eq(cli_journal_remove(&j, 1000000000000LL), 0);
  ck_assert_int_eq(cli_journal_list(&j, &v, &n, NULL), 0);
  ck_assert_uint_eq(n, 0);
  ck_assert_ptr_null(v);

  /* The files are private. */
  ck_assert_int_eq(cli_journal_put(&j, &b), 0);
  char p[1024];
  struct stat st;
  snprintf(p, sizeof p, "%s/journal/7.json", state);
  ck_assert_int_eq(stat(p, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0600);
  cli_journal_close(&j);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(assignments_round_trip) {
  char *dir = tu_tmpdir("journal");
  cli_journal_t j;
  ck_assert_int_eq(cli_journal_open(dir, &j), 0);
  cli_assign_t a = {.id = 5, .unit = "10:s:1:1,3,0", .deadline = 1763900000};
  cli_assign_t b = {.id = 3, .unit = "10:c:2:0,2,4", .deadline = 0};
  ck_assert_int_eq(cli_assigned_put(&j, &a), 0);
  ck_assert_int_eq(cli_assigned_put(&j, &b), 0);
  cli_assign_t *v = NULL;
  size_t n = 0;
  ck_assert_int_eq(cli_assigned_list(&j, &v, &n, NULL), 0);
  ck_assert_uint_eq(n, 2);
  ck_assert_int_eq(v[0].id, 3);
  ck_assert_str_eq(v[0].unit, "10:c:2:0,2,4");
  ck_assert_int_eq(v[1].id, 5);
  ck_assert_int_eq(v[1].deadline, 1763900000);
  free(v);
  ck_assert_int_eq(cli_assigned_remove(&j, 5), 0);
  ck_assert_int_eq(cli_assigned_list(&j, &v, &n, NULL), 0);
  ck_assert_uint_eq(n, 1);
  free(v);
  cli_journal_close(&j);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* One client per state directory: a second open -- in this process or another -- is refused with
 * NQ_EBUSY while the first holds it (the lock file names its pid), and allowed once it closed. */
START_TEST(state_dir_locked) {
  char *dir = tu_tmpdir("journal");
  cli_journal_t j, k;
  ck_assert_int_eq(cli_journal_open(dir, &j), 0);
  char p[1024], line[32];
  snprintf(p, sizeof p, "%s/%s", dir, CLI_LOCK_FILE);
  ck_assert_int_eq(nq_file_read_line(p, line, sizeof line), 0);
  ck_assert_int_eq(atol(line), (long)getpid());
  ck_assert_int_eq(cli_journal_open(dir, &k), NQ_EBUSY);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) _exit(cli_journal_open(dir, &k) == NQ_EBUSY ? 0 : 1);
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  /* The refused open left the owner's lock alone. */
  ck_assert_int_eq(cli_journal_open(dir, &k), NQ_EBUSY);
  cli_journal_close(&j);
  ck_assert_int_eq(cli_journal_open(dir, &k), 0);
  cli_journal_close(&k);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(torn_tmp_ignored) {
  char *dir = tu_tmpdir("journal");
  cli_journal_t j;
  ck_assert_int_eq(cli_journal_open(dir, &j), 0);
  nq_result_t a = mk_result(11, 2);
  ck_assert_int_eq(cli_journal_put(&j, &a), 0);
  /* A crash between open and rename leaves a half-written temporary file. */
  write_file(dir, "journal", ".12.json.tmp", "{\"type\":\"result\",\"id\":12,\"un");
  nq_result_t *v = NULL;
  size_t n = 0, bad = 99;
  ck_assert_int_eq(cli_journal_list(&j, &v, &n, &bad), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(bad, 0);
  ck_assert_int_eq(v[0].id, 11);
  free(v);
  ck_assert(!cli_journal_has(&j, 12));
  cli_journal_close(&j);
  /* Reopening (a restart) sweeps it away and keeps the real entry. */
  ck_assert_int_eq(cli_journal_open(dir, &j), 0);
  ck_assert(!file_exists(dir, "journal", ".12.json.tmp"));
  ck_assert_int_eq(cli_journal_list(&j, &v, &n, NULL), 0);
  ck_assert_uint_eq(n, 1);
  free(v);
  cli_journal_close(&j);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(corrupt_skipped) {
  char *dir = tu_tmpdir("journal");
  cli_journal_t j;
  ck_assert_int_eq(cli_journal_open(dir, &j), 0);
  nq_result_t a = mk_result(20, 1), b = mk_result(22, 3);
  ck_assert_int_eq(cli_journal_put(&j, &a), 0);
  ck_assert_int_eq(cli_journal_put(&j, &b), 0);
  write_file(dir, "journal", "21.json", "{\"type\":\"result\",\"id\":21,\"unit\":\"12:c:3");
  write_file(dir, "journal", "23.json", "\xff\xfe garbage");
  write_file(dir, "journal", "24.json", ""); /* empty: fsync never happened */
  /* Valid JSON that names another id, and one with a negative count. */
  write_file(dir, "journal", "25.json",
             "{\"type\":\"result\",\"id\":26,\"unit\":\"12:c:3:0,3,5\",\"c2\":0,\"c4\":0,\"c8\":1,"
             "\"nodes\":5,\"seconds\":1.0,\"solver\":\"nq-solver-3\"}");
  write_file(dir, "journal", "27.json",
             "{\"type\":\"result\",\"id\":27,\"unit\":\"12:c:3:0,3,5\",\"c2\":0,\"c4\":0,\"c8\":-1,"
             "\"nodes\":5,\"seconds\":1.0,\"solver\":\"nq-solver-3\"}");
  write_file(dir, "journal", "notes.txt", "not an entry");
  nq_result_t *v = NULL;
  size_t n = 0, bad = 0;
  ck_assert_int_eq(cli_journal_list(&j, &v, &n, &bad), 0);
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(bad, 5);
  ck_assert_int_eq(v[0].id, 20);
  ck_assert_int_eq(v[1].id, 22);
  free(v);
  /* Set aside, not deleted, and not reported twice. */
  ck_assert(file_exists(dir, "journal", "21.json.bad"));
  ck_assert(!file_exists(dir, "journal", "21.json"));
  ck_assert_int_eq(cli_journal_list(&j, &v, &n, &bad), 0);
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(bad, 0);
  free(v);
  /* The same for assignments. */
  write_file(dir, "assigned", "9.json", "[1,2,3]");
  cli_assign_t *av = NULL;
  ck_assert_int_eq(cli_assigned_list(&j, &av, &n, &bad), 0);
  ck_assert_uint_eq(n, 0);
  ck_assert_uint_eq(bad, 1);
  free(av);
  cli_journal_close(&j);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(token_store) {
  char *dir = tu_tmpdir("journal");
  cli_journal_t j;
  ck_assert_int_eq(cli_journal_open(dir, &j), 0);
  char tok[CLI_TOKEN_MAX];
  ck_assert_int_eq(cli_token_load(&j, tok, sizeof tok), NQ_ENOTFOUND);
  ck_assert_int_eq(cli_token_store(&j, "abc123"), 0);
  ck_assert_int_eq(cli_token_load(&j, tok, sizeof tok), 0);
  ck_assert_str_eq(tok, "abc123");
  char p[1024];
  struct stat st;
  snprintf(p, sizeof p, "%s/token", dir);
  ck_assert_int_eq(stat(p, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0600);
  write_file(dir, ".", "token", "\n");
  ck_assert_int_eq(cli_token_load(&j, tok, sizeof tok), NQ_EINVAL);
  cli_journal_close(&j);
  /* A state dir that cannot be made is an error, not a crash. */
  ck_assert_int_eq(cli_journal_open("/proc/nq-no-such/x", &j), NQ_EIO);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Checkpoint files: durable put, get, list in id order, remove; a damaged one is refused with a
 * reason and set aside; a leftover temporary file is swept at open. */
START_TEST(checkpoints_round_trip) {
  char *dir = tu_tmpdir("journal");
  cli_journal_t j;
  ck_assert_int_eq(cli_journal_open(dir, &j), 0);
  nq_unit_t u;
  nq_subject_t s;
  ck_assert_int_eq(nq_unit_parse("12:s:1:1,3", &u, NULL, 0), 0);
  ck_assert_int_eq(nq_subject_unit(&s, &u), 0);
  uint8_t hash[NQ_CKPT_HASH_LEN] = {1, 2, 3};
  nq_ckpt_t c, d;
  ck_assert_int_eq(nq_ckpt_init(&c, &s, 5, 20, hash), 0);
  c.done[0] = 0x05;
  c.ndone = 2;
  c.sum = (nq_counts_t){0, 1, 2, 0, 50};
  c.seconds = 3.5;
  ck_assert_int_eq(cli_ckpt_put(&j, 30, &c), 0);
  ck_assert_int_eq(cli_ckpt_put(&j, 4, &c), 0);
  char err[NQ_CKPT_ERR_MAX];
  ck_assert_int_eq(cli_ckpt_get(&j, 30, &d, err, sizeof err), 0);
  ck_assert_uint_eq(d.ndone, 2);
  ck_assert(nq_ckpt_task_done(&d, 2) && !nq_ckpt_task_done(&d, 1));
  ck_assert_uint_eq(d.sum.c8, 2);
  ck_assert(d.seconds == 3.5);
  nq_ckpt_free(&d);
  ck_assert_int_eq(cli_ckpt_get(&j, 5, &d, err, sizeof err), NQ_ENOTFOUND);
  write_file(dir, "checkpoint", "7.ckpt", "{\"format\":\"nq-checkpoint-1\"}\nsha256 00\n");
  write_file(dir, "checkpoint", ".7.ckpt.123.tmp", "torn");
  write_file(dir, "checkpoint", "notes.txt", "not a checkpoint");
  int64_t *ids = NULL;
  size_t n = 0;
  ck_assert_int_eq(cli_ckpt_list(&j, &ids, &n), 0);
  ck_assert_uint_eq(n, 3);
  ck_assert(ids[0] == 4 && ids[1] == 7 && ids[2] == 30);
  free(ids);
  err[0] = '\0';
  ck_assert_int_eq(cli_ckpt_get(&j, 7, &d, err, sizeof err), NQ_EINVAL);
  ck_assert(err[0] != '\0');
  cli_ckpt_set_aside(&j, 7);
  ck_assert(file_exists(dir, "checkpoint", "7.ckpt.bad"));
  ck_assert_int_eq(cli_ckpt_remove(&j, 4), 0);
  ck_assert_int_eq(cli_ckpt_remove(&j, 4), NQ_ENOTFOUND);
  ck_assert_int_eq(cli_ckpt_list(&j, &ids, &n), 0);
  ck_assert_uint_eq(n, 1);
  free(ids);
  cli_journal_close(&j);
  ck_assert_int_eq(cli_journal_open(dir, &j), 0); /* the torn temporary file is swept */
  ck_assert(!file_exists(dir, "checkpoint", ".7.ckpt.123.tmp"));
  cli_journal_close(&j);
  nq_ckpt_free(&c);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* The pool as the worker runs it (progress and cancel set; the cut is the same with or without
 * them) must equal the fast solver exactly, nodes included. */
static void count_progress(uint64_t nodes, void *arg) {
  *(uint64_t *)arg = nodes;
}

typedef struct cmp_s {
  int threads, units;
} cmp_t;

static int cmp_unit(const nq_unit_t *u, void *arg) {
  cmp_t *c = arg;
  volatile int never = 0;
  uint64_t seen = 0;
  nq_solve_opts_t o = {c->threads, count_progress, &seen, &never, NULL, NULL, 0};
  nq_counts_t a, b;
  ck_assert_int_eq(nq_fast_solve_unit(u, &a), 0);
  ck_assert_int_eq(nq_solve_unit(u, &o, &b), 0);
  ck_assert_uint_eq(a.c2, b.c2);
  ck_assert_uint_eq(a.c4, b.c4);
  ck_assert_uint_eq(a.c8, b.c8);
  ck_assert_uint_eq(a.nodes, b.nodes);
  c->units++;
  return 0;
}

START_TEST(worker_solve_exact) {
  for (int threads = 1; threads <= 2; threads++) {
    for (int n = 8; n <= 13; n++) {
      for (int d = 2; d <= 3; d++) {
        cmp_t c = {threads, 0};
        ck_assert_int_eq(nq_units_generate(n, d, cmp_unit, &c), 0);
        ck_assert_int_gt(c.units, 0);
      }
    }
  }
}
END_TEST

START_TEST(worker_solve_cancel) {
  nq_unit_t u;
  ck_assert_int_eq(nq_unit_parse("16:c:2:0,2", &u, NULL, 0), 0);
  volatile int cancel = 1;
  uint64_t seen = 0;
  nq_solve_opts_t o = {1, count_progress, &seen, &cancel, NULL, NULL, 0};
  nq_counts_t c;
  ck_assert_int_eq(nq_solve_unit(&u, &o, &c), NQ_ECANCELED);
  cancel = 0;
  ck_assert_int_eq(nq_solve_unit(&u, &o, &c), 0);
  nq_counts_t ref;
  ck_assert_int_eq(nq_fast_solve_unit(&u, &ref), 0);
  ck_assert_uint_eq(c.nodes, ref.nodes);
  ck_assert_uint_le(seen, ref.nodes);
}
END_TEST

/* The worker thread: a unit's DONE comes back with the counts, and a stop joins an idle thread;
 * a stop while the thread is inside a long task returns without waiting for it (the thread finishes
 * the task alone and frees what it shares; the process would be exiting). */
static void no_event(cli_worker_t *w) {
  (void)w;
}

START_TEST(worker_stop_does_not_wait_for_a_task) {
  uv_loop_t loop;
  ck_assert_int_eq(uv_loop_init(&loop), 0);
  cli_worker_t w;
  ck_assert_int_eq(cli_worker_init(&w, &loop, 1, NULL, 0, NULL, no_event, NULL), 0);
  nq_unit_t u;
  ck_assert_int_eq(nq_unit_parse("12:c:3:0,3,5", &u, NULL, 0), 0);
  ck_assert_int_eq(cli_worker_submit(&w, 3, &u, NULL), 0);
  cli_worker_event_t ev;
  double t0 = nq_now_mono();
  while (cli_worker_poll(&w, &ev) != CLI_WEV_DONE && nq_now_mono() - t0 < 30) usleep(1000);
  ck_assert_int_eq(ev.kind, CLI_WEV_DONE);
  ck_assert_int_eq(ev.status, 0);
  nq_counts_t ref;
  ck_assert_int_eq(nq_fast_solve_unit(&u, &ref), 0);
  ck_assert_uint_eq(ev.counts.nodes, ref.nodes);
  ck_assert_int_eq(cli_worker_stop(&w, 1000), 1); /* idle: joined */
  uv_run(&loop, UV_RUN_DEFAULT);

  /* One task of seconds: the unit resumed from an empty checkpoint whose cut is the unit itself. */
  ck_assert_int_eq(cli_worker_init(&w, &loop, 1, NULL, 0, NULL, no_event, NULL), 0);
  ck_assert_int_eq(nq_unit_parse("20:c:4:0,4", &u, NULL, 0), 0);
  nq_subject_t s;
  nq_cut_t cut;
  ck_assert_int_eq(nq_subject_unit(&s, &u), 0);
  ck_assert_int_eq(nq_cut_make(&s, u.depth, &cut), 0);
  ck_assert_uint_eq(cut.ntasks, 1);
  nq_ckpt_t *one = malloc(sizeof *one);
  ck_assert_int_eq(nq_ckpt_init(one, &s, cut.depth, cut.ntasks, cut.hash), 0);
  nq_cut_free(&cut);
  ck_assert_int_eq(cli_worker_submit(&w, 4, &u, one), 0);
  nq_ckpt_t snap;
  t0 = nq_now_mono();
  while (cli_worker_snapshot(&w, 4, &snap) != 0 && nq_now_mono() - t0 < 30) usleep(1000);
  ck_assert_uint_eq(snap.ntasks, 1);
  nq_ckpt_free(&snap);
  ck_assert_int_eq(cli_worker_stop(&w, 50), 0); /* left inside its task */
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

/* The next unit: handed over while one is held, it starts when that one is done, without the
 * loop; its DONE follows, exact. A cancel names its unit and leaves the next one alone; a next
 * unit not started yet can be taken back; a third unit is refused while two are held. */
static int poll_done(cli_worker_t *w, cli_worker_event_t *ev) {
  double t0 = nq_now_mono();
  while (cli_worker_poll(w, ev) != CLI_WEV_DONE && nq_now_mono() - t0 < 60) usleep(1000);
  return ev->kind == CLI_WEV_DONE;
}

START_TEST(worker_next_unit) {
  uv_loop_t loop;
  ck_assert_int_eq(uv_loop_init(&loop), 0);
  cli_worker_t w;
  ck_assert_int_eq(cli_worker_init(&w, &loop, 1, NULL, 0, NULL, no_event, NULL), 0);
  nq_unit_t a, b, big;
  ck_assert_int_eq(nq_unit_parse("12:c:3:0,3,5", &a, NULL, 0), 0);
  ck_assert_int_eq(nq_unit_parse("12:c:3:0,3,6", &b, NULL, 0), 0);
  ck_assert_int_eq(nq_unit_parse("20:c:4:0,4", &big, NULL, 0), 0); /* seconds: it is held */
  nq_counts_t ra;
  ck_assert_int_eq(nq_fast_solve_unit(&a, &ra), 0);
  ck_assert_int_eq(cli_worker_submit_next(&w, 2, &a, NULL), NQ_EBUSY); /* nothing held */
  ck_assert_int_eq(cli_worker_submit(&w, 1, &big, NULL), 0);
  ck_assert_int_eq(cli_worker_submit_next(&w, 2, &a, NULL), 0);
  ck_assert_int_eq(cli_worker_submit_next(&w, 3, &b, NULL), NQ_EBUSY); /* two held */
  ck_assert_int_eq(cli_worker_submit(&w, 3, &b, NULL), NQ_EBUSY);
  ck_assert_int_eq(cli_worker_busy(&w), 2);
  cli_worker_cancel(&w, 2); /* names the next unit, not the one running: nothing happens */
  ck_assert_int_eq(cli_worker_unqueue(&w, 3), 0); /* not the next one */
  cli_worker_cancel(&w, 1);
  cli_worker_event_t ev;
  ck_assert(poll_done(&w, &ev));
  ck_assert_int_eq(ev.id, 1);
  ck_assert_int_eq(ev.status, NQ_ECANCELED);
  if (ev.has_ckpt) nq_ckpt_free(&ev.ckpt);
  ck_assert(poll_done(&w, &ev)); /* a ran on without being submitted again, exact */
  ck_assert_int_eq(ev.id, 2);
  ck_assert_int_eq(ev.status, 0);
  ck_assert_uint_eq(ev.counts.nodes, ra.nodes);
  ck_assert_uint_eq(ev.counts.c8, ra.c8);
  ck_assert_int_eq(cli_worker_busy(&w), 0);

  /* A next unit not started yet is taken back, and never runs. */
  ck_assert_int_eq(cli_worker_submit(&w, 4, &big, NULL), 0);
  ck_assert_int_eq(cli_worker_submit_next(&w, 5, &a, NULL), 0);
  ck_assert_int_eq(cli_worker_unqueue(&w, 5), 1);
  ck_assert_int_eq(cli_worker_unqueue(&w, 5), 0);
  ck_assert_int_eq(cli_worker_busy(&w), 1);
  cli_worker_cancel(&w, -1);
  ck_assert(poll_done(&w, &ev));
  ck_assert_int_eq(ev.id, 4);
  ck_assert_int_eq(ev.status, NQ_ECANCELED);
  if (ev.has_ckpt) nq_ckpt_free(&ev.ckpt);
  usleep(20000);
  ck_assert_int_eq(cli_worker_poll(&w, &ev), CLI_WEV_NONE);
  ck_assert_int_eq(cli_worker_busy(&w), 0);
  ck_assert_int_eq(cli_worker_stop(&w, 1000), 1);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("journal");
  TCase *tc = tcase_create("journal");
  tcase_add_test(tc, round_trip);
  tcase_add_test(tc, assignments_round_trip);
  tcase_add_test(tc, torn_tmp_ignored);
  tcase_add_test(tc, state_dir_locked);
  tcase_add_test(tc, corrupt_skipped);
  tcase_add_test(tc, token_store);
  tcase_add_test(tc, checkpoints_round_trip);
  suite_add_tcase(s, tc);
  TCase *tw = tcase_create("worker");
  tcase_add_test(tw, worker_solve_exact);
  tcase_add_test(tw, worker_solve_cancel);
  tcase_add_test(tw, worker_stop_does_not_wait_for_a_task);
  tcase_add_test(tw, worker_next_unit);
  tcase_set_timeout(tw, 120);
  suite_add_tcase(s, tw);
  return s;
}

int main(void) {
  nq_log_init("test_journal", NQ_LOG_ERROR);
  return tu_run_suite(suite());
}
