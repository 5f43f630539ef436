/* nq: cost estimates -- Knuth's random probes, stratified by unit, and the kernel's calibration.
 * See estimate.h for the method and docs/planning.md for its accuracy and costs.
 */
#include "nq/switches.h"
#include "nq/estimate.h"
#include "nq/nq.h"
#include "nq/solver.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- random streams ---- */

/* splitmix64 (Steele, Lea, Flood 2014): one 64-bit state, a full-period Weyl sequence through a
 * good mixer. Fast, seedable from any value, and plenty for sampling columns. */
typedef struct rng_s {
  uint64_t s;
} rng_t;

static inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline uint64_t rng_next(rng_t *r) { return mix64(r->s += 0x9e3779b97f4a7c15ull); }

/* Uniform in 0..b-1 for 1 <= b <= 32: the top 32 random bits scaled (Lemire); the bias is at
 * most b / 2^32, far below anything the estimates can resolve. */
static inline uint32_t rng_below(rng_t *r, uint32_t b) {
  return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)b) >> 32);
}

uint64_t nq_est_unit_seed(uint64_t seed, const nq_unit_t *u) {
  uint64_t h = mix64(seed ^ 0x6e712d657374ull); /* "nq-est" */
  h = mix64(h ^ ((uint64_t)u->n << 40 | (uint64_t)u->part << 32 | (uint64_t)u->bound1 << 16 |
                 (uint64_t)u->depth));
  for (int y = 0; y < u->depth && y < NQ_MAX_N; y++) h = mix64(h ^ ((uint64_t)u->prefix[y] + 1));
  return h;
}

/* ---- probes ---- */

/* The k-th (from 0) set bit of bm, which has more than k set bits. */
static inline uint32_t select_bit(uint32_t bm, uint32_t k) {
  while (k--) bm &= bm - 1;
  return bm & (0u - bm);
}

/* One probe from a unit's node at row y0 with attack masks l, d, r: the value 1 + sum over rows
 * of W * b, where b is the number of children of the path's node on that row and W the inverse
 * of the chance of having reached that node (see estimate.h). The node on row N-1 is a leaf, as
 * in the solver.
 *
 * The path takes a child uniformly (W grows by b: Knuth's estimator), except on the side part's
 * row BOUND2-1. A node on row BOUND2 whose rows hold no queen in column 0 or N-1 is cut (and with
 * one of them, only the other may follow), so most children of a row-BOUND2-1 node are single
 * dead nodes and the subtree lies below the few others: uniform probes of a big side unit mostly
 * die there, and a handful of them can call a unit of months "small" (measured: a depth-2 unit
 * of N=27 kept as 2 hours, 1.3e15 nodes by a million probes). On that row the path takes only
 * children whose row-BOUND2 node has a child (W grows by their number); the others are counted
 * exactly in W * b. Still unbiased, and no noisier in any measurement: at N=18, depth 3, the
 * share of 8-probe side-unit estimates below a tenth of the exact count falls from 4.5% to 0.75%
 * (N=20, depth 4: from 23% to 5.5%). (Sending
 * half the probes to columns 0 and N-1 on rows BOUND1..BOUND2-1 as well cut such misses further
 * at N=27, but made whole-N estimates 2-5x noisier: dropped. docs/planning.md.)
 *
 * The body is a macro so that it can be compiled twice, once with BMI2's pdep as the bit select
 * (SELECT picks the k-th set bit of `pool`). */
