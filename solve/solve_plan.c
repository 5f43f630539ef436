/* nq-solve's planning modes: --estimate (the cost of N and of its units) and --plan /
 * --unit-seconds (units sized to a target). See docs/planning.md. */
#include "nq/estimate.h"
#include "nq/nq.h"
#include "nq/plan.h"
#include "nq/solver.h"
#include "solve.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void json_print(json_t *o) {
  char *s = json_dumps(o, JSON_COMPACT);
  if (s) puts(s);
  free(s);
  json_decref(o);
}

static json_t *spread_json(const nq_est_spread_t *s) {
  return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f}", "count", (json_int_t)s->count, "min",
                   s->min, "p10", s->p10, "median", s->median, "p90", s->p90, "max", s->max,
                   "mean", s->mean);
}

/* "1.2 s", "3.5 min", "2 h", "12 days", "178 years": a duration for people. */
static const char *dur_str(double s, char *buf, size_t len) {
  if (s < 120)
    snprintf(buf, len, "%.3g s", s);
  else if (s < 2 * 3600)
    snprintf(buf, len, "%.3g min", s / 60);
  else if (s < 3 * 86400)
    snprintf(buf, len, "%.3g h", s / 3600);
  else if (s < 2 * 31557600)
    snprintf(buf, len, "%.3g days", s / 86400);
  else
    snprintf(buf, len, "%.3g years", s / 31557600);
  return buf;
}

/* "1.23e+09 (1.23 s)": nodes and their time on the reference core. */
static const char *nodes_str(double nodes, char *buf, size_t len) {
  char d[32];
  snprintf(buf, len, "%.3g (%s)", nodes, dur_str(nodes / NQ_REF_NODES_PER_SEC, d, sizeof d));
  return buf;
}

static void print_spread(const char *what, const nq_est_spread_t *s) {
  char a[64], b[64], c[64], d[64], e[64];
  printf("%s min %s, p10 %s, median %s, p90 %s, max %s\n", what, nodes_str(s->min, a, sizeof a),
         nodes_str(s->p10, b, sizeof b), nodes_str(s->median, c, sizeof c),
         nodes_str(s->p90, d, sizeof d), nodes_str(s->max, e, sizeof e));
  printf("spread       max/median %.3g, p90/p10 %.3g\n", s->max / s->median, s->p90 / s->p10);
}

static json_t *fleet_json(const solve_cfg_t *cfg, const nq_fleet_t *f, const char *spec,
                          double est, double largest);
static void fleet_print(const nq_fleet_t *f, double est, double largest);

/* The fleet --estimate prices: --fleet, or else machines like this one (its fast kernel at the
 * calibrated rate) with the server's quorum, spot checks and kernel rule for N. 0 when neither
 * is known. */
static int estimate_fleet(const solve_cfg_t *cfg, const nq_est_report_t *r, nq_fleet_t *f,
                          char *spec, size_t len) {
  if (cfg->fleet_spec) {
    *f = cfg->fleet;
    snprintf(spec, len, "%s", cfg->fleet_spec);
    return 1;
  }
  if (r->calib.rate <= 0) return 0;
  snprintf(spec, len, "%s=1@%.6g", nq_fast_kernel_in_use(), r->calib.rate);
  char err[300];
  if (nq_fleet_parse(spec, f, err, sizeof err)) return 0;
  f->kernels = cfg->fleet.kernels;
  return 1;
}

static void estimate_json(const solve_cfg_t *cfg, const nq_est_report_t *r) {
  json_t *o = json_pack(
      "{s:i, s:i, s:I, s:i, s:I, s:I, s:f, s:f, s:f, s:o, s:s, s:f, s:f, s:I, s:f}", "n", r->n,
      "depth", r->depth, "seed", (json_int_t)r->seed, "probes_per_unit", (int)r->probes, "units",
      (json_int_t)r->units, "internal_nodes", (json_int_t)r->internal, "nodes", r->nodes, "se",
      r->se, "bound", 3 * r->se, "unit", spread_json(&r->unit), "unit_max_text",
      r->unit_max_text, "unit_rel_se_median", r->rel_se.median, "seconds", r->seconds,
      "probes", (json_int_t)r->total_probes, "ref_core_seconds",
      r->nodes / NQ_REF_NODES_PER_SEC);
  if (r->calib.rate > 0) {
    json_object_set_new(o, "core_seconds", json_real(r->nodes / r->calib.rate));
    json_object_set_new(o, "calibration",
                        json_pack("{s:f, s:f, s:I, s:i, s:s}", "rate", r->calib.rate, "seconds",
                                  r->calib.seconds, "nodes", (json_int_t)r->calib.nodes,
                                  "subunits", (int)r->calib.subunits, "kernel",
                                  nq_fast_kernel_in_use()));
  }
  nq_fleet_t f;
  char spec[128];
  if (estimate_fleet(cfg, r, &f, spec, sizeof spec))
    json_object_set_new(o, "fleet", fleet_json(cfg, &f, spec, r->nodes, r->unit.max));
  json_print(o);
}

