/* libFuzzer target: the fleet SPEC parser (nq_fleet_parse) and the price of a fleet it accepts
 * (nq_fleet_calendar).
 *
 * Properties checked for every input:
 *   - the parser never crashes, reads out of bounds or leaks (ASan/UBSan);
 *   - a refused SPEC leaves a one-line reason in errbuf;
 *   - an accepted fleet is within its bounds: 1..8 kernel items, each a known kernel with a
 *     whole count 0..1e9 (0 only for KERNEL@RATE) and a rate > 0, quorum 1..16, spot 0..1,
 *     duty in (0, 1], and some compute (a part with cores, or rate=);
 *   - its price, with the kernel rule off and on, is finite and positive (with the rule off,
 *     core-seconds at least the replicas' nodes at the fastest rate), the kernels' shares adding
 *     up to 1.
 * Built by scripts/fuzz.sh (clang, -DNQ_FUZZ=ON). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/fleet.h"

#define FUZZ_ASSERT(cond)                                                              \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "fuzz_fleet: assertion failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                                         \
    }                                                                                  \
  } while (0)

static void check_price(const nq_fleet_t *f, int kernels) {
  nq_fleet_t g = *f;
  g.kernels = kernels;
  nq_fleet_cal_t c;
  nq_fleet_calendar(&g, 1e12, 1e9, &c);
  double fastest = f->extra_rate / 1e6;
  for (int i = 0; i < f->nparts; i++)
    if (f->part[i].rate > fastest) fastest = f->part[i].rate;
  FUZZ_ASSERT(isfinite(c.core_seconds) && c.core_seconds > 0);
  /* Without the rule every replica runs at its machine's own rate, at most the fastest. */
  if (kernels < 2) FUZZ_ASSERT(c.core_seconds >= 0.999 * 1e12 * f->quorum / fastest);
  FUZZ_ASSERT(isfinite(c.seconds) && c.seconds > 0 && c.tail_seconds >= 0);
  FUZZ_ASSERT(c.nkernels >= 1 && c.nkernels <= NQ_FLEET_MAX_KERNELS);
  double share = 0;
  for (int i = 0; i < c.nkernels; i++) share += c.kernel_share[i];
  FUZZ_ASSERT(fabs(share - 1) < 1e-9);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 600) return 0;
  char *spec = malloc(size + 1);
  if (!spec) return 0;
  memcpy(spec, data, size);
  spec[size] = '\0';
  nq_fleet_t f;
  char err[300];
  err[0] = '\0';
  int rc = nq_fleet_parse(spec, &f, err, sizeof err);
  if (rc != 0) {
    FUZZ_ASSERT(err[0] != '\0' && strchr(err, '\n') == NULL);
    free(spec);
    return 0;
  }
  FUZZ_ASSERT(f.nparts >= 0 && f.nparts <= NQ_FLEET_MAX_PARTS);
  int cores = 0;
  for (int i = 0; i < f.nparts; i++) {
    FUZZ_ASSERT(f.part[i].count >= 0 && f.part[i].count <= 1e9 &&
                f.part[i].count == floor(f.part[i].count));
    FUZZ_ASSERT(f.part[i].rate > 0 && isfinite(f.part[i].rate));
    FUZZ_ASSERT(nq_fleet_kernel_rate(f.part[i].kernel) > 0 || !strcmp(f.part[i].kernel, "neon") ||
                !strcmp(f.part[i].kernel, "gpu"));
    cores += f.part[i].count > 0;
  }
  FUZZ_ASSERT(cores > 0 || f.extra_rate > 0);
  FUZZ_ASSERT(f.quorum >= 1 && f.quorum <= 16);
  FUZZ_ASSERT(f.spot >= 0 && f.spot <= 1);
  FUZZ_ASSERT(f.duty > 0 && f.duty <= 1);
  /* The price samples thousands of units: only for small fleets of few replicas, to keep the
   * fuzzer fast (the arithmetic does not depend on the sizes). */
  if (f.quorum <= 3) {
    check_price(&f, 0);
    check_price(&f, 2);
  }
  free(spec);
  return 0;
}
