/* Solver suite: published values for N = 1..16 (both implementations), units partition the search
 * exactly, node counts add up, threads do not change a single number, and an independent
 * brute-force orbit count confirms the COUNT2/4/8 table. */
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/unit.h"
#include "../common/solver/solver_simd.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void assert_known(int n, const nq_counts_t *c, const char *who) {
  const nq_known_t *k = nq_known(n);
  ck_assert_ptr_nonnull(k);
  nq_totals_t t;
  memset(&t, 0, sizeof t);
  nq_totals_add(&t, c);
  char total[40], uniq[40], c2[24], c4[24], c8[24];
  nq_u128_str(nq_totals_total(&t), total);
  nq_u128_str(nq_totals_unique(&t), uniq);
  snprintf(c2, sizeof c2, "%llu", (unsigned long long)c->c2);
  snprintf(c4, sizeof c4, "%llu", (unsigned long long)c->c4);
  snprintf(c8, sizeof c8, "%llu", (unsigned long long)c->c8);
  ck_assert_msg(!strcmp(total, k->total), "%s N=%d TOTAL %s != %s", who, n, total, k->total);
  ck_assert_msg(!strcmp(uniq, k->unique), "%s N=%d UNIQUE %s != %s", who, n, uniq, k->unique);
  ck_assert_msg(!strcmp(c2, k->c2), "%s N=%d COUNT2 %s != %s", who, n, c2, k->c2);
  ck_assert_msg(!strcmp(c4, k->c4), "%s N=%d COUNT4 %s != %s", who, n, c4, k->c4);
  ck_assert_msg(!strcmp(c8, k->c8), "%s N=%d COUNT8 %s != %s", who, n, c8, k->c8);
}

START_TEST(known_reference) {
  int n = _i;
  nq_counts_t c;
  ck_assert_int_eq(nq_ref_solve_n(n, &c), 0);
  assert_known(n, &c, "reference");
}
END_TEST

START_TEST(known_fast) {
  int n = _i;
  nq_counts_t c;
  nq_solve_opts_t o = {2, NULL, NULL, NULL, NULL, NULL, 0};
  ck_assert_int_eq(nq_solve_n(n, 3, &o, &c), 0);
  assert_known(n, &c, "fast");
  if (n >= NQ_UNIT_MIN_N && n <= 13) { /* the same tree: node counts agree too */
    nq_counts_t r;
    ck_assert_int_eq(nq_ref_solve_n(n, &r), 0);
    ck_assert_uint_eq(c.nodes, r.nodes);
  }
}
END_TEST

START_TEST(n1_reported_as_count1) {
  nq_counts_t c;
  ck_assert_int_eq(nq_solve_n(1, 2, NULL, &c), 0);
  ck_assert_uint_eq(c.count1, 1);
  ck_assert_uint_eq(c.c2 + c.c4 + c.c8, 0);
  ck_assert_int_eq(nq_solve_n(0, 2, NULL, &c), NQ_ERANGE);
  ck_assert_int_eq(nq_solve_n(33, 2, NULL, &c), NQ_ERANGE);
  ck_assert_int_eq(nq_ref_solve_n(-1, &c), NQ_ERANGE);
  ck_assert_int_eq(nq_ref_solve_n(33, &c), NQ_ERANGE);
}
END_TEST

typedef struct sum_s {
  nq_counts_t ref, fast;
  long units;
} sum_t;

static int sum_cb(const nq_unit_t *u, void *arg) {
  sum_t *s = arg;
  nq_counts_t r, f;
  ck_assert_int_eq(nq_ref_solve_unit(u, &r), 0);
  ck_assert_int_eq(nq_fast_solve_unit(u, &f), 0);
  char txt[NQ_UNIT_TEXT_MAX];
  nq_unit_format(u, txt, sizeof txt);
  ck_assert_msg(r.c2 == f.c2 && r.c4 == f.c4 && r.c8 == f.c8 && r.nodes == f.nodes,
                "unit %s: fast differs from reference", txt);
  s->ref.c2 += r.c2;
  s->ref.c4 += r.c4;
  s->ref.c8 += r.c8;
  s->units++;
  return 0;
}