int solve_estimate(const solve_cfg_t *cfg) {
  nq_est_opts_t o = {cfg->n, solve_depth(cfg), cfg->seed, cfg->effort, 0,
                     cfg->calib_seconds};
  nq_est_report_t r;
  if (cfg->calib_seconds < 0) o.calib_seconds = 0; /* automatic: after the estimate */
  int rc = nq_estimate_n(&o, &r);
  if (!rc && cfg->calib_seconds < 0) {
    /* 0.5% of what counting N would take at the reference rate, within 2..20 ms: the whole
     * command stays near 1% of the exact count's time, and big N get the steadier figure. */
    double secs = 0.005 * r.nodes / NQ_REF_NODES_PER_SEC;
    secs = secs < 0.002 ? 0.002 : secs > 0.02 ? 0.02 : secs;
    rc = nq_calibrate(o.n, o.seed, secs, &r.calib);
  }
  if (rc) {
    fprintf(stderr, "nq-solve: estimate: %s\n", nq_strerror(rc));
    return 1;
  }
  if (cfg->json) {
    estimate_json(cfg, &r);
    return 0;
  }
  char a[64];
  printf("N            %d (estimate, seed %llu)\n", r.n, (unsigned long long)r.seed);
  printf("nodes        %.4g +- %.2g (standard error %.2f%%; bound +-%.2f%% = 3 SE)\n", r.nodes,
         r.se, 100 * r.se / r.nodes, 300 * r.se / r.nodes);
  printf("ref-core     %s of one reference core (%.0f nodes/s)\n",
         dur_str(r.nodes / NQ_REF_NODES_PER_SEC, a, sizeof a), NQ_REF_NODES_PER_SEC);
  if (r.calib.rate > 0)
    printf("this machine %.4g core-seconds = %s (%s kernel, %.3g nodes/s over %u sub-units, "
           "%.3f s)\n", r.nodes / r.calib.rate, dur_str(r.nodes / r.calib.rate, a, sizeof a),
           nq_fast_kernel_in_use(), r.calib.rate, r.calib.subunits, r.calib.seconds);
  printf("effort       %u probes per unit, %llu probes, %.4f s\n", r.probes,
         (unsigned long long)r.total_probes, r.seconds);
  printf("depth %-6d %llu units, %llu nodes above them (exact)\n", r.depth,
         (unsigned long long)r.units, (unsigned long long)r.internal);
  printf("units total  %s\n", nodes_str(r.unit.sum, a, sizeof a));
  print_spread("units       ", &r.unit);
  printf("largest      %s\n", r.unit_max_text);
  printf("unit noise   median relative SE of one unit's estimate %.1f%%\n", 100 * r.rel_se.median);
  nq_fleet_t f;
  char spec[128];
  if (estimate_fleet(cfg, &r, &f, spec, sizeof spec)) {
    if (!cfg->fleet_spec)
      printf("job          as nq-server would run N on machines like this one (--fleet %s):\n",
             spec);
    fleet_print(&f, r.nodes, r.unit.max);
  }
  return 0;
}

/* ---- plans ---- */

/* What --list-units and --verify do with each unit of a plan. */
typedef struct planout_s {
  const solve_cfg_t *cfg;
  nq_totals_t sum;          /* --verify: the exact counts of the units */
  nq_est_dist_t *ratio;     /* --verify: exact nodes / estimate, per unit */
  nq_est_dist_t *size;      /* --verify: exact nodes / target, per unit */
  double target;
  uint64_t refused;         /* --verify: results nq_plan_check_result refused (must be 0) */
  uint64_t over[3];         /* --audit: audited units above 2x, 4x, 8x the target */
} planout_t;