#define PROBE_BODY(SELECT)                                                                    \
  double x = 1.0, w = 1.0;                                                                    \
  const int side = part == NQ_PART_SIDE;                                                      \
  uint32_t bd[NQ_MAX_N]; /* the path's columns (the dead-node rule reads them) */             \
  memcpy(bd, st->board, (size_t)y0 * sizeof bd[0]);                                           \
  for (int y = y0; y <= n - 2; y++) {                                                         \
    int pruned;                                                                               \
    uint32_t bm = nq_unit_row_allowed(st, part, y, l, d, r, bd, &pruned);                    \
    uint32_t b = (uint32_t)__builtin_popcount(bm);                                            \
    if (!b) break;                                                                            \
    uint64_t rnd = rng_next(rng);                                                             \
    uint32_t pool = bm, nb = b;                                                               \
    double f = (double)b;                                                                     \
    if (side && y == st->bound2 - 1) {                                                        \
      pool = alive_at_bound2(st, part, bm, l, d, r, bd);                                      \
      if (!pool) {                                                                            \
        x += w * (double)b;                                                                   \
        break;                                                                                \
      }                                                                                       \
      nb = (uint32_t)__builtin_popcount(pool);                                                \
      f = (double)nb;                                                                         \
    }                                                                                         \
    x += w * (double)b;                                                                       \
    w *= f;                                                                                   \
    uint32_t k = (uint32_t)(((rnd >> 32) * (uint64_t)nb) >> 32), bit = SELECT;                \
    bd[y] = bit;                                                                              \
    l = (l | bit) << 1;                                                                       \
    d |= bit;                                                                                 \
    r = (r | bit) >> 1;                                                                       \
  }                                                                                           \
  return x

/* The columns of pool (children of a side-part node on row BOUND2-1) whose node on row BOUND2
 * has a child: the others are dead ends (one node each, no subtree). bd: the path's columns
 * (row BOUND2-1 is written here). */
static inline uint32_t alive_at_bound2(const nq_unit_state_t *st, nq_part_t part, uint32_t pool,
                                       uint32_t l, uint32_t d, uint32_t r, uint32_t *bd) {
  uint32_t alive = 0;
  for (uint32_t t = pool; t; t &= t - 1) {
    uint32_t bit = t & (0u - t);
    int pruned;
    bd[st->bound2 - 1] = bit;
    if (nq_unit_row_allowed(st, part, st->bound2, (l | bit) << 1, d | bit, (r | bit) >> 1, bd,
                            &pruned))
      alive |= bit;
  }
  return alive;
}

typedef double (*probe_fn)(const nq_unit_state_t *st, nq_part_t part, int n, int y0,
                           uint32_t l, uint32_t d, uint32_t r, rng_t *rng);

static double probe_plain(const nq_unit_state_t *st, nq_part_t part, int n, int y0, uint32_t l,
                          uint32_t d, uint32_t r, rng_t *rng) {
  PROBE_BODY(select_bit(pool, k));
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(NQ_NO_SIMD)
#include <immintrin.h>
/* pdep deposits the single bit 1<<k at the k-th set bit of bm: the same column as select_bit,
 * so both variants give the same estimates bit for bit, about 1.7x faster (docs/planning.md). */
__attribute__((target("bmi2,popcnt"))) static double probe_pdep(const nq_unit_state_t *st,
                                                                nq_part_t part, int n, int y0,
                                                                uint32_t l, uint32_t d,
                                                                uint32_t r, rng_t *rng) {
  PROBE_BODY(_pdep_u32(1u << k, pool));
}

/* pdep where the CPU has BMI2 and runs it in hardware: AMD's families 15h and 17h (up to Zen 2)
 * run it in microcode, slower than the plain loop. */
static probe_fn probe_pick(void) {
  const char *env = nq_switch_get(NQ_SW_EST_PROBE); /* "plain": benchmarks compare the two */
  if (env && !strcmp(env, "plain")) return probe_plain;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("bmi2") && !__builtin_cpu_is("amdfam15h") &&
      !__builtin_cpu_is("amdfam17h"))
    return probe_pdep;
  return probe_plain;
}
#else
static probe_fn probe_pick(void) { return probe_plain; }
#endif

static _Atomic(probe_fn) probe_chosen;

static probe_fn probe_get(void) {
  probe_fn f = atomic_load_explicit(&probe_chosen, memory_order_relaxed);
  if (!f) {
    f = probe_pick();
    atomic_store_explicit(&probe_chosen, f, memory_order_relaxed);
  }
  return f;
}