/* Units at depths 2, 3 and 4 sum exactly to the whole, for N = 4..14. */
START_TEST(units_partition_search) {
  int n = _i;
  nq_counts_t whole;
  ck_assert_int_eq(nq_ref_solve_n(n, &whole), 0);
  for (int d = 2; d <= 4; d++) {
    sum_t s;
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(nq_units_generate(n, d, sum_cb, &s), 0);
    ck_assert_msg(s.ref.c2 == whole.c2 && s.ref.c4 == whole.c4 && s.ref.c8 == whole.c8,
                  "N=%d depth %d: units do not sum to the whole", n, d);
    ck_assert_int_gt(s.units, 0);
  }
}
END_TEST

/* nodes(unit) = 1 + sum of nodes(children): the node count is a property of the tree. */
typedef struct kids_s {
  uint64_t nodes;
  nq_counts_t sum;
} kids_t;

static int kid_cb(const nq_unit_t *u, void *arg) {
  kids_t *k = arg;
  nq_counts_t c;
  ck_assert_int_eq(nq_ref_solve_unit(u, &c), 0);
  k->nodes += c.nodes;
  nq_counts_add(&k->sum, &c);
  return 0;
}

static int parent_cb(const nq_unit_t *u, void *arg) {
  (void)arg;
  nq_counts_t c;
  ck_assert_int_eq(nq_ref_solve_unit(u, &c), 0);
  if (u->depth + 1 > u->n - 1) return 0;
  kids_t k;
  memset(&k, 0, sizeof k);
  ck_assert_int_eq(nq_unit_children(u, kid_cb, &k), 0);
  ck_assert_uint_eq(c.nodes, 1 + k.nodes);
  ck_assert(c.c2 == k.sum.c2 && c.c4 == k.sum.c4 && c.c8 == k.sum.c8);
  return 0;
}

START_TEST(node_count_is_additive) {
  for (int n = 5; n <= 11; n++)
    for (int d = 2; d <= 4; d++) ck_assert_int_eq(nq_units_generate(n, d, parent_cb, NULL), 0);
}
END_TEST

/* The cut nodes (nq_unit_cut): nq-solver-2's dead nodes (nq_unit_dead, side part) and
 * nq-solver-4's blocked ones (nq_unit_blocked, rows N-5 and N-4 at these N, both parts). A cut
 * unit counts one node and nothing else in every solver, has no children, and a prefix that
 * goes below one is refused with its reason (tu_check_cut_unit). */
typedef struct cut_s {
  long units, dead, blocked, blocked_corner;
} cut_t;

static int cut_cb(const nq_unit_t *u, void *arg) {
  cut_t *t = arg;
  nq_unit_state_t st;
  t->units++;
  ck_assert_int_eq(nq_unit_state(u, &st), 0);
  const int cut = nq_unit_cut(&st, u->part, u->depth, st.left, st.down, st.right, st.board);
  if (!cut) return 0;
  ck_assert_int_eq(tu_check_cut_unit(u), cut);
  if (cut == 2) t->dead++;
  if (cut == 3) {
    t->blocked++;
    t->blocked_corner += u->part == NQ_PART_CORNER;
  }
  return 0;
}

START_TEST(cut_nodes_have_no_subtree) {
  cut_t t = {0, 0, 0, 0};
  for (int n = 8; n <= 13; n++)
    for (int d = 2; d <= n - 4; d++) ck_assert_int_eq(nq_units_generate(n, d, cut_cb, &t), 0);
  /* both rules fire, in both parts, and not on everything (N=8..13, depths 2..N-4) */
  ck_assert_int_gt(t.dead, 100);
  ck_assert_int_gt(t.blocked, 100);
  ck_assert_int_gt(t.blocked_corner, 10);
  ck_assert_int_lt((t.dead + t.blocked) * 2, t.units);
}
END_TEST

/* nq_unit_blocked on boards written out by hand (N=8: rows 3 = N-5 and 4 = N-4 only). */
static void hand_masks(const int *cols, int rows, uint32_t *l, uint32_t *d, uint32_t *r) {
  *l = *d = *r = 0;
  for (int y = 0; y < rows; y++) {
    uint32_t bit = 1u << cols[y];
    *l = (*l | bit) << 1;
    *d |= bit;
    *r = (*r | bit) >> 1;
  }
}