#define AUDIT_PROBES 4096

/* --audit K: every K-th unit estimated again, with AUDIT_PROBES probes from another stream: a
 * far steadier figure to hold the unit's size and its plan estimate to, for N too big to solve. */
static int plan_audit_unit(planout_t *po, const nq_plan_unit_t *pu) {
  nq_est_t e;
  int rc = nq_estimate_unit(&pu->unit, po->cfg->seed ^ 0x6175646974ull /* "audit" */,
                            AUDIT_PROBES, &e);
  if (rc) return rc;
  nq_est_dist_add(po->ratio, e.nodes / pu->est_nodes);
  if (po->target > 0) {
    nq_est_dist_add(po->size, e.nodes / po->target);
    for (int i = 0; i < 3; i++) po->over[i] += e.nodes > po->target * (double)(2 << i);
  }
  return 0;
}

static int plan_unit_cb(const nq_plan_unit_t *pu, void *arg) {
  planout_t *po = arg;
  char text[NQ_UNIT_TEXT_MAX];
  nq_unit_format(&pu->unit, text, sizeof text);
  if (po->cfg->list) {
    if (po->cfg->json)
      printf("{\"unit\":\"%s\",\"depth\":%d,\"est_nodes\":%.6g,\"est_se\":%.3g}\n", text,
             pu->unit.depth, pu->est_nodes, pu->est_se);
    else
      printf("%s\t%.6g\n", text, pu->est_nodes);
  }
  if (po->cfg->audit && pu->index % po->cfg->audit == 0) return plan_audit_unit(po, pu);
  if (!po->cfg->verify) return 0;
  nq_solve_opts_t so = {po->cfg->threads, NULL, NULL, NULL, NULL, NULL, 0};
  nq_counts_t c;
  int rc = nq_solve_unit(&pu->unit, &so, &c);
  if (rc) return rc;
  char err[300];
  if (nq_plan_check_result(&pu->unit, &c, err, sizeof err)) {
    fprintf(stderr, "nq-solve: %s\n", err);
    po->refused++;
  }
  nq_totals_add(&po->sum, &c);
  nq_est_dist_add(po->ratio, (double)c.nodes / pu->est_nodes);
  if (po->target > 0) nq_est_dist_add(po->size, (double)c.nodes / po->target);
  return 0;
}

/* --verify: solve N whole and hold the plan's units (plus its split nodes) to it. */
static int plan_verify(const solve_cfg_t *cfg, const nq_plan_summary_t *s, planout_t *po) {
  nq_solve_opts_t so = {cfg->threads, NULL, NULL, NULL, NULL, NULL, 0};
  nq_counts_t whole;
  int rc = nq_solve_n(cfg->n, 2, &so, &whole);
  if (rc) {
    fprintf(stderr, "nq-solve: %s\n", nq_strerror(rc));
    return 1;
  }
  nq_u128 nodes = po->sum.nodes + s->internal;
  int same = po->sum.c2 == whole.c2 && po->sum.c4 == whole.c4 && po->sum.c8 == whole.c8 &&
             nodes == whole.nodes && !po->refused;
  nq_est_spread_t r, z;
  nq_est_dist_spread(po->ratio, &r);
  nq_est_dist_spread(po->size, &z);
  char a[40];
  if (cfg->json) {
    json_print(json_pack("{s:b, s:s, s:I, s:o, s:o}", "exact", same, "nodes",
                         nq_u128_str(nodes, a), "whole_nodes", (json_int_t)whole.nodes,
                         "exact_over_estimate", spread_json(&r), "exact_over_target",
                         spread_json(&z)));
  } else {
    printf("verify       %s: units %s nodes + %llu split nodes vs nq-solve %llu; counts %s\n",
           same ? "EXACT" : "MISMATCH", nq_u128_str(po->sum.nodes, a),
           (unsigned long long)s->internal, (unsigned long long)whole.nodes,
           po->sum.c2 == whole.c2 && po->sum.c4 == whole.c4 && po->sum.c8 == whole.c8
               ? "equal" : "DIFFERENT");
    printf("exact/est    p10 %.3g, median %.3g, p90 %.3g, min %.3g, max %.3g\n", r.p10,
           r.median, r.p90, r.min, r.max);
    printf("exact/target p10 %.3g, median %.3g, p90 %.3g, max %.3g\n", z.p10, z.median, z.p90,
           z.max);
  }
  return same ? 0 : 1;
}

