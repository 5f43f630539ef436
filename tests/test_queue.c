/* Job queue suite: the job options declared once (common/solver/job_opts.c, nq/job_opts.h)
 * and the store's queue (server/store/store_queue.c): add with checks, order, cancel, the server's
 * marks, what survives a reopen, and a done job that stays done once archived. The server's
 * switch to the next job runs end to end in tests/e2e_queue.sh. */
#include "fx_store.h"
#include "nq/job_opts.h"
#include "nq/nq.h"
#include "store_api.h"
#include "store_queue.h"
#include "testutil.h"

#include <stdio.h>
#include <string.h>

/* ---- job options ------------------------------------------------------------------------- */

START_TEST(jobopts_parse_and_check) {
  nq_jobopts_t o;
  char err[200];
  nq_jobopts_default(&o);
  ck_assert_int_eq(o.quorum, 2);
  ck_assert_int_eq(o.max_results, 5);
  ck_assert_int_eq(o.n, 0);
  ck_assert_int_eq(o.diverse_kernels, -1); /* N's default */
  /* No N yet: the check names the range. */
  ck_assert_int_eq(nq_jobopts_check(&o, err, sizeof err), NQ_ERANGE);
  ck_assert_ptr_nonnull(strstr(err, "4..32"));
  ck_assert_int_eq(nq_jobopt_set(&o, NQ_JOBOPT_N, "11", err, sizeof err), 0);
  ck_assert_int_eq(nq_jobopt_set(&o, NQ_JOBOPT_UNIT_SECONDS, "5", err, sizeof err), 0);
  ck_assert_int_eq(nq_jobopt_set(&o, NQ_JOBOPT_MAX_DEPTH, "7", err, sizeof err), 0);
  ck_assert_int_eq(nq_jobopt_set(&o, NQ_JOBOPT_QUORUM, "3", err, sizeof err), 0);
  ck_assert_int_eq(nq_jobopt_set(&o, NQ_JOBOPT_DIVERSE_KERNELS, "0", err, sizeof err), 0);
  ck_assert_int_eq(o.diverse_kernels, 0);
  ck_assert_int_eq(nq_jobopts_check(&o, err, sizeof err), 0);
  ck_assert(o.n == 11 && o.unit_seconds == 5 && o.max_depth == 7 && o.quorum == 3);
  /* Each value out of range names its option and what it takes. */
  static const struct {
    int key;
    const char *value, *want;
  } bad[] = {{NQ_JOBOPT_N, "3", "--n: expected an integer 4..32"},
             {NQ_JOBOPT_N, "11x", "--n: expected"},
             {NQ_JOBOPT_QUORUM, "0", "--quorum: expected an integer 1..100"},
             {NQ_JOBOPT_MAX_RESULTS, "1001", "--max-results"},
             {NQ_JOBOPT_DIVERSE_KERNELS, "9", "--diverse-kernels: expected an integer 0..8"},
             {NQ_JOBOPT_DIVERSE_KERNELS, "-1", "--diverse-kernels"},
             {NQ_JOBOPT_UNIT_SECONDS, "fast", "--unit-seconds: expected a number"},
             {NQ_JOBOPT_UNIT_SECONDS, "0", "--unit-seconds"},
             {NQ_JOBOPT_DEPTH, "", "--depth"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    nq_jobopts_t before = o;
    ck_assert_int_ne(nq_jobopt_set(&o, bad[i].key, bad[i].value, err, sizeof err), 0);
    ck_assert_msg(strstr(err, bad[i].want) != NULL, "%s: %s", bad[i].value, err);
    ck_assert(memcmp(&before, &o, sizeof o) == 0); /* a refused value changes nothing */
  }
  /* Across options. */
  nq_jobopts_t c = o;
  c.max_results = 2;
  ck_assert_int_eq(nq_jobopts_check(&c, err, sizeof err), NQ_ERANGE);
  ck_assert_ptr_nonnull(strstr(err, "--max-results must be >= --quorum"));
  c = o;
  c.depth = 4;
  ck_assert_int_eq(nq_jobopts_check(&c, err, sizeof err), NQ_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "flat job"));
  c = o;
  c.max_depth = 11; /* 2..N-1 */
  ck_assert_int_eq(nq_jobopts_check(&c, err, sizeof err), NQ_ERANGE);
  ck_assert_ptr_nonnull(strstr(err, "--max-depth"));
  c.max_depth = 0;
  c.unit_seconds = 0;
  c.depth = 1;
  ck_assert_int_eq(nq_jobopts_check(&c, err, sizeof err), NQ_ERANGE);
}
END_TEST