START_TEST(blocked_rule_by_hand) {
  const uint32_t m = 0xff;
  uint32_t l, d, r;
  /* columns 0, 2, 4 on rows 0..2, a node on row 3; the open columns: row 3 1, 6, 7; row 4 1, 3,
   * 7; row 5 3; row 6 1, 3, 5; row 7 1, 3, 5, 6. Every row has one, every free column (1, 3, 5,
   * 6, 7) a row. */
  const int a[] = {0, 2, 4, 7};
  hand_masks(a, 3, &l, &d, &r);
  ck_assert_int_eq(nq_unit_blocked(m, 0, 7, 3, l, d, r), 0);
  /* the same with LASTMASK over row 7's columns 1, 3, 5, 6: the last row has none */
  ck_assert_int_eq(nq_unit_blocked(m, 0x6a, 7, 3, l, d, r), 1);
  ck_assert_int_eq(nq_unit_blocked(m, 0x2a, 7, 3, l, d, r), 0);
  /* rows outside N-5..N-4 are never blocked, whatever the masks */
  ck_assert_int_eq(nq_unit_blocked(m, 0x6a, 7, 2, l, d, r), 0);
  /* and 0, 2, 4, 7 on rows 0..3: a node on row 4 with columns for every row */
  hand_masks(a, 4, &l, &d, &r);
  ck_assert_int_eq(nq_unit_blocked(m, 0, 7, 4, l, d, r), 0);
  ck_assert_int_eq(nq_unit_blocked(m, 0, 7, 5, l, d, r), 0);
  /* 0, 2, 4, 1: row 5 has no column */
  const int b[] = {0, 2, 4, 1};
  hand_masks(b, 4, &l, &d, &r);
  ck_assert_int_eq(nq_unit_blocked(m, 0, 7, 4, l, d, r), 1);
  /* 0, 2, 4, 6: every row has a column (1 and 3; 3; 1 and 5; 1, 3, 5), but free column 7 none */
  const int c[] = {0, 2, 4, 6};
  hand_masks(c, 4, &l, &d, &r);
  ck_assert_int_eq(nq_unit_blocked(m, 0, 7, 4, l, d, r), 1);
}
END_TEST

/* Multi-threaded equals single-threaded, node count included. */
START_TEST(threads_do_not_change_results) {
  int ns[] = {8, 11, 12, 13, 14};
  int ts[] = {2, 3, 4, 7};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    nq_counts_t one, many;
    nq_solve_opts_t o1 = {1, NULL, NULL, NULL, NULL, NULL, 0};
    ck_assert_int_eq(nq_solve_n(ns[i], 2, &o1, &one), 0);
    for (size_t j = 0; j < sizeof ts / sizeof ts[0]; j++) {
      nq_solve_opts_t o = {ts[j], NULL, NULL, NULL, NULL, NULL, 0};
      ck_assert_int_eq(nq_solve_n(ns[i], 2 + (int)j % 3, &o, &many), 0);
      ck_assert(memcmp(&one, &many, sizeof one) == 0);
    }
  }
  /* One unit split over threads equals the same unit on one thread. */
  nq_unit_t u;
  ck_assert_int_eq(nq_unit_parse("15:s:3:3,1", &u, NULL, 0), 0);
  nq_counts_t a, b;
  nq_solve_opts_t o4 = {4, NULL, NULL, NULL, NULL, NULL, 0};
  ck_assert_int_eq(nq_fast_solve_unit(&u, &a), 0);
  ck_assert_int_eq(nq_solve_unit(&u, &o4, &b), 0);
  ck_assert(memcmp(&a, &b, sizeof a) == 0);
}
END_TEST

static void on_progress(uint64_t nodes, void *arg) { *(uint64_t *)arg = nodes; }

START_TEST(cancel_and_progress) {
  volatile int cancel = 1;
  nq_counts_t c;
  nq_solve_opts_t o = {2, NULL, NULL, &cancel, NULL, NULL, 0};
  ck_assert_int_eq(nq_solve_n(12, 3, &o, &c), NQ_ECANCELED);
  uint64_t seen = 0;
  nq_solve_opts_t p = {2, on_progress, &seen, NULL, NULL, NULL, 0};
  ck_assert_int_eq(nq_solve_n(15, 3, &p, &c), 0);
  ck_assert_uint_le(seen, c.nodes); /* progress never claims more than the final count */
}
END_TEST

/* Independent check of the COUNT2/4/8 table: enumerate every solution of N with a plain
 * permutation search and count orbits by size under the 8 board symmetries. */
static int bf_n, bf_col[16];
static long bf_orbits[9];

