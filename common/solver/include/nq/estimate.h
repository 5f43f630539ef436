/* nq: cost estimates -- how many search nodes a unit, or a whole N, will take.
 *
 * Method: Knuth's random-probe estimator of tree size (D. E. Knuth, "Estimating the efficiency of
 * backtrack programs", Math. Comp. 29, 1975), stratified by unit. One probe walks from the unit's
 * node down the search tree, at each row taking one of the b allowed columns uniformly at random,
 * until a node with no child or row N-1; with w = the product of the b's so far, the probe's value
 * 1 + b0 + b0*b1 + ... is an unbiased estimate of the unit's node count as solver.h defines it
 * (the unit's own node and every node below, down to row N-1). The rules at each row are the
 * generator's own (nq_unit_row_allowed), so the estimator walks exactly the solver's tree. One
 * refinement, still unbiased: on the side part's row BOUND2-1 a probe only takes children that
 * survive the BOUND2 rule and counts the others exactly (estimate.c, probe).
 *
 * A unit's estimate is the mean of P independent probes; its standard error is the sample
 * standard deviation over sqrt(P). A whole N is stratified by its units at a depth D: the nodes
 * above D are counted exactly (by enumeration), each unit at D is estimated on its own, and the
 * variances add. docs/planning.md gives the measured accuracy, costs and the caveats (the probe
 * values are right-skewed, so a small sample tends to underestimate and its standard error too).
 *
 * Reproducible: every unit's probes come from a random stream seeded by (seed, the unit), so an
 * estimate does not depend on the order units are visited in, nor on what else was estimated.
 */
#ifndef NQ_ESTIMATE_H
#define NQ_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>
#include "nq/unit.h"

/* The reference core: nodes per second of one core of the fast kernel on which "core-seconds"
 * (e.g. --unit-seconds) are defined. 1e9 nodes/s, i.e. 1 ns a node: an AVX2 x86-64 core of
 * 2020-2024 (this project's kernel: 0.62-0.67 ns a node with AVX-512, 1.08 ns with AVX2 under
 * nq-solver-1; 0.40 and 0.78 ns under nq-solver-3, whose tree is a third smaller;
 * docs/performance.md, docs/planning.md). */
#define NQ_REF_NODES_PER_SEC 1e9

#define NQ_EST_DEFAULT_SEED 1           /* the seed when none is given */
#define NQ_EST_MIN_PROBES 4             /* per unit, so every unit has a standard error */
#define NQ_EST_DEFAULT_BUDGET 16384     /* probes a whole-N estimate spends by default */
#define NQ_EST_MAX_PROBES (1u << 24)    /* per unit; a bound on the effort one call can ask */

/* One unit's estimate. */
typedef struct nq_est_s {
  double nodes;    /* estimated node count (unbiased) */
  double se;       /* standard error of nodes (0 when probes < 2) */
  unsigned probes; /* probes it rests on */
} nq_est_t;

/* The seed of unit u's random stream for a given estimate seed. */
uint64_t nq_est_unit_seed(uint64_t seed, const nq_unit_t *u);

/* Estimate one unit with `probes` probes (1..NQ_EST_MAX_PROBES) from the stream
 * nq_est_unit_seed(seed, u). Returns 0, NQ_EINVAL for an invalid unit, NQ_ERANGE for probes
 * out of range. Costs about 5-15 ns per row a probe walks (docs/planning.md). */
int nq_estimate_unit(const nq_unit_t *u, uint64_t seed, unsigned probes, nq_est_t *out);

/* The probe's bit select: "pdep" (BMI2, where the CPU runs it in hardware) or "plain" (a loop,
 * any CPU); both walk the same paths, so estimates are equal bit for bit. For tests and
 * benchmarks: nq_est_probe_set("plain" | "pdep" | "auto") returns 0, NQ_ENODEV when this CPU
 * lacks pdep (or runs it in microcode), NQ_EINVAL for another name. NQ_EST_PROBE=plain in the
 * environment makes "auto" (the default) plain. */