const char *nq_est_probe_in_use(void) { return probe_get() == probe_plain ? "plain" : "pdep"; }

int nq_est_probe_set(const char *name) {
  if (!strcmp(name, "plain")) {
    atomic_store_explicit(&probe_chosen, probe_plain, memory_order_relaxed);
    return 0;
  }
  if (!strcmp(name, "auto") || !strcmp(name, "pdep")) {
    probe_fn f = probe_pick();
    if (!strcmp(name, "pdep") && f == probe_plain) return NQ_ENODEV;
    atomic_store_explicit(&probe_chosen, f, memory_order_relaxed);
    return 0;
  }
  return NQ_EINVAL;
}

int nq_estimate_unit(const nq_unit_t *u, uint64_t seed, unsigned probes, nq_est_t *out) {
  if (probes < 1 || probes > NQ_EST_MAX_PROBES) return NQ_ERANGE;
  nq_unit_state_t st;
  int rc = nq_unit_state(u, &st);
  if (rc) return rc;
  rng_t rng = {nq_est_unit_seed(seed, u)};
  const probe_fn probe = probe_get();
  /* Welford's running mean and sum of squared deviations: no cancellation when the probes
   * agree closely (they do on units a few rows from the bottom). */
  double mean = 0.0, m2 = 0.0;
  for (unsigned i = 1; i <= probes; i++) {
    double x = probe(&st, u->part, u->n, u->depth, st.left, st.down, st.right, &rng);
    double delta = x - mean;
    mean += delta / i;
    m2 += delta * (x - mean);
  }
  out->nodes = mean;
  out->se = probes > 1 ? sqrt(m2 / (probes - 1) / probes) : 0.0;
  out->probes = probes;
  return 0;
}

/* ---- calibration ---- */

typedef struct kids_s {
  nq_unit_t v[NQ_MAX_N];
  int len;
} kids_t;

static int kids_push(const nq_unit_t *u, void *arg) {
  kids_t *k = arg;
  if (k->len < NQ_MAX_N) k->v[k->len++] = *u;
  return 0;
}

/* The depth-2 units of N: at most N-3 corner and (N-3)(N-3)/2 side ones. */
#define ROOTS_MAX (NQ_MAX_N * NQ_MAX_N)

typedef struct roots_s {
  nq_unit_t *v;
  size_t len;
} roots_t;

static int roots_push(const nq_unit_t *u, void *arg) {
  roots_t *r = arg;
  if (r->len == ROOTS_MAX) return NQ_ERANGE;
  r->v[r->len++] = *u;
  return 0;
}

#define CALIB_SUBUNIT_NODES 4e6  /* big enough that a call's fixed cost is noise (~3 ms) */
#define CALIB_MIN_SUBUNITS 8     /* fewer sub-units make the rate noisy (measured: 0.3-1.4e9/s) */
#define CALIB_MAX_SUBUNITS 100000

/* A random sub-unit of about CALIB_SUBUNIT_NODES nodes or fewer: from a random root, take a
 * random child while a quick estimate says the node is bigger. (Weighting the sub-units by
 * Knuth's path weights would make the sample unbiased for the whole tree but, measured, made the
 * rate far noisier for a 4% gain: units of 1e4 nodes and more all run within a few percent of
 * the whole-N rate; docs/planning.md.) */
static int calib_pick(const roots_t *roots, rng_t *rng, uint64_t seed, nq_unit_t *out) {
  nq_unit_t u = roots->v[rng_next(rng) % roots->len];
  for (;;) {
    nq_est_t e;
    int rc = nq_estimate_unit(&u, seed, 8, &e);
    if (rc) return rc;
    if (e.nodes <= CALIB_SUBUNIT_NODES || u.depth + 1 > u.n - 1) break;
    kids_t k;
    k.len = 0;
    if ((rc = nq_unit_children(&u, kids_push, &k)) != 0) return rc;
    if (k.len == 0) break;
    u = k.v[rng_below(rng, (uint32_t)k.len)];
  }
  *out = u;
  return 0;
}

