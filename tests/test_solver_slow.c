/* Slow solver suite (opt-in: NQ_SLOW_TESTS=1): whole N = 17 and 18 with every fast-kernel variant
 * this CPU can run, unit by unit over the depth-2 units. N = 17: each variant equals the reference
 * (c2, c4, c8 and node count) on every unit. N = 18 (the reference would take minutes more): the
 * variants equal one another on every unit. Both: the sums are the published TOTAL, UNIQUE and
 * COUNT2/4/8, and the node count is the fingerprint the reference computes for that N.
 * Without NQ_SLOW_TESTS=1 the program says so and exits 77, which ctest reports as skipped.
 * A few minutes on an idle machine (the scalar variant takes most of it). */
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/unit.h"
#include "../common/solver/solver_simd.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const nq_kernel_t variants[] = {NQ_KERNEL_SCALAR, NQ_KERNEL_AVX2, NQ_KERNEL_AVX512,
                                         NQ_KERNEL_NEON};
#define NVARIANTS (int)(sizeof variants / sizeof variants[0])

/* Whole-N node counts (nq-solver-3 and nq-solver-4: the same tree below N=20), as
 * `nq-solve N --reference` prints them. */
#define NODES_17 1067923738ull
#define NODES_18 7700200618ull

typedef struct whole_s {
  int with_ref;
  long units;
  nq_counts_t sum[NVARIANTS];
} whole_t;

static int same(const nq_counts_t *a, const nq_counts_t *b) {
  return a->c2 == b->c2 && a->c4 == b->c4 && a->c8 == b->c8 && a->nodes == b->nodes &&
         a->count1 == b->count1;
}

static void fail_unit(const nq_unit_t *u, const char *who, const nq_counts_t *got,
                      const char *whom, const nq_counts_t *want) {
  char txt[NQ_UNIT_TEXT_MAX];
  if (nq_unit_format(u, txt, sizeof txt) < 0) strcpy(txt, "?");
  ck_abort_msg("unit %s: %s c2/c4/c8/nodes %llu/%llu/%llu/%llu, %s %llu/%llu/%llu/%llu", txt, who,
               (unsigned long long)got->c2, (unsigned long long)got->c4,
               (unsigned long long)got->c8, (unsigned long long)got->nodes, whom,
               (unsigned long long)want->c2, (unsigned long long)want->c4,
               (unsigned long long)want->c8, (unsigned long long)want->nodes);
}

static int whole_cb(const nq_unit_t *u, void *arg) {
  whole_t *w = arg;
  nq_counts_t got[NVARIANTS], ref;
  int first = -1;
  if (w->with_ref) ck_assert_int_eq(nq_ref_solve_unit(u, &ref), 0);
  for (int i = 0; i < NVARIANTS; i++) {
    if (!nq_fast_kernel_available(variants[i])) continue;
    ck_assert_int_eq(nq_fast_solve_unit_kernel(u, &got[i], variants[i]), 0);
    const char *name = nq_fast_kernel_name(variants[i]);
    if (w->with_ref && !same(&got[i], &ref)) fail_unit(u, name, &got[i], "reference", &ref);
    if (first >= 0 && !same(&got[i], &got[first]))
      fail_unit(u, name, &got[i], nq_fast_kernel_name(variants[first]), &got[first]);
    if (first < 0) first = i;
    nq_counts_add(&w->sum[i], &got[i]);
  }
  w->units++;
  return 0;
}

static void u64_text(uint64_t v, char *buf, size_t len) {
  snprintf(buf, len, "%llu", (unsigned long long)v);
}

static void check_whole(int n, int with_ref, uint64_t nodes) {
  whole_t w;
  memset(&w, 0, sizeof w);
  w.with_ref = with_ref;
  ck_assert_int_eq(nq_units_generate(n, 2, whole_cb, &w), 0);
  ck_assert_int_gt(w.units, 0);
  const nq_known_t *k = nq_known(n);
  ck_assert_ptr_nonnull(k);
  for (int i = 0; i < NVARIANTS; i++) {
    if (!nq_fast_kernel_available(variants[i])) continue;
    const nq_counts_t *s = &w.sum[i];
    char total[40], uniq[40], c2[40], c4[40], c8[40];
    u64_text(2 * s->c2 + 4 * s->c4 + 8 * s->c8, total, sizeof total);
    u64_text(s->c2 + s->c4 + s->c8, uniq, sizeof uniq);
    u64_text(s->c2, c2, sizeof c2);
    u64_text(s->c4, c4, sizeof c4);
    u64_text(s->c8, c8, sizeof c8);
    ck_assert_str_eq(total, k->total);
    ck_assert_str_eq(uniq, k->unique);
    ck_assert_str_eq(c2, k->c2);
    ck_assert_str_eq(c4, k->c4);
    ck_assert_str_eq(c8, k->c8);
    ck_assert_uint_eq(s->nodes, nodes);
    printf("test_solver_slow: N=%d %s: %ld units, TOTAL %s, nodes %llu%s\n", n,
           nq_fast_kernel_name(variants[i]), w.units, total, (unsigned long long)s->nodes,
           with_ref ? ", every unit equal to the reference" : "");
  }
}

START_TEST(whole_17_every_variant_vs_reference) { check_whole(17, 1, NODES_17); }
END_TEST

START_TEST(whole_18_every_variant) { check_whole(18, 0, NODES_18); }
END_TEST

int main(void) {
  const char *env = getenv("NQ_SLOW_TESTS");
  if (!env || strcmp(env, "1") != 0) {
    printf("test_solver_slow: SKIPPED (set NQ_SLOW_TESTS=1 to check every kernel on whole "
           "N = 17 and 18, a few minutes)\n");
    return 77; /* ctest: SKIP_RETURN_CODE */
  }
  Suite *s = suite_create("solver_slow");
  TCase *tc = tcase_create("whole_n");
  tcase_set_timeout(tc, 3000);
  tcase_add_test(tc, whole_17_every_variant_vs_reference);
  tcase_add_test(tc, whole_18_every_variant);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