/* The outliers (units far above the target that could be split) and the setting that splits
 * them; units the depth cap made are the "over target" line's, with --max-depth. */
static void outliers_print(const nq_plan_opts_t *o, const nq_plan_summary_t *s) {
  char a[64];
  double ratio = o->split_outliers > 0 ? o->split_outliers : NQ_PLAN_OUTLIER_RATIO;
  if (o->split_outliers > 0)
    printf("outliers     %llu units looked at again (%d probes), %llu of them split\n",
           (unsigned long long)s->outlier_looks, NQ_PLAN_GUARD_PROBES,
           (unsigned long long)s->outlier_splits);
  if (s->outliers)
    printf("warning      %llu units are estimated above %gx the target, the largest %s at "
           "%.3g nodes (%s of a reference core, %.0fx the target); %s\n",
           (unsigned long long)s->outliers, ratio, s->outlier_max_text, s->outlier_max,
           dur_str(s->outlier_max / NQ_REF_NODES_PER_SEC, a, sizeof a),
           s->outlier_max / o->target_nodes,
           o->split_outliers > 0
               ? "the looks of --split-outliers kept them (a second look at most Kx the "
                 "target, or 256 probes at most the target): their own figures are likely "
                 "high draws"
               : "nq-server and nq-admin job add plan without a second look (they take "
                 "--unit-seconds, not --split-outliers): a smaller --unit-seconds makes the "
                 "largest units smaller, and the clients' progress reports carry the long ones; "
                 "here --split-outliers 4 shows what a second look with 256 probes would split");
}

/* --fleet: a job of est nodes, its largest unit `largest`, in calendar time. */
static json_t *fleet_json(const solve_cfg_t *cfg, const nq_fleet_t *f, const char *spec,
                          double est, double largest) {
  nq_fleet_cal_t c;
  nq_fleet_calendar(f, est, largest, &c);
  const char *slow_kernel;
  double slow = nq_fleet_slowest(f, &slow_kernel);
  json_t *by = json_object();
  for (int i = 0; i < c.nkernels; i++)
    json_object_set_new(by, c.kernel[i], json_real(c.kernel_share[i]));
  json_t *o = json_pack("{s:s, s:f, s:i, s:f, s:f, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f,"
                        " s:o}", "spec", spec, "rate", c.rate, "quorum", f->quorum, "spot",
                        f->spot, "duty", f->duty, "diverse_kernels", f->kernels, "replicas",
                        c.replicas, "nodes", c.nodes, "ref_core_years", c.ref_core_years,
                        "core_seconds", c.core_seconds, "own_kernel_core_seconds",
                        c.own_core_seconds, "bulk_seconds", c.bulk_seconds, "tail_seconds",
                        c.tail_seconds, "calendar_seconds", c.seconds, "replicas_by_kernel", by);
  if (o && slow > 0)
    json_object_set_new(o, "largest_unit_seconds_slowest", json_real(largest / slow));
  (void)cfg;
  return o;
}

