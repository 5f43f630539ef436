/* nq: planning a job -- units sized to a target cost, and the 64-bit guards (see plan.h). */
#include "nq/plan.h"
#include "nq/nq.h"

#include <math.h>
#include <string.h>

int nq_plan_seconds_to_nodes(double seconds, double *nodes, char *errbuf, size_t errlen) {
  if (!(seconds > 0 && seconds <= 1e9)) /* also refuses NaN */
    return nq_errorf(errbuf, errlen, NQ_ERANGE,
                     "unit seconds %g out of range: must be > 0 and at most 1e9", seconds);
  *nodes = seconds * NQ_REF_NODES_PER_SEC;
  return 0;
}

/* ---- guards ---- */

uint64_t nq_plan_node_bound(const nq_unit_t *u) {
  nq_unit_state_t st;
  if (nq_unit_state(u, &st)) return UINT64_MAX;
  /* Rows k >= d: a node there has every prefix queen's attacks (shifted down k-d rows) and
   * more, the row's BOUND1 rule (which depends on k only), and k distinct columns taken, so at
   * most min(popcount(cells free of the prefix and the rule), N - k) children. The side part's
   * BOUND2 rule only removes children, so it is left out. 32 rows of at most 32 children is at
   * most 32 * 32! < 2^128, so the 128-bit sum cannot wrap. */
  const uint32_t forbid = u->part == NQ_PART_SIDE ? st.sidemask : 2u;
  unsigned __int128 sum = 0, prod = 1;
  for (int y = u->depth; y <= u->n - 1 && prod; y++) {
    sum += prod;
    if (y == u->n - 1) break;
    int k = y - u->depth;
    uint32_t cells = st.mask & ~(st.down | (st.left << k) | (st.right >> k));
    if (y < st.bound1) cells &= ~forbid;
    unsigned f = (unsigned)__builtin_popcount(cells), cols = (unsigned)(u->n - y);
    prod *= f < cols ? f : cols;
  }
  return sum > UINT64_MAX ? UINT64_MAX : (uint64_t)sum;
}

typedef struct biggest_s {
  uint64_t seed;
  nq_unit_t u;
  double nodes;
  int found;
} biggest_t;

static int biggest_cb(const nq_unit_t *c, void *arg) {
  biggest_t *b = arg;
  nq_est_t e;
  int rc = nq_estimate_unit(c, b->seed, NQ_PLAN_DEFAULT_PROBES * 4, &e);
  if (rc) return rc;
  if (!b->found || e.nodes > b->nodes) {
    b->u = *c;
    b->nodes = e.nodes;
    b->found = 1;
  }
  return 0;
}

static int margin_ok(double est_nodes) {
  return est_nodes * NQ_PLAN_MARGIN <= (double)NQ_PLAN_LIMIT;
}

/* The depth at which the largest sub-unit below u (following, row by row, the child with the
 * largest estimate) has an estimate the margin accepts; N-1 at most. */
static int safe_depth(const nq_unit_t *u, double est_nodes, uint64_t seed) {
  nq_unit_t cur = *u;
  while (!margin_ok(est_nodes) && cur.depth + 1 <= cur.n - 1) {
    biggest_t b = {seed, cur, 0, 0};
    if (nq_unit_children(&cur, biggest_cb, &b) || !b.found) break;
    cur = b.u;
    est_nodes = b.nodes;
  }
  return cur.depth;
}

