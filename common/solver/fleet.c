/* nq: a fleet of volunteers, for plans in calendar time (see fleet.h). */
#include "nq/fleet.h"
#include "nq/estimate.h"
#include "nq/nq.h"

#include <errno.h>
#include <stdint.h>
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
/* The reference solver (plain recursion), which the kernel rule names last: 34x avx512's time
 * for the same unit (docs/reliability.md, "Kernel-diverse verification"). Not a fleet item. */
#define REFERENCE_RATE (2.5e9 / 34)
/* rate=R is priced as this many cores of R / RATE_CORES each: many machines, many keys. */
#define RATE_CORES 1e6
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
  char *at0 = strchr(item, '@');
  if (!eq && at0 && at0 != item) { /* KERNEL@RATE: a rate without cores */
    *at0 = '\0';
    size_t i;
    for (i = 0; i < NKERNELS && strcmp(item, kernels[i].name); i++) {
    }
    if (i == NKERNELS || !strcmp(item, "ref"))
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet: unknown kernel '%s' in '%s@%s' "
                       "(avx512, avx2, scalar, neon, gpu)", item, item, at0 + 1);
    if (f->nparts == NQ_FLEET_MAX_PARTS)
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet: at most %d kernel items",
                       NQ_FLEET_MAX_PARTS);
    nq_fleet_part_t *p = &f->part[f->nparts];
    if (num(at0 + 1, 1, 1e15, &p->rate))
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet: %s@%s: want a rate of nodes/s "
                       "(1..1e15)", item, at0 + 1);
    p->count = 0;
    snprintf(p->kernel, sizeof p->kernel, "%s", item);
    f->nparts++;
    return 0;
  }
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
  f->spot = NQ_FLEET_DEFAULT_SPOT;
  f->duty = 1;
  if (!spec || !*spec)
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet: empty; e.g. avx2=1000,quorum=2");
  char buf[512];
  /* Error messages quote the items: only printable text, so a message stays one line. */
  for (const char *c = spec; *c; c++)
    if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet: a character that is not printable "
                       "ASCII at offset %d", (int)(c - spec));
  if (strlen(spec) >= sizeof buf)
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "fleet: over %zu characters", sizeof buf - 1);
  snprintf(buf, sizeof buf, "%s", spec);
  unsigned seen = 0;
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    int rc = parse_item(item, f, &seen, errbuf, errlen);
    if (rc) return rc;
  }
  int cores = 0;
  for (int i = 0; i < f->nparts; i++) cores += f->part[i].count > 0;
  if (cores == 0 && f->extra_rate <= 0)
    return nq_errorf(errbuf, errlen, NQ_EINVAL,
                     "fleet: no compute in '%s': name cores by kernel (avx2=1000) or a rate "
                     "(rate=1e12)", spec);
  return 0;
}

/* ---- the price of a unit's replicas (fleet.h) ---- */

/* A part as the pricing sees it: its ladder (what the server may name it, own kernel first), its
 * cores and its rate; `rate=` is a part of one "core" at that rate whose kernel is its own. */
typedef struct pp_s {
  const char *ladder[5];
  double count, rate;
  double w;             /* how often one of its cores asks for work (1 / seconds a node) */
  double used;          /* cores of it that had the unit being drawn */
  double cs, n;         /* core-seconds a node and replicas, over the samples */
} pp_t;

typedef struct price_s {
  const nq_fleet_t *f;
  pp_t p[NQ_FLEET_MAX_PARTS + 1];
  int np;
  const char *kname[NQ_FLEET_MAX_KERNELS];
  double kn[NQ_FLEET_MAX_KERNELS]; /* replicas per kernel */
  int nk;
} price_t;

static void ladder_of(const char *k, const char **l) {
  static const char *const ladders[][5] = {
      {"avx512", "avx2", "scalar", "reference", NULL}, {"avx2", "scalar", "reference", NULL},
      {"neon", "scalar", "reference", NULL},           {"scalar", "reference", NULL},
      {"gpu", "avx2", "scalar", "reference", NULL},
  };
  for (size_t i = 0; i < sizeof ladders / sizeof ladders[0]; i++)
    if (!strcmp(k, ladders[i][0])) {
      memcpy(l, ladders[i], sizeof ladders[i]);
      return;
    }
  l[0] = k; /* ref, rate: whatever is named, at their rate */
  l[1] = NULL;
}

