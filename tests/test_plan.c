/* Plan suite: mixed-depth units cover the search tree exactly once (their exact counts plus the
 * split nodes equal nq_solve_n, counts and nodes, for N <= 16 and several targets; no unit is a
 * prefix of another); plans are deterministic for a seed; the options, the 64-bit guards at job
 * creation (N=32 at depth 2 refused with a depth to use, N=27 at realistic depths accepted) and
 * on results; nq-solve's refusals of out-of-range depths. */
#include "nq/estimate.h"
#include "nq/fleet.h"
#include "nq/nq.h"
#include "nq/plan.h"
#include "nq/solver.h"
#include "nq/unit.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* ---- coverage ---- */

typedef struct cover_s {
  nq_counts_t sum;
  nq_unit_t *units;
  size_t len, cap;
  double est_sum;
  uint64_t by_depth[NQ_MAX_N + 1];
} cover_t;

static int cover_cb(const nq_plan_unit_t *pu, void *arg) {
  cover_t *c = arg;
  ck_assert_uint_eq(pu->index, c->len);
  nq_counts_t r;
  ck_assert_int_eq(nq_fast_solve_unit(&pu->unit, &r), 0);
  ck_assert_int_eq(nq_plan_check_result(&pu->unit, &r, NULL, 0), 0);
  nq_counts_add(&c->sum, &r);
  c->est_sum += pu->est_nodes;
  c->by_depth[pu->unit.depth]++;
  if (c->len == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 1024;
    c->units = realloc(c->units, c->cap * sizeof *c->units);
    ck_assert_ptr_nonnull(c->units);
  }
  c->units[c->len++] = pu->unit;
  return 0;
}

