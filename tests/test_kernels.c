/* Kernel-diverse verification (server/core/kernels.c, the scheduler's kernel rule in
 * sched.c, server/store/store_kernels.c): which kernel an assignment names, a unit verified only by
 * K kernels, a client refusing a kernel it lacks, leases scaled for a slower kernel. N = 8 at
 * depth 3 (44 units), whose published totals are the ground truth. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "fx_store.h"
#include "kernels.h"
#include "nq/solver.h"
#include "store_kernels.h"
#include "testutil.h"

START_TEST(choose_names_the_least_represented) {
  /* A client of unknown kind, first replica: its own choice. */
  ck_assert_ptr_null(srv_kernel_choose("", "", ""));
  ck_assert_ptr_null(srv_kernel_choose("opencl:GPU", "", ""));
  /* Known: its own kernel while the unit has none of it, then the next one down. */
  ck_assert_str_eq(srv_kernel_choose("avx512", "", ""), "avx512");
  ck_assert_str_eq(srv_kernel_choose("avx512", "avx512", ""), "avx2");
  ck_assert_str_eq(srv_kernel_choose("avx512", "avx512,avx2", ""), "scalar");
  ck_assert_str_eq(srv_kernel_choose("avx512", "avx512,avx2,avx512", ""), "scalar");
  ck_assert_str_eq(srv_kernel_choose("avx2", "avx512", ""), "avx2");
  ck_assert_str_eq(srv_kernel_choose("avx2", "avx2", ""), "scalar");
  ck_assert_str_eq(srv_kernel_choose("neon", "neon", ""), "scalar");
  /* A kernel the client refused is never named to it again. */
  ck_assert_str_eq(srv_kernel_choose("avx512", "avx512", "avx2"), "scalar");
  ck_assert_str_eq(srv_kernel_choose("avx512", "avx512", "avx2,scalar"), "reference");
  /* Unknown kind with replicas out: what most CPUs run, least represented first. */
  ck_assert_str_eq(srv_kernel_choose("", "avx512", ""), "avx2");
  ck_assert_ptr_null(srv_kernel_choose("opencl:GPU", "avx2,avx512", "")); /* runs its own */
  ck_assert_str_eq(srv_kernel_choose("opencl:GPU", "avx2,opencl:GPU", ""), "scalar");
  /* A live lease of a client of unknown kind ("?") runs that client's own kernel, whatever it
   * is: a replica leased beside it is named one no machine runs as its own. */
  ck_assert_str_eq(srv_kernel_choose("", "?", ""), "scalar");
  ck_assert_str_eq(srv_kernel_choose("avx512", "?", ""), "scalar");
  ck_assert_str_eq(srv_kernel_choose("avx512", "?,scalar", ""), "reference");
  /* Every kernel refused: nothing to name. */
  ck_assert_ptr_null(srv_kernel_choose("reference", "reference", "reference"));
  /* The client's own kernel: the most capable of its recent backends. */
  char nat[32];
  srv_kernel_native("avx2 avx512 reference", nat, sizeof nat);
  ck_assert_str_eq(nat, "avx512");
  srv_kernel_native("reference scalar", nat, sizeof nat);
  ck_assert_str_eq(nat, "scalar");
  srv_kernel_native("opencl:GPU", nat, sizeof nat);
  ck_assert_str_eq(nat, "opencl:GPU");
  srv_kernel_native("avx2 avx512+opencl:GPU scalar", nat, sizeof nat); /* a GPU client */
  ck_assert_str_eq(nat, "avx512+opencl:GPU");
  srv_kernel_native("", nat, sizeof nat);
  ck_assert_str_eq(nat, "");
  /* Slowdowns: only ever longer. */
  ck_assert(srv_kernel_slowdown("avx512", "reference") >= 30);
  ck_assert(srv_kernel_slowdown("avx512", "avx2") >= 1.5);
  ck_assert(srv_kernel_slowdown("avx2", "avx512") == 1.0);
  ck_assert(srv_kernel_slowdown("", "scalar") >= 4);
  ck_assert(srv_kernel_slowdown("avx512", "nonesuch") == 1.0);
}
END_TEST

