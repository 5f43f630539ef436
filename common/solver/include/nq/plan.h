/* nq: planning a job -- units sized to a target cost, and the guards that refuse what 64-bit
 * counts cannot hold.
 *
 * A plan walks the search tree from its depth-2 nodes. A node above start_depth is always split
 * into its children (nq_unit_children); a node at or below start_depth is estimated
 * (nq_estimate_unit) and split when its estimate is above the target and it is above max_depth,
 * else it becomes a unit, with an estimate from fresh probes (unbiased; see plan.c). So the
 * units cover the tree exactly once: each is a node none of whose ancestors is a unit (every
 * ancestor was split), and every path down from a depth-2 node either meets exactly one unit or
 * ends at a split node without children. The split ("internal") nodes are counted, so that,
 * exactly,
 *
 *     sum over units of nodes(unit) + internal == the node count of nq-solve N
 *
 * (nodes as solver.h defines them; the internal nodes include the dead ends above the units).
 * The order is the generator's (depth-first, corner part then side part, columns increasing), so
 * a plan is a stream: memory is bounded by N, and the same options and seed give the same units
 * with the same estimates in the same order.
 *
 * Guards. A unit's counts are 64-bit, and the store keeps them as SQLite integers, so every
 * count and node count must stay at or below NQ_PLAN_LIMIT = 2^63 - 1. No unit of a plan may be
 * able to pass it: nq_plan_check_unit accepts a unit when a provable bound says so, or when an
 * estimate times a wide margin is below the limit (docs/planning.md explains the margins), and
 * nq_plan_check_result holds every reported result to the provable bound.
 */
#ifndef NQ_PLAN_H
#define NQ_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include "nq/estimate.h"
#include "nq/solver.h"
#include "nq/unit.h"

#define NQ_PLAN_DEFAULT_UNIT_SECONDS 7200.0 /* 2 hours of the reference core (planning.md) */
#define NQ_PLAN_DEFAULT_PROBES 16           /* per split decision */
#define NQ_PLAN_DEFAULT_UNIT_PROBES 8       /* per unit's own estimate */
#define NQ_PLAN_LIMIT INT64_MAX             /* 2^63 - 1: the most a count may reach */
#define NQ_PLAN_MARGIN 1000.0               /* the guard's estimate * margin <= the limit */
#define NQ_PLAN_MARGIN_FAST 1e5             /* a caller's (few-probe) estimate * this <= limit */
#define NQ_PLAN_GUARD_PROBES 256            /* the guard's own estimate */
#define NQ_PLAN_OUTLIER_RATIO 4.0           /* a unit above this x the target is an outlier */

typedef struct nq_plan_opts_s {
  int n;               /* NQ_UNIT_MIN_N..NQ_MAX_N */
  double target_nodes; /* split a node whose estimate is above this; >= 0 (0: down to max_depth) */
  int start_depth;     /* 2..N-1: no unit is shallower; 0 = automatic: the shallowest depth
                        * whose nodes average at most 16x the target (plan.c, auto_start) */
  int max_depth;       /* start_depth (2 if automatic)..N-1: no unit is deeper (a node there is
                        * a unit whatever its estimate) */
  uint64_t seed;
  unsigned probes;     /* per split decision, 1..NQ_EST_MAX_PROBES; 0 = NQ_PLAN_DEFAULT_PROBES */
  uint64_t max_units;  /* more units than this is an error (NQ_ERANGE); 0 = no limit */
  unsigned unit_probes; /* per unit's own estimate, 1..NQ_EST_MAX_PROBES; 0 =
                         * NQ_PLAN_DEFAULT_UNIT_PROBES */
  double split_outliers; /* 0: off. > 1: a node the decision would keep (below max_depth) is
                          * estimated again with unit_probes probes of its own stream ("look");
                          * when that is above split_outliers x the target, once more with
                          * NQ_PLAN_GUARD_PROBES probes, and split when that is above the
                          * target. Kept units still get their estimate from the "unit" stream,
                          * independent of every look, so the plan stays unbiased; costs
                          * unit_probes more probes a unit. */
} nq_plan_opts_t;

/* One unit of a plan, as the callback sees it. */
typedef struct nq_plan_unit_s {
  nq_unit_t unit;
  uint64_t index;      /* 0, 1, 2, ... in plan order */
  double est_nodes;    /* its estimate: nq_estimate_unit with unit_probes probes, from the
                        * stream of seed ^ 0x756e6974, independent of the probes that decided
                        * not to split it (see plan.c) */
  double est_se;       /* the estimate's standard error */
} nq_plan_unit_t;

/* Called for each unit in order; a non-zero return stops the plan and is returned. */
typedef int (*nq_plan_cb)(const nq_plan_unit_t *pu, void *arg);

