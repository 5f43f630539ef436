/* tests/test_gpu.c: the OpenCL backend (common/solver/gpu_opencl.c, gpu_kernel.cl) against the
 * reference, unit by unit, counts and nodes; whole N through the pool on the device alone and
 * beside CPU threads; the self-test's refusal of a corrupt kernel; a device failure mid-solve.
 * Runs on any OpenCL device, pocl's CPU device in CI; skipped (77) when this build has no OpenCL
 * backend or the machine no device, which scripts/bootstrap.sh installs. */
#include "nq/checkpoint.h"
#include "nq/gpu.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/solver_pool.h"
#include "nq/throttle.h"
#include "nq/unit.h"
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static nq_gpu_t *open_dev(const nq_gpu_opts_t *o) {
  nq_gpu_t *g = NULL;
  char err[512] = "";
  int rc = nq_gpu_open(0, o, &g, err, sizeof err);
  ck_assert_msg(rc == 0, "nq_gpu_open: %s", err);
  return g;
}

typedef struct list_s {
  nq_unit_t *v;
  size_t len, cap;
} list_t;

static int push(const nq_unit_t *u, void *arg) {
  list_t *l = arg;
  if (l->len == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 256;
    l->v = realloc(l->v, l->cap * sizeof *l->v);
    ck_assert_ptr_nonnull(l->v);
  }
  l->v[l->len++] = *u;
  return 0;
}

/* got[i] equals the reference for units from..from+n-1 of l (counts and nodes). */
static void check_got(const list_t *l, size_t from, size_t n, const nq_counts_t *got) {
  for (size_t i = 0; i < n; i++) {
    nq_counts_t want;
    char t[NQ_UNIT_TEXT_MAX];
    ck_assert_int_eq(nq_ref_solve_unit(&l->v[from + i], &want), 0);
    nq_unit_format(&l->v[from + i], t, sizeof t);
    ck_assert_msg(got[i].c2 == want.c2 && got[i].c4 == want.c4 && got[i].c8 == want.c8 &&
                      got[i].nodes == want.nodes,
                  "%s: gpu c2=%llu c4=%llu c8=%llu nodes=%llu, reference %llu %llu %llu %llu", t,
                  (unsigned long long)got[i].c2, (unsigned long long)got[i].c4,
                  (unsigned long long)got[i].c8, (unsigned long long)got[i].nodes,
                  (unsigned long long)want.c2, (unsigned long long)want.c4,
                  (unsigned long long)want.c8, (unsigned long long)want.nodes);
  }
}

/* Every unit of l on the device equals the reference: counts and nodes. Frees l. */
static void check_units(nq_gpu_t *g, list_t l) {
  nq_counts_t *got = calloc(l.len, sizeof *got);
  ck_assert_int_eq(nq_gpu_solve(g, l.v, l.len, got, NULL), 0);
  check_got(&l, 0, l.len, got);
  free(got);
  free(l.v);
}

/* Every unit of (n, depth) on the device equals the reference. */
static void every_unit(nq_gpu_t *g, int n, int depth) {
  list_t l = {0};
  ck_assert_int_eq(nq_units_generate(n, depth, push, &l), 0);
  check_units(g, l);
}

/* The two steps of nq_gpu_solve: a batch expanded (no device used), then solved once, equals
 * the reference unit by unit; a batch is solved once only; expansion refuses units of two N. */
