/* Fast-kernel suite: every variant of nq_fast_solve_unit (scalar, and the SIMD ones this CPU can
 * run) returns exactly the reference's c2, c4, c8 and node count, unit by unit: every unit of
 * N = 4..13 at depths 2, 3, 4; random units of N = 15/16 at deeper depths; random deep units of
 * N up to 32 (including units whose search is one or two rows long); the variants also agree with
 * one another on larger units, and kernel selection (NQ_KERNEL, nq_fast_kernel_set) works. The
 * avx512 variant is checked with and without its leaf tables (nq_fast_leaf_table_set), with the
 * row N-3 tables alone (nq_fast_leaf_four_set) and with and without its packed side words
 * (nq_fast_side_pack_set); the avx2 variant with and without its row N-3 leaf
 * (nq_fast_leaf_avx2_set); both with and without the flags decided in the search
 * (nq_fast_flag_decide_set). */
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

static void unit_text(const nq_unit_t *u, char *buf) {
  if (nq_unit_format(u, buf, NQ_UNIT_TEXT_MAX) < 0) strcpy(buf, "?");
}

static void assert_same(const nq_unit_t *u, const nq_counts_t *want, const nq_counts_t *got,
                        const char *who) {
  if (want->c2 == got->c2 && want->c4 == got->c4 && want->c8 == got->c8 &&
      want->nodes == got->nodes && got->count1 == 0)
    return;
  char txt[NQ_UNIT_TEXT_MAX];
  unit_text(u, txt);
  ck_abort_msg("unit %s, %s: c2/c4/c8/nodes %llu/%llu/%llu/%llu, reference %llu/%llu/%llu/%llu",
               txt, who, (unsigned long long)got->c2, (unsigned long long)got->c4,
               (unsigned long long)got->c8, (unsigned long long)got->nodes,
               (unsigned long long)want->c2, (unsigned long long)want->c4,
               (unsigned long long)want->c8, (unsigned long long)want->nodes);
}

/* Variant k against `want` with one of its switches (set) off, which is then turned back on. */
static void check_without(const nq_unit_t *u, const nq_counts_t *want, nq_kernel_t k,
                          int (*set)(int), const char *who) {
  nq_counts_t got;
  ck_assert_int_eq(set(0), 0);
  memset(&got, 0xa5, sizeof got);
  ck_assert_int_eq(nq_fast_solve_unit_kernel(u, &got, k), 0);
  ck_assert_int_eq(set(1), 0);
  assert_same(u, want, &got, who);
}

/* Every available variant and nq_fast_solve_unit itself against `want`. */
static void check_variants(const nq_unit_t *u, const nq_counts_t *want) {
  nq_counts_t got;
  for (int i = 0; i < NVARIANTS; i++) {
    const nq_kernel_t k = variants[i];
    if (!nq_fast_kernel_available(k)) continue;
    memset(&got, 0xa5, sizeof got);
    ck_assert_int_eq(nq_fast_solve_unit_kernel(u, &got, k), 0);
    assert_same(u, want, &got, nq_fast_kernel_name(k));
    if (k == NQ_KERNEL_AVX512 && nq_fast_leaf_table_in_use()) {
      /* the same variant without its leaf tables (the path of CPUs that lack VBMI) */
      check_without(u, want, k, nq_fast_leaf_table_set, "avx512 without leaf tables");
      /* with the row N-3 tables but without the row N-4 ones */
      if (nq_fast_leaf_four_in_use())
        check_without(u, want, k, nq_fast_leaf_four_set, "avx512 without row N-4 tables");
    }
    /* the same variant with every flagged solution's board rebuilt and checked */
    if (k != NQ_KERNEL_SCALAR && nq_fast_flag_decide_in_use())
      check_without(u, want, k, nq_fast_flag_decide_set, "without the flags decided in the search");
    /* the same variant with rows N-3..N-1 made node by node (units with BOUND1 on row N-3,
     * N > 28) */
    if (k == NQ_KERNEL_AVX2 && nq_fast_leaf_avx2_in_use())
      check_without(u, want, k, nq_fast_leaf_avx2_set, "avx2 without its row N-3 leaf");
    /* the same variant with the side part's P array (the path of N >= 23) */
    if (k == NQ_KERNEL_AVX512 && nq_fast_side_pack_in_use() && u->n <= NQ_FAST_PACK_MAX_N)
      check_without(u, want, k, nq_fast_side_pack_set, "avx512 without packed side words");
  }
  memset(&got, 0xa5, sizeof got);
  ck_assert_int_eq(nq_fast_solve_unit(u, &got), 0);
  assert_same(u, want, &got, "nq_fast_solve_unit");
}