/* Order units by part, BOUND1, then prefix columns lexicographically (a prefix sorts first). */
static int unit_cmp(const void *a, const void *b) {
  const nq_unit_t *x = a, *y = b;
  if (x->part != y->part) return x->part < y->part ? -1 : 1;
  if (x->bound1 != y->bound1) return x->bound1 < y->bound1 ? -1 : 1;
  int m = x->depth < y->depth ? x->depth : y->depth;
  int c = memcmp(x->prefix, y->prefix, (size_t)m);
  if (c) return c;
  return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static int is_prefix(const nq_unit_t *a, const nq_unit_t *b) {
  return a->part == b->part && a->bound1 == b->bound1 && a->depth <= b->depth &&
         memcmp(a->prefix, b->prefix, (size_t)a->depth) == 0;
}

/* Plan N at target, solve every unit, and hold the plan to the whole. Returns the number of
 * distinct unit depths. */
static int check_cover_opts(const nq_plan_opts_t *op, const nq_counts_t *whole,
                            nq_plan_summary_t *sum);

static int check_cover(int n, double target, int start, int max_depth, const nq_counts_t *whole) {
  nq_plan_opts_t o = {n, target, start, max_depth, 11, 0, 0, 0, 0};
  nq_plan_summary_t s;
  return check_cover_opts(&o, whole, &s);
}

/* The same for any options; the plan's summary in *sum. */
static int check_cover_opts(const nq_plan_opts_t *op, const nq_counts_t *whole,
                            nq_plan_summary_t *sum) {
  const nq_plan_opts_t o = *op;
  int n = o.n, start = o.start_depth, max_depth = o.max_depth;
  double target = o.target_nodes;
  cover_t c;
  memset(&c, 0, sizeof c);
  nq_plan_summary_t s;
  char err[400];
  ck_assert_msg(nq_plan_run(&o, cover_cb, &c, &s, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(s.units, c.len);
  ck_assert_msg(c.sum.c2 == whole->c2 && c.sum.c4 == whole->c4 && c.sum.c8 == whole->c8,
                "N=%d target %g: counts differ from the whole", n, target);
  ck_assert_msg(c.sum.nodes + s.internal == whole->nodes,
                "N=%d target %g: units %llu + split %llu != whole %llu nodes", n, target,
                (unsigned long long)c.sum.nodes, (unsigned long long)s.internal,
                (unsigned long long)whole->nodes);
  /* No unit is a prefix of another: after sorting, a prefix would sit right before one of the
   * units it is a prefix of (everything in between shares it). Equal units would too. */
  qsort(c.units, c.len, sizeof *c.units, unit_cmp);
  for (size_t i = 1; i < c.len; i++) {
    char a[NQ_UNIT_TEXT_MAX], b[NQ_UNIT_TEXT_MAX];
    nq_unit_format(&c.units[i - 1], a, sizeof a);
    nq_unit_format(&c.units[i], b, sizeof b);
    ck_assert_msg(!is_prefix(&c.units[i - 1], &c.units[i]), "N=%d: %s is a prefix of %s", n, a,
                  b);
  }
  int depths = 0;
  uint64_t total = 0;
  for (int d = 0; d <= NQ_MAX_N; d++) {
    ck_assert_uint_eq(s.by_depth[d], c.by_depth[d]);
    ck_assert(c.by_depth[d] == 0 || (d >= s.start_depth && d <= max_depth));
    depths += c.by_depth[d] != 0;
    total += c.by_depth[d];
  }
  ck_assert_uint_eq(total, s.units);
  ck_assert(start ? s.start_depth == start : s.start_depth >= 2 && s.start_depth <= max_depth);
  ck_assert(fabs(s.est_nodes - (c.est_sum + (double)s.internal)) <= 1e-9 * s.est_nodes);
  ck_assert(fabs(s.unit.sum - c.est_sum) <= 1e-9 * c.est_sum);
  /* The plan's estimate of the whole is unbiased: within 5 standard errors of the exact count
   * (the units' estimates come from probes independent of the split decisions). */
  double exact = (double)whole->nodes;
  ck_assert_msg(fabs(s.est_nodes - exact) <= 5 * s.est_se + 1e-9 * exact,
                "N=%d target %g: plan estimate %.0f, exact %.0f, se %.0f", n, target, s.est_nodes,
                exact, s.est_se);
  free(c.units);
  *sum = s;
  return depths;
}

/* --split-outliers: the units a second look splits still cover the tree exactly once, and the
 * plan stays unbiased (check_cover's 5-SE test); a low ratio makes the looks happen at small N. */
START_TEST(split_outliers_cover_exactly) {
  uint64_t looks = 0, splits = 0;
  for (int n = 12; n <= 15; n++) {
    nq_solve_opts_t so = {1, NULL, NULL, NULL, NULL, NULL, 0};
    nq_counts_t whole;
    ck_assert_int_eq(nq_solve_n(n, 2, &so, &whole), 0);
    nq_plan_opts_t o = {n, 1e-3 * (double)whole.nodes, 2, n - 1, 11, 0, 0, 0, 1.5};
    nq_plan_summary_t s;
    check_cover_opts(&o, &whole, &s);
    ck_assert_uint_le(s.outlier_splits, s.outlier_looks);
    looks += s.outlier_looks;
    splits += s.outlier_splits;
    /* The same plan without the looks: the looks only ever split more. */
    nq_plan_summary_t plain;
    o.split_outliers = 0;
    check_cover_opts(&o, &whole, &plain);
    ck_assert_uint_eq(plain.outlier_looks, 0);
    ck_assert_uint_ge(s.internal, plain.internal);
  }
  ck_assert_uint_gt(looks, 0);
  ck_assert_uint_gt(splits, 0);
  char err[200];
  nq_plan_opts_t bad = {12, 1e3, 2, 11, 1, 0, 0, 0, 0.5};
  ck_assert_int_eq(nq_plan_run(&bad, NULL, NULL, NULL, err, sizeof err), NQ_ERANGE);
  ck_assert_msg(strstr(err, "split outliers") != NULL, "%s", err);
}
END_TEST

/* Fleets: the SPEC syntax, the figures, and clear refusals. */
START_TEST(fleet_spec_and_calendar) {
  nq_fleet_t f;
  char err[300];
  ck_assert_int_eq(nq_fleet_parse("avx2=1000,avx512=10@3e9,gpu=2@2e10,rate=5e11,quorum=3,"
                                  "spot=0.1,duty=0.5", &f, err, sizeof err), 0);
  ck_assert_int_eq(f.nparts, 3);
  ck_assert_int_eq(f.quorum, 3);
  nq_fleet_cal_t c;
  nq_fleet_calendar(&f, 1e18, 0, &c);
  double rate = 1000 * 1.28e9 + 10 * 3e9 + 2 * 2e10 + 5e11;
  ck_assert_double_eq_tol(c.rate, rate, 1);
  ck_assert_double_eq_tol(c.replicas, 3.1, 1e-12);
  ck_assert_double_eq_tol(c.nodes, 3.1e18, 1e3);
  ck_assert_double_eq_tol(c.ref_core_years, 3.1e18 / 1e9 / 31557600.0, 1e-9);
  /* Without the kernel rule every replica runs its machine's own kernel. Two GPUs cannot take
   * more than two of a unit's 3.1 replicas (distinct keys), so the others wait for the CPUs:
   * never sooner than the nodes at the fleet's rate. */
  ck_assert_double_eq_tol(c.core_seconds, c.own_core_seconds, 1e-6 * c.core_seconds);
  ck_assert_msg(c.seconds >= 0.99 * 3.1e18 / (rate * 0.5), "%g s", c.seconds);
  ck_assert_double_eq(c.tail_seconds, 0);
  /* Parts of many cores ask in proportion to their speed, so they all finish together: the
   * calendar is the nodes at the fleet's rate (within the sampling). */
  ck_assert_int_eq(nq_fleet_parse("avx2=1000,avx512=10@3e9,rate=5e11,quorum=3,spot=0.1,duty=0.5",
                                  &f, err, sizeof err), 0);
  nq_fleet_calendar(&f, 1e18, 0, &c);
  rate = 1000 * 1.28e9 + 10 * 3e9 + 5e11;
  ck_assert_msg(fabs(c.seconds - 3.1e18 / (rate * 0.5)) < 0.02 * c.seconds, "%g s, want %g",
                c.seconds, 3.1e18 / (rate * 0.5));
  const char *k;
  ck_assert_double_eq(nq_fleet_slowest(&f, &k), 1.28e9);
  ck_assert_str_eq(k, "avx2");
  /* Defaults: quorum 2, the server's 2% spot checks, always on. */
  ck_assert_int_eq(nq_fleet_parse("ref=4", &f, err, sizeof err), 0);
  ck_assert_double_eq(f.spot, 0.02);
  nq_fleet_calendar(&f, 8e9, 0, &c);
  ck_assert_double_eq_tol(c.seconds, 4.04, 1e-9); /* 2.02 x 8e9 nodes at 4e9 nodes/s */
  const char *bad[][2] = {
      {"", "empty"},
      {"avx2", "KEY=VALUE"},
      {"avx3=10", "unknown item 'avx3'"},
      {"gpu=2", "gpu has no typical rate"},
      {"neon=2", "neon has no typical rate"},
      {"avx2=1.5", "whole number of cores"},
      {"avx2=0", "whole number of cores"},
      {"avx2=10@fast", "rate of nodes/s"},
      {"avx2=10,quorum=0", "1..16"},
      {"avx2=10,quorum=2.5", "1..16"},
      {"avx2=10,spot=2", "0..1"},
      {"avx2=10,duty=0", "share of the time"},
      {"avx2=10,quorum=2,quorum=3", "given twice"},
      {"quorum=2", "no compute"},
      {"rate=-1", "node rate"},
      {"avx2=10,quorum=3\n", "not printable"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(nq_fleet_parse(bad[i][0], &f, err, sizeof err), NQ_EINVAL);
    ck_assert_msg(strstr(err, bad[i][1]) != NULL, "'%s': %s", bad[i][0], err);
  }
}
END_TEST

START_TEST(mixed_depths_cover_exactly) {
  int n = _i, mixed = 0;
  nq_solve_opts_t so = {1, NULL, NULL, NULL, NULL, NULL, 0};
  nq_counts_t whole;
  ck_assert_int_eq(nq_solve_n(n, 2, &so, &whole), 0);
  /* Targets from a tenth of N down to a 1e-4th (a few nodes for small N): one unit to tens of
   * thousands, of several depths, down to row N-1 for small N. */
  for (double f = 0.1; f >= 0.99e-4 && f * (double)whole.nodes >= 1; f /= 10)
    mixed += check_cover(n, f * (double)whole.nodes, 2, n - 1, &whole) > 1;
  ck_assert_int_gt(mixed, 0);
  /* The automatic start depth. */
  check_cover(n, 1e-3 * (double)whole.nodes, 0, n - 1, &whole);
  /* A start depth and a depth cap; and target 0: every unit at the cap. */
  if (n >= 7) check_cover(n, 1e-3 * (double)whole.nodes, 3, n - 3, &whole);
  ck_assert_int_eq(check_cover(n, 0, 2, n > 6 ? 5 : n - 1, &whole), 1);
}
END_TEST

/* Target 0 with start = cap = d is the flat job: exactly the generator's units at d, in order. */
typedef struct flat_s {
  nq_unit_t *v;
  size_t len, at;
} flat_t;

static int flat_collect(const nq_unit_t *u, void *arg) {
  flat_t *f = arg;
  f->v = realloc(f->v, (f->len + 1) * sizeof *f->v);
  f->v[f->len++] = *u;
  return 0;
}

static int flat_cb(const nq_plan_unit_t *pu, void *arg) {
  flat_t *f = arg;
  ck_assert_uint_lt(f->at, f->len);
  ck_assert_int_eq(unit_cmp(&pu->unit, &f->v[f->at]), 0);
  f->at++;
  return 0;
}

START_TEST(flat_plan_is_generator) {
  flat_t f = {NULL, 0, 0};
  ck_assert_int_eq(nq_units_generate(13, 4, flat_collect, &f), 0);
  nq_plan_opts_t o = {13, 1e30, 4, 4, 1, 2, 0, 3, 0}; /* no decisions: 3 probes a unit */
  nq_plan_summary_t s;
  ck_assert_int_eq(nq_plan_run(&o, flat_cb, &f, &s, NULL, 0), 0);
  ck_assert_uint_eq(f.at, f.len);
  ck_assert_uint_eq(s.units, f.len);
  ck_assert_uint_eq(s.estimated, f.len);
  ck_assert_uint_eq(s.probes, 3 * f.len);
  free(f.v);
}
END_TEST

/* ---- determinism ---- */

typedef struct digest_s {
  uint64_t h;
  uint64_t units;
} digest_t;

static int digest_cb(const nq_plan_unit_t *pu, void *arg) {
  digest_t *d = arg;
  char t[NQ_UNIT_TEXT_MAX];
  int len = nq_unit_format(&pu->unit, t, sizeof t);
  for (int i = 0; i < len; i++) d->h = (d->h ^ (uint8_t)t[i]) * 0x100000001b3ull;
  uint64_t bits;
  memcpy(&bits, &pu->est_nodes, sizeof bits);
  d->h = (d->h ^ bits) * 0x100000001b3ull;
  d->units++;
  return 0;
}

static digest_t plan_digest(uint64_t seed) {
  nq_plan_opts_t o = {15, 2e5, 2, 14, seed, 0, 0, 0, 0};
  digest_t d = {0xcbf29ce484222325ull, 0};
  ck_assert_int_eq(nq_plan_run(&o, digest_cb, &d, NULL, NULL, 0), 0);
  ck_assert_uint_gt(d.units, 100);
  return d;
}

START_TEST(plan_deterministic_for_seed) {
  digest_t a = plan_digest(5), b = plan_digest(5), c = plan_digest(6);
  ck_assert_uint_eq(a.units, b.units);
  ck_assert(a.h == b.h);
  ck_assert(c.h != a.h);
}
END_TEST

/* ---- options, limits ---- */

static int stop_cb(const nq_plan_unit_t *pu, void *arg) {
  (void)arg;
  return pu->index == 9 ? NQ_EIO : 0;
}

START_TEST(plan_options_checked) {
  char err[400];
  nq_plan_opts_t o = {14, 1e5, 2, 13, 1, 0, 0, 0, 0};
  nq_plan_opts_t bad = o;
  bad.start_depth = 14;
  ck_assert_int_eq(nq_plan_run(&bad, NULL, NULL, NULL, err, sizeof err), NQ_ERANGE);
  ck_assert_ptr_nonnull(strstr(err, "must be 2..13"));
  bad = o;
  bad.start_depth = 5;
  bad.max_depth = 4;
  ck_assert_int_eq(nq_plan_run(&bad, NULL, NULL, NULL, err, sizeof err), NQ_ERANGE);
  ck_assert_ptr_nonnull(strstr(err, "max depth 4 is out of range"));
  bad.max_depth = 20;
  ck_assert_int_eq(nq_plan_run(&bad, NULL, NULL, NULL, err, sizeof err), NQ_ERANGE);
  bad = o;
  bad.target_nodes = -1;
  ck_assert_int_eq(nq_plan_run(&bad, NULL, NULL, NULL, err, sizeof err), NQ_ERANGE);
  bad.target_nodes = NAN;
  ck_assert_int_eq(nq_plan_run(&bad, NULL, NULL, NULL, err, sizeof err), NQ_ERANGE);
  bad = o;
  bad.n = 3;
  ck_assert_int_eq(nq_plan_run(&bad, NULL, NULL, NULL, err, sizeof err), NQ_ERANGE);
  bad = o;
  bad.probes = NQ_EST_MAX_PROBES + 1;
  ck_assert_int_eq(nq_plan_run(&bad, NULL, NULL, NULL, err, sizeof err), NQ_ERANGE);
  /* A unit limit, with a message saying what to change. */
  bad = o;
  bad.max_units = 10;
  ck_assert_int_eq(nq_plan_run(&bad, NULL, NULL, NULL, err, sizeof err), NQ_ERANGE);
  ck_assert_ptr_nonnull(strstr(err, "more than 10 units"));
  /* The callback's error stops the plan and comes back. */
  nq_plan_summary_t s;
  ck_assert_int_eq(nq_plan_run(&o, stop_cb, NULL, &s, err, sizeof err), NQ_EIO);
  ck_assert_uint_eq(s.units, 10);
  /* Seconds on the reference core. */
  double nodes = 0;
  ck_assert_int_eq(nq_plan_seconds_to_nodes(1200, &nodes, err, sizeof err), 0);
  ck_assert(nodes == 1200 * NQ_REF_NODES_PER_SEC);
  const double badsecs[] = {0, -1, NAN, INFINITY, 2e9};
  for (size_t i = 0; i < sizeof badsecs / sizeof badsecs[0]; i++)
    ck_assert_int_eq(nq_plan_seconds_to_nodes(badsecs[i], &nodes, err, sizeof err), NQ_ERANGE);
}
END_TEST

/* ---- guards ---- */

/* The provable bound is at least the exact node count of every unit. */
static int bound_cb(const nq_unit_t *u, void *arg) {
  (void)arg;
  nq_counts_t c;
  ck_assert_int_eq(nq_fast_solve_unit(u, &c), 0);
  ck_assert_uint_ge(nq_plan_node_bound(u), c.nodes);
  return 0;
}

START_TEST(node_bound_is_a_bound) {
  for (int n = 4; n <= 12; n++)
    for (int d = 2; d <= n - 1; d++) ck_assert_int_eq(nq_units_generate(n, d, bound_cb, NULL), 0);
}
END_TEST

/* N=32 at depth 2 (the example): refused, naming a deeper depth that the guard then
 * accepts for the unit's largest part. */
START_TEST(overflowing_n32_refused) {
  char err[400];
  nq_plan_opts_t o = {32, 0, 2, 2, 1, 0, 0, 0, 0};
  nq_plan_summary_t s;
  ck_assert_int_eq(nq_plan_run(&o, NULL, NULL, &s, err, sizeof err), NQ_EOVERFLOW);
  ck_assert_uint_eq(s.units, 0);
  const char *at = strstr(err, "use a depth of at least ");
  ck_assert_msg(at != NULL, "%s", err);
  ck_assert_ptr_nonnull(strstr(err, "--unit-seconds at most"));
  int depth = atoi(at + strlen("use a depth of at least "));
  ck_assert_int_gt(depth, 2);
  ck_assert_int_lt(depth, 31);
  /* A unit-seconds target with too shallow a cap: the same refusal. */
  double nodes;
  ck_assert_int_eq(nq_plan_seconds_to_nodes(NQ_PLAN_DEFAULT_UNIT_SECONDS, &nodes, NULL, 0), 0);
  nq_plan_opts_t sized = {32, nodes, 2, 3, 1, 0, 0, 0, 0};
  ck_assert_int_eq(nq_plan_run(&sized, NULL, NULL, NULL, err, sizeof err), NQ_EOVERFLOW);
  /* A single unit too. */
  nq_unit_t u;
  ck_assert_int_eq(nq_unit_parse("32:s:1:1,3", &u, NULL, 0), 0);
  ck_assert_int_eq(nq_plan_check_unit(&u, 1e20, 1, err, sizeof err), NQ_EOVERFLOW);
  ck_assert_ptr_nonnull(strstr(err, "32:s:1:1,3"));
}
END_TEST

/* N=27 at depth 4 and 5 (every seventh unit): accepted (by estimate; the provable bound is far
 * too loose there), so a record job at a realistic depth passes. */
static int accept_cb(const nq_unit_t *u, void *arg) {
  uint64_t *left = arg;
  static uint64_t seen;
  if (seen++ % 7) return 0; /* a seventh of them: the guard's own look costs 256 probes */
  nq_est_t e;
  char err[400];
  ck_assert_int_eq(nq_estimate_unit(u, 1, NQ_PLAN_DEFAULT_PROBES, &e), 0);
  ck_assert_msg(nq_plan_check_unit(u, e.nodes, 1, err, sizeof err) == 0, "%s", err);
  if (left && --*left == 0) return 1; /* enough */
  return 0;
}

START_TEST(record_depths_accepted) {
  ck_assert_int_eq(nq_units_generate(27, 4, accept_cb, NULL), 0);
  uint64_t left = 20000;
  ck_assert_int_eq(nq_units_generate(27, 5, accept_cb, &left), 1);
  /* A whole plan of N=27 at depth 5 through the planner, cut short by max_units. */
  char err[400];
  nq_plan_opts_t o = {27, 0, 5, 5, 1, 0, 5000, 0, 0};
  ck_assert_int_eq(nq_plan_run(&o, NULL, NULL, NULL, err, sizeof err), NQ_ERANGE);
  ck_assert_msg(strstr(err, "more than 5000 units") != NULL, "%s", err);
  /* Small N is provably safe whatever the estimate says. */
  nq_unit_t u;
  ck_assert_int_eq(nq_unit_parse("18:c:5:0,5,12", &u, NULL, 0), 0);
  ck_assert_uint_le(nq_plan_node_bound(&u), (uint64_t)NQ_PLAN_LIMIT);
  ck_assert_int_eq(nq_plan_check_unit(&u, 1e30, 1, NULL, 0), 0);
}
END_TEST

/* Honest results pass; each kind of impossible one is refused with a message. */
static int honest_cb(const nq_unit_t *u, void *arg) {
  (void)arg;
  nq_counts_t c;
  ck_assert_int_eq(nq_fast_solve_unit(u, &c), 0);
  ck_assert_int_eq(nq_plan_check_result(u, &c, NULL, 0), 0);
  return 0;
}

START_TEST(results_checked) {
  for (int n = 5; n <= 12; n++)
    for (int d = 2; d <= n - 1; d += 3)
      ck_assert_int_eq(nq_units_generate(n, d, honest_cb, NULL), 0);
  nq_unit_t corner, side;
  nq_counts_t ok, c;
  char err[400];
  ck_assert_int_eq(nq_unit_parse("12:c:3:0,3", &corner, NULL, 0), 0);
  ck_assert_int_eq(nq_fast_solve_unit(&corner, &ok), 0);
  c = ok;
  c.nodes = 0;
  ck_assert_int_eq(nq_plan_check_result(&corner, &c, err, sizeof err), NQ_ERANGE);
  c.nodes = nq_plan_node_bound(&corner) + 1;
  ck_assert_int_eq(nq_plan_check_result(&corner, &c, err, sizeof err), NQ_ERANGE);
  ck_assert_ptr_nonnull(strstr(err, "nodes, outside 1.."));
  c = ok;
  c.c8 = c.nodes + 1;
  ck_assert_int_eq(nq_plan_check_result(&corner, &c, err, sizeof err), NQ_ERANGE);
  c = ok;
  c.c2 = c.c4 = c.c8 = UINT64_MAX; /* the sum must not wrap around to something small */
  ck_assert_int_eq(nq_plan_check_result(&corner, &c, err, sizeof err), NQ_ERANGE);
  c = ok;
  c.c4 = 1;
  ck_assert_int_eq(nq_plan_check_result(&corner, &c, err, sizeof err), NQ_ERANGE);
  ck_assert_ptr_nonnull(strstr(err, "only counts COUNT8"));
  c = ok;
  c.count1 = 1;
  ck_assert_int_eq(nq_plan_check_result(&corner, &c, err, sizeof err), NQ_ERANGE);
  /* The side part may count COUNT4; nodes at the limit of a big unit pass, past it do not. */
  ck_assert_int_eq(nq_unit_parse("32:s:1:1,3", &side, NULL, 0), 0);
  memset(&c, 0, sizeof c);
  c.c4 = 1;
  c.nodes = (uint64_t)NQ_PLAN_LIMIT;
  ck_assert_int_eq(nq_plan_check_result(&side, &c, err, sizeof err), 0);
  c.nodes = (uint64_t)NQ_PLAN_LIMIT + 1;
  ck_assert_int_eq(nq_plan_check_result(&side, &c, err, sizeof err), NQ_ERANGE);
}
END_TEST

/* ---- nq-solve ---- */

/* Run nq-solve with args; returns its exit status and its output (stdout and stderr) in out. */
static int run_solve(const char *args, char *out, size_t len) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "'%s/nq-solve' %s 2>&1", tu_bin_dir(), args);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t got = fread(out, 1, len - 1, p);
  out[got] = '\0';
  char rest[4096];
  while (fread(rest, 1, sizeof rest, p) > 0) {
  } /* the rest, unread: the program must not die of a closed pipe */
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(solve_refuses_bad_depths) {
  char out[4096];
  const char *bad[] = {"14 --depth 20 --list-units", "14 --depth 14", "14 --depth 20",
                       "14 --depth 14 --estimate", "14 --unit-seconds 1 --depth 14 --plan",
                       "14 --unit-seconds 1 --max-depth 15 --plan"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(run_solve(bad[i], out, sizeof out), 2);
    ck_assert_msg(strstr(out, "out of range for N=14") && strstr(out, "2..13"), "%s: %s",
                  bad[i], out);
  }
  ck_assert_int_eq(run_solve("14 --depth 1", out, sizeof out), 2);
  ck_assert_int_eq(run_solve("32 --depth 2 --max-depth 2 --unit-nodes 0 --plan", out, sizeof out),
                   2);
  ck_assert_msg(strstr(out, "use a depth of at least") != NULL, "%s", out);
  ck_assert_int_eq(run_solve("14 --depth 13 --list-units", out, sizeof out), 0);
  ck_assert_int_eq(run_solve("12 --unit-seconds 0.00001 --plan --verify --json", out, sizeof out),
                   0);
  ck_assert_msg(strstr(out, "\"exact\":true") != NULL, "%s", out);
  ck_assert_int_eq(run_solve("12 --estimate --json --calibrate 0", out, sizeof out), 0);
  ck_assert_msg(strstr(out, "\"nodes\":") != NULL, "%s", out);
}
END_TEST

/* nq-solve N --sample K/P: the P slices of N's units at a depth add up to N's published TOTAL,
 * UNIQUE and COUNT2/4/8, and to the nodes of those units (N's nodes less the rows above the
 * depth, the same with the reference and the fast kernel); each slice is a proper part; bad
 * slices and combinations are refused. */
START_TEST(solve_sample_slices_add_up) {
  char out[4096], args[200];
  const int n = 13, p = 5;
  long long sum[5] = {0}, nodes_of[2] = {0}; /* the slices' nodes: kernel, reference */
  for (int k = 0; k < p; k++) {
    for (int ref = 0; ref < 2; ref++) {
      snprintf(args, sizeof args, "%d --depth 4 --sample %d/%d --json --threads 1%s", n, k, p,
               ref ? " -r" : "");
      ck_assert_int_eq(run_solve(args, out, sizeof out), 0);
      long long total, unique, c2, c4, c8, nodes;
      const char *q = strstr(out, "\"total\":\"");
      ck_assert_ptr_nonnull(q);
      ck_assert_int_eq(sscanf(q, "\"total\":\"%lld\",\"unique\":\"%lld\",\"c2\":%lld,\"c4\":%lld,"
                                 "\"c8\":%lld,\"nodes\":%lld", &total, &unique, &c2, &c4, &c8,
                              &nodes), 6);
      ck_assert_msg(total > 0 && total < 73712, "slice %d: %s", k, out);
      ck_assert_msg(strstr(out, "\"sample\":\"") && !strstr(out, "matches_published"), "%s", out);
      nodes_of[ref] += nodes;
      if (ref) continue;
      long long v[5] = {total, unique, c2, c4, c8};
      for (int i = 0; i < 5; i++) sum[i] += v[i];
    }
  }
  ck_assert_int_eq(nodes_of[0], nodes_of[1]); /* the kernel's nodes are the reference's */
  ck_assert_int_eq(sum[0], 73712);  /* N=13: A000170 */
  ck_assert_int_eq(sum[1], 9233);   /* A002562 */
  ck_assert_int_eq(sum[0], 2 * sum[2] + 4 * sum[3] + 8 * sum[4]);
  /* N's own count has the nodes above depth 4 too (rows 2 and 3): a few more, not fewer. */
  long long whole = 0;
  ck_assert_int_eq(run_solve("13 --json --threads 1", out, sizeof out), 0);
  ck_assert_int_eq(sscanf(strstr(out, "\"nodes\":"), "\"nodes\":%lld", &whole), 1);
  ck_assert_msg(nodes_of[0] < whole && whole - nodes_of[0] < whole / 10, "slices %lld, N %lld",
                nodes_of[0], whole);
  const char *bad[] = {"13 --sample 5/5", "13 --sample 1/0", "13 --sample -1/4", "13 --sample 1/2x",
                       "13 --sample 1", "13 --sample 0/2 --estimate", "13 --sample 0/2 --list-units",
                       "--unit 13:c:2:0,2 --sample 0/2", "13 --sample 0/2 --checkpoint /tmp/x",
                       "3 --sample 0/2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(run_solve(bad[i], out, sizeof out), 2);
    ck_assert_msg(strstr(out, "sample") || strstr(out, "no units"), "%s: %s", bad[i], out);
  }
}
END_TEST

/* The kernel rule's price: replicas named the kernel their unit lacks, on the machine that takes
 * them, at that kernel's rate there; spot checks one replica more; the tail reissue. */
START_TEST(fleet_prices_the_kernel_rule) {
  nq_fleet_t f;
  char err[300];
  nq_fleet_cal_t c;
  /* Identical AVX-512 machines, quorum 2, K = 2: every unit runs avx512 once and avx2 once (the
   * second replica is named the next kernel down), so a unit costs 1/2.5e9 + 1/1.28e9 core-s a
   * node, not 2/2.5e9. */
  ck_assert_int_eq(nq_fleet_parse("avx512=100,spot=0", &f, err, sizeof err), 0);
  f.kernels = 2;
  nq_fleet_calendar(&f, 1e12, 0, &c);
  ck_assert_double_eq_tol(c.core_seconds, 1e12 * (1 / 2.5e9 + 1 / 1.28e9), 1e-6);
  ck_assert_double_eq_tol(c.own_core_seconds, 1e12 * 2 / 2.5e9, 1e-6);
  ck_assert_int_eq(c.nkernels, 2);
  ck_assert_double_eq_tol(c.kernel_share[0] + c.kernel_share[1], 1, 1e-12);
  ck_assert_double_eq_tol(c.kernel_share[0], 0.5, 1e-12);
  ck_assert_double_eq_tol(c.seconds, c.core_seconds / 100, 1e-9);
  /* Off: both at avx512. */
  f.kernels = 0;
  nq_fleet_calendar(&f, 1e12, 0, &c);
  ck_assert_double_eq_tol(c.core_seconds, 1e12 * 2 / 2.5e9, 1e-6);
  /* Identical AVX2 machines: the second replica runs scalar (4.6x avx2's time). */
  ck_assert_int_eq(nq_fleet_parse("avx2=10,spot=0", &f, err, sizeof err), 0);
  f.kernels = 2;
  nq_fleet_calendar(&f, 1e12, 0, &c);
  ck_assert_double_eq_tol(c.core_seconds, 1e12 * (1 / 1.28e9 + 1 / 2.8e8), 1e-6);
  /* Two kernels of the fleet's own rates, one core of each: each unit runs once on each (the
   * replicas of a unit go to distinct cores), at the rates given, and the slower core is the
   * calendar. */
  ck_assert_int_eq(nq_fleet_parse("avx512=1@2e9,avx2=1@1e9,spot=0", &f, err, sizeof err), 0);
  f.kernels = 2;
  nq_fleet_calendar(&f, 1e12, 0, &c);
  ck_assert_double_eq_tol(c.core_seconds, 1e12 * (1 / 2e9 + 1 / 1e9), 1e-6);
  ck_assert_double_eq_tol(c.bulk_seconds, 1e12 / 1e9, 1e-6);
  /* Two AVX-512 cores and one AVX2: the avx2 a second AVX-512 core runs is priced at the
   * fleet's avx2 rate (the same kernel), so again each unit costs one of each. */
  ck_assert_int_eq(nq_fleet_parse("avx512=2@2e9,avx2=1@1e9,spot=0", &f, err, sizeof err), 0);
  f.kernels = 2;
  nq_fleet_calendar(&f, 1e12, 0, &c);
  ck_assert_double_eq_tol(c.core_seconds, 1e12 * (1 / 2e9 + 1 / 1e9), 1e-6);
  /* KERNEL@RATE: no cores, only the rate the fleet's machines run that kernel at when named:
   * two AVX-512 cores at 2e9 whose avx2 runs at 1.5e9. */
  ck_assert_int_eq(nq_fleet_parse("avx512=2@2e9,avx2@1.5e9,spot=0", &f, err, sizeof err), 0);
  f.kernels = 2;
  nq_fleet_calendar(&f, 1e12, 1e9, &c);
  ck_assert_double_eq_tol(c.core_seconds, 1e12 * (1 / 2e9 + 1 / 1.5e9), 1e-6);
  ck_assert_double_eq_tol(c.rate, 4e9, 1e-3);
  ck_assert_double_eq_tol(c.bulk_seconds, c.core_seconds / 2, 1e-6);
  const char *slowk;
  ck_assert_double_eq(nq_fleet_slowest(&f, &slowk), 2e9);
  ck_assert_int_eq(nq_fleet_parse("avx2@1.5e9", &f, err, sizeof err), NQ_EINVAL);
  ck_assert_msg(strstr(err, "no compute"), "%s", err);
  ck_assert_int_eq(nq_fleet_parse("avx512=2,ref@1e9", &f, err, sizeof err), NQ_EINVAL);
  ck_assert_int_eq(nq_fleet_parse("avx512=2,avx2@x", &f, err, sizeof err), NQ_EINVAL);
  /* Spot checks: one replica more on their share of the units, named a third kernel (scalar on
   * an AVX-512 machine whose unit has avx512 and avx2). */
  ck_assert_int_eq(nq_fleet_parse("avx512=100,spot=0.5", &f, err, sizeof err), 0);
  f.kernels = 2;
  nq_fleet_calendar(&f, 1e12, 0, &c);
  ck_assert_double_eq_tol(c.core_seconds, 1e12 * (1 / 2.5e9 + 1 / 1.28e9 + 0.5 / 2.8e8), 1e-6);
  ck_assert_double_eq_tol(c.replicas, 2.5, 1e-12);
  /* The tail: the largest unit waits the reissue delay and runs on the fastest core (at the
   * rule's mean cost), unless the slowest core is done sooner. */
  ck_assert_int_eq(nq_fleet_parse("avx512=10,avx2=10,spot=0", &f, err, sizeof err), 0);
  nq_fleet_calendar(&f, 1e15, 1e13, &c);
  ck_assert_double_eq_tol(c.tail_seconds, NQ_FLEET_TAIL_AFTER_S + 1e13 / 2.5e9, 1e-6);
  ck_assert_double_eq_tol(c.seconds, c.bulk_seconds + c.tail_seconds, 1e-6);
  nq_fleet_calendar(&f, 1e15, 1e9, &c);
  ck_assert_double_eq_tol(c.tail_seconds, 1e9 / 1.28e9, 1e-9);
}
END_TEST

/* nq-solve N --plan --fleet: the calendar estimate and the outlier warning at N=28 (a cheap
 * plan: 4-day units between depths 3 and 4, about 100,000 units, a few seconds). */
START_TEST(solve_plan_in_calendar_time) {
  static char out[16384];
  const char *plan28 = "28 --plan --unit-seconds 345600 --depth 3 --max-depth 4";
  char args[300];
  snprintf(args, sizeof args, "%s --fleet avx2=20000,avx512=2000,quorum=2,spot=0.05,duty=0.5",
           plan28);
  ck_assert_int_eq(run_solve(args, out, sizeof out), 0);
  const char *want[] = {"replicas     2.05 results a unit (quorum 2 + 0.05 spot checks)",
                        "reference core-years in all", "calendar     ", "for this fleet",
                        "largest unit ", "on one avx2 core", "warning      ",
                        "units are estimated above 4x the target",
                        "nq-server and nq-admin job add plan without a second look",
                        "a smaller --unit-seconds", "kernels      --diverse-kernels 2 ",
                        "scalar", "core-seconds ", "the tail "};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    ck_assert_msg(strstr(out, want[i]) != NULL, "no '%s' in:\n%s", want[i], out);
  /* N=28 has no published count, so the plan prices the server's --diverse-kernels 2: the work
   * takes longer than the plan's nodes x 2.05 at the fleet's own rate for half the time (most
   * of the fleet is AVX2, whose second replicas run scalar), and N=28 takes months. With
   * --diverse-kernels 0 it is that figure. */
  double nodes = 0, days = 0;
  const char *p = strstr(out, "\nnodes        ");
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(sscanf(p, "\nnodes        %lf", &nodes), 1);
  double rate = 20000 * 1.28e9 + 2000 * 2.5e9;
  double want_days = nodes * 2.05 / (rate * 0.5) / 86400, work = 0;
  p = strstr(out, "calendar     ");
  ck_assert_int_eq(sscanf(p, "calendar     %lf days for this fleet (the work %lf days", &days,
                          &work), 2);
  ck_assert_msg(work > 1.3 * want_days && work < 3 * want_days, "%g days, own kernels %g", work,
                want_days);
  ck_assert(days > work);
  snprintf(args, sizeof args, "%s --fleet avx2=20000,avx512=2000,quorum=2,spot=0.05,duty=0.5 "
           "--diverse-kernels 0", plan28);
  ck_assert_int_eq(run_solve(args, out, sizeof out), 0);
  p = strstr(out, "calendar     ");
  ck_assert_int_eq(sscanf(p, "calendar     %lf days for this fleet (the work %lf days", &days,
                          &work), 2);
  ck_assert_msg(fabs(work - want_days) <= 0.02 * want_days, "%g days, want %g", work, want_days);
  /* --split-outliers looks at them again and says what it did. */
  ck_assert_int_eq(run_solve("24 --plan --unit-seconds 600 --fleet ref=1000 --split-outliers 4",
                             out, sizeof out), 0);
  ck_assert_msg(strstr(out, "outliers     ") && strstr(out, "looked at again"), "%s", out);
  /* Refusals: a bad fleet, and --fleet without --plan. */
  ck_assert_int_eq(run_solve("20 --plan --fleet gpu=4", out, sizeof out), 2);
  ck_assert_msg(strstr(out, "gpu has no typical rate"), "%s", out);
  ck_assert_int_eq(run_solve("20 --plan --unit-seconds 1 --list-units --fleet avx2=4", out,
                             sizeof out), 2);
  ck_assert_msg(strstr(out, "--fleet goes with --plan"), "%s", out);
  /* --estimate prices the rule too: on a fleet, or on machines like this one. */
  ck_assert_int_eq(run_solve("20 --estimate --fleet avx512=4,spot=0 --diverse-kernels 2", out,
                             sizeof out), 0);
  ck_assert_msg(strstr(out, "replicas run avx512 50%, avx2 50%"), "%s", out);
  ck_assert_int_eq(run_solve("29 --estimate --depth 3 --effort 8", out, sizeof out), 0);
  ck_assert_msg(strstr(out, "job          as nq-server would run N") &&
                strstr(out, "--diverse-kernels 2 (each"), "%s", out);
  ck_assert_int_eq(run_solve("20 --plan --fleet avx2=4 --list-units", out, sizeof out), 2);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("plan");
  TCase *tc = tcase_create("plan");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, mixed_depths_cover_exactly, 6, 17);
  tcase_add_test(tc, flat_plan_is_generator);
  tcase_add_test(tc, plan_deterministic_for_seed);
  tcase_add_test(tc, plan_options_checked);
  tcase_add_test(tc, node_bound_is_a_bound);
  tcase_add_test(tc, overflowing_n32_refused);
  tcase_add_test(tc, record_depths_accepted);
  tcase_add_test(tc, results_checked);
  tcase_add_test(tc, solve_refuses_bad_depths);
  tcase_add_test(tc, split_outliers_cover_exactly);
  tcase_add_test(tc, fleet_spec_and_calendar);
  tcase_add_test(tc, fleet_prices_the_kernel_rule);
  tcase_add_test(tc, solve_plan_in_calendar_time);
  tcase_add_test(tc, solve_sample_slices_add_up);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