static void fleet_print(const nq_fleet_t *f, double est, double largest) {
  nq_fleet_cal_t c;
  nq_fleet_calendar(f, est, largest, &c);
  char a[64], b[64], d[64];
  printf("fleet        ");
  for (int i = 0; i < f->nparts; i++)
    if (f->part[i].count > 0)
      printf("%s%.0f %s at %.3g", i ? ", " : "", f->part[i].count, f->part[i].kernel,
             f->part[i].rate);
    else
      printf("%s%s named at %.3g", i ? ", " : "", f->part[i].kernel, f->part[i].rate);
  if (f->extra_rate > 0) printf("%srate %.3g", f->nparts ? ", " : "", f->extra_rate);
  printf(" = %.3g nodes/s, computing %.3g%% of the time\n", c.rate, 100 * f->duty);
  printf("replicas     %.3g results a unit (quorum %d + %.3g spot checks): %.4g nodes\n",
         c.replicas, f->quorum, f->spot, c.nodes);
  printf("kernels      --diverse-kernels %d%s: replicas run", f->kernels,
         f->kernels >= 2 ? " (each replica named the kernel its unit lacks)" : " (off)");
  for (int i = 0; i < c.nkernels; i++)
    printf("%s %s %.3g%%", i ? "," : "", c.kernel[i], 100 * c.kernel_share[i]);
  printf("; %.3gx the core-seconds of every replica on its machine's own kernel\n",
         c.core_seconds / c.own_core_seconds);
  printf("core-seconds %.4g of the fleet's cores (%s of one core)\n", c.core_seconds,
         dur_str(c.core_seconds, a, sizeof a));
  printf("core-years   %.4g reference core-years in all (%.4g for one replica)\n",
         c.ref_core_years, c.ref_core_years / c.replicas);
  printf("calendar     %s for this fleet (the work %s, the tail %s: the last unit reissued to a "
         "fast core after %d s)\n", dur_str(c.seconds, a, sizeof a),
         dur_str(c.bulk_seconds, b, sizeof b), dur_str(c.tail_seconds, d, sizeof d),
         NQ_FLEET_TAIL_AFTER_S);
  const char *k;
  double slow = nq_fleet_slowest(f, &k);
  if (slow > 0)
    printf("largest unit %s on one %s core or device (the fleet's slowest)\n",
           dur_str(largest / slow, a, sizeof a), k);
}

static void plan_print(const nq_plan_opts_t *o, const nq_plan_summary_t *s,
                       const solve_cfg_t *cfg) {
  if (cfg->json) {
    json_t *d = json_object();
    for (int i = 2; i <= o->n - 1; i++) {
      char k[16]; /* room for any int */
      snprintf(k, sizeof k, "%d", i);
      if (s->by_depth[i]) json_object_set_new(d, k, json_integer((json_int_t)s->by_depth[i]));
    }
    json_print(json_pack(
        "{s:i, s:f, s:i, s:i, s:I, s:i, s:i, s:I, s:o, s:I, s:f, s:f, s:o, s:s, s:I, s:I, s:I,"
        " s:f, s:I, s:I, s:I, s:I, s:o}",
        "n", o->n, "target_nodes", o->target_nodes, "start_depth", s->start_depth, "max_depth",
        o->max_depth, "seed", (json_int_t)o->seed, "decision_probes",
        (int)(o->probes ? o->probes : NQ_PLAN_DEFAULT_PROBES), "unit_probes",
        (int)(o->unit_probes ? o->unit_probes : NQ_PLAN_DEFAULT_UNIT_PROBES), "units",
        (json_int_t)s->units,
        "units_by_depth", d, "internal_nodes", (json_int_t)s->internal, "est_nodes",
        s->est_nodes, "est_se", s->est_se, "unit", spread_json(&s->unit), "unit_max_text",
        s->unit_max_text, "over_target", (json_int_t)s->over_target, "estimated",
        (json_int_t)s->estimated, "probes", (json_int_t)s->probes, "seconds", s->seconds,
        "guard_looks", (json_int_t)s->guard_looks, "outliers", (json_int_t)s->outliers,
        "outlier_looks", (json_int_t)s->outlier_looks, "outlier_splits",
        (json_int_t)s->outlier_splits, "fleet",
        cfg->fleet_spec ? fleet_json(cfg, &cfg->fleet, cfg->fleet_spec, s->est_nodes,
                                     s->unit.max)
                        : json_null()));
    return;
  }
  char a[64];
  printf("N            %d (plan, seed %llu)\n", o->n, (unsigned long long)o->seed);
  printf("target       %s per unit, depths %d..%d\n", nodes_str(o->target_nodes, a, sizeof a),
         s->start_depth, o->max_depth);
  printf("units        %llu:", (unsigned long long)s->units);
  for (int i = 2; i <= o->n - 1; i++)
    if (s->by_depth[i]) printf(" %llu at depth %d,", (unsigned long long)s->by_depth[i], i);
  printf(" and %llu split nodes above them\n", (unsigned long long)s->internal);
  printf("nodes        %.4g +- %.2g (estimate; 3 SE = +-%.2f%%)\n", s->est_nodes, s->est_se,
         300 * s->est_se / s->est_nodes);
  print_spread("units       ", &s->unit);
  printf("largest      %s\n", s->unit_max_text);
  if (s->guard_looks)
    printf("guard        %llu units above 9.2e13 nodes estimated again (%d probes): all fit\n",
           (unsigned long long)s->guard_looks, NQ_PLAN_GUARD_PROBES);
  if (s->over_target)
    printf("over target  %llu units at --max-depth %d are above the target%s\n",
           (unsigned long long)s->over_target, o->max_depth,
           o->max_depth < o->n - 1 ? "; a deeper --max-depth splits them" : "");
  printf("cost         %.3f s: %llu nodes estimated, %llu probes, %.2f us per unit\n",
         s->seconds, (unsigned long long)s->estimated, (unsigned long long)s->probes,
         s->units ? 1e6 * s->seconds / (double)s->units : 0.0);
  if (cfg->fleet_spec) fleet_print(&cfg->fleet, s->est_nodes, s->unit.max);
  outliers_print(o, s);
}

