/* tests/test_throttle.c: the solver threads' priority, the CPU-use limit, the pause file, battery
 * and time window, and paused time left out of the solve time
 * (common/solver/throttle.c, through the solver pool as the client uses it). Timing is measured, never
 * assumed: the CPU-limit check reads the time the solver thread was runnable (schedstat: on a CPU
 * or waiting for one) against its wall time, which a busy machine does not change, unlike the
 * CPU time it gets; pauses are
 * checked by polling with generous deadlines. */
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/solver_pool.h"
#include "nq/throttle.h"
#include "testutil.h"

#include <linux/sched.h> /* SCHED_IDLE, SCHED_NORMAL: <sched.h> is server/core/sched.h on our path */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

START_TEST(priority_names) {
  nq_priority_t p;
  ck_assert_int_eq(nq_priority_parse("idle", &p), 0);
  ck_assert_int_eq(p, NQ_PRIO_IDLE);
  ck_assert_int_eq(nq_priority_parse("low", &p), 0);
  ck_assert_int_eq(p, NQ_PRIO_LOW);
  ck_assert_int_eq(nq_priority_parse("normal", &p), 0);
  ck_assert_int_eq(p, NQ_PRIO_NORMAL);
  ck_assert_int_eq(nq_priority_parse("IDLE", &p), NQ_EINVAL);
  ck_assert_int_eq(nq_priority_parse("", &p), NQ_EINVAL);
  ck_assert_str_eq(nq_priority_name(NQ_PRIO_LOW), "low");
  nq_throttle_t *t;
  nq_throttle_cfg_t bad = {.priority = NQ_PRIO_IDLE, .cpu_limit = 0};
  ck_assert_int_eq(nq_throttle_new(&bad, &t), NQ_EINVAL);
  bad.cpu_limit = 101;
  ck_assert_int_eq(nq_throttle_new(&bad, &t), NQ_EINVAL);
}
END_TEST

/* A solve on its own thread (so the test's thread plays the client's network thread). */
typedef struct solve_s {
  nq_run_t *run;
  nq_solve_opts_t opts;
  volatile int cancel;
  nq_counts_t out;
  int rc;
  pid_t tid;     /* the solving thread (the pool's first thread) */
  int policies;  /* progress callbacks that ran under SCHED_IDLE */
  int calls;     /* progress callbacks */
  pthread_mutex_t lock;
  pthread_t th;
} solve_t;

/* The calling thread's scheduling policy (sched_getscheduler(0) is per thread on Linux). */
static int policy(void) { return (int)syscall(SYS_sched_getscheduler, 0); }

static void on_progress(uint64_t nodes, void *arg) {
  solve_t *s = arg;
  (void)nodes;
  pthread_mutex_lock(&s->lock);
  s->calls++;
  s->policies += policy() == SCHED_IDLE;
  pthread_mutex_unlock(&s->lock);
}

static void *solve_main(void *arg) {
  solve_t *s = arg;
  __atomic_store_n(&s->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
  s->rc = nq_run_solve(s->run, &s->opts, &s->out);
  return NULL;
}

static void solve_start(solve_t *s, int n, int threads, nq_throttle_t *t) {
  memset(s, 0, sizeof *s);
  nq_subject_t subj;
  ck_assert_int_eq(nq_subject_whole(&subj, n, 2), 0);
  ck_assert_int_eq(nq_run_new(&subj, NULL, &s->run, NULL, 0), 0);
  nq_solve_opts_t o = {threads, on_progress, s, &s->cancel, t, NULL, 0};
  s->opts = o;
  pthread_mutex_init(&s->lock, NULL);
  ck_assert_int_eq(pthread_create(&s->th, NULL, solve_main, s), 0);
  while (!__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE)) usleep(1000);
}

static void solve_join(solve_t *s) {
  pthread_join(s->th, NULL);
  nq_run_free(s->run);
  pthread_mutex_destroy(&s->lock);
}

static uint32_t ndone(solve_t *s) {
  nq_run_status_t st;
  nq_run_status(s->run, &st);
  return st.ndone;
}

/* The same solve without a throttle: the reference the throttled one must equal bit for bit. */
static void reference(int n, nq_counts_t *out) {
  nq_solve_opts_t o = {2, NULL, NULL, NULL, NULL, NULL, 0};
  ck_assert_int_eq(nq_solve_n(n, 2, &o, out), 0);
}

static void touch(const char *p) {
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
}

/* A throttle with cfg held from the start by a pause file: path (len bytes) gets the file's name,
 * in a new temporary directory that is returned (tu_rmtree and free it). */