/* A result with a backend, in its own transaction. */
static int report(fx_t *f, int64_t client, const srv_work_t *w, const nq_counts_t *c,
                  const char *backend, int64_t now, srv_result_info_t *info) {
  srv_result_info_t tmp;
  memset(info ? info : &tmp, 0, sizeof tmp);
  ck_assert_int_eq(srv_store_begin(f->st), 0);
  int rc = fx_sched_result(&f->sched, client, w->id, w->unit, c, 0.5, NQ_SOLVER_VERSION, backend,
                            now, info ? info : &tmp);
  ck_assert_int_eq(srv_store_commit(f->st), 0);
  return rc;
}

/* The server has learned that the client runs avx512 (as from its first result). */
static void known(fx_t *f, int64_t client) {
  ck_assert_int_eq(srv_client_kernel_native_set(f->st, client, "avx512"), 0);
}

static void fx_kernels(fx_t *f, int k) {
  ck_assert_int_eq(srv_job_kernels_set(f->st, f->job.id, k), 0);
  int got = -1;
  ck_assert_int_eq(srv_job_kernels_get(f->st, f->job.id, &got), 0);
  ck_assert_int_eq(got, k);
}

/* The scheduler settings of these tests: the defaults without spot checks. */
static srv_sched_config_t kx_cfg(void) {
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.spot_check = 0;
  return cfg;
}

/* Their job: N=8 depth 3, quorum 2 of at most 5 results, under cfg, and a unit needs `kernels`
 * different kernels (0: no rule). */
static void kx_init(fx_t *f, const srv_sched_config_t *cfg, int kernels) {
  fx_init(f, 8, 3, 2, 5, cfg);
  fx_kernels(f, kernels);
}

/* That job with the default settings, 2 kernels a unit, and the clients a, b and c; the server
 * knows b's and c's own kernel (avx512), not a's. */
static void kx_three(fx_t *f, int64_t *a, int64_t *b, int64_t *c) {
  srv_sched_config_t cfg = kx_cfg();
  kx_init(f, &cfg, 2);
  *a = fx_client(f, "a");
  *b = fx_client(f, "b");
  *c = fx_client(f, "c");
  known(f, *b);
  known(f, *c);
}

/* Two agreeing results of one kernel do not verify a unit of a job with diverse_kernels 2: the
 * unit takes a third replica, which names another kernel, and verifies with it. */