/* --audit: the audited units against their plan estimates and the target. */
static int plan_audit(const solve_cfg_t *cfg, const planout_t *po) {
  nq_est_spread_t r, z;
  nq_est_dist_spread(po->ratio, &r);
  nq_est_dist_spread(po->size, &z);
  if (cfg->json) {
    json_print(json_pack("{s:I, s:I, s:o, s:o, s:I, s:I, s:I}", "audited", (json_int_t)r.count,
                         "audit_probes", (json_int_t)AUDIT_PROBES, "audit_over_estimate",
                         spread_json(&r), "audit_over_target", spread_json(&z), "over_2x",
                         (json_int_t)po->over[0], "over_4x", (json_int_t)po->over[1], "over_8x",
                         (json_int_t)po->over[2]));
    return 0;
  }
  printf("audit        %llu units (every %u-th) estimated again with %d probes\n",
         (unsigned long long)r.count, cfg->audit, AUDIT_PROBES);
  printf("audit/est    p10 %.3g, median %.3g, p90 %.3g, min %.3g, max %.3g\n", r.p10, r.median,
         r.p90, r.min, r.max);
  printf("audit/target p10 %.3g, median %.3g, p90 %.3g, max %.3g; above 2x %llu, 4x %llu, "
         "8x %llu\n", z.p10, z.median, z.p90, z.max, (unsigned long long)po->over[0],
         (unsigned long long)po->over[1], (unsigned long long)po->over[2]);
  return 0;
}

int solve_plan(const solve_cfg_t *cfg) {
  char err[400];
  nq_plan_opts_t o = {cfg->n, cfg->unit_nodes > 0 ? cfg->unit_nodes : 0, cfg->depth,
                      cfg->max_depth ? cfg->max_depth : cfg->n - 1, cfg->seed, cfg->effort,
                      cfg->max_units, cfg->unit_effort, cfg->split_outliers};
  if (cfg->unit_seconds > 0 &&
      nq_plan_seconds_to_nodes(cfg->unit_seconds, &o.target_nodes, err, sizeof err)) {
    fprintf(stderr, "nq-solve: %s\n", err);
    return 2;
  }
  planout_t po;
  memset(&po, 0, sizeof po);
  po.cfg = cfg;
  po.target = o.target_nodes;
  po.ratio = nq_est_dist_new(-6);
  po.size = nq_est_dist_new(-12);
  nq_plan_summary_t s;
  int rc = 1;
  if (!po.ratio || !po.size) goto out;
  nq_plan_cb cb = cfg->list || cfg->verify || cfg->audit ? plan_unit_cb : NULL;
  int prc = nq_plan_run(&o, cb, &po, &s, err, sizeof err);
  if (prc) {
    fprintf(stderr, "nq-solve: %s\n", err);
    rc = prc == NQ_ERANGE || prc == NQ_EOVERFLOW ? 2 : 1;
    goto out;
  }
  if (cfg->list)
    fprintf(stderr, "%llu units\n", (unsigned long long)s.units);
  else
    plan_print(&o, &s, cfg);
  rc = cfg->verify ? plan_verify(cfg, &s, &po) : cfg->audit ? plan_audit(cfg, &po) : 0;
out:
  nq_est_dist_free(po.size);
  nq_est_dist_free(po.ratio);
  return rc;
}