static void check_unit(const nq_unit_t *u) {
  nq_counts_t ref;
  ck_assert_int_eq(nq_ref_solve_unit(u, &ref), 0);
  check_variants(u, &ref);
}

typedef struct walk_s {
  long units;
  nq_counts_t sum;
} walk_t;

static int every_cb(const nq_unit_t *u, void *arg) {
  walk_t *w = arg;
  nq_counts_t ref;
  ck_assert_int_eq(nq_ref_solve_unit(u, &ref), 0);
  check_variants(u, &ref);
  w->units++;
  nq_counts_add(&w->sum, &ref);
  return 0;
}

/* Every unit of N = 4..13 at depths 2, 3 and 4 (capped at N-1), and the units still add up to
 * the published totals. */
START_TEST(every_unit_small_n) {
  int n = _i;
  for (int d = 2; d <= 4; d++) {
    walk_t w;
    memset(&w, 0, sizeof w);
    ck_assert_int_eq(nq_units_generate(n, d, every_cb, &w), 0);
    ck_assert_int_gt(w.units, 0);
    const nq_known_t *k = nq_known(n);
    ck_assert_ptr_nonnull(k);
    char total[40];
    snprintf(total, sizeof total, "%llu",
             (unsigned long long)(2 * w.sum.c2 + 4 * w.sum.c4 + 8 * w.sum.c8));
    ck_assert_str_eq(total, k->total);
  }
}
END_TEST

/* Every unit at the deepest depths (N-3, N-2, N-1), where the search is one to three rows and
 * the tiny-unit paths and the row N-2 leaf code see every BOUND1 / BOUND2 / LASTMASK case
 * (N = 4..11). */
START_TEST(every_deep_unit) {
  for (int n = 4; n <= 11; n++)
    for (int d = n - 3 > 2 ? n - 3 : 2; d <= n - 1; d++) {
      walk_t w;
      memset(&w, 0, sizeof w);
      ck_assert_int_eq(nq_units_generate(n, d, every_cb, &w), 0);
      const nq_known_t *k = nq_known(n);
      char total[40];
      snprintf(total, sizeof total, "%llu",
               (unsigned long long)(2 * w.sum.c2 + 4 * w.sum.c4 + 8 * w.sum.c8));
      ck_assert_str_eq(total, k->total);
    }
}
END_TEST

/* N = 15 and 16: random units at depths 4..N-1 (the deepest ones are the tiny searches). */
START_TEST(random_units_15_16) {
  int n = _i;
  tu_rng_mix((uint64_t)n * 0x100000001b3ull);
  for (int d = 4; d <= n - 1; d++) {
    int reps = d < 7 ? 2 : 6;
    for (int r = 0; r < reps; r++) {
      nq_unit_t u = tu_random_unit(n, d);
      check_unit(&u);
    }
  }
}
END_TEST

/* Large N (17..32): deep random units the reference can still do quickly, the side part's
 * BOUND2 row and corner-part BOUND1 rows included whenever the random prefix reaches them. */
