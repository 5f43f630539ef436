/* nq: a fleet of volunteers, for plans in calendar time (see fleet.h). */
#include "nq/fleet.h"
#include "nq/estimate.h"
#include "nq/nq.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Typical rates of one core under nq-solver-3, measured at N=18 on an AVX-512 x86-64 server
 * (docs/planning.md, "Calibration and the reference core"): 0.40 ns a node with AVX-512, 0.78 ns
 * with AVX2, 3.6 ns scalar. A volunteer's own figure comes from `nq-solve N --estimate` (the
 * "this machine" line), and KERNEL=COUNT@RATE overrides these. */
static const struct {
  const char *name;
  double rate;
} kernels[] = {
    {"avx512", 2.5e9}, {"avx2", 1.28e9}, {"scalar", 2.8e8},
    {"neon", 0},       {"gpu", 0},       {"ref", NQ_REF_NODES_PER_SEC},
};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

double nq_fleet_kernel_rate(const char *kernel) {
  for (size_t i = 0; i < NKERNELS; i++)
    if (!strcmp(kernel, kernels[i].name)) return kernels[i].rate;
  return 0;
}

/* A finite number in lo..hi, the whole of s (C syntax). */
static int num(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v) || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* One KEY=VALUE item (item is modified). */
static int parse_item(char *item, nq_fleet_t *f, unsigned *seen, char *errbuf, size_t errlen) {
  char *eq = strchr(item, '=');
  if (!eq || eq == item || !eq[1])
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet item '%s': want KEY=VALUE", item);
  *eq = '\0';
  const char *key = item, *val = eq + 1;
  static const char *const keys[] = {"rate", "quorum", "spot", "duty"};
  for (unsigned k = 0; k < 4; k++) {
    if (strcmp(key, keys[k])) continue;
    if (*seen & (1u << k))
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet: '%s' is given twice", key);
    *seen |= 1u << k;
    double v;
    int bad = k == 0   ? num(val, 1, 1e30, &f->extra_rate)
              : k == 1 ? num(val, 1, 16, &v) || v != floor(v)
              : k == 2 ? num(val, 0, 1, &f->spot)
                       : num(val, 1e-6, 1, &f->duty);
    if (k == 1 && !bad) f->quorum = (int)v;
    if (bad)
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet: %s=%s: %s", key, val,
                       k == 0   ? "want a node rate in nodes/s (1..1e30)"
                       : k == 1 ? "want a whole number of results, 1..16"
                       : k == 2 ? "want a share of the units, 0..1"
                                : "want a share of the time, above 0 and at most 1");
    return 0;
  }
  size_t i;
  for (i = 0; i < NKERNELS && strcmp(key, kernels[i].name); i++) {
  }
  if (i == NKERNELS)
    return nq_errorf(errbuf, errlen, NQ_EINVAL,
                     "fleet: unknown item '%s' (kernels avx512, avx2, scalar, neon, gpu, ref; "
                     "keys rate, quorum, spot, duty)", key);
  if (f->nparts == NQ_FLEET_MAX_PARTS)
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet: at most %d kernel items",
                     NQ_FLEET_MAX_PARTS);
  nq_fleet_part_t *p = &f->part[f->nparts];
  char *at = strchr(eq + 1, '@');
  if (at) *at = '\0';
  p->rate = kernels[i].rate;
  if (num(val, 1, 1e9, &p->count) || p->count != floor(p->count))
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet: %s=%s: want a whole number of %s, 1..1e9",
                     key, val, strcmp(key, "gpu") ? "cores" : "devices");
  if (at && num(at + 1, 1, 1e15, &p->rate))
    return nq_errorf(errbuf, errlen, NQ_EINVAL,
                     "fleet: %s=%s@%s: want a rate of nodes/s each after '@' (1..1e15)", key, val,
                     at + 1);
  if (p->rate <= 0)
    return nq_errorf(errbuf, errlen, NQ_EINVAL,
                     "fleet: %s has no typical rate: give one as %s=%s@NODES_PER_SECOND (measure "
                     "it with nq-solve N --estimate%s)", key, key, val,
                     strcmp(key, "gpu") ? "" : " or nq-solve N --gpu all");
  snprintf(p->kernel, sizeof p->kernel, "%s", key);
  f->nparts++;
  return 0;
}

int nq_fleet_parse(const char *spec, nq_fleet_t *f, char *errbuf, size_t errlen) {
  memset(f, 0, sizeof *f);
  f->quorum = NQ_FLEET_DEFAULT_QUORUM;
  f->duty = 1;
  if (!spec || !*spec)
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet: empty; e.g. avx2=1000,quorum=2");
  char buf[512];
  if (strlen(spec) >= sizeof buf)
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet: over %zu characters", sizeof buf - 1);
  snprintf(buf, sizeof buf, "%s", spec);
  unsigned seen = 0;
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    int rc = parse_item(item, f, &seen, errbuf, errlen);
    if (rc) return rc;
  }
  if (f->nparts == 0 && f->extra_rate <= 0)
    return nq_errorf(errbuf, errlen, NQ_EINVAL,
                     "fleet: no compute in '%s': name cores by kernel (avx2=1000) or a rate "
                     "(rate=1e12)", spec);
  return 0;
}

void nq_fleet_calendar(const nq_fleet_t *f, double est_nodes, nq_fleet_cal_t *out) {
  memset(out, 0, sizeof *out);
  out->rate = f->extra_rate;
  for (int i = 0; i < f->nparts; i++) out->rate += f->part[i].count * f->part[i].rate;
  out->replicas = f->quorum + f->spot;
  out->nodes = est_nodes * out->replicas;
  out->ref_core_years = out->nodes / NQ_REF_NODES_PER_SEC / 31557600.0;
  out->seconds = out->rate > 0 ? out->nodes / (out->rate * f->duty) : INFINITY;
}

double nq_fleet_slowest(const nq_fleet_t *f, const char **kernel) {
  double slow = 0;
  if (kernel) *kernel = NULL;
  for (int i = 0; i < f->nparts; i++) {
    if (slow == 0 || f->part[i].rate < slow) {
      slow = f->part[i].rate;
      if (kernel) *kernel = f->part[i].kernel;
    }
  }
  return slow;
}