START_TEST(batch_expand_then_solve) {
  nq_gpu_t *g = open_dev(NULL);
  list_t l = {0};
  ck_assert_int_eq(nq_units_generate(13, 2, push, &l), 0);
  nq_gpu_batch_t *b = NULL;
  ck_assert_int_eq(nq_gpu_batch_expand(l.v, l.len, 0, &b), 0);
  /* 10 rows below each unit, NQ_GPU_ROWS_MIN 9: expanded a row, short of 2^17 subtrees */
  ck_assert_uint_gt(nq_gpu_batch_subtrees(b), l.len);
  nq_counts_t *got = calloc(l.len, sizeof *got), *ref = calloc(l.len, sizeof *ref);
  ck_assert_int_eq(nq_gpu_solve_batch(g, b, NULL, got, NULL), 0);
  ck_assert_int_eq(nq_gpu_solve(g, l.v, l.len, ref, NULL), 0);
  check_got(&l, 0, l.len, got);
  check_got(&l, 0, l.len, ref);
  ck_assert_int_eq(nq_gpu_solve_batch(g, b, NULL, got, NULL), NQ_EINVAL);
  nq_gpu_batch_free(b);
  nq_unit_t two[2] = {l.v[0], l.v[0]};
  ck_assert_int_eq(nq_unit_parse("12:c:2:0,2", &two[1], NULL, 0), 0);
  b = (nq_gpu_batch_t *)&two; /* overwritten: NULL on a refusal */
  ck_assert_int_eq(nq_gpu_batch_expand(two, 2, 0, &b), NQ_EINVAL);
  ck_assert_ptr_null(b);
  ck_assert_int_eq(nq_gpu_batch_expand(l.v, 0, 0, &b), 0); /* no unit: nothing to solve */
  ck_assert_uint_eq(nq_gpu_batch_subtrees(b), 0);
  ck_assert_int_eq(nq_gpu_solve_batch(g, b, NULL, got, NULL), 0);
  nq_gpu_batch_free(b);
  free(got);
  free(ref);
  free(l.v);
  nq_gpu_close(g);
}
END_TEST

static nq_gpu_batch_t *ahead_of(void *arg) { return arg; }

/* A batch started behind another at its tail (the queue's records of both, owners apart, the
 * first batch's last searches split to the queue's front each launch: 4-iteration launches and
 * 64 slots, so that pieces of a batch wait in the queue while it is split again),
 * then continued by the next call: each batch equals the reference, unit by unit. A batch
 * started so and then passed over is refused; one of another N is not started. */
START_TEST(batches_started_ahead) {
  nq_gpu_opts_t o = {.budget = 2, .slots = 64};
  nq_gpu_t *g = open_dev(&o);
  list_t l = {0};
  ck_assert_int_eq(nq_units_generate(14, 2, push, &l), 0);
  /* three batches: [0, h), [h, len - h), [len - h, len); the first small, so that it ends
   * while the second's searches still run, and the second's call starts the third */
  const size_t h = 8, from[3] = {0, h, l.len - h}, len[3] = {h, l.len - 2 * h, h};
  nq_gpu_batch_t *b[3];
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(nq_gpu_batch_expand(l.v + from[i], len[i], 1, &b[i]), 0); /* 11 rows */
  list_t m = {0}; /* (for the last part) */
  ck_assert_int_eq(nq_units_generate(13, 3, push, &m), 0);
  nq_counts_t *got = calloc(l.len + m.len, sizeof *got);
  const uint64_t before = nq_gpu_ahead(g);
  nq_gpu_ahead_t a1 = {ahead_of, b[1]}, a2 = {ahead_of, b[2]};
  ck_assert_int_eq(nq_gpu_solve_batch(g, b[0], &a1, got, NULL), 0);
  ck_assert_uint_eq(nq_gpu_ahead(g) - before, 1);
  ck_assert_int_eq(nq_gpu_solve_batch(g, b[1], &a2, got + from[1], NULL), 0);
  ck_assert_uint_eq(nq_gpu_ahead(g) - before, 2);
  ck_assert_int_eq(nq_gpu_solve_batch(g, b[2], NULL, got + from[2], NULL), 0);
  check_got(&l, 0, l.len, got);
  for (int i = 0; i < 3; i++) nq_gpu_batch_free(b[i]);
  /* b[1] started behind b[0], then another batch solved first: b[1] is refused */
  for (int i = 0; i < 3; i++) ck_assert_int_eq(nq_gpu_batch_expand(l.v, h, 0, &b[i]), 0);
  a1.arg = b[1];
  ck_assert_int_eq(nq_gpu_solve_batch(g, b[0], &a1, got, NULL), 0);
  ck_assert_uint_eq(nq_gpu_ahead(g) - before, 3);
  ck_assert_int_eq(nq_gpu_solve_batch(g, b[2], NULL, got, NULL), 0);
  check_got(&l, 0, h, got);
  ck_assert_int_eq(nq_gpu_solve_batch(g, b[1], NULL, got, NULL), NQ_EINVAL);
  for (int i = 0; i < 3; i++) nq_gpu_batch_free(b[i]);
  /* a batch of another N is not started behind; solved after, on its own, it is exact */
  ck_assert_int_eq(nq_gpu_batch_expand(l.v, h, 0, &b[0]), 0);
  ck_assert_int_eq(nq_gpu_batch_expand(m.v, m.len, 0, &b[1]), 0);
  const uint64_t mid = nq_gpu_ahead(g);
  a1.arg = b[1];
  ck_assert_int_eq(nq_gpu_solve_batch(g, b[0], &a1, got, NULL), 0);
  ck_assert_uint_eq(nq_gpu_ahead(g), mid);
  ck_assert_int_eq(nq_gpu_solve_batch(g, b[1], NULL, got, NULL), 0);
  check_got(&m, 0, m.len, got);
  nq_gpu_batch_free(b[0]);
  nq_gpu_batch_free(b[1]);
  free(got);
  free(l.v);
  free(m.v);
  nq_gpu_close(g);
}
END_TEST

