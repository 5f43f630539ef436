/* Unit model suite: text round trip for every generated unit, counts of units, and every
 * malformed or impossible unit text we could think of is rejected with a reason. */
#include "nq/nq.h"
#include "nq/unit.h"
#include "testutil.h"

#include <stdio.h>
#include <string.h>

static int roundtrip_cb(const nq_unit_t *u, void *arg) {
  char txt[NQ_UNIT_TEXT_MAX], err[160];
  ck_assert_int_gt(nq_unit_format(u, txt, sizeof txt), 0);
  nq_unit_t back;
  ck_assert_msg(nq_unit_parse(txt, &back, err, sizeof err) == 0, "%s: %s", txt, err);
  ck_assert_int_eq(back.n, u->n);
  ck_assert_int_eq(back.part, u->part);
  ck_assert_int_eq(back.bound1, u->bound1);
  ck_assert_int_eq(back.depth, u->depth);
  ck_assert(memcmp(back.prefix, u->prefix, (size_t)u->depth) == 0);
  (*(long *)arg)++;
  return 0;
}

START_TEST(every_generated_unit_round_trips) {
  for (int n = 4; n <= 14; n++)
    for (int d = 2; d <= 5; d++) {
      long count = 0;
      ck_assert_int_eq(nq_units_generate(n, d, roundtrip_cb, &count), 0);
      ck_assert_int_gt(count, 0);
    }
  long count = 0;
  ck_assert_int_eq(nq_units_generate(32, 3, roundtrip_cb, &count), 0);
  ck_assert_int_gt(count, 1000);
}
END_TEST

START_TEST(depth_is_capped_and_checked) {
  ck_assert_int_eq(nq_unit_effective_depth(4, 4), 3);
  ck_assert_int_eq(nq_unit_effective_depth(18, 3), 3);
  ck_assert_int_eq(nq_units_generate(3, 2, roundtrip_cb, NULL), NQ_ERANGE);
  ck_assert_int_eq(nq_units_generate(33, 2, roundtrip_cb, NULL), NQ_ERANGE);
  ck_assert_int_eq(nq_units_generate(8, 1, roundtrip_cb, NULL), NQ_ERANGE);
}
END_TEST

/* Every depth outside 2..N-1 is refused with a message naming the valid range; every depth
 * inside is accepted; N without units is refused whatever the depth. */
START_TEST(depth_out_of_range_refused) {
  const int odd[] = {-5, -1, 0, 1, 33, 100, 1000};
  char err[200], want[40];
  for (int n = NQ_UNIT_MIN_N; n <= NQ_MAX_N; n++) {
    snprintf(want, sizeof want, "must be 2..%d", n - 1);
    for (int d = 2; d <= n - 1; d++) ck_assert_int_eq(nq_unit_depth_check(n, d, err, sizeof err), 0);
    for (int d = n; d <= n + 2; d++) {
      err[0] = '\0';
      ck_assert_int_eq(nq_unit_depth_check(n, d, err, sizeof err), NQ_ERANGE);
      ck_assert_msg(strstr(err, "out of range") && strstr(err, want), "N=%d d=%d: %s", n, d, err);
    }
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
      if (odd[i] >= 2 && odd[i] <= n - 1) continue;
      err[0] = '\0';
      ck_assert_int_eq(nq_unit_depth_check(n, odd[i], err, sizeof err), NQ_ERANGE);
      ck_assert_msg(strstr(err, want), "N=%d d=%d: %s", n, odd[i], err);
    }
  }
  ck_assert_int_eq(nq_unit_depth_check(3, 2, err, sizeof err), NQ_ERANGE);
  ck_assert_ptr_nonnull(strstr(err, "no units"));
  ck_assert_int_eq(nq_unit_depth_check(33, 5, NULL, 0), NQ_ERANGE);
  /* The example: N=14 at depth 20 was silently depth 13. */
  ck_assert_int_eq(nq_unit_depth_check(14, 20, err, sizeof err), NQ_ERANGE);
  ck_assert_str_eq(err, "depth 20 is out of range for N=14: the depth (rows in a unit's prefix) "
                        "must be 2..13");
}
END_TEST

/* nq_units_count agrees with the generator, and with the figures for record N. */
START_TEST(units_counted) {
  uint64_t c;
  long count = 0;
  ck_assert_int_eq(nq_units_generate(13, 3, roundtrip_cb, &count), 0);
  ck_assert_int_eq(nq_units_count(13, 3, &c), 0);
  ck_assert_uint_eq(c, (uint64_t)count);
  ck_assert_uint_eq(c, 351);
  ck_assert_int_eq(nq_units_count(27, 4, &c), 0);
  ck_assert_uint_eq(c, 101593);
  ck_assert_int_eq(nq_units_count(28, 5, &c), 0);
  /* nq-solver-2: no units below a dead node; nq-solver-4's blocked nodes (rows N-6..N-4 at this
   * N) lie far below depth 5 */
  ck_assert_uint_eq(c, 2098052);
  ck_assert_int_eq(nq_units_count(3, 2, &c), NQ_ERANGE);
}
END_TEST