/* nq_plan_check_unit; *looked is set when the guard had to estimate the unit itself. */
static int check_unit(const nq_unit_t *u, double est_nodes, uint64_t seed, char *errbuf,
                      size_t errlen, int *looked) {
  char text[NQ_UNIT_TEXT_MAX];
  int rc = nq_unit_validate(u, errbuf, errlen);
  *looked = 0;
  if (rc) return rc;
  /* The caller's estimate may rest on a few probes, and 8 probes have been seen 1,400 times
   * below the truth: it only vouches for a unit with a margin of 1e5. */
  if (est_nodes * NQ_PLAN_MARGIN_FAST <= (double)NQ_PLAN_LIMIT ||
      nq_plan_node_bound(u) <= (uint64_t)NQ_PLAN_LIMIT)
    return 0;
  nq_est_t e;
  *looked = 1;
  if ((rc = nq_estimate_unit(u, seed ^ 0x6775617264ull /* "guard" */, NQ_PLAN_GUARD_PROBES,
                             &e)) != 0)
    return rc;
  if (margin_ok(e.nodes)) return 0;
  int depth = safe_depth(u, e.nodes, seed);
  nq_unit_format(u, text, sizeof text);
  return nq_errorf(
      errbuf, errlen, NQ_EOVERFLOW,
      "unit %s is too big for 64-bit counts: about %.3g nodes, and the guard needs "
      "estimate x %.0f <= 2^63-1; its largest part fits from depth %d: use a depth of at "
      "least %d (or --unit-seconds at most %.0f with --max-depth at least %d)",
      text, e.nodes, NQ_PLAN_MARGIN, depth, depth,
      floor((double)NQ_PLAN_LIMIT / NQ_PLAN_MARGIN / NQ_REF_NODES_PER_SEC), depth);
}

int nq_plan_check_unit(const nq_unit_t *u, double est_nodes, uint64_t seed, char *errbuf,
                       size_t errlen) {
  int looked;
  return check_unit(u, est_nodes, seed, errbuf, errlen, &looked);
}

int nq_plan_check_result(const nq_unit_t *u, const nq_counts_t *c, char *errbuf,
                         size_t errlen) {
  char text[NQ_UNIT_TEXT_MAX];
  int rc = nq_unit_validate(u, errbuf, errlen);
  if (rc) return rc;
  nq_unit_format(u, text, sizeof text);
  uint64_t bound = nq_plan_node_bound(u);
  if (bound > (uint64_t)NQ_PLAN_LIMIT) bound = (uint64_t)NQ_PLAN_LIMIT;
  if (c->nodes < 1 || c->nodes > bound)
    return nq_errorf(errbuf, errlen, NQ_ERANGE, "result for unit %s: %llu nodes, outside 1..%llu",
                     text, (unsigned long long)c->nodes, (unsigned long long)bound);
  unsigned __int128 sols = (unsigned __int128)c->c2 + c->c4 + c->c8;
  if (sols > c->nodes)
    return nq_errorf(errbuf, errlen, NQ_ERANGE, "result for unit %s: more solutions than nodes",
                     text);
  if (u->part == NQ_PART_CORNER && (c->c2 || c->c4))
    return nq_errorf(errbuf, errlen, NQ_ERANGE,
                     "result for unit %s: the corner part only counts COUNT8, not COUNT2/COUNT4",
                     text);
  if (c->count1)
    return nq_errorf(errbuf, errlen, NQ_ERANGE, "result for unit %s: COUNT1 is only for N=1", text);
  return 0;
}

/* ---- plans ---- */

typedef struct planrun_s {
  const nq_plan_opts_t *o;
  int start;         /* o->start_depth, or the automatic one */
  unsigned probes;      /* for a split decision */
  unsigned unit_probes; /* for a unit's own estimate */
  nq_plan_cb cb;
  void *arg;
  nq_plan_summary_t *sum;
  nq_est_dist_t *dist;
  double var;
  double cb_seconds; /* time spent in the callback, left out of the plan's own time */
  char *errbuf;
  size_t errlen;
} planrun_t;

static int plan_node(const nq_unit_t *u, void *arg);

static int plan_split(planrun_t *p, const nq_unit_t *u) {
  p->sum->internal++;
  return nq_unit_children(u, plan_node, p);
}