START_TEST(units_small_n) {
  nq_gpu_t *g = open_dev(NULL);
  for (int n = 4; n <= 13; n++)
    for (int d = 2; d <= 4 && d <= n - 1; d++) every_unit(g, n, d);
  every_unit(g, 14, 3);
  nq_gpu_close(g);
}
END_TEST

/* Units deep enough that the host does not expand them (a record of depth N-1: one leaf). */
START_TEST(units_deep) {
  nq_gpu_t *g = open_dev(NULL);
  every_unit(g, 9, 8);
  every_unit(g, 10, 7);
  every_unit(g, 12, 9);
  nq_gpu_close(g);
}
END_TEST

/* nq-solver-4's blocked test on rows N-6..N-4 from N = NQ_UNIT_LOOK5_N (nq_unit_look): units
 * of N = 19..22 on rows N-10..N-6, where the device's searches make and test the rows the rule
 * changed, equal the reference. */
START_TEST(units_look_by_n) {
  nq_gpu_t *g = open_dev(NULL);
  for (int n = NQ_UNIT_LOOK5_N - 1; n <= NQ_UNIT_LOOK5_N + 2; n++) {
    list_t l = {0};
    for (int d = n - 10; d <= n - 6; d++)
      for (int k = 0; k < 24; k++) {
        nq_unit_t u = tu_random_unit(n, d);
        push(&u, &l);
      }
    check_units(g, l);
  }
  nq_gpu_close(g);
}
END_TEST

/* Launches of 16 nodes a slot: every search is stopped and resumed many times and the tails are
 * split again and again; the counts and nodes stay the reference's. */
START_TEST(units_split_searches) {
  nq_gpu_opts_t o = {.budget = 16};
  nq_gpu_t *g = open_dev(&o);
  every_unit(g, 13, 3);
  every_unit(g, 14, 2);
  ck_assert_uint_gt(nq_gpu_splits(g), 100);
  nq_gpu_close(g);
}
END_TEST

/* Lanes refilled inside a launch: with a budget no subtree reaches, every unit of N=14 at depth
 * 7 (117,697 subtrees of at most 6 rows, which the host does not expand: more than twice the
 * 2,048 slots per compute unit of a device of up to 28) is solved in one launch, each
 * work-item taking the queue's next subtree when its own is done; exact. */
START_TEST(lanes_refilled_in_launch) {
  nq_gpu_opts_t o = {.budget = 1u << 24};
  nq_gpu_t *g = open_dev(&o);
  list_t l = {0};
  ck_assert_int_eq(nq_units_generate(14, 7, push, &l), 0);
  ck_assert_uint_gt(l.len, 2 * 2048 * (size_t)nq_gpu_info(g)->compute_units);
  uint64_t before = nq_gpu_launches(g);
  check_units(g, l);
  ck_assert_uint_eq(nq_gpu_launches(g) - before, 1);
  ck_assert_uint_eq(nq_gpu_splits(g), 0);
  nq_gpu_close(g);
}
END_TEST