START_TEST(jobopts_table) {
  /* The table (nq/opts.h): --n first, so that nq-admin job add (N an argument) takes the rest;
   * every job option takes a value. */
  int n = 0;
  ck_assert_str_eq(nq_jobopts_table[NQ_JOBOPT_N].name, "n");
  for (const nq_opt_t *p = nq_jobopts_table + 1; p->type != NQ_OPT_END; p++, n++) {
    ck_assert_str_ne(p->name, "n");
    ck_assert(p->type != NQ_OPT_FLAG && p->type != NQ_OPT_SECTION);
  }
  ck_assert_int_eq(n, NQ_JOBOPT_COUNT - 1);
  /* The help: one entry per option, aligned. */
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_ptr_nonnull(f);
  nq_jobopts_usage(f, 0);
  fclose(f);
  ck_assert_ptr_null(strstr(buf, "--n N"));
  ck_assert_ptr_nonnull(strstr(buf, "  --quorum Q            agreeing results"));
  ck_assert_ptr_nonnull(strstr(buf, "  --unit-seconds S      units sized"));
  free(buf);
}
END_TEST

/* ---- the store's queue ------------------------------------------------------------------- */

static nq_jobopts_t job_for(int n, int depth) {
  nq_jobopts_t o;
  nq_jobopts_default(&o);
  o.n = n;
  o.depth = depth;
  return o;
}

typedef struct seen_s {
  int n;
  int64_t ids[16];
} seen_t;

static int seen_cb(const srv_queued_t *q, void *arg) {
  seen_t *s = arg;
  ck_assert_int_lt(s->n, 16);
  s->ids[s->n++] = q->id;
  return 0;
}

START_TEST(queue_add_order_cancel_mark) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  srv_queued_t q, r;
  ck_assert_int_eq(srv_queue_next(f.st, &q), NQ_ENOTFOUND);
  nq_jobopts_t a = job_for(10, 4), b = job_for(11, 0), c = job_for(12, 0);
  b.unit_seconds = 30;
  b.max_depth = 8;
  b.quorum = 3;
  b.max_results = 7;
  b.diverse_kernels = 3;
  ck_assert_int_eq(srv_queue_add(f.st, &a, T0 + 1, &q), 0);
  ck_assert_int_eq(q.opts.diverse_kernels, -1); /* not given: N's default when it starts */
  ck_assert_int_eq(q.state, SRV_QUEUE_QUEUED);
  ck_assert_int_eq(q.added, T0 + 1);
  int64_t ia = q.id;
  ck_assert_int_eq(srv_queue_add(f.st, &b, T0 + 2, &q), 0);
  int64_t ib = q.id;
  ck_assert_int_eq(srv_queue_add(f.st, &c, T0 + 3, NULL), 0);
  /* Every setting comes back as given. */
  ck_assert_int_eq(srv_queue_get(f.st, ib, &r), 0);
  ck_assert(r.opts.n == 11 && r.opts.unit_seconds == 30 && r.opts.max_depth == 8 &&
            r.opts.quorum == 3 && r.opts.max_results == 7 && r.opts.depth == 0 &&
            r.opts.diverse_kernels == 3);
  ck_assert_int_eq(r.job_id, 0);
  ck_assert_str_eq(r.error, "");
  /* Bad settings are refused with the reason, and nothing is queued. */
  nq_jobopts_t bad = job_for(11, 20);
  ck_assert_int_eq(srv_queue_add(f.st, &bad, T0, NULL), NQ_ERANGE);
  ck_assert_ptr_nonnull(strstr(srv_store_errmsg(f.st), "depth"));
  bad = job_for(40, 0);
  ck_assert_int_eq(srv_queue_add(f.st, &bad, T0, NULL), NQ_ERANGE);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM job_queue"), 3);
  /* Oldest first. */
  ck_assert_int_eq(srv_queue_next(f.st, &q), 0);
  ck_assert_int_eq(q.id, ia);
  /* Cancel: once; an unknown id is not found. */
  ck_assert_int_eq(srv_queue_cancel(f.st, ia, T0 + 5, &q), 0);
  ck_assert_int_eq(q.state, SRV_QUEUE_CANCELLED);
  ck_assert_int_eq(q.changed, T0 + 5);
  ck_assert_int_eq(srv_queue_cancel(f.st, ia, T0 + 6, NULL), NQ_ESTATE);
  ck_assert_ptr_nonnull(strstr(srv_store_errmsg(f.st), "cancelled, not queued"));
  ck_assert_int_eq(srv_queue_cancel(f.st, 999, T0, NULL), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_queue_next(f.st, &q), 0);
  ck_assert_int_eq(q.id, ib);
  /* The server's marks: started with its job (then it cannot be cancelled), failed with why. */
  ck_assert_int_eq(srv_queue_mark(f.st, ib, SRV_QUEUE_STARTED, f.job.id, NULL, T0 + 7), 0);
  ck_assert_int_eq(srv_queue_cancel(f.st, ib, T0 + 8, NULL), NQ_ESTATE);
  ck_assert_ptr_nonnull(strstr(srv_store_errmsg(f.st), "has started"));
  ck_assert_int_eq(srv_queue_mark(f.st, ib, SRV_QUEUE_FAILED, 0, "x", T0), NQ_ESTATE);
  ck_assert_int_eq(srv_queue_mark(f.st, ib, SRV_QUEUE_QUEUED, 0, NULL, T0), NQ_EINVAL);
  ck_assert_int_eq(srv_queue_next(f.st, &q), 0);
  int64_t ic = q.id;
  ck_assert_int_eq(srv_queue_mark(f.st, ic, SRV_QUEUE_FAILED, 0, "no room", T0 + 9), 0);
  ck_assert_int_eq(srv_queue_next(f.st, &q), NQ_ENOTFOUND);
  /* Lists: the queued ones (none left), or all; all of it survives a reopen. */
  seen_t s = {0, {0}};
  ck_assert_int_eq(srv_queue_list(f.st, 0, seen_cb, &s), 0);
  ck_assert_int_eq(s.n, 0);
  srv_store_close(f.st);
  fx_reopen(&f);
  ck_assert_int_eq(srv_queue_list(f.st, 1, seen_cb, &s), 0);
  ck_assert_int_eq(s.n, 3);
  ck_assert(s.ids[0] == ia && s.ids[1] == ib && s.ids[2] == ic);
  ck_assert_int_eq(srv_queue_get(f.st, ib, &r), 0);
  ck_assert_int_eq(r.state, SRV_QUEUE_STARTED);
  ck_assert_int_eq(r.job_id, f.job.id);
  ck_assert_int_eq(srv_queue_get(f.st, ic, &r), 0);
  ck_assert_int_eq(r.state, SRV_QUEUE_FAILED);
  ck_assert_str_eq(r.error, "no room");
  ck_assert_str_eq(srv_queue_state_name(r.state), "failed");
  fx_done(&f);
}
END_TEST

