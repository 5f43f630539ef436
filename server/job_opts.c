/* nq: the job options, declared once (nq/job_opts.h): nq-server's job and nq-admin job add. */
#include "nq/job_opts.h"

#include <stdlib.h>
#include <string.h>

#include "nq/nq.h"
#include "nq/plan.h"
#include "nq/unit.h"

typedef struct jobopt_s {
  int key;
  const char *name;
  const char *arg;  /* the value's name in --help */
  const char *help; /* its lines after the first are indented by the printer */
} jobopt_t;

static const jobopt_t defs[NQ_JOBOPT_COUNT] = {
    {NQ_JOBOPT_N, "n", "N", "board size (4..32): the job to make or resume"},
    {NQ_JOBOPT_UNIT_SECONDS, "unit-seconds", "S",
     "units sized to about S core-seconds of the reference core\n"
     "(1e9 nodes/s), mixed depths (default 7200: 2 hours)"},
    {NQ_JOBOPT_MAX_DEPTH, "max-depth", "D",
     "with --unit-seconds: the deepest a unit may be (default N-1)"},
    {NQ_JOBOPT_DEPTH, "depth", "D",
     "instead: every unit at prefix depth D (2..N-1)\n"
     "(an existing job is resumed as it was made; giving a\n"
     "different --depth or --unit-seconds is refused)"},
    {NQ_JOBOPT_QUORUM, "quorum", "Q",
     "agreeing results from distinct owners per unit (default 2)"},
    {NQ_JOBOPT_MAX_RESULTS, "max-results", "M",
     "results without a quorum before a unit is disputed (default 5)"},
    {NQ_JOBOPT_DIVERSE_KERNELS, "diverse-kernels", "K",
     "a unit is verified only when its agreeing results came\n"
     "from K different kernels; assignments name the kernel to use\n"
     "(0 = off, ..8; default 2 for an N with no published count,\n"
     "0 otherwise; an existing job keeps its own)"},
};

void nq_jobopts_default(nq_jobopts_t *o) {
  memset(o, 0, sizeof *o);
  o->quorum = NQ_JOBOPT_QUORUM_DEFAULT;
  o->max_results = NQ_JOBOPT_MAX_RESULTS_DEFAULT;
  o->diverse_kernels = -1;
}

void nq_jobopts_getopt(struct option *opts, int *n, int with_n) {
  for (int i = 0; i < NQ_JOBOPT_COUNT; i++) {
    if (!with_n && defs[i].key == NQ_JOBOPT_N) continue;
    opts[(*n)++] = (struct option){defs[i].name, required_argument, NULL, defs[i].key};
  }
}

int nq_jobopt_is(int key) {
  return key >= NQ_JOBOPT_N && key < NQ_JOBOPT_END;
}

static const char *opt_name(int key) {
  for (int i = 0; i < NQ_JOBOPT_COUNT; i++)
    if (defs[i].key == key) return defs[i].name;
  return "?";
}

/* A decimal integer in [min, max]. */
static int int_value(const char *v, long min, long max, int *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (!*v || *end || x < min || x > max) return NQ_ERANGE;
  *out = (int)x;
  return 0;
}

int nq_jobopt_set(nq_jobopts_t *o, int key, const char *v, char *err, size_t errlen) {
  const char *name = opt_name(key);
  long lo = 0, hi = 0;
  int *dst = NULL;
  switch (key) {
  case NQ_JOBOPT_N: lo = NQ_UNIT_MIN_N, hi = NQ_MAX_N, dst = &o->n; break;
  /* Depths are judged against N by nq_jobopts_check (nq_unit_depth_check), never clamped. */
  case NQ_JOBOPT_DEPTH: lo = -1000, hi = 1000, dst = &o->depth; break;
  case NQ_JOBOPT_MAX_DEPTH: lo = -1000, hi = 1000, dst = &o->max_depth; break;
  case NQ_JOBOPT_QUORUM: lo = 1, hi = NQ_JOBOPT_QUORUM_MAX, dst = &o->quorum; break;
  case NQ_JOBOPT_MAX_RESULTS: lo = 1, hi = NQ_JOBOPT_MAX_RESULTS_MAX, dst = &o->max_results; break;
  case NQ_JOBOPT_DIVERSE_KERNELS: lo = 0, hi = NQ_JOBOPT_KERNELS_MAX, dst = &o->diverse_kernels; break;
  case NQ_JOBOPT_UNIT_SECONDS: {
    char *end, why[200];
    double nodes, s = strtod(v, &end);
    if (!*v || *end)
      return nq_errorf(err, errlen, NQ_EINVAL, "--%s: expected a number of seconds, got '%s'",
                       name, v);
    if (nq_plan_seconds_to_nodes(s, &nodes, why, sizeof why) != 0)
      return nq_errorf(err, errlen, NQ_ERANGE, "--%s: %s", name, why);
    o->unit_seconds = s;
    return 0;
  }
  default: return nq_errorf(err, errlen, NQ_EINVAL, "not a job option");
  }
  if (int_value(v, lo, hi, dst) != 0)
    return nq_errorf(err, errlen, NQ_ERANGE, "--%s: expected an integer %ld..%ld, got '%s'", name,
                     lo, hi, v);
  return 0;
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
  for (int i = 0; i < NQ_JOBOPT_COUNT; i++) {
    if (!with_n && defs[i].key == NQ_JOBOPT_N) continue;
    char head[64];
    snprintf(head, sizeof head, "  --%s %s", defs[i].name, defs[i].arg);
    fprintf(f, "%-23s", head);
    for (const char *p = defs[i].help; *p;) {
      const char *nl = strchr(p, '\n');
      int len = nl ? (int)(nl - p) : (int)strlen(p);
      fprintf(f, " %.*s\n", len, p);
      p += len + (nl != NULL);
      if (*p) fprintf(f, "%-23s", "");
    }
  }
}