/* The per-unit totals are 64-bit, made of two 32-bit words with 32-bit atomics: started just
 * below 2^32, every count carries into its high word, and every unit still equals the
 * reference (searches split too, so counts are added from many work-items and launches). */
START_TEST(totals_carry) {
  nq_gpu_opts_t o = {.budget = 64, .tot_bias = 0xffffff00u};
  nq_gpu_t *g = open_dev(&o);
  every_unit(g, 12, 3);
  every_unit(g, 13, 2);
  nq_gpu_close(g);
}
END_TEST

static void check_known(int n, const nq_counts_t *c) {
  const nq_known_t *k = nq_known(n);
  char buf[40];
  nq_totals_t t;
  memset(&t, 0, sizeof t);
  nq_totals_add(&t, c);
  ck_assert_str_eq(nq_u128_str(nq_totals_total(&t), buf), k->total);
  ck_assert_str_eq(nq_u128_str(t.c2, buf), k->c2);
  ck_assert_str_eq(nq_u128_str(t.c4, buf), k->c4);
  ck_assert_str_eq(nq_u128_str(t.c8, buf), k->c8);
}

/* All of N (cut at `depth`) as one run on the device alone: every task done, the published
 * counts and the CPU's nodes; *st says how the run went. */
static void gpu_run(nq_gpu_t *g, int n, int depth, nq_run_status_t *st) {
  nq_subject_t s;
  ck_assert_int_eq(nq_subject_whole(&s, n, depth), 0);
  nq_run_t *r;
  ck_assert_int_eq(nq_run_new(&s, NULL, &r, NULL, 0), 0);
  nq_solve_opts_t og = {.threads = 0, .gpus = &g, .ngpus = 1};
  nq_counts_t c, cpu;
  ck_assert_int_eq(nq_run_solve(r, &og, &c), 0);
  nq_run_status(r, st);
  ck_assert_uint_eq(st->ndone, st->ntasks);
  nq_run_free(r);
  check_known(n, &c);
  ck_assert_int_eq(nq_solve_n(n, 2, NULL, &cpu), 0);
  ck_assert_uint_eq(c.nodes, cpu.nodes);
}

/* Whole N through the pool: the device alone (threads 0), and beside a CPU thread, equal the CPU
 * solve, node count included; a GPU-only run says so in its engines. */
START_TEST(whole_n_pool) {
  nq_gpu_t *g = open_dev(NULL);
  for (int n = 15; n <= 16; n++) {
    nq_counts_t cpu, gpu, both;
    nq_solve_opts_t oc = {.threads = 2}, og = {.threads = 0, .gpus = &g, .ngpus = 1},
                    ob = {.threads = 1, .gpus = &g, .ngpus = 1};
    ck_assert_int_eq(nq_solve_n(n, 2, &oc, &cpu), 0);
    ck_assert_int_eq(nq_solve_n(n, 2, &og, &gpu), 0);
    ck_assert_int_eq(nq_solve_n(n, 2, &ob, &both), 0);
    check_known(n, &gpu);
    ck_assert_uint_eq(gpu.nodes, cpu.nodes);
    ck_assert_uint_eq(both.nodes, cpu.nodes);
    ck_assert_uint_eq(gpu.c4, cpu.c4);
    ck_assert_uint_eq(both.c8, cpu.c8);
  }
  nq_run_status_t st;
  gpu_run(g, 13, 2, &st);
  ck_assert_uint_eq(st.engines, NQ_ENGINE_GPU);
  uint64_t nodes;
  double secs;
  nq_gpu_rate(g, &nodes, &secs);
  ck_assert_uint_gt(nodes, 0);
  nq_gpu_close(g);
}
END_TEST