START_TEST(random_deep_units_large_n) {
  for (int n = 17; n <= 32; n++) {
    tu_rng_mix((uint64_t)n * 0x100000001b3ull);
    for (int d = n - 9 > 2 ? n - 9 : 2; d <= n - 1; d++) {
      nq_unit_t u = tu_random_unit(n, d);
      check_unit(&u);
    }
  }
}
END_TEST

/* Completions of rows y..N-1 below the masks l, d, r (row y's), with no rule but the queens'
 * (and the side part's last row kept off lastmask): the count the blocked test claims is 0,
 * found without it. */
static uint64_t plain_completions(int n, int y, uint32_t mask, uint32_t lastmask, uint32_t l,
                                  uint32_t d, uint32_t r) {
  uint32_t free = mask & ~(l | d | r) & (y == n - 1 ? ~lastmask : ~0u);
  if (y == n - 1) return (uint64_t)__builtin_popcount(free);
  uint64_t c = 0;
  for (; free; free &= free - 1) {
    const uint32_t bit = free & -free;
    c += plain_completions(n, y + 1, mask, lastmask, (l | bit) << 1, d | bit, (r | bit) >> 1);
  }
  return c;
}

/* nq-solver-4's blocked test takes row N-6 from N = NQ_UNIT_LOOK5_N on (nq_unit_look): random
 * units on row N-6 of N = 20..22 are blocked now and then, and none of N = 19. A blocked unit has
 * no completion (counted without the rule), counts one node in the reference and in every
 * variant, and has no children. Random units a few rows above row N-6 (whose steps make the
 * blocked children) agree with the reference, nodes included. */
START_TEST(blocked_row_n6_from_n20) {
  ck_assert_int_eq(nq_unit_look(NQ_UNIT_LOOK5_N - 1), 4);
  ck_assert_int_eq(nq_unit_look(NQ_UNIT_LOOK5_N), 5);
  for (int n = NQ_UNIT_LOOK5_N - 1; n <= NQ_UNIT_LOOK5_N + 2; n++) {
    tu_rng_mix((uint64_t)n * 0x9e3779b97f4a7c15ull);
    int blocked = 0;
    for (int i = 0; i < 120; i++) {
      nq_unit_t u = tu_random_unit(n, n - 6);
      nq_unit_state_t st;
      ck_assert_int_eq(nq_unit_state(&u, &st), 0);
      if (nq_unit_cut(&st, u.part, u.depth, st.left, st.down, st.right, st.board) != 3) continue;
      blocked++;
      const uint32_t last = u.part == NQ_PART_SIDE ? st.lastmask : 0;
      ck_assert_uint_eq(plain_completions(n, u.depth, st.mask, last, st.left, st.down, st.right),
                        0);
      ck_assert_int_eq(tu_check_cut_unit(&u), 3);
      const nq_counts_t ref = {.nodes = 1}; /* what tu_check_cut_unit found in the reference */
      check_variants(&u, &ref);
    }
    if (n < NQ_UNIT_LOOK5_N)
      ck_assert_int_eq(blocked, 0);
    else
      ck_assert_int_gt(blocked, 0);
    for (int d = n - 10; d <= n - 7; d++)
      for (int r = 0; r < 3; r++) {
        nq_unit_t u = tu_random_unit(n, d);
        check_unit(&u);
      }
  }
}
END_TEST

/* A sample of the units of N = 14 at depth 3: searches big enough to fill many chunks. */
START_TEST(sampled_units_14) {
  tu_pick_t p;
  memset(&p, 0, sizeof p);
  ck_assert_int_eq(nq_units_generate(14, 3, tu_pick_cb, &p), 0);
  for (int i = 0; i < p.len; i += 4) check_unit(&p.v[i]);
}
END_TEST