static void bf_transform(const int *p, int t, int *q) {
  int n = bf_n;
  for (int r = 0; r < n; r++) {
    int c = p[r], rr = r, cc = c;
    for (int k = 0; k < (t & 3); k++) { /* rotate 90 degrees: (r, c) -> (c, n-1-r) */
      int tr = cc;
      cc = n - 1 - rr;
      rr = tr;
    }
    if (t & 4) cc = n - 1 - cc;
    q[rr] = cc;
  }
}

static void bf_leaf(void) {
  int images[8][16], smaller = 0, distinct = 0;
  for (int t = 0; t < 8; t++) bf_transform(bf_col, t, images[t]);
  for (int t = 1; t < 8; t++)
    if (memcmp(images[t], bf_col, sizeof(int) * (size_t)bf_n) < 0) smaller = 1;
  if (smaller) return; /* count each orbit once, at its smallest member */
  for (int t = 0; t < 8; t++) {
    int seen = 0;
    for (int s = 0; s < t; s++)
      if (!memcmp(images[s], images[t], sizeof(int) * (size_t)bf_n)) seen = 1;
    distinct += !seen;
  }
  bf_orbits[distinct]++;
}

static void bf_place(int r) {
  if (r == bf_n) {
    bf_leaf();
    return;
  }
  for (int c = 0; c < bf_n; c++) {
    int ok = 1;
    for (int k = 0; k < r && ok; k++)
      if (bf_col[k] == c || abs(bf_col[k] - c) == r - k) ok = 0;
    if (ok) {
      bf_col[r] = c;
      bf_place(r + 1);
    }
  }
}

START_TEST(bruteforce_orbits_match_table) {
  for (bf_n = 4; bf_n <= 10; bf_n++) {
    memset(bf_orbits, 0, sizeof bf_orbits);
    bf_place(0);
    const nq_known_t *k = nq_known(bf_n);
    ck_assert_int_eq(bf_orbits[2], atol(k->c2));
    ck_assert_int_eq(bf_orbits[4], atol(k->c4));
    ck_assert_int_eq(bf_orbits[8], atol(k->c8));
    nq_counts_t c;
    ck_assert_int_eq(nq_solve_n(bf_n, 2, NULL, &c), 0);
    ck_assert_int_eq((long)c.c2, bf_orbits[2]);
    ck_assert_int_eq((long)c.c4, bf_orbits[4]);
    ck_assert_int_eq((long)c.c8, bf_orbits[8]);
  }
}
END_TEST

START_TEST(totals_128bit) {
  nq_totals_t t;
  memset(&t, 0, sizeof t);
  nq_counts_t big = {UINT64_MAX, UINT64_MAX, UINT64_MAX, 0, UINT64_MAX};
  for (int i = 0; i < 16; i++) nq_totals_add(&t, &big);
  char buf[40];
  /* 16 * (2+4+8) * (2^64-1) = 224 * 18446744073709551615 */
  ck_assert_str_eq(nq_u128_str(nq_totals_total(&t), buf), "4132070672510939561760");
  nq_u128 v;
  ck_assert_int_eq(nq_u128_parse("4132070672510939561760", &v), 0);
  ck_assert(v == nq_totals_total(&t));
  ck_assert_int_eq(nq_u128_parse("340282366920938463463374607431768211455", &v), 0);
  ck_assert_int_eq(nq_u128_parse("340282366920938463463374607431768211456", &v), NQ_EOVERFLOW);
  ck_assert_int_eq(nq_u128_parse("12a", &v), NQ_EINVAL);
  ck_assert_int_eq(nq_u128_parse("", &v), NQ_EINVAL);
  ck_assert_str_eq(nq_u128_str(0, buf), "0");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("solver");
  TCase *tc = tcase_create("known");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, known_reference, 1, 17);
  tcase_add_loop_test(tc, known_fast, 1, 17);
  tcase_add_test(tc, n1_reported_as_count1);
  tcase_add_test(tc, bruteforce_orbits_match_table);
  tcase_add_test(tc, totals_128bit);
  suite_add_tcase(s, tc);
  TCase *tu = tcase_create("units");
  tcase_set_timeout(tu, 300);
  tcase_add_loop_test(tu, units_partition_search, 4, 15);
  tcase_add_test(tu, node_count_is_additive);
  tcase_add_test(tu, cut_nodes_have_no_subtree);
  tcase_add_test(tu, blocked_rule_by_hand);
  tcase_add_test(tu, threads_do_not_change_results);
  tcase_add_test(tu, cancel_and_progress);
  suite_add_tcase(s, tu);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