START_TEST(two_kernels_needed) {
  fx_t f;
  int64_t a, b, c;
  kx_three(&f, &a, &b, &c);
  int64_t now = T0 + 10;
  srv_work_t wa, wb, wc;
  ck_assert_int_eq(fx_work(&f, a, 1, now, &wa, NULL), 1);
  ck_assert_str_eq(wa.kernel, ""); /* a's kernels are unknown: its own choice */
  nq_counts_t truth = fx_solve(wa.unit);
  srv_result_info_t info;
  ck_assert_int_eq(report(&f, a, &wa, &truth, "avx512", now, &info), 0);
  ck_assert_int_eq(fx_work(&f, b, 1, ++now, &wb, NULL), 1);
  ck_assert_int_eq(wb.unit_id, wa.unit_id); /* the unit in progress first */
  ck_assert_str_eq(wb.kernel, "avx2");      /* not the kernel the unit has already */
  /* A result that says it ran on another kernel than the one named (an old client that ignores
   * the name, or a made-up label) is refused as a bad result and stores nothing: the rule counts
   * the kernels the server named, not labels. */
  ck_assert_int_eq(report(&f, b, &wb, &truth, "avx512", ++now, &info), NQ_EINVAL);
  ck_assert_int_eq(report(&f, b, &wb, &truth, "y", ++now, &info), NQ_EINVAL);
  ck_assert_int_eq(report(&f, b, &wb, &truth, NULL, ++now, &info), NQ_EINVAL);
  srv_unit_info_t u = fx_unit(&f, wa.unit_id);
  ck_assert_int_ne(u.state, SRV_UNIT_VERIFIED);
  ck_assert_int_eq(u.results, 1);
  /* b runs avx2 as named: the unit is verified on two kernels. */
  (void)c;
  (void)wc;
  ck_assert_int_eq(report(&f, b, &wb, &truth, "avx2", ++now, &info), 0);
  ck_assert_int_eq(info.unit_verified, 1);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* The blind spot and its closing: one kernel that miscounts COUNT4 with the right nodes, on every
 * client. Off, its answer is verified; with 2 kernels, the other kernels outvote it. */
static int64_t run_faulty(int kernels, int64_t *wrong_units) {
  fx_t f;
  srv_sched_config_t cfg = kx_cfg();
  cfg.ban_threshold = 0;
  kx_init(&f, &cfg, kernels);
  int64_t cl[4] = {fx_client(&f, "a"), fx_client(&f, "b"), fx_client(&f, "c"),
                   fx_client(&f, "d")};
  int64_t now = T0 + 10;
  for (int round = 0; round < 200 && f.sched.job.state == SRV_JOB_RUNNING; round++) {
    int got = 0;
    for (int i = 0; i < 4; i++) {
      srv_work_t w[4];
      int n = fx_work(&f, cl[i], 4, ++now, w, NULL);
      ck_assert_int_ge(n, 0);
      for (int k = 0; k < n; k++) {
        /* Every client runs avx512 unless told otherwise; avx512 is the faulty one. */
        const char *kern = w[k].kernel[0] ? w[k].kernel : "avx512";
        nq_counts_t c = fx_solve(w[k].unit);
        if (strcmp(kern, "avx512") == 0 && c.c4 > 0) c.c4++;
        ck_assert_int_eq(report(&f, cl[i], &w[k], &c, kern, ++now, NULL), 0);
        got++;
      }
    }
    ck_assert_int_eq(srv_job_get(f.st, f.job.id, &f.sched.job), 0);
    if (!got) break;
  }
  ck_assert_int_eq(f.sched.job.state, SRV_JOB_DONE);
  *wrong_units = fx_q1(f.path, "SELECT count(*) FROM units WHERE c4 > 0 AND state = 'verified' "
                               "AND id IN (SELECT unit_id FROM assignments WHERE backend = "
                               "'avx512' AND state = 'valid')");
  const nq_known_t *k = nq_known(8);
  char buf[48];
  int64_t exact = strcmp(nq_u128_str(f.sched.job.totals.c4, buf), k->c4) == 0;
  int64_t two = -1;
  ck_assert_int_eq(srv_job_units_two_kernels(f.st, f.job.id, &two), 0);
  if (kernels >= 2) ck_assert_int_eq(two, f.job.units); /* every unit rests on two kernels */
  else ck_assert_int_eq(two, 0);
  fx_check_invariants(&f);
  fx_done(&f);
  return exact;
}

START_TEST(faulty_kernel_blind_spot_closed) {
  int64_t wrong = 0;
  /* Off: every unit with COUNT4 solutions is verified wrong, and the total is wrong. */
  ck_assert_int_eq(run_faulty(0, &wrong), 0);
  ck_assert_int_gt(wrong, 0);
  /* Two kernels: exact, and no avx512 result was judged valid on a unit with COUNT4. */
  ck_assert_int_eq(run_faulty(2, &wrong), 1);
  ck_assert_int_eq(wrong, 0);
}
END_TEST

/* A client that cannot run the named kernel refuses: its lease ends, counts as a lapse, and the
 * kernel is not named to it again; the unit may come back to it at once with a kernel it can
 * run (no hold: a unit whose other keys had all voted would otherwise wait --lease-seconds for
 * nobody), or go to another client. */
START_TEST(refusal_goes_elsewhere) {
  fx_t f;
  int64_t a, b, c;
  kx_three(&f, &a, &b, &c);
  int64_t now = T0 + 10;
  srv_work_t wa, wb, w2;
  ck_assert_int_eq(fx_work(&f, a, 1, now, &wa, NULL), 1);
  nq_counts_t truth = fx_solve(wa.unit);
  ck_assert_int_eq(report(&f, a, &wa, &truth, "avx512", now, NULL), 0);
  ck_assert_int_eq(fx_work(&f, b, 1, ++now, &wb, NULL), 1);
  ck_assert_str_eq(wb.kernel, "avx2");
  char k[NQ_KERNEL_NAME_MAX];
  /* Only the holder of a lease that names a kernel can refuse it. */
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_refuse(&f.sched, c, wb.id, now, k, sizeof k), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_sched_refuse(&f.sched, a, wa.id, now, k, sizeof k), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_sched_refuse(&f.sched, b, wb.id, now, k, sizeof k), 0);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  ck_assert_str_eq(k, "avx2");
  ck_assert_int_eq(fx_asg_state(&f, wb.id), SRV_ASG_EXPIRED);
  ck_assert_int_eq(fx_client_of(&f, b).lapses, 1);
  char refused[64];
  fx_qs(f.path, "SELECT kernels_refused FROM clients WHERE name = 'b'", refused, sizeof refused);
  ck_assert_str_eq(refused, "avx2");
  /* A second refusal of the same lease changes nothing. */
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_refuse(&f.sched, b, wb.id, now, k, sizeof k), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  /* b, asking again, is not kept from the unit: it gets it back at once, named a kernel the
   * unit lacks and b has not refused. */
  srv_work_t wback;
  ck_assert_int_eq(fx_work(&f, b, 1, ++now, &wback, NULL), 1);
  ck_assert_int_eq(wback.unit_id, wa.unit_id);
  ck_assert(strcmp(wback.kernel, "avx2") != 0 && strcmp(wback.kernel, "avx512") != 0);
  ck_assert_int_eq(report(&f, b, &wback, &truth, wback.kernel, ++now, NULL), 0);
  ck_assert_int_eq(fx_unit(&f, wa.unit_id).state, SRV_UNIT_VERIFIED);
  ck_assert_int_eq(fx_work(&f, b, 1, ++now, &w2, NULL), 1);
  ck_assert_int_ne(w2.unit_id, wa.unit_id);
  /* b, once it has a kernel known (avx512), is never named avx2 again. */
  nq_counts_t t2 = fx_solve(w2.unit);
  ck_assert_int_eq(report(&f, b, &w2, &t2, "avx512", ++now, NULL), 0);
  srv_work_t wa2, wb2;
  ck_assert_int_eq(fx_work(&f, a, 1, ++now, &wa2, NULL), 1); /* b's unit, to confirm */
  ck_assert_int_eq(wa2.unit_id, w2.unit_id);
  ck_assert_str_eq(wa2.kernel, "avx2");
  ck_assert_int_eq(report(&f, a, &wa2, &t2, "avx2", ++now, NULL), 0);
  ck_assert_int_eq(fx_work(&f, a, 1, ++now, &wa2, NULL), 1); /* a fresh unit */
  ck_assert_str_eq(wa2.kernel, "avx512");
  nq_counts_t t3 = fx_solve(wa2.unit);
  ck_assert_int_eq(report(&f, a, &wa2, &t3, "avx512", ++now, NULL), 0);
  ck_assert_int_eq(fx_work(&f, b, 1, ++now, &wb2, NULL), 1);
  ck_assert_int_eq(wb2.unit_id, wa2.unit_id);
  ck_assert_str_eq(wb2.kernel, "scalar");
  /* The server keeps what it learned of b's own kernel, whatever kernels it was told to run. */
  fx_qs(f.path, "SELECT kernel_native FROM clients WHERE name = 'b'", refused, sizeof refused);
  ck_assert_str_eq(refused, "avx512");
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* A slower kernel's replica gets a lease as much longer; its resend names the same kernel. */
START_TEST(lease_scaled_for_slower_kernel) {
  fx_t f;
  srv_sched_config_t cfg = kx_cfg();
  cfg.lease_seconds = 100;
  kx_init(&f, &cfg, 2);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b");
  int64_t now = T0 + 10;
  srv_work_t w[2];
  /* b's kernel becomes known (avx512) on a unit a then confirms with avx2. */
  ck_assert_int_eq(fx_work(&f, b, 1, now, &w[0], NULL), 1);
  ck_assert_str_eq(w[0].kernel, "");
  ck_assert_int_eq(w[0].deadline - now, 100);
  nq_counts_t t = fx_solve(w[0].unit);
  ck_assert_int_eq(report(&f, b, &w[0], &t, "avx512", now, NULL), 0);
  ck_assert_int_eq(fx_work(&f, a, 1, ++now, &w[1], NULL), 1);
  ck_assert_int_eq(report(&f, a, &w[1], &t, "avx2", now, NULL), 0);
  /* a reports avx512 on a new unit, then b gets that one, named avx2 (2x), then reference. */
  ck_assert_int_eq(fx_work(&f, a, 1, ++now, &w[0], NULL), 1);
  t = fx_solve(w[0].unit);
  ck_assert_int_eq(report(&f, a, &w[0], &t, "avx512", now, NULL), 0);
  ck_assert_int_eq(fx_work(&f, b, 1, ++now, &w[1], NULL), 1);
  ck_assert_int_eq(w[1].unit_id, w[0].unit_id);
  ck_assert_str_eq(w[1].kernel, "avx2");
  ck_assert_int_eq(w[1].deadline - now, 200);
  /* Asked again, b is re-sent the same assignment with the same kernel. */
  srv_work_t again;
  ck_assert_int_eq(fx_work(&f, b, 1, now, &again, NULL), 1);
  ck_assert_int_eq(again.id, w[1].id);
  ck_assert_int_eq(again.resent, 1);
  ck_assert_str_eq(again.kernel, "avx2");
  fx_done(&f);
}
END_TEST

/* Two new clients asked at once: the second replica, leased while the first one's kernel was
 * unknown, names a kernel no machine runs as its own, so the two agreeing results verify. */
START_TEST(leased_at_once_named_apart) {
  fx_t f;
  srv_sched_config_t cfg = kx_cfg();
  kx_init(&f, &cfg, 2);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b");
  int64_t now = T0 + 10;
  srv_work_t wa, wb;
  ck_assert_int_eq(fx_work(&f, a, 1, now, &wa, NULL), 1);
  ck_assert_int_eq(fx_work(&f, b, 1, now, &wb, NULL), 1);
  ck_assert_int_eq(wb.unit_id, wa.unit_id);
  ck_assert_str_eq(wa.kernel, "");
  ck_assert_str_eq(wb.kernel, "scalar");
  nq_counts_t t = fx_solve(wa.unit);
  srv_result_info_t info;
  ck_assert_int_eq(report(&f, a, &wa, &t, "avx512", now, &info), 0);
  ck_assert_int_eq(report(&f, b, &wb, &t, "scalar", now, &info), 0);
  ck_assert_int_eq(info.unit_verified, 1);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* Every key has voted with one kernel (b's lease was made before the job asked for kernels, so it
 * named none: a result whose backend is not the kernel its lease named is refused): a voter adds
 * kernel evidence -- a
 * second result of its own with a kernel the unit lacks -- which verifies the unit without
 * counting as a second vote of its key; it is leased once, and only with a missing kernel. */
START_TEST(voter_adds_kernel_evidence) {
  fx_t f;
  srv_sched_config_t cfg = kx_cfg();
  kx_init(&f, &cfg, 2);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b");
  known(&f, a);
  int64_t now = T0 + 10;
  srv_work_t wa, wb, we, w2;
  ck_assert_int_eq(fx_work(&f, a, 1, now, &wa, NULL), 1);
  nq_counts_t t = fx_solve(wa.unit);
  ck_assert_int_eq(report(&f, a, &wa, &t, "avx512", now, NULL), 0);
  fx_kernels(&f, 0);
  ck_assert_int_eq(fx_work(&f, b, 1, ++now, &wb, NULL), 1);
  fx_kernels(&f, 2);
  ck_assert_int_eq(wb.unit_id, wa.unit_id);
  ck_assert_str_eq(wb.kernel, "");
  srv_result_info_t info;
  ck_assert_int_eq(report(&f, b, &wb, &t, "avx512", ++now, &info), 0);
  ck_assert_int_eq(info.unit_verified, 0);
  char q[200];
  snprintf(q, sizeof q, "SELECT kshort FROM units WHERE id = %lld", (long long)wa.unit_id);
  ck_assert_int_eq(fx_q1(f.path, q), 1);
  /* a asks: the unit again, as kernel evidence, named the kernel it lacks, before new work. */
  ck_assert_int_eq(fx_work(&f, a, 1, ++now, &we, NULL), 1);
  ck_assert_int_eq(we.unit_id, wa.unit_id);
  ck_assert_int_ne(we.id, wa.id);
  ck_assert_str_eq(we.kernel, "avx2");
  /* Held by a, the evidence is not leased twice: b gets fresh work. */
  ck_assert_int_eq(fx_work(&f, b, 1, ++now, &w2, NULL), 1);
  ck_assert_int_ne(w2.unit_id, wa.unit_id);
  /* A wrong evidence result would not verify the unit; the true one does, and the votes stay
   * two (a's key once). */
  ck_assert_int_eq(report(&f, a, &we, &t, "avx2", ++now, &info), 0);
  ck_assert_int_eq(info.unit_verified, 1);
  srv_unit_info_t u = fx_unit(&f, wa.unit_id);
  ck_assert_int_eq(u.state, SRV_UNIT_VERIFIED);
  snprintf(q, sizeof q, "SELECT kernels FROM units WHERE id = %lld", (long long)wa.unit_id);
  ck_assert_int_eq(fx_q1(f.path, q), 2);
  snprintf(q, sizeof q, "SELECT count(*) FROM assignments WHERE unit_id = %lld AND evidence = 1 "
                        "AND state = 'valid'", (long long)wa.unit_id);
  ck_assert_int_eq(fx_q1(f.path, q), 1);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* Evidence is leased only with a kernel the unit lacks: a voter whose every other kernel is
 * refused gets none (the unit waits for another key). */
START_TEST(no_evidence_without_missing_kernel) {
  fx_t f;
  srv_sched_config_t cfg = kx_cfg();
  kx_init(&f, &cfg, 2);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b");
  int64_t now = T0 + 10;
  ck_assert_int_eq(srv_client_kernel_native_set(f.st, a, "reference"), 0);
  srv_work_t wa, wb, we[4];
  ck_assert_int_eq(fx_work(&f, a, 1, now, &wa, NULL), 1);
  ck_assert_str_eq(wa.kernel, "reference");
  nq_counts_t t = fx_solve(wa.unit);
  ck_assert_int_eq(report(&f, a, &wa, &t, "reference", now, NULL), 0);
  fx_kernels(&f, 0); /* b's lease names no kernel (see voter_adds_kernel_evidence) */
  ck_assert_int_eq(fx_work(&f, b, 1, ++now, &wb, NULL), 1);
  fx_kernels(&f, 2);
  ck_assert_int_eq(report(&f, b, &wb, &t, "reference", ++now, NULL), 0);
  srv_nowork_t why;
  int n = fx_work(&f, a, 4, ++now, we, &why);
  ck_assert_int_gt(n, 0);
  for (int i = 0; i < n; i++) ck_assert_int_ne(we[i].unit_id, wa.unit_id);
  fx_done(&f);
}
END_TEST

/* A job without the option (and every job made before schema 016) names nothing. */
START_TEST(off_names_nothing) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int k = -1;
  ck_assert_int_eq(srv_job_kernels_get(f.st, f.job.id, &k), 0);
  ck_assert_int_eq(k, 0);
  ck_assert_int_eq(srv_job_kernels_set(f.st, f.job.id, 9), NQ_ERANGE);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b");
  srv_work_t w;
  int64_t now = T0 + 10;
  ck_assert_int_eq(fx_work(&f, a, 1, now, &w, NULL), 1);
  nq_counts_t t = fx_solve(w.unit);
  ck_assert_int_eq(report(&f, a, &w, &t, "avx512", now, NULL), 0);
  ck_assert_int_eq(fx_work(&f, b, 1, ++now, &w, NULL), 1);
  ck_assert_str_eq(w.kernel, "");
  srv_result_info_t info;
  ck_assert_int_eq(report(&f, b, &w, &t, "avx512", now, &info), 0);
  ck_assert_int_eq(info.unit_verified, 1);
  fx_done(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kernels");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, choose_names_the_least_represented);
  tcase_add_test(tc, two_kernels_needed);
  tcase_add_test(tc, faulty_kernel_blind_spot_closed);
  tcase_add_test(tc, refusal_goes_elsewhere);
  tcase_add_test(tc, lease_scaled_for_slower_kernel);
  tcase_add_test(tc, off_names_nothing);
  tcase_add_test(tc, leased_at_once_named_apart);
  tcase_add_test(tc, voter_adds_kernel_evidence);
  tcase_add_test(tc, no_evidence_without_missing_kernel);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