typedef struct nq_plan_summary_s {
  uint64_t units;
  int start_depth;           /* the start depth used (the automatic one if asked) */
  uint64_t internal;         /* split nodes (see above): exact */
  uint64_t by_depth[NQ_MAX_N + 1]; /* units per depth */
  uint64_t estimated;        /* nodes estimated (units and split nodes at >= start_depth):
                              * a unit above max_depth twice (decision, then its estimate) */
  uint64_t probes;           /* probes spent */
  uint64_t guard_looks;      /* units the guard estimated itself (estimate above 9.2e13) */
  uint64_t over_target;      /* units at max_depth whose estimate is above the target: the
                              * depth cap, not the target, made them units */
  uint64_t outliers;         /* units above max_depth (so splittable) whose estimate is above
                              * split_outliers (or NQ_PLAN_OUTLIER_RATIO) x the target */
  double outlier_max;        /* the largest estimate among them (0: none) */
  char outlier_max_text[NQ_UNIT_TEXT_MAX]; /* and its unit */
  uint64_t outlier_looks;    /* split_outliers: nodes looked at again with the guard's probes */
  uint64_t outlier_splits;   /* ... and split because of it */
  double est_nodes, est_se;  /* whole N: internal + the sum of the unit estimates, and its SE */
  nq_est_spread_t unit;      /* the spread of the units' estimates */
  char unit_max_text[NQ_UNIT_TEXT_MAX]; /* the unit with the largest estimate */
  double seconds;            /* wall time of the plan, the callback's time left out */
} nq_plan_summary_t;

/* Core-seconds on the reference core (NQ_REF_NODES_PER_SEC) to nodes. NQ_ERANGE with a message
 * unless 0 < seconds <= 1e9 (a finite number; 1e9 s is about 32 years). */
int nq_plan_seconds_to_nodes(double seconds, double *nodes, char *errbuf, size_t errlen);

/* Run a plan: call cb for every unit in order, fill *summary (may be NULL). Every unit passes
 * nq_plan_check_unit first. Returns 0; NQ_ERANGE with a message in errbuf for options out of
 * range, more than max_units units, or a unit the guard refuses (the message names a depth or a
 * target that would do); cb's non-zero return; NQ_EINVAL/NQ_ENOMEM. Cost: `probes` probes for
 * each split decision (every estimated node above max_depth) and `unit_probes` for each unit, of
 * 5-15 ns a row they walk: 3-4 us a unit at N=27-28 with the defaults, 0.5 us a unit of a flat
 * job with 4 unit probes (docs/planning.md). One thread; memory bounded by N. */
int nq_plan_run(const nq_plan_opts_t *opts, nq_plan_cb cb, void *arg, nq_plan_summary_t *summary,
                char *errbuf, size_t errlen);

/* A provable upper bound on nodes(u), the unit's node count, saturated at UINT64_MAX: the sum
 * over rows y = d..N-1 of the product over rows k = d..y-1 of min(cells of row k no prefix queen
 * attacks or the row's BOUND1 rule forbids, N - k). About 2N operations. It is exact enough to
 * prove small N safe and to catch impossible results; far too loose (1e5 and more) to plan by. */
uint64_t nq_plan_node_bound(const nq_unit_t *u);

/* The creation guard for one unit with a caller's estimate est_nodes: 0 when
 * nq_plan_node_bound(u) <= NQ_PLAN_LIMIT (provably safe), or est_nodes * NQ_PLAN_MARGIN_FAST <=
 * NQ_PLAN_LIMIT (at most 9.2e13 nodes, about 26 reference hours: still 70 times inside the
 * limit if a few-probe estimate is as low as the worst seen, 1,400 times below the truth), or
 * the guard's own estimate with NQ_PLAN_GUARD_PROBES
 * probes (from `seed`) times NQ_PLAN_MARGIN is; else NQ_EOVERFLOW with a message naming the
 * unit, its estimate and a depth at which the largest sub-unit below it passes (errbuf may be
 * NULL). Cost: about 2N operations, plus 256 probes for a unit estimated above 9.2e13 nodes.
 * nq_plan_run calls it for every unit; the server need not call it again for those. */
int nq_plan_check_unit(const nq_unit_t *u, double est_nodes, uint64_t seed, char *errbuf,
                       size_t errlen);

/* The result guard: 0 when counts c could be the result of unit u -- nodes in
 * 1..min(nq_plan_node_bound(u), NQ_PLAN_LIMIT), c2 + c4 + c8 <= nodes (each solution is a node
 * on row N-1), c2 = c4 = 0 in the corner part (it only counts COUNT8), count1 = 0 -- else
 * NQ_ERANGE with a message. Never refuses an honest result: every test is a theorem. */
int nq_plan_check_result(const nq_unit_t *u, const nq_counts_t *c, char *errbuf, size_t errlen);

#endif