typedef struct paused_s {
  nq_gpu_t *g;
  nq_throttle_t *t;
  volatile int finished;
  nq_counts_t c;
  int rc;
} paused_t;

static void *paused_solve(void *arg) {
  paused_t *p = arg;
  nq_solve_opts_t o = {.threads = 0, .throttle = p->t, .gpus = &p->g, .ngpus = 1};
  p->rc = nq_solve_n(14, 2, &o, &p->c);
  __atomic_store_n(&p->finished, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* The pause file holds the device between launches: nothing finishes while it exists (however
 * long the wait: the solve cannot end while paused), and the count is exact once it is gone. */
START_TEST(pause_between_launches) {
  char *dir = tu_tmpdir("gpu-pause");
  char path[512];
  snprintf(path, sizeof path, "%s/pause", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  paused_t p = {.g = open_dev(NULL)};
  nq_throttle_cfg_t tc = {.priority = NQ_PRIO_NORMAL, .cpu_limit = 100, .pause_file = path,
                          .poll = 0.02};
  ck_assert_int_eq(nq_throttle_new(&tc, &p.t), 0);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, paused_solve, &p), 0);
  for (int i = 0; i < 20; i++) { /* 0.5 s paused, and not finished */
    tu_sleep_ms(25);
    ck_assert_int_eq(__atomic_load_n(&p.finished, __ATOMIC_ACQUIRE), 0);
  }
  ck_assert_int_eq(nq_throttle_paused(p.t), 1);
  ck_assert_int_eq(unlink(path), 0);
  pthread_join(th, NULL);
  ck_assert_int_eq(p.rc, 0);
  check_known(14, &p.c);
  nq_throttle_free(p.t);
  nq_gpu_close(p.g);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A device-only run stopped while the device's thread holds the next batch, taken and expanded
 * ahead: the stop records only the tasks solved (two batches of GPU_BATCH_FIRST = 32), never
 * those held, and the run resumed on the device from its snapshot is exact. */
typedef struct stop_s {
  volatile int cancel;
  uint32_t after;
} stop_t;

static void stop_after(nq_run_t *r, void *arg) {
  stop_t *s = arg;
  nq_run_status_t st;
  nq_run_status(r, &st);
  if (st.ndone >= s->after) s->cancel = 1;
}

START_TEST(pool_stop_resume_with_batch_held) {
  nq_gpu_t *g = open_dev(NULL);
  nq_subject_t s;
  ck_assert_int_eq(nq_subject_whole(&s, 14, 4), 0);
  nq_run_t *r;
  ck_assert_int_eq(nq_run_new(&s, NULL, &r, NULL, 0), 0);
  stop_t st = {0, 40}; /* inside the second batch: the third is held by then */
  nq_run_on_interval(r, 1e-9, stop_after, &st); /* after every task */
  nq_solve_opts_t o = {.threads = 0, .cancel = &st.cancel, .gpus = &g, .ngpus = 1};
  nq_counts_t c;
  ck_assert_int_eq(nq_run_solve(r, &o, &c), NQ_ECANCELED);
  nq_run_status_t rs;
  nq_run_status(r, &rs);
  ck_assert_uint_eq(rs.ndone, 64); /* the two batches solved, whole; not the one held */
  ck_assert_uint_gt(rs.ntasks, 3 * 64);
  nq_ckpt_t snap;
  ck_assert_int_eq(nq_run_snapshot(r, &snap), 0);
  nq_run_free(r);
  char why[NQ_CKPT_ERR_MAX] = "";
  ck_assert_int_eq(nq_run_new(&s, &snap, &r, why, sizeof why), 0);
  ck_assert_str_eq(why, "");
  nq_solve_opts_t o2 = {.threads = 0, .gpus = &g, .ngpus = 1};
  ck_assert_int_eq(nq_run_solve(r, &o2, &c), 0);
  nq_run_free(r);
  nq_ckpt_free(&snap);
  nq_counts_t cpu;
  ck_assert_int_eq(nq_solve_n(14, 2, NULL, &cpu), 0);
  check_known(14, &c);
  ck_assert_uint_eq(c.nodes, cpu.nodes);
  nq_gpu_close(g);
}
END_TEST

/* NQ_SLOW_TESTS=1: whole N=17 on the device alone equals the CPU's count and nodes. */
START_TEST(whole_n17_slow) {
  nq_gpu_t *g = open_dev(NULL);
  nq_counts_t cpu, gpu;
  nq_solve_opts_t oc = {.threads = 2}, og = {.threads = 0, .gpus = &g, .ngpus = 1};
  ck_assert_int_eq(nq_solve_n(17, 2, &og, &gpu), 0);
  ck_assert_int_eq(nq_solve_n(17, 2, &oc, &cpu), 0);
  check_known(17, &gpu);
  ck_assert_uint_eq(gpu.nodes, cpu.nodes);
  nq_gpu_close(g);
}
END_TEST

/* A kernel built to corrupt one count is refused by the self-test, with the device's name. */
START_TEST(selftest_refuses_corrupt) {
  nq_gpu_opts_t o = {.corrupt = 1};
  nq_gpu_t *g = NULL;
  char err[512] = "";
  ck_assert_int_eq(nq_gpu_open(0, &o, &g, err, sizeof err), NQ_EDEVICE);
  ck_assert_ptr_null(g);
  nq_gpu_info_t devs[NQ_GPU_MAX_DEVICES];
  int n;
  ck_assert_int_eq(nq_gpu_list(devs, NQ_GPU_MAX_DEVICES, &n), 0);
  ck_assert_msg(strstr(err, "self-test") && strstr(err, devs[0].name), "%s", err);
}
END_TEST

/* The device fails at its third launch of a GPU-only solve (N=14 cut at depth 4: the first
 * batches are a launch each, their subtrees fewer than the first launch takes): the pool
 * finishes on the CPU, exact, and the run says both engines worked; the device answers
 * NQ_EDEVICE from then on. */
START_TEST(device_failure_mid_solve) {
  nq_gpu_opts_t o = {.fail_after = 2};
  nq_gpu_t *g = open_dev(&o);
  nq_run_status_t st;
  gpu_run(g, 14, 4, &st);
  ck_assert_uint_gt(st.ntasks, 24);
  ck_assert_uint_eq(st.engines, NQ_ENGINE_GPU | NQ_ENGINE_CPU);
  nq_counts_t c;
  const char *why;
  ck_assert_int_eq(nq_gpu_failed(g, &why), 1);
  ck_assert_ptr_nonnull(strstr(why, "injected"));
  nq_unit_t u;
  ck_assert_int_eq(nq_unit_parse("10:c:2:0,2", &u, NULL, 0), 0);
  ck_assert_int_eq(nq_gpu_solve(g, &u, 1, &c, NULL), NQ_EDEVICE);
  nq_gpu_close(g);
}
END_TEST

START_TEST(cancel_between_launches) {
  nq_gpu_opts_t o = {.launch_seconds = 0.001};
  nq_gpu_t *g = open_dev(&o);
  list_t l = {0};
  ck_assert_int_eq(nq_units_generate(14, 3, push, &l), 0);
  nq_counts_t *got = calloc(l.len, sizeof *got);
  volatile int cancel = 1;
  nq_gpu_ctl_t ctl = {&cancel, NULL, NULL};
  ck_assert_int_eq(nq_gpu_solve(g, l.v, l.len, got, &ctl), NQ_ECANCELED);
  cancel = 0;
  ck_assert_int_eq(nq_gpu_solve(g, l.v, 3, got, &ctl), 0);
  free(got);
  free(l.v);
  nq_gpu_close(g);
}
END_TEST

START_TEST(select_spec) {
  nq_gpu_info_t d[3] = {{.index = 0, .is_gpu = 0}, {.index = 1, .is_gpu = 1},
                        {.index = 2, .is_gpu = 1}};
  int idx[8], n;
  char err[256];
  ck_assert_int_eq(nq_gpu_select("off", d, 3, idx, 8, &n, err, sizeof err), 0);
  ck_assert_int_eq(n, 0);
  ck_assert_int_eq(nq_gpu_select("auto", d, 3, idx, 8, &n, err, sizeof err), 0);
  ck_assert_int_eq(n, 2);
  ck_assert_int_eq(idx[0], 1);
  ck_assert_int_eq(nq_gpu_select("all", d, 3, idx, 8, &n, err, sizeof err), 0);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(nq_gpu_select("2,0", d, 3, idx, 8, &n, err, sizeof err), 0);
  ck_assert_int_eq(n, 2);
  ck_assert_int_eq(idx[0], 2);
  ck_assert_int_eq(idx[1], 0);
  ck_assert_int_eq(nq_gpu_select("3", d, 3, idx, 8, &n, err, sizeof err), NQ_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "no OpenCL device 3"));
  ck_assert_int_eq(nq_gpu_select("1,1", d, 3, idx, 8, &n, err, sizeof err), NQ_EINVAL);
  ck_assert_int_eq(nq_gpu_select("1,", d, 3, idx, 8, &n, err, sizeof err), NQ_EINVAL);
  ck_assert_int_eq(nq_gpu_select("gpu", d, 3, idx, 8, &n, err, sizeof err), NQ_EINVAL);
  ck_assert_int_eq(nq_gpu_select("", d, 3, idx, 8, &n, err, sizeof err), NQ_EINVAL);
}
END_TEST

/* Device 0, looked up in a child: an OpenCL driver started in this process (pocl starts threads)
 * would not survive the fork of each test. */
static int first_device(nq_gpu_info_t *out) {
  int fd[2];
  if (pipe(fd) != 0) return 0;
  pid_t pid = fork();
  if (pid == 0) {
    nq_gpu_info_t devs[NQ_GPU_MAX_DEVICES];
    int n = 0;
    if (nq_gpu_list(devs, NQ_GPU_MAX_DEVICES, &n) == 0 && n > 0 &&
        write(fd[1], &devs[0], sizeof devs[0]) != (ssize_t)sizeof devs[0])
      _exit(1);
    _exit(0);
  }
  close(fd[1]);
  ssize_t got = pid > 0 ? read(fd[0], out, sizeof *out) : -1;
  close(fd[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  return got == (ssize_t)sizeof *out;
}

int main(void) {
  Suite *s = suite_create("gpu");
  TCase *sel = tcase_create("select");
  tcase_add_test(sel, select_spec);
  suite_add_tcase(s, sel);
  nq_gpu_info_t devs[1];
  if (!nq_gpu_built() || !first_device(&devs[0])) {
    fprintf(stderr, "test_gpu: %s: only the --gpu parser is tested\n",
            nq_gpu_built() ? "no OpenCL device (apt-get install pocl-opencl-icd)"
                           : "built without OpenCL");
    int failed = tu_run_suite(s);
    return failed ? failed : 77;
  }
  fprintf(stderr, "test_gpu: device 0 is %s (%s, %s)\n", devs[0].name, devs[0].platform,
          devs[0].driver);
  TCase *tc = tcase_create("device");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, batch_expand_then_solve);
  tcase_add_test(tc, batches_started_ahead);
  tcase_add_test(tc, units_small_n);
  tcase_add_test(tc, units_deep);
  tcase_add_test(tc, units_look_by_n);
  tcase_add_test(tc, units_split_searches);
  tcase_add_test(tc, lanes_refilled_in_launch);
  tcase_add_test(tc, totals_carry);
  tcase_add_test(tc, whole_n_pool);
  tcase_add_test(tc, selftest_refuses_corrupt);
  tcase_add_test(tc, device_failure_mid_solve);
  tcase_add_test(tc, cancel_between_launches);
  tcase_add_test(tc, pause_between_launches);
  tcase_add_test(tc, pool_stop_resume_with_batch_held);
  const char *slow = getenv("NQ_SLOW_TESTS");
  if (slow && !strcmp(slow, "1")) tcase_add_test(tc, whole_n17_slow);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