/* A kernel's rate as the fleet gives it: its first part's (or KERNEL@RATE's), else 0. */
static double given_rate(const nq_fleet_t *f, const char *k) {
  for (int i = 0; i < f->nparts; i++)
    if (!strcmp(f->part[i].kernel, k)) return f->part[i].rate;
  return 0;
}

/* A kernel's typical rate (the reference solver's too); 0 for neon and gpu. */
static double typical_rate(const char *k) {
  return !strcmp(k, "reference") ? REFERENCE_RATE : nq_fleet_kernel_rate(k);
}

/* What kernel k costs on part p: its own rate for its own kernel; else the machine's rate scaled
 * by the two kernels' rates as the fleet gives them (both given: k's part or KERNEL@ item), or by
 * their typical rates (neon's own taken as avx2's). A GPU's host CPU runs CPU kernels at the
 * fleet's rate for them. */
static double part_rate(const price_t *pr, const pp_t *p, const char *k) {
  if (!strcmp(k, p->ladder[0])) return p->rate;
  double given = given_rate(pr->f, k);
  if (!strcmp(p->ladder[0], "gpu")) return given > 0 ? given : typical_rate(k);
  if (given > 0) return p->rate * given / given_rate(pr->f, p->ladder[0]);
  double own = typical_rate(p->ladder[0]);
  return p->rate * typical_rate(k) / (own > 0 ? own : typical_rate("avx2"));
}

static uint64_t mix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The part of the next replica: a core that has not had the unit, by how often it asks (any core
 * when every one has had it: a fleet smaller than the replicas). */
static int draw_part(price_t *pr, uint64_t *rng) {
  double tot = 0, all = 0;
  for (int i = 0; i < pr->np; i++) {
    tot += (pr->p[i].count - pr->p[i].used) * pr->p[i].w;
    all += pr->p[i].count * pr->p[i].w;
  }
  int free = tot > 0;
  double x = (double)(mix64(rng) >> 11) * 0x1.0p-53 * (free ? tot : all);
  for (int i = 0; i < pr->np; i++) {
    x -= (free ? pr->p[i].count - pr->p[i].used : pr->p[i].count) * pr->p[i].w;
    if (x < 0) return i;
  }
  return pr->np - 1;
}

/* The kernel the server names part p for a unit whose replicas so far ran present[0..n-1]:
 * the one of its ladder least among them, its own first on a tie (kernels.c). */
static const char *choose(const pp_t *p, const char **present, int n, int rule) {
  if (!rule) return p->ladder[0];
  const char *best = NULL;
  int best_k = 0;
  for (int i = 0; p->ladder[i]; i++) {
    int k = 0;
    for (int j = 0; j < n; j++) k += !strcmp(present[j], p->ladder[i]);
    if (!best || k < best_k) best = p->ladder[i], best_k = k;
  }
  return best;
}

static void count_kernel(price_t *pr, const char *k, double weight) {
  int i;
  for (i = 0; i < pr->nk && strcmp(pr->kname[i], k); i++) {
  }
  if (i == pr->nk) {
    if (pr->nk == NQ_FLEET_MAX_KERNELS) return;
    pr->kname[pr->nk++] = k;
  }
  pr->kn[i] += weight;
}

/* One pass over the samples with the parts' current ask rates: core-seconds a node of every
 * replica (the spot check's weighted by spot), per part and in all. */
static double price_pass(price_t *pr, int rule) {
  int q = pr->f->quorum;
  uint64_t rng = 0x666c656574ull; /* "fleet": the same stream every pass and every run */
  double sum = 0;
  pr->nk = 0;
  memset(pr->kn, 0, sizeof pr->kn);
  for (int i = 0; i < pr->np; i++) pr->p[i].cs = pr->p[i].n = 0;
  for (int s = 0; s < NQ_FLEET_SAMPLES; s++) {
    const char *present[17];
    for (int i = 0; i < pr->np; i++) pr->p[i].used = 0;
    for (int r = 0; r <= q; r++) {
      double weight = r < q ? 1 : pr->f->spot;
      if (weight <= 0) break;
      int i = draw_part(pr, &rng);
      pp_t *p = &pr->p[i];
      const char *k = choose(p, present, r, rule);
      double c = weight / part_rate(pr, p, k);
      p->used++;
      p->cs += c;
      p->n += weight;
      sum += c;
      count_kernel(pr, k, weight);
      present[r] = k;
    }
  }
  return sum / NQ_FLEET_SAMPLES;
}