/* This thread's CPU time: core-seconds are CPU time, and on a shared machine the wall clock
 * also counts the time other processes held the core. */
static double thread_cpu(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) return nq_now_mono();
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int nq_calibrate(int n, uint64_t seed, double seconds, nq_calib_t *out) {
  memset(out, 0, sizeof *out);
  if (n < NQ_UNIT_MIN_N || n > NQ_MAX_N) return NQ_ERANGE;
  roots_t roots = {malloc(ROOTS_MAX * sizeof(nq_unit_t)), 0};
  int rc = roots.v ? nq_units_generate(n, 2, roots_push, &roots) : NQ_ENOMEM;
  if (rc) goto out;
  rng_t rng = {mix64(seed ^ 0x63616c6962ull)}; /* "calib" */
  nq_counts_t c;
  nq_unit_t u;
  /* One untimed solve first: the kernel's per-thread buffers are allocated on first use. */
  if ((rc = calib_pick(&roots, &rng, seed, &u)) != 0 || (rc = nq_fast_solve_unit(&u, &c)) != 0)
    goto out;
  double start = nq_now_mono();
  do {
    if ((rc = calib_pick(&roots, &rng, seed, &u)) != 0) goto out;
    double t0 = thread_cpu();
    if ((rc = nq_fast_solve_unit(&u, &c)) != 0) goto out;
    out->seconds += thread_cpu() - t0;
    out->nodes += c.nodes;
    out->subunits++;
    /* Until the kernel has run for `seconds` and on enough sub-units; the wall clock (descents
     * included) bounds it at 20 times the budget whatever happens. */
  } while ((out->seconds < seconds || out->subunits < CALIB_MIN_SUBUNITS) &&
           nq_now_mono() - start < 20 * seconds + 0.1 && out->subunits < CALIB_MAX_SUBUNITS);
  /* A clock too coarse to see the work would give an infinite rate: report none instead. */
  out->rate = out->seconds > 0 ? (double)out->nodes / out->seconds : 0.0;
out:
  free(roots.v);
  return rc;
}

/* ---- spreads ---- */

/* A log-scale histogram of positive values: HIST_PER_DECADE bins per factor of 10 from 10^lo. */
#define HIST_PER_DECADE 64
#define HIST_DECADES 40
#define HIST_BINS (HIST_PER_DECADE * HIST_DECADES)

struct nq_est_dist_s {
  int lo;
  uint64_t count;
  double min, max, sum;
  uint64_t bin[HIST_BINS];
};

nq_est_dist_t *nq_est_dist_new(int lo_exp) {
  nq_est_dist_t *d = calloc(1, sizeof *d);
  if (d) d->lo = lo_exp;
  return d;
}

void nq_est_dist_free(nq_est_dist_t *d) { free(d); }

void nq_est_dist_add(nq_est_dist_t *d, double v) {
  double pos = v > 0 ? (log10(v) - d->lo) * HIST_PER_DECADE : 0;
  int b = pos < 0 ? 0 : pos >= HIST_BINS ? HIST_BINS - 1 : (int)pos;
  d->bin[b]++;
  if (!d->count || v < d->min) d->min = v;
  if (!d->count || v > d->max) d->max = v;
  d->sum += v;
  d->count++;
}

/* The q-quantile (0 <= q <= 1): the middle of the bin holding the ceil(q*count)-th value,
 * clamped to the exact extremes. */
static double dist_quantile(const nq_est_dist_t *d, double q) {
  uint64_t want = (uint64_t)ceil(q * (double)d->count), seen = 0;
  double v = pow(10.0, d->lo + HIST_DECADES);
  if (want < 1) want = 1;
  for (int b = 0; b < HIST_BINS; b++) {
    seen += d->bin[b];
    if (seen >= want) {
      v = pow(10.0, d->lo + (b + 0.5) / HIST_PER_DECADE);
      break;
    }
  }
  return v < d->min ? d->min : v > d->max ? d->max : v;
}

