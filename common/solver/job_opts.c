/* nq: the job options, declared once (nq/job_opts.h): nq-server's job and nq-admin job add. */
#include "nq/job_opts.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "nq/nq.h"
#include "nq/plan.h"
#include "nq/solver.h"
#include "nq/unit.h"

/* --unit-seconds: a number of seconds that the planner can turn into a unit's node count. */
static int set_unit_seconds(void *base, const nq_opt_t *opt, const char *v, char *err,
                            size_t errlen) {
  static const nq_opt_t num = {NQ_OPT_DOUBLE, "unit-seconds", .dlo = -1e300, .dhi = 1e300};
  struct { double s; } x;
  char why[200];
  double nodes;
  if (nq_opt_set(&num, &x, v, why, sizeof why) != 0) /* the whole string, finite */
    return nq_errorf(err, errlen, NQ_EINVAL, "expected a number of seconds, got '%s'", v);
  if (nq_plan_seconds_to_nodes(x.s, &nodes, why, sizeof why) != 0)
    return nq_errorf(err, errlen, NQ_ERANGE, "%s", why);
  ((nq_jobopts_t *)base)->unit_seconds = x.s;
  return 0;
}

#define JOB_INT(nm, field, a, l, h, d, flg, hlp)                                                \
  {NQ_OPT_INT, nm, .off = offsetof(nq_jobopts_t, field), .arg = a, .lo = l, .hi = h, .def = d,    \
   .flags = flg, .help = hlp}

/* In the order of the NQ_JOBOPT_* indexes. Depths are judged against N by nq_jobopts_check
 * (nq_unit_depth_check), never clamped: their bounds here only keep the number sane. */
const nq_opt_t nq_jobopts_table[NQ_JOBOPT_COUNT + 1] = {
    JOB_INT("n", n, "N", NQ_UNIT_MIN_N, NQ_MAX_N, NULL, 0, "board size: the job to make or resume"),
    {NQ_OPT_DOUBLE, "unit-seconds", .arg = "S", .set = set_unit_seconds, .flags = NQ_OPTF_NOFACTS,
     .help = "units sized to about S core-seconds of the reference core (1e9 nodes/s), mixed "
             "depths (default 7200: 2 hours)"},
    JOB_INT("max-depth", max_depth, "D", -1000, 1000, NULL, NQ_OPTF_NOFACTS,
            "with --unit-seconds: the deepest a unit may be (default N-1)"),
    JOB_INT("depth", depth, "D", -1000, 1000, NULL, NQ_OPTF_NOFACTS,
            "instead: every unit at prefix depth D (2..N-1) (an existing job is resumed as it "
            "was made; giving a different --depth or --unit-seconds is refused)"),
    JOB_INT("quorum", quorum, "Q", 1, NQ_JOBOPT_QUORUM_MAX, "2", 0,
            "agreeing results from distinct owners per unit"),
    JOB_INT("max-results", max_results, "M", 1, NQ_JOBOPT_MAX_RESULTS_MAX, "5", 0,
            "results without a quorum before a unit is disputed"),
    JOB_INT("diverse-kernels", diverse_kernels, "K", 0, NQ_JOBOPT_KERNELS_MAX, NULL,
            NQ_OPTF_NOFACTS,
            "a unit is verified only when its agreeing results came from K different kernels; "
            "assignments name the kernel to use (0 = off, ..8; default 2 for an N with no published "
            "count, 0 otherwise; an existing job keeps its own)"),
    {NQ_OPT_END}};

void nq_jobopts_default(nq_jobopts_t *o) {
  char err[200];
  memset(o, 0, sizeof *o);
  int rc = nq_opts_table_defaults(nq_jobopts_table, o, err, sizeof err);
  assert(rc == 0); /* the table's own defaults (test_opts checks them) */
  (void)rc;
  o->diverse_kernels = -1;
}

int nq_jobopts_kernels_default(int diverse_kernels, int n) {
  if (diverse_kernels >= 0) return diverse_kernels;
  return nq_known(n) ? 0 : 2;
}

int nq_jobopt_set(nq_jobopts_t *o, int key, const char *v, char *err, size_t errlen) {
  if (key < 0 || key >= NQ_JOBOPT_COUNT) return nq_errorf(err, errlen, NQ_EINVAL, "not a job option");
  return nq_opt_set(&nq_jobopts_table[key], o, v, err, errlen);
}

int nq_jobopts_check(const nq_jobopts_t *o, char *err, size_t errlen) {
  char why[200];
  if (o->n < NQ_UNIT_MIN_N || o->n > NQ_MAX_N)
    return nq_errorf(err, errlen, NQ_ERANGE, "N must be a board size %d..%d", NQ_UNIT_MIN_N,
                     NQ_MAX_N);
  if (o->quorum < 1 || o->quorum > NQ_JOBOPT_QUORUM_MAX || o->max_results < o->quorum ||
      o->max_results > NQ_JOBOPT_MAX_RESULTS_MAX)
    return nq_errorf(err, errlen, NQ_ERANGE, "--max-results must be >= --quorum (quorum 1..%d, "
                     "max-results ..%d)", NQ_JOBOPT_QUORUM_MAX, NQ_JOBOPT_MAX_RESULTS_MAX);
  if (o->depth != 0 && (o->unit_seconds > 0 || o->max_depth != 0))
    return nq_errorf(err, errlen, NQ_EINVAL, "--depth makes a flat job; it does not go with "
                     "--unit-seconds or --max-depth");
  if (o->unit_seconds < 0) return nq_errorf(err, errlen, NQ_ERANGE, "--unit-seconds below 0");
  if (o->diverse_kernels < -1 || o->diverse_kernels > NQ_JOBOPT_KERNELS_MAX)
    return nq_errorf(err, errlen, NQ_ERANGE, "--diverse-kernels must be 0..%d",
                     NQ_JOBOPT_KERNELS_MAX);
  if (o->depth != 0 && nq_unit_depth_check(o->n, o->depth, why, sizeof why) != 0)
    return nq_errorf(err, errlen, NQ_ERANGE, "%s", why);
  if (o->max_depth != 0 && nq_unit_depth_check(o->n, o->max_depth, why, sizeof why) != 0)
    return nq_errorf(err, errlen, NQ_ERANGE, "--max-depth: %s", why);
  return 0;
}

void nq_jobopts_usage(FILE *f, int with_n) {
  nq_opts_help_table(nq_jobopts_table + !with_n, NULL, f);
}
