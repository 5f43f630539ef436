/* Helpers shared by the check suites: the suite runner and the solver's (testutil_sys.c has the
 * processes, files and sockets of a test). */
#include "testutil.h"

#include "nq/nq.h"
#include "nq/solver.h"
#include "../common/solver/solver_simd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tu_run_suite(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}

int tu_count_unit(const nq_unit_t *u, void *arg) {
  (void)u;
  (*(int *)arg)++;
  return 0;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
uint64_t tu_rng(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

void tu_rng_mix(uint64_t x) { rng_state ^= x; }

int tu_pick_cb(const nq_unit_t *u, void *arg) {
  tu_pick_t *p = arg;
  p->seen++;
  if (p->len < 64) {
    p->v[p->len++] = *u;
  } else {
    uint64_t j = tu_rng() % p->seen;
    if (j < 64) p->v[j] = *u;
  }
  return 0;
}

/* Depth-first below u in random order until a unit of depth d turns up, or *budget prefixes
 * were tried. */
static int random_below(nq_unit_t *u, int d, int *budget) {
  if (u->depth == d) return 1;
  if (--*budget < 0) return 0;
  tu_pick_t p;
  memset(&p, 0, sizeof p);
  ck_assert_int_eq(nq_unit_children(u, tu_pick_cb, &p), 0);
  for (int i = p.len - 1; i > 0; i--) { /* shuffle */
    int j = (int)(tu_rng() % (uint64_t)(i + 1));
    nq_unit_t t = p.v[i];
    p.v[i] = p.v[j];
    p.v[j] = t;
  }
  for (int i = 0; i < p.len; i++) {
    *u = p.v[i];
    if (random_below(u, d, budget)) return 1;
  }
  return 0;
}

nq_unit_t tu_random_unit(int n, int d) {
  for (;;) {
    tu_pick_t p;
    memset(&p, 0, sizeof p);
    ck_assert_int_eq(nq_units_generate(n, 2, tu_pick_cb, &p), 0);
    nq_unit_t u = p.v[tu_rng() % (uint64_t)p.len];
    int budget = 2000;
    if (random_below(&u, d, &budget)) return u;
  }
}

int tu_check_cut_unit(const nq_unit_t *u) {
  static const nq_kernel_t kernels[] = {NQ_KERNEL_SCALAR, NQ_KERNEL_AVX2, NQ_KERNEL_AVX512,
                                        NQ_KERNEL_NEON};
  nq_unit_state_t st;
  ck_assert_int_eq(nq_unit_state(u, &st), 0);
  const int cut = nq_unit_cut(&st, u->part, u->depth, st.left, st.down, st.right, st.board);
  ck_assert(cut == 2 || cut == 3);
  nq_counts_t ref, fast;
  ck_assert_int_eq(nq_ref_solve_unit(u, &ref), 0);
  ck_assert(ref.nodes == 1 && ref.c2 == 0 && ref.c4 == 0 && ref.c8 == 0);
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    if (!nq_fast_kernel_available(kernels[i])) continue;
    ck_assert_int_eq(nq_fast_solve_unit_kernel(u, &fast, kernels[i]), 0);
    ck_assert_msg(fast.nodes == 1 && fast.c2 == 0 && fast.c4 == 0 && fast.c8 == 0, "%s",
                  nq_fast_kernel_name(kernels[i]));
  }
  int kids = 0;
  ck_assert_int_eq(nq_unit_children(u, tu_count_unit, &kids), 0);
  ck_assert_int_eq(kids, 0);
  /* one row deeper on a free column: not a unit */
  uint32_t free = st.mask & ~(st.left | st.down | st.right);
  if (free && u->depth + 1 <= u->n - 1) {
    nq_unit_t below = *u;
    below.prefix[below.depth++] = (uint8_t)__builtin_ctz(free);
    char txt[NQ_UNIT_TEXT_MAX], err[200];
    ck_assert_int_gt(nq_unit_format(&below, txt, sizeof txt), 0);
    ck_assert_int_eq(nq_unit_parse(txt, &below, err, sizeof err), NQ_EINVAL);
    ck_assert_msg(strstr(err, cut == 2 ? "dead node" : "blocked node") != NULL, "%s: %s", txt,
                  err);
  }
  return cut;
}