void nq_est_dist_spread(const nq_est_dist_t *d, nq_est_spread_t *out) {
  memset(out, 0, sizeof *out);
  if (!d->count) return;
  out->count = d->count;
  out->min = d->min;
  out->max = d->max;
  out->sum = d->sum;
  out->mean = d->sum / (double)d->count;
  out->p10 = dist_quantile(d, 0.1);
  out->median = dist_quantile(d, 0.5);
  out->p90 = dist_quantile(d, 0.9);
}

/* ---- whole N ---- */

typedef struct estrun_s {
  const nq_est_opts_t *o;
  nq_est_report_t *rep;
  double var;
  nq_est_dist_t *nodes_d, *relse_d;
} estrun_t;

static int est_cb(const nq_unit_t *u, void *arg) {
  estrun_t *r = arg;
  nq_est_report_t *rep = r->rep;
  nq_est_t e;
  int rc = nq_estimate_unit(u, r->o->seed, rep->probes, &e);
  if (rc) return rc;
  r->var += e.se * e.se;
  rep->total_probes += e.probes;
  if (!r->nodes_d->count || e.nodes > rep->unit.max) {
    rep->unit.max = e.nodes;
    nq_unit_format(u, rep->unit_max_text, sizeof rep->unit_max_text);
  }
  nq_est_dist_add(r->nodes_d, e.nodes);
  nq_est_dist_add(r->relse_d, e.se / e.nodes);
  return 0;
}

/* Nodes above `depth`: every node on rows 2..depth-1, dead ends included (the generator emits
 * every node of its target row). */
static int internal_nodes(int n, int depth, uint64_t *out) {
  *out = 0;
  for (int y = 2; y < depth; y++) {
    uint64_t c;
    int rc = nq_units_count(n, y, &c);
    if (rc) return rc;
    *out += c;
  }
  return 0;
}

int nq_estimate_n(const nq_est_opts_t *o, nq_est_report_t *rep) {
  memset(rep, 0, sizeof *rep);
  int rc = nq_unit_depth_check(o->n, o->depth, NULL, 0);
  if (rc) return rc;
  if (o->probes > NQ_EST_MAX_PROBES) return NQ_ERANGE;
  estrun_t r = {o, rep, 0.0, nq_est_dist_new(0), nq_est_dist_new(-12)};
  if (!r.nodes_d || !r.relse_d) {
    rc = NQ_ENOMEM;
    goto out;
  }
  rep->n = o->n;
  rep->depth = o->depth;
  rep->seed = o->seed;
  double t0 = nq_now_mono();
  uint64_t units;
  if ((rc = internal_nodes(o->n, o->depth, &rep->internal)) != 0) goto out;
  if ((rc = nq_units_count(o->n, o->depth, &units)) != 0) goto out;
  rep->probes = o->probes;
  if (!rep->probes) {
    uint64_t budget = o->budget ? o->budget : NQ_EST_DEFAULT_BUDGET;
    uint64_t per = units ? budget / units : 0;
    rep->probes = per < NQ_EST_MIN_PROBES   ? NQ_EST_MIN_PROBES
                  : per > NQ_EST_MAX_PROBES ? NQ_EST_MAX_PROBES
                                            : (unsigned)per;
  }
  if ((rc = nq_units_generate(o->n, o->depth, est_cb, &r)) != 0) goto out;
  nq_est_dist_spread(r.nodes_d, &rep->unit);
  nq_est_dist_spread(r.relse_d, &rep->rel_se);
  rep->units = rep->unit.count;
  rep->nodes = (double)rep->internal + rep->unit.sum;
  rep->se = sqrt(r.var);
  rep->seconds = nq_now_mono() - t0;
  if (o->calib_seconds > 0) rc = nq_calibrate(o->n, o->seed, o->calib_seconds, &rep->calib);
out:
  nq_est_dist_free(r.relse_d);
  nq_est_dist_free(r.nodes_d);
  return rc;
}