/* Whole N through the pool with each variant selected: published values. */
START_TEST(whole_n_each_variant) {
  for (int i = 0; i < NVARIANTS; i++) {
    if (!nq_fast_kernel_available(variants[i])) {
      ck_assert_int_eq(nq_fast_kernel_set(variants[i]), NQ_ENODEV);
      continue;
    }
    ck_assert_int_eq(nq_fast_kernel_set(variants[i]), 0);
    ck_assert_int_eq(nq_fast_kernel_selected(), variants[i]);
    for (int n = 4; n <= 14; n++) {
      nq_counts_t c, one;
      nq_solve_opts_t o = {2, NULL, NULL, NULL, NULL, NULL, 0};
      ck_assert_int_eq(nq_solve_n(n, 3, &o, &c), 0);
      o.threads = 1;
      ck_assert_int_eq(nq_solve_n(n, 2, &o, &one), 0);
      const nq_known_t *k = nq_known(n);
      char total[40], uniq[40];
      snprintf(total, sizeof total, "%llu", (unsigned long long)(2 * c.c2 + 4 * c.c4 + 8 * c.c8));
      snprintf(uniq, sizeof uniq, "%llu", (unsigned long long)(c.c2 + c.c4 + c.c8));
      ck_assert_str_eq(total, k->total);
      ck_assert_str_eq(uniq, k->unique);
      ck_assert_uint_eq(c.nodes, one.nodes);
      ck_assert_uint_eq(c.c8, one.c8);
    }
  }
  ck_assert_int_eq(nq_fast_kernel_set(NQ_KERNEL_AUTO), 0);
  ck_assert_int_ne(nq_fast_kernel_selected(), NQ_KERNEL_AUTO);
}
END_TEST

/* NQ_KERNEL=scalar in the environment forces the portable path (the suite runs each test in a
 * fresh process, so the choice is made here for the first time). */
START_TEST(env_selects_kernel) {
  const char *fork = getenv("CK_FORK");
  setenv("NQ_KERNEL", "scalar", 1);
  if (!fork || strcmp(fork, "no") != 0) /* without fork an earlier test may have chosen */
    ck_assert_int_eq(nq_fast_kernel_selected(), NQ_KERNEL_SCALAR);
  nq_unit_t u;
  ck_assert_int_eq(nq_unit_parse("12:s:2:2,4", &u, NULL, 0), 0);
  check_unit(&u);
  ck_assert_str_eq(nq_fast_kernel_name(NQ_KERNEL_SCALAR), "scalar");
  ck_assert_str_eq(nq_fast_kernel_name(NQ_KERNEL_AVX512), "avx512");
  ck_assert_int_eq(nq_fast_kernel_available(NQ_KERNEL_SCALAR), 1);
  ck_assert_int_eq(nq_fast_kernel_set((nq_kernel_t)99), NQ_ENODEV);
}
END_TEST

START_TEST(invalid_units_rejected) {
  nq_unit_t u;
  nq_counts_t c;
  ck_assert_int_eq(nq_unit_parse("12:c:3:0,3,5", &u, NULL, 0), 0);
  u.prefix[2] = 4; /* attacked by row 1 */
  ck_assert_int_eq(nq_fast_solve_unit(&u, &c), NQ_EINVAL);
  for (int i = 0; i < NVARIANTS; i++)
    if (nq_fast_kernel_available(variants[i]))
      ck_assert_int_eq(nq_fast_solve_unit_kernel(&u, &c, variants[i]), NQ_EINVAL);
  u.depth = 12; /* beyond N-1 */
  ck_assert_int_ne(nq_fast_solve_unit(&u, &c), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("solver_fast");
  TCase *tc = tcase_create("fast_vs_reference");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, every_unit_small_n, 4, 14);
  tcase_add_loop_test(tc, random_units_15_16, 15, 17);
  tcase_add_test(tc, every_deep_unit);
  tcase_add_test(tc, random_deep_units_large_n);
  tcase_add_test(tc, blocked_row_n6_from_n20);
  tcase_add_test(tc, sampled_units_14);
  tcase_add_test(tc, whole_n_each_variant);
  tcase_add_test(tc, env_selects_kernel);
  tcase_add_test(tc, invalid_units_rejected);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