const char *nq_est_probe_in_use(void);
int nq_est_probe_set(const char *name);

/* The fast kernel's speed on this machine (one thread), measured on sampled sub-units of N. */
typedef struct nq_calib_s {
  double rate;      /* nodes per second */
  double seconds;   /* kernel time it measured */
  uint64_t nodes;   /* nodes it solved */
  unsigned subunits;
} nq_calib_t;

/* Solve random sub-units of N (each found by a random descent from a random depth-2 unit to a
 * node whose estimate is at most about 4e6 nodes) with nq_fast_solve_unit until the kernel has
 * run `seconds` of this thread's CPU time on at least 8 of them (wall time at most 20 * seconds
 * + 0.1 s), and report the rate. N in NQ_UNIT_MIN_N..NQ_MAX_N; 0 or a negative NQ_E* code.
 * Deterministic in which sub-units it picks for a seed, not in its timing. */
int nq_calibrate(int n, uint64_t seed, double seconds, nq_calib_t *out);

/* Whole-N estimate, stratified by the units at `depth`. */
typedef struct nq_est_opts_s {
  int n;                /* NQ_UNIT_MIN_N..NQ_MAX_N */
  int depth;            /* 2..N-1 (nq_unit_depth_check) */
  uint64_t seed;
  unsigned probes;      /* per unit at depth; 0 = max(NQ_EST_MIN_PROBES, budget / units) */
  unsigned budget;      /* for probes = 0; 0 = NQ_EST_DEFAULT_BUDGET */
  double calib_seconds; /* > 0: also calibrate the kernel for this long (nq_calibrate) */
} nq_est_opts_t;

/* The spread of many estimates (of units' node counts, or of their relative errors). Quantiles
 * come from a log-scale histogram of 64 bins per factor of 10, so they are within about 4% of
 * the exact order statistics; count, min, max, mean and sum are exact. */
typedef struct nq_est_spread_s {
  uint64_t count;
  double min, p10, median, p90, max, mean, sum;
} nq_est_spread_t;

/* The accumulator behind a spread: bounded memory (about 20 KiB) for any number of values. */
typedef struct nq_est_dist_s nq_est_dist_t;
/* Values below 10^lo_exp land in the lowest bin. NULL when out of memory. */
nq_est_dist_t *nq_est_dist_new(int lo_exp);
void nq_est_dist_add(nq_est_dist_t *d, double v);
void nq_est_dist_spread(const nq_est_dist_t *d, nq_est_spread_t *out);
void nq_est_dist_free(nq_est_dist_t *d);

typedef struct nq_est_report_s {
  int n, depth;
  uint64_t seed;
  unsigned probes;       /* per unit */
  uint64_t units;        /* units at depth */
  uint64_t internal;     /* nodes above depth (rows 2..depth-1), exact */
  double nodes, se;      /* whole N: internal + the sum of the units' estimates, and its SE */
  /* The units' estimates. Each is an estimate, so the spread includes each unit's own noise,
   * whose typical size is rel_se.median (the spread of se/nodes over the units). */
  nq_est_spread_t unit, rel_se;
  char unit_max_text[NQ_UNIT_TEXT_MAX]; /* the unit with the largest estimate */
  double seconds;        /* wall time of the estimate itself (calibration not included) */
  uint64_t total_probes;
  nq_calib_t calib;      /* zero unless calib_seconds > 0 */
} nq_est_report_t;

/* Estimate N's node count: the exact nodes above `depth` plus every unit at `depth` estimated
 * with opts->probes probes; fills the report. Memory is bounded (a histogram, not a list) and
 * the time is about units * probes * the cost of a probe. 0, NQ_ERANGE (N or depth out of
 * range), NQ_EINVAL or NQ_ENOMEM. */
int nq_estimate_n(const nq_est_opts_t *opts, nq_est_report_t *out);

#endif