static char *paused_throttle(nq_throttle_cfg_t cfg, char *path, size_t len, nq_throttle_t **t) {
  char *dir = tu_tmpdir("throttle");
  snprintf(path, len, "%s/pause", dir);
  touch(path);
  cfg.pause_file = path;
  ck_assert_int_eq(nq_throttle_new(&cfg, t), 0);
  return dir;
}

static void assert_same(const nq_counts_t *a, const nq_counts_t *b) {
  ck_assert_uint_eq(a->c2, b->c2);
  ck_assert_uint_eq(a->c4, b->c4);
  ck_assert_uint_eq(a->c8, b->c8);
  ck_assert_uint_eq(a->nodes, b->nodes);
}

START_TEST(idle_solver_threads_normal_caller) {
  /* Held by a pause file before its first task, so the solve is still there to be looked at
   * however fast the machine is; and small (N = 15), so that it ends in time even when the
   * machine's other work leaves SCHED_IDLE threads almost no CPU (a busy CI neighbour did). */
  char path[512];
  nq_throttle_t *t;
  char *dir = paused_throttle((nq_throttle_cfg_t){.priority = NQ_PRIO_IDLE, .cpu_limit = 100}, path,
                              sizeof path, &t);
  solve_t s;
  solve_start(&s, 15, 2, t);
  /* Seen from outside too, as a user would (the thread's own policy, by its tid). */
  int outside;
  double t0 = nq_now_mono();
  while ((outside = (int)syscall(SYS_sched_getscheduler, s.tid)) != SCHED_IDLE &&
         nq_now_mono() - t0 < 60)
    usleep(10 * 1000);
  unlink(path);
  solve_join(&s);
  ck_assert_int_eq(s.rc, 0);
  ck_assert_int_eq(outside, SCHED_IDLE);
  /* Every solver thread that reported progress (if the solve lasted long enough to report) ran
   * under SCHED_IDLE (Linux lets any process lower itself to it), and this thread -- the client's
   * network thread -- did not change. */
  ck_assert_int_eq(s.policies, s.calls);
  ck_assert_int_eq(policy(), SCHED_NORMAL);
  nq_counts_t ref;
  reference(15, &ref);
  assert_same(&s.out, &ref);
  nq_throttle_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(normal_priority_leaves_threads_alone) {
  nq_throttle_t *t;
  nq_throttle_cfg_t cfg = {.priority = NQ_PRIO_NORMAL, .cpu_limit = 100};
  ck_assert_int_eq(nq_throttle_new(&cfg, &t), 0);
  solve_t s;
  solve_start(&s, 12, 2, t);
  solve_join(&s);
  ck_assert_int_eq(s.rc, 0);
  ck_assert_int_eq(s.policies, 0);
  nq_throttle_free(t);
}
END_TEST

/* Seconds thread tid has been runnable: on a CPU plus waiting in a run queue (the kernel's
 * schedstat); -1 without schedstat. */
static double runnable_seconds(pid_t tid) {
  char p[64];
  snprintf(p, sizeof p, "/proc/self/task/%d/schedstat", (int)tid);
  FILE *f = fopen(p, "r");
  if (!f) return -1;
  unsigned long long run, wait;
  int ok = fscanf(f, "%llu %llu", &run, &wait) == 2;
  fclose(f);
  return ok ? (double)(run + wait) / 1e9 : -1;
}

/* The share of `secs` seconds that thread tid was runnable (on a CPU or waiting for one): what
 * the CPU limit caps, and what a busy machine does not change (the CPU time it gets does). From
 * the kernel's schedstat when there is one; else by sampling the thread's state every 5 ms
 * (which a loaded machine biases: the sampler runs more often while the solver sleeps). -1 when
 * /proc cannot be read. */
static double sampled_share(pid_t tid, double secs);
static double runnable_share(pid_t tid, double secs) {
  double r0 = runnable_seconds(tid), t0 = nq_now_mono();
  if (r0 < 0) return sampled_share(tid, secs);
  usleep((useconds_t)(secs * 1e6));
  double r1 = runnable_seconds(tid);
  return r1 < 0 ? -1 : (r1 - r0) / (nq_now_mono() - t0);
}

static double sampled_share(pid_t tid, double secs) {
  char p[64], buf[512];
  snprintf(p, sizeof p, "/proc/self/task/%d/stat", (int)tid);
  long n = 0, r = 0;
  for (double end = nq_now_mono() + secs; nq_now_mono() < end; usleep(5000)) {
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    const char *c = strrchr(buf, ')');
    if (!c || c[1] != ' ') return -1;
    n++;
    r += c[2] == 'R';
  }
  return n ? (double)r / (double)n : -1;
}

/* CPU seconds the thread got (utime + stime). */
static double cpu_seconds(pid_t tid) {
  char p[64];
  snprintf(p, sizeof p, "/proc/self/task/%d/stat", (int)tid);
  FILE *f = fopen(p, "r");
  if (!f) return 0;
  char buf[1024];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[len] = '\0';
  const char *c = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  if (c && sscanf(c + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
    ut = st = 0;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

START_TEST(cpu_limit_half) {
  nq_throttle_t *t;
  nq_throttle_cfg_t cfg = {.priority = NQ_PRIO_NORMAL, .cpu_limit = 50};
  ck_assert_int_eq(nq_throttle_new(&cfg, &t), 0);
  solve_t s;
  solve_start(&s, 18, 1, t); /* far longer than the window: busy all along */
  usleep(300 * 1000);
  double c0 = cpu_seconds(s.tid), t0 = nq_now_mono();
  double share = runnable_share(s.tid, 4.0);
  double cpu = (cpu_seconds(s.tid) - c0) / (nq_now_mono() - t0);
  __atomic_store_n(&s.cancel, 1, __ATOMIC_RELAXED);
  solve_join(&s);
  ck_assert_int_eq(s.rc, NQ_ECANCELED);
  nq_throttle_free(t);
  fprintf(stderr, "cpu_limit_half: runnable %.0f%% of 4 s, on a CPU %.0f%%\n", share * 100,
          cpu * 100);
  if (share < 0) return; /* no /proc: nothing to measure against */
  ck_assert_msg(share >= 0.40 && share <= 0.60, "runnable share %.2f, want 0.40..0.60", share);
  ck_assert_msg(cpu <= 0.60, "on a CPU %.2f of the time, limit 0.50", cpu);
}
END_TEST

/* Many short solves on one thread, each far shorter than a period: the account outlives them. */
typedef struct many_s {
  nq_throttle_t *t;
  volatile int stop;
  pid_t tid;
  long solves;
} many_t;

static void *many_main(void *arg) {
  many_t *m = arg;
  __atomic_store_n(&m->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
  nq_solve_opts_t o = {1, NULL, NULL, &m->stop, m->t, NULL, 0};
  while (!__atomic_load_n(&m->stop, __ATOMIC_RELAXED)) {
    nq_counts_t c;
    if (nq_solve_n(12, 2, &o, &c) == 0) m->solves++;
  }
  return NULL;
}

START_TEST(cpu_limit_short_solves) {
  many_t m;
  memset(&m, 0, sizeof m);
  nq_throttle_cfg_t cfg = {.priority = NQ_PRIO_NORMAL, .cpu_limit = 50};
  ck_assert_int_eq(nq_throttle_new(&cfg, &m.t), 0);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, many_main, &m), 0);
  while (!__atomic_load_n(&m.tid, __ATOMIC_ACQUIRE)) usleep(1000);
  usleep(300 * 1000);
  double share = runnable_share(m.tid, 4.0);
  __atomic_store_n(&m.stop, 1, __ATOMIC_RELAXED);
  pthread_join(th, NULL);
  nq_throttle_free(m.t);
  ck_assert_int_gt(m.solves, 10);
  fprintf(stderr, "cpu_limit_short_solves: %ld solves, runnable %.0f%% of 4 s\n", m.solves,
          share * 100);
  if (share < 0) return;
  ck_assert_msg(share >= 0.40 && share <= 0.60, "runnable share %.2f, want 0.40..0.60", share);
}
END_TEST

START_TEST(cpu_limit_counts_exact) {
  nq_throttle_t *t;
  nq_throttle_cfg_t cfg = {.priority = NQ_PRIO_IDLE, .cpu_limit = 30, .period = 0.05};
  ck_assert_int_eq(nq_throttle_new(&cfg, &t), 0);
  solve_t s;
  solve_start(&s, 13, 2, t);
  solve_join(&s);
  ck_assert_int_eq(s.rc, 0);
  nq_counts_t ref;
  reference(13, &ref);
  assert_same(&s.out, &ref);
  nq_throttle_free(t);
}
END_TEST

/* Poll until f(s) holds or the deadline passes. */
static int wait_for(solve_t *s, int (*f)(solve_t *s, uint32_t ref), uint32_t ref, double limit) {
  double end = nq_now_mono() + limit;
  while (!f(s, ref)) {
    if (nq_now_mono() > end) return 0;
    usleep(20 * 1000);
  }
  return 1;
}
static int moved(solve_t *s, uint32_t ref) { return ndone(s) > ref; }

START_TEST(pause_file_stops_and_resumes) {
  /* Paused from the start: nothing is solved until the file goes. A CPU limit too: the solve
   * takes a few seconds (four times its CPU time), still running when the second pause comes
   * (checked below: a solve that ended first fails the test, it does not pass it). */
  char path[512];
  nq_throttle_t *t;
  char *dir = paused_throttle((nq_throttle_cfg_t){.priority = NQ_PRIO_NORMAL, .cpu_limit = 25},
                              path, sizeof path, &t);
  ck_assert_int_eq(nq_throttle_paused(t), 1);
  solve_t s;
  solve_start(&s, 17, 1, t);
  usleep(1500 * 1000);
  ck_assert_uint_eq(ndone(&s), 0);
  unlink(path);
  ck_assert_msg(wait_for(&s, moved, 0, 30), "no progress after the pause file went");
  /* Pause again mid-solve: within a second (0.25 s poll + the tasks in flight) nothing moves. */
  touch(path);
  double t0 = nq_now_mono();
  while (!nq_throttle_paused(t)) {
    ck_assert(nq_now_mono() - t0 < 30);
    usleep(10 * 1000);
  }
  usleep(1000 * 1000);
  uint32_t held = ndone(&s);
  usleep(1500 * 1000);
  ck_assert_msg(ndone(&s) == held, "progress while paused: %u -> %u", held, ndone(&s));
  nq_run_status_t st;
  nq_run_status(s.run, &st);
  ck_assert_uint_lt(held, st.ntasks);
  unlink(path);
  solve_join(&s);
  ck_assert_int_eq(s.rc, 0);
  nq_counts_t ref;
  reference(17, &ref);
  assert_same(&s.out, &ref);
  nq_throttle_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(cancel_while_paused) {
  char path[512];
  nq_throttle_t *t;
  char *dir = paused_throttle((nq_throttle_cfg_t){.priority = NQ_PRIO_NORMAL, .cpu_limit = 100},
                              path, sizeof path, &t);
  solve_t s;
  solve_start(&s, 14, 2, t);
  usleep(300 * 1000);
  double t0 = nq_now_mono();
  __atomic_store_n(&s.cancel, 1, __ATOMIC_RELAXED);
  solve_join(&s);
  ck_assert_int_eq(s.rc, NQ_ECANCELED); /* a stop is not held up by the pause */
  ck_assert_msg(nq_now_mono() - t0 < 10, "cancel took %.1f s", nq_now_mono() - t0);
  nq_throttle_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Paused time is not solve time: a solve that waited 1.5 s on the pause file reports about its
 * solving time, and the throttle counts the pause. */
START_TEST(paused_time_not_solve_time) {
  char path[512];
  nq_throttle_t *t;
  char *dir = paused_throttle(
      (nq_throttle_cfg_t){.priority = NQ_PRIO_NORMAL, .cpu_limit = 100, .poll = 0.02}, path,
      sizeof path, &t);
  char why[160];
  nq_throttle_pause_reason(t, why, sizeof why);
  ck_assert_ptr_nonnull(strstr(why, "exists"));
  solve_t s;
  double t0 = nq_now_mono();
  solve_start(&s, 12, 1, t); /* milliseconds of solving, after 1.5 s paused */
  usleep(1500 * 1000);
  ck_assert_uint_eq(ndone(&s), 0);
  unlink(path);
  pthread_join(s.th, NULL);
  double wall = nq_now_mono() - t0;
  ck_assert_int_eq(s.rc, 0);
  nq_ckpt_t c;
  ck_assert_int_eq(nq_run_snapshot(s.run, &c), 0);
  ck_assert_msg(c.seconds < 0.5 * wall, "solve time %.2f s of %.2f s wall", c.seconds, wall);
  nq_ckpt_free(&c);
  nq_run_free(s.run);
  pthread_mutex_destroy(&s.lock);
  double paused = nq_throttle_paused_seconds(t);
  ck_assert_msg(paused >= 1.4 && paused <= wall + 0.1, "paused %.2f s of %.2f", paused, wall);
  nq_throttle_pause_reason(t, why, sizeof why);
  ck_assert_str_eq(why, "");
  nq_throttle_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static void put(const char *dir, const char *name, const char *text) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

/* --pause-on-battery: a discharging battery under the power_supply directory pauses; charging,
 * or a mains supply only, does not. */
START_TEST(pause_on_battery) {
  char *dir = tu_tmpdir("power"), sub[600];
  snprintf(sub, sizeof sub, "%s/AC", dir);
  ck_assert_int_eq(mkdir(sub, 0700), 0);
  put(sub, "type", "Mains\n");
  put(sub, "online", "0\n");
  snprintf(sub, sizeof sub, "%s/BAT0", dir);
  ck_assert_int_eq(mkdir(sub, 0700), 0);
  put(sub, "type", "Battery\n");
  put(sub, "status", "Discharging\n");
  nq_throttle_t *t;
  nq_throttle_cfg_t cfg = {.priority = NQ_PRIO_NORMAL, .cpu_limit = 100, .poll = 0.02,
                           .pause_on_battery = 1, .power_dir = dir};
  ck_assert_int_eq(nq_throttle_new(&cfg, &t), 0);
  ck_assert_int_eq(nq_throttle_paused(t), 1);
  char why[160];
  nq_throttle_pause_reason(t, why, sizeof why);
  ck_assert_str_eq(why, "on battery");
  put(sub, "status", "Charging\n");
  double t0 = nq_now_mono();
  while (nq_throttle_paused(t)) {
    ck_assert(nq_now_mono() - t0 < 30);
    usleep(10 * 1000);
  }
  put(sub, "status", "Discharging\n");
  while (!nq_throttle_paused(t)) {
    ck_assert(nq_now_mono() - t0 < 30);
    usleep(10 * 1000);
  }
  nq_throttle_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* --pause-between: the window holding the current minute pauses, one that does not hold it
 * does not; bad windows are refused. */
START_TEST(pause_window) {
  int from, to;
  ck_assert_int_eq(nq_pause_window_parse("08:00-18:30", &from, &to), 0);
  ck_assert_int_eq(from, 480);
  ck_assert_int_eq(to, 1110);
  ck_assert_int_eq(nq_pause_window_parse("22:00-06:00", &from, &to), 0);
  const char *bad[] = {"", "8:00-18:00", "08:00-18:00x", "24:00-01:00", "08:60-09:00",
                       "08:00-08:00", "08:00", "08:00 18:00", NULL};
  for (int i = 0; bad[i]; i++)
    ck_assert_msg(nq_pause_window_parse(bad[i], &from, &to) == NQ_EINVAL, "%s", bad[i]);
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  int m = tm.tm_hour * 60 + tm.tm_min;
  /* [m - 5, m + 5) holds now (wrapping past midnight where it must); [m + 5, m + 10) does not
   * unless the minute turns five times during the test */
  nq_throttle_cfg_t in = {.priority = NQ_PRIO_NORMAL, .cpu_limit = 100, .poll = 0.02,
                          .pause_window = 1, .pause_from = (m + 1435) % 1440,
                          .pause_to = (m + 5) % 1440};
  nq_throttle_cfg_t out = in;
  out.pause_from = (m + 5) % 1440;
  out.pause_to = (m + 10) % 1440;
  nq_throttle_t *t;
  ck_assert_int_eq(nq_throttle_new(&in, &t), 0);
  ck_assert_int_eq(nq_throttle_paused(t), 1);
  char why[160];
  nq_throttle_pause_reason(t, why, sizeof why);
  ck_assert_ptr_nonnull(strstr(why, "pause window"));
  nq_throttle_free(t);
  ck_assert_int_eq(nq_throttle_new(&out, &t), 0);
  ck_assert_int_eq(nq_throttle_paused(t), 0);
  nq_throttle_free(t);
  nq_throttle_cfg_t same = {.priority = NQ_PRIO_NORMAL, .cpu_limit = 100, .pause_window = 1,
                           .pause_from = 60, .pause_to = 60};
  ck_assert_int_eq(nq_throttle_new(&same, &t), NQ_EINVAL);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("throttle");
  TCase *tc = tcase_create("throttle");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, priority_names);
  tcase_add_test(tc, idle_solver_threads_normal_caller);
  tcase_add_test(tc, normal_priority_leaves_threads_alone);
  tcase_add_test(tc, cpu_limit_half);
  tcase_add_test(tc, cpu_limit_short_solves);
  tcase_add_test(tc, cpu_limit_counts_exact);
  tcase_add_test(tc, pause_file_stops_and_resumes);
  tcase_add_test(tc, cancel_while_paused);
  tcase_add_test(tc, paused_time_not_solve_time);
  tcase_add_test(tc, pause_on_battery);
  tcase_add_test(tc, pause_window);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
