/* Client receipts suite (client/receipts.c, nq/receipts.h): the receipt lines written and read
 * back, the receipts kept from acks in the state folder, pruned by job (the previous job's and the
 * running one's stay) and bounded in size. Their check against a published file is in
 * tests/test_evidence.c and tests/e2e_receipts.sh. */
#include "receipts.h"
#include "testutil.h"

#include "nq/files.h"
#include "nq/nq.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const LEAF = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

/* The lines of dir/receipts, one job number each in jobs[] (at most max); their count. */
static int read_jobs(const char *dir, int64_t *jobs, int max) {
  char path[600], line[NQ_RECEIPT_LINE_MAX + 2];
  snprintf(path, sizeof path, "%s/" NQ_RECEIPTS_FILE, dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int n = 0;
  while (fgets(line, sizeof line, f) && n < max) {
    nq_receipt_t r;
    size_t len = strlen(line);
    ck_assert(len > 0 && line[len - 1] == '\n');
    ck_assert_int_eq(nq_receipt_parse(line, len - 1, &r), 0);
    ck_assert_str_eq(r.unit, "12:c:2:0,2,4");
    jobs[n++] = r.job;
  }
  fclose(f);
  return n;
}

static nq_ack_t ack(int64_t job, int64_t id) {
  return (nq_ack_t){.id = id, .status = NQ_ACK_ACCEPTED, .has_receipt = 1, .job = job,
                    .unit = "12:c:2:0,2,4", .leaf = LEAF};
}

/* A line and its parse agree; malformed lines are refused. */
START_TEST(line_round_trip) {
  nq_receipt_t r = {.job = 3, .id = 1041}, b;
  snprintf(r.unit, sizeof r.unit, "28:s:5:1,3,5,7,9");
  memset(r.leaf, 0xab, sizeof r.leaf);
  char line[NQ_RECEIPT_LINE_MAX];
  int n = nq_receipt_format(&r, line, sizeof line);
  ck_assert_int_gt(n, 0);
  ck_assert_int_eq(nq_receipt_parse(line, (size_t)n - 1, &b), 0);
  ck_assert(!memcmp(&r, &b, sizeof r));
  static const char *const bad[] = {
      "", "3 1041 28:s:5:1", "3 0 6:c:2:0,2 %s", "03 1 6:c:2:0,2 %s", "-3 1 6:c:2:0,2 %s",
      "3 1 6:C:2:0,2 %s", "3 1  6:c:2:0,2 %s", "3 1 6:c:2:0,2 %sff", "3 1 6:c:2:0,2 x%.63s",
      "1234567890123456789 1 6:c:2:0,2 %s", "9999999999999999999 1 6:c:2:0,2 %s",
      "3 9999999999999999999999999999999 6:c:2:0,2 %s"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char l[300];
    snprintf(l, sizeof l, bad[i], LEAF);
    ck_assert_msg(nq_receipt_parse(l, strlen(l), &b) != 0, "accepted '%s'", l);
  }
}
END_TEST

/* Kept from acks: an ack without a receipt keeps nothing; a new job drops every job's receipts but
 * the one before it. */
START_TEST(kept_and_pruned_by_job) {
  char *dir = tu_tmpdir("receipts");
  int64_t jobs[16];
  nq_ack_t none = {.id = 1, .status = NQ_ACK_ACCEPTED};
  ck_assert_int_eq(cli_receipt_keep(dir, &none), 0);
  ck_assert_int_eq(read_jobs(dir, jobs, 16), 0);
  for (int i = 0; i < 3; i++) {
    nq_ack_t a = ack(1, 10 + i);
    ck_assert_int_eq(cli_receipt_keep(dir, &a), 0);
  }
  for (int i = 0; i < 2; i++) {
    nq_ack_t a = ack(2, 20 + i);
    ck_assert_int_eq(cli_receipt_keep(dir, &a), 0);
  }
  ck_assert_int_eq(read_jobs(dir, jobs, 16), 5);
  nq_ack_t a = ack(3, 30);
  ck_assert_int_eq(cli_receipt_keep(dir, &a), 0);
  ck_assert_int_eq(read_jobs(dir, jobs, 16), 3);
  ck_assert(jobs[0] == 2 && jobs[1] == 2 && jobs[2] == 3);
  /* A receipt the server sent wrong is not kept. */
  nq_ack_t bad = ack(3, 31);
  bad.leaf = "xyz";
  ck_assert_int_eq(cli_receipt_keep(dir, &bad), NQ_EINVAL);
  ck_assert_int_eq(read_jobs(dir, jobs, 16), 3);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* However many acks a server sends, the file stays within its bound: past it a receipt is not
 * kept (NQ_ETOOBIG), and a new job makes room again. */
START_TEST(bounded_in_size) {
  char *dir = tu_tmpdir("receipts");
  char path[600];
  snprintf(path, sizeof path, "%s/" NQ_RECEIPTS_FILE, dir);
  int kept = 0, refused = 0;
  for (int i = 0; i < 50; i++) {
    nq_ack_t a = ack(7, 100 + i);
    int rc = cli_receipt_keep_max(dir, &a, 1000);
    ck_assert(rc == 0 || rc == NQ_ETOOBIG);
    kept += rc == 0;
    refused += rc == NQ_ETOOBIG;
  }
  struct stat sb;
  ck_assert_int_eq(stat(path, &sb), 0);
  ck_assert_int_le(sb.st_size, 1000);
  ck_assert_int_gt(kept, 5);
  ck_assert_int_eq(kept + refused, 50);
  /* A new job whose predecessor fills the file: the new job's receipts take its place. */
  nq_ack_t a = ack(8, 500);
  ck_assert_int_eq(cli_receipt_keep_max(dir, &a, 1000), 0);
  int64_t jobs[64];
  ck_assert_int_eq(read_jobs(dir, jobs, 64), 1);
  ck_assert(jobs[0] == 8);
  /* The next: job 8's stay beside it. */
  a = ack(9, 600);
  ck_assert_int_eq(cli_receipt_keep_max(dir, &a, 1000), 0);
  ck_assert_int_eq(read_jobs(dir, jobs, 64), 2);
  ck_assert(jobs[0] == 8 && jobs[1] == 9);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("receipts");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, line_round_trip);
  tcase_add_test(tc, kept_and_pruned_by_job);
  tcase_add_test(tc, bounded_in_size);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