static int plan_emit(planrun_t *p, const nq_unit_t *u, const nq_est_t *e) {
  nq_plan_summary_t *s = p->sum;
  int looked, rc = check_unit(u, e->nodes, p->o->seed, p->errbuf, p->errlen, &looked);
  s->guard_looks += (uint64_t)looked;
  if (rc) return rc;
  if (p->o->max_units && s->units >= p->o->max_units)
    return nq_errorf(p->errbuf, p->errlen, NQ_ERANGE,
                     "the plan has more than %llu units: use a larger unit size or a smaller "
                     "max depth",
                     (unsigned long long)p->o->max_units);
  if (p->o->target_nodes > 0 && u->depth == p->o->max_depth && e->nodes > p->o->target_nodes)
    s->over_target++;
  double ratio = p->o->split_outliers > 0 ? p->o->split_outliers : NQ_PLAN_OUTLIER_RATIO;
  if (p->o->target_nodes > 0 && u->depth < p->o->max_depth &&
      e->nodes > ratio * p->o->target_nodes) {
    s->outliers++;
    if (e->nodes > s->outlier_max) {
      s->outlier_max = e->nodes;
      nq_unit_format(u, s->outlier_max_text, sizeof s->outlier_max_text);
    }
  }
  if (!s->units || e->nodes > s->unit.max) {
    s->unit.max = e->nodes;
    nq_unit_format(u, s->unit_max_text, sizeof s->unit_max_text);
  }
  nq_est_dist_add(p->dist, e->nodes);
  p->var += e->se * e->se;
  s->by_depth[u->depth]++;
  nq_plan_unit_t pu = {*u, s->units++, e->nodes, e->se};
  if (!p->cb) return 0;
  double t0 = nq_now_mono();
  rc = p->cb(&pu, p->arg);
  p->cb_seconds += nq_now_mono() - t0;
  return rc;
}

/* Estimate u for the plan, from the stream of `seed`. */
static int plan_estimate(planrun_t *p, const nq_unit_t *u, uint64_t seed, unsigned probes,
                         nq_est_t *e) {
  int rc = nq_estimate_unit(u, seed, probes, e);
  if (rc) return rc;
  p->sum->probes += e->probes;
  return 0;
}

/* split_outliers (plan.h): a node the decision keeps is looked at again, and once more with the
 * guard's probes when the look finds it far above the target. *split is set when it was split
 * (and its children visited); returns 0 or the first error. Outliers are the skewed estimator's
 * low draws at the decision: rare, large, and what a volunteer would hold for weeks. */
static int plan_outlier(planrun_t *p, const nq_unit_t *u, int *split) {
  nq_est_t e;
  *split = 0;
  int rc = plan_estimate(p, u, p->o->seed ^ 0x6c6f6f6bull /* "look" */, p->unit_probes, &e);
  if (rc || e.nodes <= p->o->split_outliers * p->o->target_nodes) return rc;
  p->sum->outlier_looks++;
  rc = plan_estimate(p, u, p->o->seed ^ 0x6f75746c6965ull /* "outlie" */, NQ_PLAN_GUARD_PROBES,
                     &e);
  if (rc || e.nodes <= p->o->target_nodes) return rc;
  p->sum->outlier_splits++;
  *split = 1;
  return plan_split(p, u);
}

/* Visit one node of the tree (see plan.h): split it or make it a unit. Recursion through
 * nq_unit_children is at most N deep.
 *
 * A unit's estimate comes from probes of its own, independent of the probes that decided not to
 * split it. Reusing those would bias the plan low: Knuth's estimates are skewed (most fall below
 * the mean, a few far above), and "keep it when the estimate is low, split it when high" keeps
 * exactly the low draws. Measured at N=27, S=3600: the kept draws summed to 4.41e18 against
 * 5.6e18 (docs/planning.md). A node at max_depth cannot be split: one estimate does. */
static int plan_node(const nq_unit_t *u, void *arg) {
  planrun_t *p = arg;
  if (u->depth < p->start) return plan_split(p, u);
  nq_est_t e;
  int rc;
  p->sum->estimated++;
  if (u->depth < p->o->max_depth) {
    if ((rc = plan_estimate(p, u, p->o->seed, p->probes, &e)) != 0) return rc;
    if (e.nodes > p->o->target_nodes) return plan_split(p, u);
    int split = 0;
    if (p->o->split_outliers > 0 && ((rc = plan_outlier(p, u, &split)) != 0 || split)) return rc;
  }
  if ((rc = plan_estimate(p, u, p->o->seed ^ 0x756e6974ull /* "unit" */, p->unit_probes, &e)))
    return rc;
  return plan_emit(p, u, &e);
}

#define AUTO_START_RATIO 16.0    /* see auto_start */
#define AUTO_START_MAX_COUNT 5e7 /* nodes a depth may have for auto_start to count them */