/* Core-seconds a node of one unit's replicas, and the parts' shares, at the fixed point where
 * each part's cores ask in proportion to their speed on the replicas they get. */
static double price(price_t *pr, int rule) {
  double cs = 0;
  for (int i = 0; i < pr->np; i++) pr->p[i].w = pr->p[i].rate;
  for (int it = 0; it < 6; it++) {
    cs = price_pass(pr, rule);
    for (int i = 0; i < pr->np; i++)
      if (pr->p[i].n > 0 && pr->p[i].cs > 0) pr->p[i].w = pr->p[i].n / pr->p[i].cs;
  }
  return cs;
}

void nq_fleet_calendar(const nq_fleet_t *f, double est_nodes, double largest_nodes,
                       nq_fleet_cal_t *out) {
  memset(out, 0, sizeof *out);
  out->rate = f->extra_rate;
  for (int i = 0; i < f->nparts; i++) out->rate += f->part[i].count * f->part[i].rate;
  out->replicas = f->quorum + f->spot;
  out->nodes = est_nodes * out->replicas;
  out->ref_core_years = out->nodes / NQ_REF_NODES_PER_SEC / 31557600.0;
  price_t pr;
  price_t *p = &pr;
  memset(p, 0, sizeof *p);
  p->f = f;
  for (int i = 0; i < f->nparts; i++, p->np++) {
    ladder_of(f->part[i].kernel, p->p[p->np].ladder);
    p->p[p->np].count = f->part[i].count;
    p->p[p->np].rate = f->part[i].rate;
  }
  if (f->extra_rate > 0) { /* some machines as a whole: as many keys as a unit needs */
    ladder_of("rate", p->p[p->np].ladder);
    p->p[p->np].count = RATE_CORES;
    p->p[p->np++].rate = f->extra_rate / RATE_CORES;
  }
  if (p->np == 0 || !(est_nodes > 0)) {
    out->seconds = out->bulk_seconds = INFINITY;
    return;
  }
  out->own_core_seconds = est_nodes * price(p, 0);
  out->core_seconds = est_nodes * price(p, f->kernels >= 2);
  double total = 0, busiest = 0;
  for (int i = 0; i < p->np; i++) total += p->p[i].n;
  for (int i = 0; i < p->np; i++) {
    if (p->p[i].count <= 0) continue; /* KERNEL@RATE: a rate, no cores */
    double t = est_nodes * p->p[i].cs / NQ_FLEET_SAMPLES / p->p[i].count;
    if (t > busiest) busiest = t;
  }
  for (int i = 0; i < p->nk; i++) {
    out->kernel[i] = p->kname[i];
    out->kernel_share[i] = total > 0 ? p->kn[i] / total : 0;
  }
  out->nkernels = p->nk;
  out->bulk_seconds = busiest / f->duty;
  /* The tail: the last unit out runs on some core at the rule's mean cost; past
   * NQ_FLEET_TAIL_AFTER_S an idle fast core is given it again. So it waits the shorter of its
   * time on the slowest core and the reissue delay plus its time on the fastest. */
  if (largest_nodes > 0) {
    double fast = 0, slow = 0, slowdown = out->core_seconds / out->own_core_seconds;
    for (int i = 0; i < p->np; i++) {
      /* rate= has no cores to speak of (its per-core rate is a device of the pricing). */
      if (p->p[i].count <= 0 || !strcmp(p->p[i].ladder[0], "rate")) continue;
      if (p->p[i].rate > fast) fast = p->p[i].rate;
      if (slow == 0 || p->p[i].rate < slow) slow = p->p[i].rate;
    }
    if (fast > 0) {
      double on_slow = largest_nodes / slow * slowdown;
      double reissued = NQ_FLEET_TAIL_AFTER_S + largest_nodes / fast * slowdown;
      out->tail_seconds = on_slow < reissued ? on_slow : reissued;
    }
  }
  out->seconds = out->bulk_seconds + out->tail_seconds;
}

double nq_fleet_slowest(const nq_fleet_t *f, const char **kernel) {
  double slow = 0;
  if (kernel) *kernel = NULL;
  for (int i = 0; i < f->nparts; i++) {
    if (f->part[i].count <= 0) continue; /* KERNEL@RATE */
    if (slow == 0 || f->part[i].rate < slow) {
      slow = f->part[i].rate;
      if (kernel) *kernel = f->part[i].kernel;
    }
  }
  return slow;
}