/* Inside a transaction a queue change goes with it: rolled back, nothing stays. */
START_TEST(queue_joins_transaction) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  nq_jobopts_t a = job_for(9, 3);
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_queue_add(f.st, &a, T0, NULL), 0);
  ck_assert_int_eq(srv_store_rollback(f.st), 0);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM job_queue"), 0);
  fx_done(&f);
}
END_TEST

/* A finished job stays done once archived (it read "not done yet"). */
START_TEST(archived_done_job_is_done) {
  fx_t f;
  fx_init(&f, 8, 3, 1, 5, NULL);
  int64_t cl = fx_client(&f, "a"), now = T0 + 10;
  fx_run_to_done(&f, &cl, 1, &now);
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &f.job), 0);
  ck_assert(srv_job_is_done(&f.job));
  ck_assert_int_eq(srv_job_archive(f.st, f.job.id, 0, now), 0);
  srv_job_t j;
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &j), 0);
  ck_assert_int_eq(j.state, SRV_JOB_ARCHIVED);
  ck_assert(srv_job_is_done(&j));
  /* A job archived before it was done is not. */
  srv_job_t k;
  ck_assert_int_eq(srv_job_ensure(f.st, 9, 3, 1, 5, now, &k), 0);
  ck_assert_int_eq(srv_job_archive(f.st, k.id, 0, now), 0);
  ck_assert_int_eq(srv_job_get(f.st, k.id, &k), 0);
  ck_assert(!srv_job_is_done(&k));
  fx_done(&f);
}
END_TEST

/* The next job releases the finished one's leases (spot checks held would count against its
 * clients' caps): every lease of the job goes, its units are open again, other jobs untouched. */
START_TEST(release_leases_of_a_job) {
  fx_t f;
  fx_init(&f, 8, 3, 1, 5, NULL);
  int64_t a = fx_client(&f, "a");
  srv_work_t w[4];
  srv_nowork_t why;
  ck_assert_int_eq(fx_work(&f, a, 4, T0 + 1, w, &why), 4);
  int64_t held = 0, n = -1;
  ck_assert_int_eq(srv_job_leases(f.st, &f.job, &held), 0);
  ck_assert_int_eq(held, 4);
  ck_assert_int_eq(srv_job_release_leases(f.st, &f.job, &n), 0);
  ck_assert_int_eq(n, 4);
  ck_assert_int_eq(srv_job_leases(f.st, &f.job, &held), 0);
  ck_assert_int_eq(held, 0);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(fx_asg_state(&f, w[i].id), SRV_ASG_EXPIRED);
  ck_assert_int_eq(srv_job_release_leases(f.st, &f.job, &n), 0);
  ck_assert_int_eq(n, 0);
  fx_check_invariants(&f);
  fx_check_counters(&f);
  fx_done(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("queue");
  TCase *tc = tcase_create("queue");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, jobopts_parse_and_check);
  tcase_add_test(tc, jobopts_table);
  tcase_add_test(tc, queue_add_order_cancel_mark);
  tcase_add_test(tc, queue_joins_transaction);
  tcase_add_test(tc, archived_done_job_is_done);
  tcase_add_test(tc, release_leases_of_a_job);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