START_TEST(valid_examples) {
  nq_unit_t u;
  char err[160];
  ck_assert_msg(nq_unit_parse("18:c:5:0,5,12", &u, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(u.part, NQ_PART_CORNER);
  ck_assert_int_eq(u.bound1, 5);
  ck_assert_int_eq(u.depth, 3);
  ck_assert_msg(nq_unit_parse("18:s:3:3,1", &u, err, sizeof err) == 0, "%s", err);
  ck_assert_msg(nq_unit_parse("32:s:1:1,3", &u, err, sizeof err) == 0, "%s", err);
  nq_unit_state_t st;
  ck_assert_int_eq(nq_unit_state(&u, &st), 0);
  ck_assert_uint_eq(st.mask, 0xffffffffu);
  ck_assert_uint_eq(st.topbit, 0x80000000u);
  ck_assert_uint_eq(st.sidemask, 0x80000001u);
  ck_assert_uint_eq(st.down, (1u << 1) | (1u << 3));
}
END_TEST

static const struct {
  const char *text;
  const char *why;
} bad[] = {
    {"", "empty"},
    {"18", "N only"},
    {"18:c", "no BOUND1"},
    {"18:c:5", "no prefix"},
    {"18:c:5:", "empty prefix"},
    {"18:c:5:0", "prefix of one row"},
    {"18:x:5:0,5", "unknown part"},
    {"18:C:5:0,5", "upper-case part"},
    {"3:c:2:0,2", "N below 4"},
    {"33:c:5:0,5", "N above 32"},
    {"0:c:5:0,5", "N zero"},
    {"-18:c:5:0,5", "negative N"},
    {"018:c:5:0,5", "leading zero in N"},
    {"18:c:05:0,5", "leading zero in BOUND1"},
    {"18:c:5:0,05", "leading zero in a column"},
    {" 18:c:5:0,5", "leading space"},
    {"18:c:5:0,5 ", "trailing space"},
    {"18:c:5:0,5,", "trailing comma"},
    {"18:c:5:0,,5", "empty column"},
    {"18:c:5:0;5", "wrong separator"},
    {"18:c:5:0,5,18", "column off the board"},
    {"18:c:5:0,5,100", "three-digit column"},
    {"18:c:1:0,1", "corner BOUND1 below 2"},
    {"18:c:17:0,17", "corner BOUND1 above N-2"},
    {"18:c:5:1,5", "corner row 0 not in column 0"},
    {"18:c:5:0,6", "corner row 1 not at BOUND1"},
    {"18:c:5:0,5,5", "queen attacked along the column"},
    {"18:c:5:0,5,6", "queen attacked along the diagonal"},
    {"18:c:5:0,5,1", "corner: column 1 before BOUND1"},
    {"18:s:0:0,2", "side BOUND1 zero"},
    {"18:s:9:9,2", "side BOUND1 not below BOUND2"},
    {"18:s:3:4,1", "side row 0 not at BOUND1"},
    {"18:s:3:3,0", "side: column 0 before BOUND1"},
    {"18:s:3:3,17", "side: column N-1 before BOUND1"},
    {"8:s:1:1,3,5,7,2,0,6,4", "prefix covering the last row"},
    {"8:s:2:2,4,6,1,3,5", "row BOUND2 reached with no corner queen: the search cuts there"},
    {"18:c:5:0,5,12,3,7,1,9,11,13,15,2,4,6,8,10,14,16,17,1", "prefix longer than the board"},
    {"18:c:5:0,5,a", "non-digit"},
    {"18:c:5:0,5:12", "extra field"},
};

START_TEST(malformed_units_rejected) {
  int i = _i;
  nq_unit_t u;
  char err[160] = "";
  int rc = nq_unit_parse(bad[i].text, &u, err, sizeof err);
  ck_assert_msg(rc == NQ_EINVAL || rc == NQ_ERANGE, "accepted '%s' (%s)", bad[i].text, bad[i].why);
  ck_assert_msg(err[0] != '\0', "no reason given for '%s'", bad[i].text);
}
END_TEST

START_TEST(overlong_and_null_rejected) {
  char longtext[400];
  memset(longtext, '1', sizeof longtext - 1);
  longtext[sizeof longtext - 1] = '\0';
  nq_unit_t u;
  ck_assert_int_eq(nq_unit_parse(longtext, &u, NULL, 0), NQ_EINVAL);
  ck_assert_int_eq(nq_unit_parse(NULL, &u, NULL, 0), NQ_EINVAL);
  /* A struct with an impossible prefix is refused by validate and state alike. */
  nq_unit_t v;
  memset(&v, 0, sizeof v);
  v.n = 10;
  v.part = NQ_PART_CORNER;
  v.bound1 = 3;
  v.depth = 3;
  v.prefix[1] = 3;
  v.prefix[2] = 3;
  nq_unit_state_t st;
  ck_assert_int_eq(nq_unit_validate(&v, NULL, 0), NQ_EINVAL);
  ck_assert_int_eq(nq_unit_state(&v, &st), NQ_EINVAL);
  v.prefix[2] = 40;
  ck_assert_int_eq(nq_unit_validate(&v, NULL, 0), NQ_EINVAL);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("unit");
  TCase *tc = tcase_create("unit");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, every_generated_unit_round_trips);
  tcase_add_test(tc, depth_is_capped_and_checked);
  tcase_add_test(tc, depth_out_of_range_refused);
  tcase_add_test(tc, units_counted);
  tcase_add_test(tc, valid_examples);
  tcase_add_loop_test(tc, malformed_units_rejected, 0, (int)(sizeof bad / sizeof bad[0]));
  tcase_add_test(tc, overlong_and_null_rejected);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