/* The automatic start depth: the shallowest depth (up to max_depth) whose nodes are on average
 * at most AUTO_START_RATIO times the target, by a whole-N estimate (NQ_EST_DEFAULT_BUDGET probes)
 * and the exact number of nodes at each depth. Above it every node is split without an estimate.
 * Why: the nodes far above the target are the ones a few probes can misjudge worst (a depth-2
 * unit of N=27 was kept as 2 hours and is about 15 days: docs/planning.md), and there are
 * few of them, so splitting them all costs almost nothing. */
static int auto_start(const nq_plan_opts_t *o, int *start) {
  *start = o->max_depth;
  if (o->target_nodes <= 0) return 0;
  nq_est_opts_t eo = {o->n, 2, o->seed, 0, 0, 0};
  nq_est_report_t r;
  int rc = nq_estimate_n(&eo, &r);
  if (rc) return rc;
  for (int d = 2; d < o->max_depth; d++) {
    uint64_t count;
    if ((rc = nq_units_count(o->n, d, &count)) != 0) return rc;
    if ((double)count > AUTO_START_MAX_COUNT ||
        (count && r.nodes / (double)count <= AUTO_START_RATIO * o->target_nodes)) {
      *start = d;
      break;
    }
  }
  return 0;
}

static int plan_opts_check(const nq_plan_opts_t *o, char *errbuf, size_t errlen) {
  int rc = nq_unit_depth_check(o->n, o->start_depth ? o->start_depth : 2, errbuf, errlen);
  if (rc) return rc;
  int lo = o->start_depth ? o->start_depth : 2;
  if (o->max_depth < lo || o->max_depth > o->n - 1)
    return nq_errorf(errbuf, errlen, NQ_ERANGE,
                     "max depth %d is out of range for N=%d and start depth %d: must be %d..%d",
                     o->max_depth, o->n, lo, lo, o->n - 1);
  if (!(o->target_nodes >= 0 && o->target_nodes < INFINITY))
    return nq_errorf(errbuf, errlen, NQ_ERANGE, "target %g nodes: must be a finite number >= 0",
                     o->target_nodes);
  if (!(o->split_outliers == 0 || (o->split_outliers >= 1 && o->split_outliers <= 1e6)))
    return nq_errorf(errbuf, errlen, NQ_ERANGE,
                     "split outliers at %g x the target: must be 1..1000000 (or 0: off)",
                     o->split_outliers);
  if (o->probes > NQ_EST_MAX_PROBES || o->unit_probes > NQ_EST_MAX_PROBES)
    return nq_errorf(errbuf, errlen, NQ_ERANGE, "%u probes per estimate: at most %u",
                     o->probes > o->unit_probes ? o->probes : o->unit_probes, NQ_EST_MAX_PROBES);
  return 0;
}

int nq_plan_run(const nq_plan_opts_t *o, nq_plan_cb cb, void *arg, nq_plan_summary_t *summary,
                char *errbuf, size_t errlen) {
  nq_plan_summary_t local;
  nq_plan_summary_t *s = summary ? summary : &local;
  memset(s, 0, sizeof *s);
  if (errbuf && errlen) errbuf[0] = '\0';
  int rc = plan_opts_check(o, errbuf, errlen);
  if (rc) return rc;
  planrun_t p = {o, o->start_depth, o->probes ? o->probes : NQ_PLAN_DEFAULT_PROBES,
                 o->unit_probes ? o->unit_probes : NQ_PLAN_DEFAULT_UNIT_PROBES, cb, arg, s,
                 nq_est_dist_new(0), 0.0, 0.0, errbuf, errlen};
  if (!p.dist) return NQ_ENOMEM;
  double t0 = nq_now_mono();
  if (!p.start) rc = auto_start(o, &p.start);
  s->start_depth = p.start;
  if (!rc) rc = nq_units_generate(o->n, 2, plan_node, &p);
  nq_est_dist_spread(p.dist, &s->unit);
  s->est_nodes = (double)s->internal + s->unit.sum;
  s->est_se = sqrt(p.var);
  s->seconds = nq_now_mono() - t0 - p.cb_seconds;
  nq_est_dist_free(p.dist);
  if (rc && errbuf && errlen && !errbuf[0])
    nq_errorf(errbuf, errlen, rc, "plan: %s", nq_strerror(rc));
  return rc;
}
