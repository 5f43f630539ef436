/* nq-server: which kernel an assignment names (contracts in kernels.h). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "store_kernels.h"

/* What a client whose newest result came from ladder[i][0] can run, best first, and each
 * kernel's time for the same work relative to avx512's: measured on one unit of N = 18 per kernel
 * (one thread, 18:c:5:0,5: avx2 1.9x, scalar 7.6x, the reference 34x; docs/reliability.md),
 * rounded up, since a lease too long only delays a reissue and one too short wastes the work. */
#define KERNEL_COST_AVX2 2.0
#define KERNEL_COST_SCALAR 8.0
#define KERNEL_COST_REFERENCE 40.0
static const char *const ladders[][5] = {
    {"avx512", "avx2", "scalar", "reference", NULL},
    {"avx2", "scalar", "reference", NULL},
    {"neon", "scalar", "reference", NULL},
    {"scalar", "reference", NULL},
    {"reference", NULL},
};
/* A client of unknown kind (no result of its own choice yet), or a GPU client's CPU once the
 * unit has a result of its backend: what most CPUs run. */
static const char *const generic[] = {"avx2", "scalar", "reference", NULL};

static const struct {
  const char *name;
  double cost;
} costs[] = {{"avx512", 1.0}, {"avx2", KERNEL_COST_AVX2}, {"neon", 1.0},
             {"scalar", KERNEL_COST_SCALAR}, {"reference", KERNEL_COST_REFERENCE}};

/* A kernel some machine runs as its own (the head of a ladder but the slow fallbacks). */
static int is_native_kind(const char *k) {
  return strcmp(k, "avx512") == 0 || strcmp(k, "avx2") == 0 || strcmp(k, "neon") == 0;
}

static const char *const *ladder_of(const char *native) {
  for (size_t i = 0; native && i < sizeof ladders / sizeof ladders[0]; i++)
    if (strcmp(native, ladders[i][0]) == 0) return ladders[i];
  return generic;
}

/* How many entries of the comma-separated list are `name`. */
static int occurrences(const char *list, const char *name) {
  size_t n = strlen(name);
  int k = 0;
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    k += len == n && strncmp(p, name, n) == 0;
    p = e ? e + 1 : NULL;
  }
  return k;
}

void srv_kernel_native(const char *backends, char *buf, size_t len) {
  size_t nl = sizeof ladders / sizeof ladders[0];
  size_t best = nl;
  const char *gpu = NULL;
  size_t gpu_len = 0;
  for (const char *p = backends; p && *p;) {
    while (*p == ' ') p++;
    const char *e = strchr(p, ' ');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    size_t k = nl;
    for (size_t i = 0; n && i < nl; i++)
      if (strlen(ladders[i][0]) == n && strncmp(p, ladders[i][0], n) == 0) k = i;
    if (k < best) best = k;
    if (n && k == nl && !gpu) {
      gpu = p;
      gpu_len = n;
    }
    p = e;
  }
  /* A GPU label (none of the CPU kernels) wins: the named replicas such a client ran on its CPU
   * do not make it a CPU client. */
  if (gpu) snprintf(buf, len, "%.*s", (int)gpu_len, gpu);
  else if (best < nl) snprintf(buf, len, "%s", ladders[best][0]);
  else if (len) buf[0] = '\0';
}

const char *srv_kernel_choose(const char *native, const char *present, const char *refused) {
  int known = native && *native && ladder_of(native) != generic;
  /* A client of unknown kind, on a unit with nothing yet: its own (its result then tells the
   * server what it is). */
  if (!known && (!present || !*present)) return NULL;
  /* A GPU client (its backend is no CPU kernel) whose own backend the unit lacks: it runs its own,
   * on its devices, rather than a CPU kernel at a fraction of its speed. */
  if (!known && native && *native && occurrences(present, native) == 0) return NULL;
  const char *const *ladder = ladder_of(native);
  const char *best = NULL;
  int best_k = 0;
  /* A live lease of a client of unknown kind runs that client's own kernel, which may be any
   * machine's own: it counts for each of them, so a replica leased beside it is named one no
   * machine calls its own (two new clients that ask at once must not both run avx512). */
  int unknown = occurrences(present, SRV_KERNEL_UNKNOWN);
  for (int i = 0; ladder[i]; i++) {
    if (srv_kernel_listed(refused, ladder[i])) continue;
    int k = occurrences(present, ladder[i]) + (is_native_kind(ladder[i]) ? unknown : 0);
    if (!best || k < best_k) {
      best = ladder[i];
      best_k = k;
    }
  }
  return best;
}

static double cost_of(const char *kernel) {
  for (size_t i = 0; kernel && i < sizeof costs / sizeof costs[0]; i++)
    if (strcmp(kernel, costs[i].name) == 0) return costs[i].cost;
  return -1;
}

double srv_kernel_slowdown(const char *native, const char *kernel) {
  double a = cost_of(native), b = cost_of(kernel);
  /* A client of unknown kind is taken to run avx512-class hardware: the safe (longer) lease. */
  if (a < 0 && b > 0) a = 1.0;
  return a > 0 && b > a ? b / a : 1.0;
}
