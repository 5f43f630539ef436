/* Scheduler suite (server/core/sched.c: the rules; the store answers its queries): a whole N = 8 job
 * computed by simulated clients, quorum and trust (mismatch, solver versions, dispute and retry,
 * auto-ban), leases (expiry, reissue to the same client, progress, cap, sizing from the expected
 * cost), result validation and ownership, bans, and the transaction contract. Fixtures:
 * tests/fx_store.c. Every test gets a fresh database; the clock is simulated. */
#include "fx_store.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/solver.h"
#include "nq/unit.h"
#include "sched.h"
#include "store_api.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A progress report without fraction, seconds or nodes (the transaction is the caller's). */
/* A progress report whose nodes grow with the clock (so it advances, unless it is older). */
static int prog(fx_t *f, int64_t client, int64_t id, int64_t now, int64_t *dl) {
  nq_progress_t p = {.id = id, .has_nodes = 1, .nodes = (uint64_t)(now - T0 + 1)};
  return srv_sched_progress(&f->sched, client, &p, now, dl);
}

/* N = 8 end to end with three clients: the job must finish with the published totals. */
START_TEST(full_job_n8_three_clients) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.max_outstanding = 3;
  cfg.spot_check = 0; /* exactly two results per unit */
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t cl[3] = {fx_client(&f, "a"), fx_client(&f, "b"), fx_client(&f, "c")};
  int64_t now = T0;
  int reports = fx_run_to_done(&f, cl, 3, &now);
  ck_assert_int_eq(reports, 2 * f.job.units); /* honest clients: exactly quorum per unit */
  fx_check_n8_totals(&f);
  srv_stats_t stats;
  ck_assert_int_eq(srv_store_stats(f.st, f.job.id, now, 60, 3600, &stats), 0);
  ck_assert_int_eq(stats.units[SRV_UNIT_VERIFIED], f.job.units);
  ck_assert_int_eq(stats.results, reports);
  ck_assert_int_eq(stats.recent_results, reports);
  ck_assert_int_eq(stats.clients_known, 3);
  ck_assert_int_eq(stats.clients_active, 3);
  ck_assert(nq_totals_total(&stats.verified) == 92);
  int64_t valid = 0;
  for (int i = 0; i < 3; i++) {
    srv_client_t c = fx_client_of(&f, cl[i]);
    ck_assert_int_eq(c.invalid, 0);
    ck_assert_int_eq(c.outstanding, 0);
    valid += c.valid;
  }
  ck_assert_int_eq(valid, reports);
  /* A finished job hands out nothing and says so. */
  srv_work_t w[4];
  srv_nowork_t why;
  ck_assert_int_eq(fx_work(&f, cl[0], 4, now, w, &why), 0);
  ck_assert_int_eq(why, SRV_NOWORK_DONE);
  ck_assert_str_eq(nq_nowork_reason_name(srv_nowork_code(why)), "done");
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* A liar's result blocks the quorum; a third replica goes out, agrees with the honest one, the
 * unit is verified with the true counts and the liar loses trust. */
START_TEST(mismatch_escalates_to_third_replica) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b"), c = fx_client(&f, "c");
  srv_work_t wa, wb, wc, other;
  ck_assert_int_eq(fx_work(&f, a, 1, T0, &wa, NULL), 1);
  ck_assert_int_eq(fx_work(&f, b, 1, T0, &wb, NULL), 1);
  ck_assert_int_eq(wb.unit_id, wa.unit_id); /* in-progress units go out first */
  ck_assert_int_eq(fx_unit(&f, wa.unit_id).state, SRV_UNIT_LEASED);
  ck_assert_int_eq(fx_report_true(&f, a, &wa, T0 + 1, NULL), 0);
  ck_assert_int_eq(fx_unit(&f, wa.unit_id).state, SRV_UNIT_AWAITING);
  nq_counts_t bad = fx_lie(wb.unit);
  srv_result_info_t info;
  ck_assert_int_eq(fx_report(&f, b, wb.id, wb.unit, &bad, NQ_SOLVER_VERSION, T0 + 2, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
  ck_assert(!info.unit_verified);
  ck_assert_int_eq(fx_unit(&f, wa.unit_id).state, SRV_UNIT_AWAITING);
  /* Neither a nor b may have the unit again; both get other units. */
  ck_assert_int_eq(fx_work(&f, a, 1, T0 + 3, &other, NULL), 1);
  ck_assert_int_ne(other.unit_id, wa.unit_id);
  ck_assert_int_eq(fx_work(&f, b, 1, T0 + 3, &other, NULL), 1);
  ck_assert_int_ne(other.unit_id, wa.unit_id);
  ck_assert_int_eq(fx_work(&f, c, 1, T0 + 4, &wc, NULL), 1);
  ck_assert_int_eq(wc.unit_id, wa.unit_id);
  ck_assert_int_eq(fx_report_true(&f, c, &wc, T0 + 5, &info), 0);
  ck_assert(info.unit_verified);
  srv_unit_info_t u = fx_unit(&f, wa.unit_id);
  nq_counts_t truth = fx_solve(wa.unit);
  ck_assert_int_eq(u.state, SRV_UNIT_VERIFIED);
  ck_assert_int_eq(u.counts.c8, truth.c8);
  ck_assert_int_eq(u.counts.nodes, truth.nodes);
  ck_assert_int_eq(u.results, 3);
  ck_assert_int_eq(fx_asg_state(&f, wa.id), SRV_ASG_VALID);
  ck_assert_int_eq(fx_asg_state(&f, wb.id), SRV_ASG_INVALID);
  ck_assert_int_eq(fx_asg_state(&f, wc.id), SRV_ASG_VALID);
  ck_assert_int_eq(fx_client_of(&f, a).valid, 1);
  ck_assert_int_eq(fx_client_of(&f, b).invalid, 1);
  ck_assert_int_eq(fx_client_of(&f, b).valid, 0);
  ck_assert_int_eq(fx_client_of(&f, c).valid, 1);
  ck_assert_int_eq(fx_client_of(&f, b).banned, 0); /* one loss is below the threshold */
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* Solver versions are a closed list (nq/versions.h): an unknown one is refused. Results agree on
 * counts across versions; versions of one tree (nq-solver-3 and -4 below N = 20) compare nodes
 * too; a version of another tree never sets the unit's nodes: they need the quorum in one tree. */
START_TEST(agreement_rule_solver_versions) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b"), c = fx_client(&f, "c");
  srv_work_t wa[2], wb[2], wc;
  ck_assert_int_eq(fx_work(&f, a, 2, T0, wa, NULL), 2);
  ck_assert_int_eq(fx_work(&f, b, 2, T0, wb, NULL), 2);
  ck_assert_int_eq(wa[0].unit_id, wb[0].unit_id);
  ck_assert_int_eq(wa[1].unit_id, wb[1].unit_id);
  nq_counts_t t0 = fx_solve(wa[0].unit), t0b = t0;
  t0b.nodes += 5;
  srv_result_info_t info;
  /* A version nq does not know: bad_result, nothing stored. */
  ck_assert_int_eq(fx_report(&f, a, wa[0].id, wa[0].unit, &t0b, "nq-solver-9", T0, &info),
                   NQ_EINVAL);
  ck_assert_int_eq(fx_unit(&f, wa[0].unit_id).results, 0);
  /* Unit 0: the same counts from another tree (nq-solver-1) with other nodes: they agree on the
   * counts (two votes), but the nodes have one vote in each tree: one vote short. */
  ck_assert_int_eq(fx_report(&f, a, wa[0].id, wa[0].unit, &t0b, "nq-solver-1", T0, &info), 0);
  ck_assert_int_eq(fx_report(&f, b, wb[0].id, wb[0].unit, &t0, NQ_SOLVER_VERSION, T0, &info), 0);
  ck_assert(!info.unit_verified);
  ck_assert_int_eq(fx_work(&f, c, 1, T0, &wc, NULL), 1);
  ck_assert_int_eq(wc.unit_id, wa[0].unit_id);
  ck_assert_int_eq(fx_report(&f, c, wc.id, wc.unit, &t0, NQ_SOLVER_VERSION, T0, &info), 0);
  ck_assert(info.unit_verified);
  ck_assert_int_eq(fx_unit(&f, wa[0].unit_id).counts.nodes, t0.nodes);
  ck_assert_int_eq(fx_asg_state(&f, wa[0].id), SRV_ASG_VALID); /* counts only */
  /* Unit 1: nq-solver-3 walks nq-solver-4's tree at N = 8: other nodes disagree; c breaks the
   * tie. */
  nq_counts_t t1 = fx_solve(wa[1].unit), t1b = t1;
  t1b.nodes += 1;
  ck_assert_int_eq(fx_report(&f, a, wa[1].id, wa[1].unit, &t1, "nq-solver-3", T0, &info), 0);
  ck_assert_int_eq(fx_report(&f, b, wb[1].id, wb[1].unit, &t1b, NQ_SOLVER_VERSION, T0, &info), 0);
  ck_assert(!info.unit_verified);
  ck_assert_int_eq(fx_work(&f, c, 1, T0, &wc, NULL), 1);
  ck_assert_int_eq(wc.unit_id, wa[1].unit_id);
  ck_assert_int_eq(fx_report(&f, c, wc.id, wc.unit, &t1, NQ_SOLVER_VERSION, T0, &info), 0);
  ck_assert(info.unit_verified);
  ck_assert_int_eq(fx_asg_state(&f, wb[1].id), SRV_ASG_INVALID);
  ck_assert_int_eq(fx_client_of(&f, a).valid, 2);
  ck_assert_int_eq(fx_client_of(&f, b).valid, 1);
  ck_assert_int_eq(fx_client_of(&f, b).invalid, 1);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* The disputes' job: N=8 depth 3, quorum 2 of at most 3 results, leases of 100 s; the clients
 * c0..c7 in cl. */
static void dispute_init(fx_t *f, int64_t cl[8]) {
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  fx_init(f, 8, 3, 2, 3, &cfg);
  char name[8];
  for (int i = 0; i < 8; i++) {
    snprintf(name, sizeof name, "c%d", i);
    cl[i] = fx_client(f, name);
  }
}

/* No two results agree: after max_results the unit is disputed and shown to the operator, but it
 * keeps taking replicas (from clients that never had it) until one answer has a strict majority
 * of at least quorum votes; the losers are judged invalid. */
START_TEST(dispute_after_max_results) {
  fx_t f;
  int64_t cl[8];
  dispute_init(&f, cl);
  srv_work_t w[8];
  /* c0 takes the unit and goes silent; after expiry c1..c3 take it in turn. */
  ck_assert_int_eq(fx_work(&f, cl[0], 1, T0, &w[0], NULL), 1);
  int64_t now = T0 + 200;
  srv_result_info_t info;
  for (int i = 1; i <= 3; i++) {
    ck_assert_int_eq(fx_work(&f, cl[i], 1, now, &w[i], NULL), 1);
    ck_assert_int_eq(w[i].unit_id, w[0].unit_id);
    nq_counts_t c = fx_solve(w[i].unit);
    c.c8 += (uint64_t)i; /* three different answers */
    c.nodes += 10;
    ck_assert_int_eq(fx_report(&f, cl[i], w[i].id, w[i].unit, &c, NQ_SOLVER_VERSION, now, &info), 0);
    ck_assert_int_eq(info.unit_disputed, i == 3);
  }
  srv_unit_info_t u = fx_unit(&f, w[0].unit_id);
  ck_assert_int_eq(u.state, SRV_UNIT_DISPUTED);
  ck_assert_int_eq(u.results, 3);
  /* The operator sees it in the disputed list and in the status. */
  srv_stats_t stats;
  ck_assert_int_eq(srv_store_stats(f.st, f.job.id, now, 60, 60, &stats), 0);
  ck_assert_int_eq(stats.units[SRV_UNIT_DISPUTED], 1);
  fx_check_counters(&f);
  /* It needs 3 more agreeing votes (1 + 3 against): it is handed out first. The silent client's
   * result arrives: it votes. */
  ck_assert_int_eq(fx_report_true(&f, cl[0], &w[0], now + 1, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
  ck_assert(!info.unit_verified);
  char q[200];
  snprintf(q, sizeof q, "SELECT need FROM units WHERE id = %lld", (long long)w[0].unit_id);
  ck_assert_int_eq(fx_q1(f.path, q), 3); /* the truth 1 vs 3: 2 more for 3 > 3? no: 4 > 3 */
  for (int i = 4; i <= 6; i++) {
    ck_assert_int_eq(fx_work(&f, cl[i], 1, now + i, &w[i], NULL), 1);
    ck_assert_int_eq(w[i].unit_id, w[0].unit_id);
  }
  ck_assert_int_eq(fx_report_true(&f, cl[4], &w[4], now + 10, &info), 0);
  ck_assert(!info.unit_verified);
  ck_assert_int_eq(fx_report_true(&f, cl[5], &w[5], now + 11, &info), 0);
  ck_assert(!info.unit_verified); /* 3 vs 3: no strict majority */
  ck_assert_int_eq(fx_report_true(&f, cl[6], &w[6], now + 12, &info), 0);
  ck_assert(info.unit_verified);
  u = fx_unit(&f, w[0].unit_id);
  ck_assert_int_eq(u.state, SRV_UNIT_VERIFIED);
  nq_counts_t truth = fx_solve(w[0].unit);
  ck_assert(u.counts.c8 == truth.c8 && u.counts.c2 == truth.c2 && u.counts.c4 == truth.c4);
  for (int i = 1; i <= 3; i++) ck_assert_int_eq(fx_asg_state(&f, w[i].id), SRV_ASG_INVALID);
  ck_assert_int_eq(fx_asg_state(&f, w[0].id), SRV_ASG_VALID);
  /* Three different wrong answers: flipped bits, not collusion; nobody is suspect. */
  for (int i = 0; i < 8; i++) ck_assert_int_eq(fx_client_of(&f, cl[i]).suspect, 0);
  ck_assert_int_eq(srv_store_stats(f.st, f.job.id, now, 60, 60, &stats), 0);
  ck_assert_int_eq(stats.units[SRV_UNIT_DISPUTED], 0);
  fx_check_invariants(&f);
  fx_check_counters(&f);
  fx_done(&f);
}
END_TEST

/* The operator's retry of a dispute: more results allowed; refusals for units that are not
 * disputed; the unit resolves and the job finishes with the exact totals. */
START_TEST(dispute_retry_to_quorum) {
  fx_t f;
  int64_t cl[8];
  dispute_init(&f, cl);
  srv_work_t w[8];
  srv_result_info_t info;
  ck_assert_int_eq(fx_work(&f, cl[0], 1, T0, &w[0], NULL), 1);
  const int64_t unit = w[0].unit_id;
  int64_t now = T0 + 200;
  for (int i = 1; i <= 3; i++) {
    ck_assert_int_eq(fx_work(&f, cl[i], 1, now, &w[i], NULL), 1);
    ck_assert_int_eq(w[i].unit_id, unit);
    nq_counts_t c = fx_solve(w[i].unit);
    c.c8 += (uint64_t)i;
    c.nodes += 10;
    ck_assert_int_eq(fx_report(&f, cl[i], w[i].id, w[i].unit, &c, NQ_SOLVER_VERSION, now, &info), 0);
  }
  ck_assert(info.unit_disputed);
  ck_assert_int_eq(fx_report_true(&f, cl[0], &w[0], now, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
  ck_assert_int_eq(fx_unit(&f, unit).results, 4);
  /* c4 gets the disputed unit first, then a fresh one. */
  srv_work_t two[2];
  ck_assert_int_eq(fx_work(&f, cl[4], 2, now, two, NULL), 2);
  ck_assert_int_eq(two[0].unit_id, unit);
  ck_assert_int_ne(two[1].unit_id, unit);
  w[4] = two[0];
  ck_assert_int_eq(srv_unit_retry(f.st, two[1].unit_id, 2, now, NULL), NQ_ESTATE);
  ck_assert_ptr_nonnull(strstr(srv_store_errmsg(f.st), "leased, not disputed"));
  ck_assert_int_eq(srv_unit_retry(f.st, 999999, 2, now, NULL), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_unit_retry(f.st, unit, 0, now, NULL), NQ_EINVAL);
  ck_assert_int_eq(srv_unit_retry(f.st, unit, SRV_RETRY_EXTRA_MAX + 1, now, NULL), NQ_EINVAL);
  ck_assert_int_eq(fx_unit(&f, unit).state, SRV_UNIT_DISPUTED);
  /* Retry for one more result: the cap is relative to every result it has (4), so 5. */
  srv_unit_info_t u;
  ck_assert_int_eq(srv_unit_retry(f.st, unit, 1, now, &u), 0);
  ck_assert_int_eq(u.state, SRV_UNIT_AWAITING);
  ck_assert_int_eq(u.extra_results, 2);
  /* Awaiting now (retry takes awaiting units too): the allowance is relative to the
   * results it has, so the same retry again changes nothing. */
  ck_assert_int_eq(srv_unit_retry(f.st, unit, 1, now, &u), 0);
  ck_assert_int_eq(u.state, SRV_UNIT_AWAITING);
  ck_assert_int_eq(u.extra_results, 2);
  /* c4's true result: 2 true vs 3 wrong, at the cap: disputed again, and it goes on. */
  ck_assert_int_eq(fx_report_true(&f, cl[4], &w[4], now + 1, &info), 0);
  ck_assert(info.unit_disputed && !info.unit_verified);
  for (int i = 5; i <= 6; i++) {
    ck_assert_int_eq(fx_work(&f, cl[i], 1, now + 2, &w[i], NULL), 1);
    ck_assert_int_eq(w[i].unit_id, unit);
    ck_assert_int_eq(fx_report_true(&f, cl[i], &w[i], now + 3, &info), 0);
  }
  ck_assert(info.unit_verified);
  u = fx_unit(&f, unit);
  nq_counts_t truth = fx_solve(w[0].unit);
  ck_assert(u.counts.c2 == truth.c2 && u.counts.c4 == truth.c4 && u.counts.c8 == truth.c8);
  for (int i = 1; i <= 3; i++) ck_assert_int_eq(fx_asg_state(&f, w[i].id), SRV_ASG_INVALID);
  ck_assert_int_eq(srv_unit_retry(f.st, unit, 2, now + 9, NULL), NQ_ESTATE); /* verified */
  fx_check_invariants(&f);
  /* Everyone (the earlier wrong ones included, now honest) finishes the job: exact totals. */
  now += 10;
  fx_run_to_done(&f, cl + 1, 7, &now);
  fx_check_n8_totals(&f);
  fx_check_invariants(&f);
  fx_check_counters(&f);
  fx_done(&f);
}
END_TEST

/* A silent client's lease expires and the unit is reissued; its late result still counts while
 * the unit is open, and is LATE (but judged) once it is verified. */
START_TEST(expiry_reissue_and_late_results) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b"), c = fx_client(&f, "c");
  srv_work_t wa, wb, wc;
  ck_assert_int_eq(fx_work(&f, a, 1, T0, &wa, NULL), 1);
  ck_assert_int_eq(wa.deadline, T0 + 100);
  ck_assert_int_eq(fx_work(&f, b, 1, T0 + 150, &wb, NULL), 1); /* also sweeps a's lease */
  ck_assert_int_eq(wb.unit_id, wa.unit_id);
  ck_assert_int_eq(fx_asg_state(&f, wa.id), SRV_ASG_EXPIRED);
  int64_t n = -1;
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_expire(&f.sched, T0 + 150, &n), 0);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  ck_assert_int_eq(n, 0); /* already swept */
  int64_t next = 0;
  ck_assert_int_eq(srv_sched_next_deadline(&f.sched, &next), 0);
  ck_assert_int_eq(next, T0 + 250);
  /* The unit still needs a second replica: c gets it (the reissue of a's). */
  ck_assert_int_eq(fx_work(&f, c, 1, T0 + 160, &wc, NULL), 1);
  ck_assert_int_eq(wc.unit_id, wa.unit_id);
  ck_assert_int_eq(fx_unit(&f, wa.unit_id).live, 2);
  /* a's late result is accepted: the unit is not verified yet. */
  srv_result_info_t info;
  ck_assert_int_eq(fx_report_true(&f, a, &wa, T0 + 170, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
  ck_assert(!info.unit_verified);
  ck_assert_int_eq(fx_report_true(&f, b, &wb, T0 + 180, &info), 0);
  ck_assert(info.unit_verified);
  ck_assert_int_eq(fx_asg_state(&f, wa.id), SRV_ASG_VALID);
  /* c's lease was released at verification: progress tells it the work is no longer needed. */
  int64_t dl;
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(prog(&f, c, wc.id, T0 + 185, &dl), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  /* ... and its result, if it sends one anyway, is LATE but judged. */
  ck_assert_int_eq(fx_report_true(&f, c, &wc, T0 + 190, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_LATE);
  ck_assert_int_eq(fx_asg_state(&f, wc.id), SRV_ASG_VALID);
  ck_assert_int_eq(fx_client_of(&f, c).valid, 1);
  srv_asg_info_t ai;
  ck_assert_int_eq(srv_asg_get(f.st, wc.id, &ai), 0);
  ck_assert_int_eq(ai.late, 1);
  ck_assert_int_eq(fx_unit(&f, wa.unit_id).results, 3);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* A client whose lease expired (no result) may get the unit again, on the same assignment: with
 * exactly `quorum` clients the unit would otherwise never be verified. */
START_TEST(expired_lease_leased_again_to_same_client) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b");
  srv_work_t wa, wb, again;
  ck_assert_int_eq(fx_work(&f, a, 1, T0, &wa, NULL), 1);
  ck_assert_int_eq(fx_work(&f, b, 1, T0 + 120, &wb, NULL), 1); /* sweeps a's lease */
  ck_assert_int_eq(wb.unit_id, wa.unit_id);
  ck_assert_int_eq(fx_asg_state(&f, wa.id), SRV_ASG_EXPIRED);
  ck_assert_int_eq(fx_report_true(&f, b, &wb, T0 + 130, NULL), 0);
  /* Only a can give the second result: it gets the unit back, same id, a fresh deadline. */
  ck_assert_int_eq(fx_work(&f, a, 1, T0 + 140, &again, NULL), 1);
  ck_assert_int_eq(again.unit_id, wa.unit_id);
  ck_assert_int_eq(again.id, wa.id);
  ck_assert_int_eq(again.deadline, T0 + 140 + 100);
  ck_assert_int_eq(fx_asg_state(&f, wa.id), SRV_ASG_LEASED);
  ck_assert_int_eq(fx_unit(&f, wa.unit_id).live, 1);
  srv_result_info_t info;
  ck_assert_int_eq(fx_report_true(&f, a, &again, T0 + 150, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
  ck_assert(info.unit_verified);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments"), 2);
  /* A client that reported a unit never gets it again. */
  srv_work_t w[4];
  int n = fx_work(&f, b, 4, T0 + 160, w, NULL);
  for (int i = 0; i < n; i++) ck_assert_int_ne(w[i].unit_id, wa.unit_id);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* A late wrong result for a verified unit counts against its client. */
START_TEST(late_wrong_result_is_invalid) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b"), c = fx_client(&f, "c");
  srv_work_t wa, wb, wc;
  ck_assert_int_eq(fx_work(&f, a, 1, T0, &wa, NULL), 1);
  ck_assert_int_eq(fx_work(&f, b, 1, T0 + 200, &wb, NULL), 1);
  ck_assert_int_eq(fx_work(&f, c, 1, T0 + 200, &wc, NULL), 1);
  ck_assert_int_eq(wc.unit_id, wa.unit_id);
  ck_assert_int_eq(fx_report_true(&f, b, &wb, T0 + 210, NULL), 0);
  ck_assert_int_eq(fx_report_true(&f, c, &wc, T0 + 210, NULL), 0);
  nq_counts_t bad = fx_lie(wa.unit);
  srv_result_info_t info;
  ck_assert_int_eq(fx_report(&f, a, wa.id, wa.unit, &bad, NQ_SOLVER_VERSION, T0 + 220, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_LATE);
  ck_assert_int_eq(fx_asg_state(&f, wa.id), SRV_ASG_INVALID);
  ck_assert_int_eq(fx_client_of(&f, a).invalid, 1);
  /* Verified counts are not touched by a late result. */
  ck_assert_int_eq(fx_unit(&f, wa.unit_id).counts.c8, fx_solve(wa.unit).c8);
  fx_done(&f);
}
END_TEST

/* A late result is judged by the agreement rule against the verified unit (sched.c, agree_with):
 * its counts, and the nodes of the unit's valid results of its own solver version; another
 * version's nodes may differ. */
START_TEST(late_results_agreement_rule) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  cfg.spot_check = 0;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b"), c = fx_client(&f, "c"),
          d = fx_client(&f, "d");
  srv_work_t wa, wb, wc, wd;
  ck_assert_int_eq(fx_work(&f, a, 1, T0, &wa, NULL), 1);
  ck_assert_int_eq(fx_work(&f, d, 1, T0, &wd, NULL), 1);
  ck_assert_int_eq(wd.unit_id, wa.unit_id);
  /* a's and d's leases run out; b and c get the unit and verify it. */
  ck_assert_int_eq(fx_work(&f, b, 1, T0 + 200, &wb, NULL), 1);
  ck_assert_int_eq(fx_work(&f, c, 1, T0 + 200, &wc, NULL), 1);
  ck_assert_int_eq(wb.unit_id, wa.unit_id);
  ck_assert_int_eq(wc.unit_id, wa.unit_id);
  ck_assert_int_eq(fx_report_true(&f, b, &wb, T0 + 210, NULL), 0);
  ck_assert_int_eq(fx_report_true(&f, c, &wc, T0 + 210, NULL), 0);
  ck_assert_int_eq(fx_unit(&f, wa.unit_id).state, SRV_UNIT_VERIFIED);
  srv_result_info_t info;
  /* The same version with other nodes: invalid, though the counts are right. */
  nq_counts_t t = fx_solve(wa.unit);
  t.nodes += 1;
  ck_assert_int_eq(fx_report(&f, a, wa.id, wa.unit, &t, NQ_SOLVER_VERSION, T0 + 220, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_LATE);
  ck_assert_int_eq(fx_asg_state(&f, wa.id), SRV_ASG_INVALID);
  /* A version of another tree with other nodes: valid (counts only). */
  t.nodes += 6;
  ck_assert_int_eq(fx_report(&f, d, wd.id, wd.unit, &t, "nq-solver-1", T0 + 220, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_LATE);
  ck_assert_int_eq(fx_asg_state(&f, wd.id), SRV_ASG_VALID);
  ck_assert_int_eq(fx_client_of(&f, a).invalid, 1);
  ck_assert_int_eq(fx_client_of(&f, d).valid, 1);
  ck_assert_int_eq(fx_unit(&f, wa.unit_id).counts.nodes, fx_solve(wa.unit).nodes);
  fx_done(&f);
}
END_TEST

/* A progress report is kept on the live assignment (the last one wins); the job's status sums the
 * live leases' progress for its ETA. A refused report (not this client's) stores nothing. */
START_TEST(progress_report_kept) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b");
  srv_work_t wa, wb;
  int64_t dl;
  ck_assert_int_eq(fx_work(&f, a, 1, T0, &wa, NULL), 1);
  ck_assert_int_eq(fx_work(&f, b, 1, T0, &wb, NULL), 1);
  srv_asg_info_t info;
  ck_assert_int_eq(srv_asg_get(f.st, wa.id, &info), 0);
  ck_assert(info.progress < 0 && info.progress_seconds < 0 && info.progress_at == 0);
  nq_progress_t p = {.id = wa.id, .has_nodes = 1, .nodes = 1000, .has_fraction = 1,
                     .fraction = 0.25, .has_seconds = 1, .seconds = 30};
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_progress(&f.sched, a, &p, T0 + 30, &dl), 0);
  p.fraction = 0.5, p.seconds = 60, p.nodes = 2000;
  ck_assert_int_eq(srv_sched_progress(&f.sched, a, &p, T0 + 60, &dl), 0);
  p.fraction = 0.9;
  ck_assert_int_eq(srv_sched_progress(&f.sched, b, &p, T0 + 61, &dl), NQ_ENOTFOUND);
  p.id = wb.id, p.fraction = 0.125, p.has_seconds = p.has_nodes = 0;
  ck_assert_int_eq(srv_sched_progress(&f.sched, b, &p, T0 + 62, &dl), 0);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  ck_assert_int_eq(srv_asg_get(f.st, wa.id, &info), 0);
  ck_assert(info.progress == 0.5 && info.progress_seconds == 60);
  ck_assert_uint_eq(info.progress_nodes, 2000);
  ck_assert_int_eq(info.progress_at, T0 + 60);
  ck_assert_int_eq(srv_asg_get(f.st, wb.id, &info), 0);
  ck_assert(info.progress == 0.125 && info.progress_seconds < 0);
  srv_stats_t st;
  ck_assert_int_eq(srv_store_stats(f.st, f.job.id, T0 + 70, 60, 3600, &st), 0);
  ck_assert_int_eq(st.leased, 2);
  ck_assert(fabs(st.leased_progress - 0.625) < 1e-12);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* progress extends the client's own lease, revives an expired one nobody replaced, says
 * lease_expired for one that was given to another client while its unit is undecided, and refuses
 * everything else as unknown_assignment. */
START_TEST(progress_extends_and_revives) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b"), c = fx_client(&f, "c");
  srv_work_t wa, wb, wc;
  int64_t dl = 0;
  ck_assert_int_eq(fx_work(&f, a, 1, T0, &wa, NULL), 1);
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(prog(&f, a, wa.id, T0 + 50, &dl), 0);
  ck_assert_int_eq(dl, T0 + 150);
  /* An old progress arriving later never shortens the lease. */
  ck_assert_int_eq(prog(&f, a, wa.id, T0 + 40, &dl), 0);
  ck_assert_int_eq(dl, T0 + 150);
  ck_assert_int_eq(prog(&f, b, wa.id, T0 + 50, &dl), NQ_ENOTFOUND);
  ck_assert_int_eq(prog(&f, a, 999999, T0 + 50, &dl), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_sched_expire(&f.sched, T0 + 200, NULL), 0);
  ck_assert_int_eq(fx_asg_state(&f, wa.id), SRV_ASG_EXPIRED);
  ck_assert_int_eq(fx_unit(&f, wa.unit_id).state, SRV_UNIT_PENDING);
  /* Nobody took the unit: a's lease comes back to life. */
  ck_assert_int_eq(prog(&f, a, wa.id, T0 + 210, &dl), 0);
  ck_assert_int_eq(dl, T0 + 310);
  ck_assert_int_eq(fx_asg_state(&f, wa.id), SRV_ASG_LEASED);
  ck_assert_int_eq(fx_unit(&f, wa.unit_id).state, SRV_UNIT_LEASED);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  /* Expire again; b and c now hold both replicas the quorum needs: a cannot come back, but its
   * unit is undecided, so its result would still be taken (lease_expired, not unknown). */
  ck_assert_int_eq(fx_work(&f, b, 1, T0 + 400, &wb, NULL), 1);
  ck_assert_int_eq(fx_work(&f, c, 1, T0 + 400, &wc, NULL), 1);
  ck_assert_int_eq(wb.unit_id, wa.unit_id);
  ck_assert_int_eq(wc.unit_id, wa.unit_id);
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(prog(&f, a, wa.id, T0 + 410, &dl), NQ_EEXPIRED);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  /* A reported assignment takes no progress either. */
  ck_assert_int_eq(fx_report_true(&f, b, &wb, T0 + 420, NULL), 0);
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(prog(&f, b, wb.id, T0 + 430, &dl), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* One client never gets two replicas of one unit, however often it asks; what it holds is
 * re-sent first, with the same ids. */
START_TEST(no_two_replicas_and_resend) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.max_outstanding = 256;
  fx_init(&f, 8, 3, 3, 5, &cfg);
  int64_t a = fx_client(&f, "a");
  srv_work_t w[256], again[256];
  srv_nowork_t why;
  int n = fx_work(&f, a, 256, T0, w, &why);
  ck_assert_int_eq(n, f.job.units);
  ck_assert_int_eq(why, SRV_NOWORK_NONE);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(w[i].resent, 0);
    for (int k = 0; k < i; k++) ck_assert_int_ne(w[i].unit_id, w[k].unit_id);
  }
  int m = fx_work(&f, a, 256, T0 + 1, again, &why);
  ck_assert_int_eq(m, n);
  ck_assert_int_eq(why, SRV_NOWORK_PENDING); /* nothing new: every unit is a's already */
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(again[i].id, w[i].id);
    ck_assert_int_eq(again[i].resent, 1);
    ck_assert_int_eq(again[i].deadline, w[i].deadline);
  }
  for (int i = 0; i < n; i++) ck_assert_int_eq(fx_report_true(&f, a, &w[i], T0 + 2, NULL), 0);
  ck_assert_int_eq(fx_work(&f, a, 256, T0 + 3, again, &why), 0);
  ck_assert_int_eq(why, SRV_NOWORK_PENDING);
  ck_assert_str_eq(nq_nowork_reason_name(srv_nowork_code(why)), "none_pending");
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments"), n);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

START_TEST(per_client_cap) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.max_outstanding = 3;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t a = fx_client(&f, "a");
  srv_work_t w[10], again[10];
  srv_nowork_t why;
  ck_assert_int_eq(fx_work(&f, a, 10, T0, w, &why), 3);
  ck_assert_int_eq(fx_work(&f, a, 10, T0, again, &why), 3);
  ck_assert_int_eq(why, SRV_NOWORK_CAP);
  ck_assert_int_eq(fx_work(&f, a, 2, T0, again, &why), 2); /* the first two it holds */
  ck_assert_int_eq(again[1].id, w[1].id);
  ck_assert_int_eq(fx_client_of(&f, a).outstanding, 3);
  ck_assert_int_eq(fx_report_true(&f, a, &w[0], T0 + 1, NULL), 0);
  ck_assert_int_eq(fx_work(&f, a, 10, T0 + 2, again, &why), 3);
  ck_assert_int_eq(why, SRV_NOWORK_NONE);
  ck_assert_int_eq(again[0].resent + again[1].resent + again[2].resent, 2);
  ck_assert_int_eq(fx_work(&f, a, 0, T0, again, &why), NQ_EINVAL);
  ck_assert_int_eq(fx_work(&f, a, 257, T0, again, &why), NQ_EINVAL);
  fx_done(&f);
}
END_TEST

/* Leases follow the expected cost: the longest lease while a client has too few results in the
 * job, then lease_min + LEASE_SLACK x its mean solve time x its queue position, capped. */
START_TEST(lease_sized_from_expected_cost) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 3600;
  cfg.lease_min = 60;
  fx_init(&f, 10, 3, 2, 5, &cfg);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b");
  srv_work_t w[8];
  /* Unknown cost: the full lease, for every assignment of the batch. */
  ck_assert_int_eq(fx_work(&f, a, 2, T0, w, NULL), 2);
  ck_assert_int_eq(w[0].deadline, T0 + 3600);
  ck_assert_int_eq(w[1].deadline, T0 + 3600);
  /* Three results of 8, 10 and 12 s (mean 10): known from the third on. */
  nq_counts_t c = fx_solve(w[0].unit);
  ck_assert_int_eq(fx_report_secs(&f, a, w[0].id, w[0].unit, &c, 8.0, NQ_SOLVER_VERSION, T0 + 8, NULL), 0);
  c = fx_solve(w[1].unit);
  ck_assert_int_eq(fx_report_secs(&f, a, w[1].id, w[1].unit, &c, 12.0, NQ_SOLVER_VERSION, T0 + 20, NULL), 0);
  ck_assert_int_eq(fx_work(&f, a, 1, T0 + 20, w, NULL), 1);
  ck_assert_int_eq(w[0].deadline, T0 + 20 + 3600); /* two results: still unknown */
  c = fx_solve(w[0].unit);
  ck_assert_int_eq(fx_report_secs(&f, a, w[0].id, w[0].unit, &c, 10.0, NQ_SOLVER_VERSION, T0 + 30, NULL), 0);
  /* Holding nothing, four new ones: 60 + 4 x 10 x (position + 1). */
  ck_assert_int_eq(fx_work(&f, a, 4, T0 + 30, w, NULL), 4);
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(w[i].resent, 0);
    ck_assert_int_eq(w[i].deadline, T0 + 30 + 60 + 40 * (i + 1));
  }
  /* Holding those four: they are re-sent unchanged and the two new ones queue behind them. */
  ck_assert_int_eq(fx_work(&f, a, 6, T0 + 31, w, NULL), 6);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(w[i].deadline, T0 + 30 + 60 + 40 * (i + 1));
  ck_assert_int_eq(w[4].deadline, T0 + 31 + 60 + 40 * 5);
  ck_assert_int_eq(w[5].deadline, T0 + 31 + 60 + 40 * 6);
  /* Progress turns a short lease into the full one. */
  int64_t dl = 0;
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(prog(&f, a, w[0].id, T0 + 40, &dl), 0);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  ck_assert_int_eq(dl, T0 + 40 + 3600);
  /* A slow client (three 1000 s results) is capped at the longest lease. */
  for (int i = 0; i < 3; i++) {
    srv_work_t x;
    ck_assert_int_eq(fx_work(&f, b, 1, T0 + 100 * i, &x, NULL), 1);
    c = fx_solve(x.unit);
    ck_assert_int_eq(fx_report_secs(&f, b, x.id, x.unit, &c, 1000.0, NQ_SOLVER_VERSION, T0 + 100 * i + 50, NULL), 0);
  }
  ck_assert_int_eq(fx_work(&f, b, 1, T0 + 400, w, NULL), 1);
  ck_assert_int_eq(w[0].deadline, T0 + 400 + 3600);
  /* The rule itself: the minimum never exceeds the longest lease; unknown cost = longest. */
  ck_assert_int_eq(srv_sched_lease_for(&cfg, -1, 0), 3600);
  ck_assert_int_eq(srv_sched_lease_for(&cfg, 0, 5), 60);
  ck_assert_int_eq(srv_sched_lease_for(&cfg, 0.1, 0), 61);
  cfg.lease_seconds = 3;
  ck_assert_int_eq(srv_sched_lease_for(&cfg, 0.001, 0), 3);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

START_TEST(duplicate_counted_once) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = fx_client(&f, "a");
  srv_work_t w;
  ck_assert_int_eq(fx_work(&f, a, 1, T0, &w, NULL), 1);
  srv_result_info_t info;
  ck_assert_int_eq(fx_report_true(&f, a, &w, T0 + 1, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
  ck_assert_int_eq(fx_report_true(&f, a, &w, T0 + 2, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_DUPLICATE);
  ck_assert_str_eq(nq_ack_status_name(srv_result_ack(info.status)), "duplicate");
  /* Even with other numbers: the first report stands. */
  nq_counts_t bad = fx_lie(w.unit);
  ck_assert_int_eq(fx_report(&f, a, w.id, w.unit, &bad, NQ_SOLVER_VERSION, T0 + 3, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_DUPLICATE);
  srv_asg_info_t ai;
  ck_assert_int_eq(srv_asg_get(f.st, w.id, &ai), 0);
  ck_assert_int_eq(ai.counts.c8, fx_solve(w.unit).c8);
  ck_assert_int_eq(ai.reported_at, T0 + 1);
  ck_assert_int_eq(fx_unit(&f, w.unit_id).results, 1);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

START_TEST(foreign_and_unknown_refused) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b");
  srv_work_t w;
  ck_assert_int_eq(fx_work(&f, a, 1, T0, &w, NULL), 1);
  nq_counts_t c = fx_solve(w.unit);
  ck_assert_int_eq(fx_report(&f, b, w.id, w.unit, &c, NQ_SOLVER_VERSION, T0, NULL), NQ_EAUTH);
  ck_assert_int_eq(fx_report(&f, b, 424242, w.unit, &c, NQ_SOLVER_VERSION, T0, NULL), NQ_ENOTFOUND);
  ck_assert_int_eq(fx_asg_state(&f, w.id), SRV_ASG_LEASED);
  ck_assert_int_eq(fx_unit(&f, w.unit_id).results, 0);
  ck_assert_int_eq(fx_report(&f, a, w.id, w.unit, &c, NQ_SOLVER_VERSION, T0, NULL), 0);
  fx_done(&f);
}
END_TEST

/* Impossible numbers are refused and change nothing. */
START_TEST(impossible_numbers_refused) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = fx_client(&f, "a");
  srv_work_t w;
  ck_assert_int_eq(fx_work(&f, a, 1, T0, &w, NULL), 1);
  ck_assert_ptr_nonnull(strstr(w.unit, ":c:")); /* the first unit is a corner unit */
  const nq_counts_t good = fx_solve(w.unit);
  struct { nq_counts_t c; const char *unit, *solver; double secs; } bad[12];
  for (int i = 0; i < 12; i++) {
    bad[i].c = good;
    bad[i].unit = w.unit;
    bad[i].solver = NQ_SOLVER_VERSION;
    bad[i].secs = 1.0;
  }
  bad[0].unit = "8:c:2:0,2,4";
  bad[1].unit = NULL;
  bad[2].c.nodes = 0;
  bad[3].c.c8 = good.nodes + 1;
  bad[4].c.c2 = 1; /* corner units have COUNT8 only */
  bad[5].c.c4 = 1;
  bad[6].c.count1 = 1;
  bad[7].c.c8 = (uint64_t)INT64_MAX + 1;
  bad[7].c.nodes = UINT64_MAX;
  bad[8].secs = -1;
  bad[9].secs = NAN;
  bad[10].solver = "";
  bad[11].solver = "0123456789012345678901234567890123456789012345678901234567890123456789";
  if (strcmp(w.unit, bad[0].unit) == 0) bad[0].unit = "8:c:3:0,3,5";
  for (int i = 0; i < 12; i++) {
    ck_assert_int_eq(srv_store_begin(f.st), 0);
    int rc = fx_sched_result(&f.sched, a, w.id, bad[i].unit, &bad[i].c, bad[i].secs,
                              bad[i].solver, NULL, T0, NULL);
    ck_assert_int_eq(srv_store_commit(f.st), 0);
    ck_assert_msg(rc == NQ_EINVAL, "case %d: %d", i, rc);
  }
  ck_assert_int_eq(fx_asg_state(&f, w.id), SRV_ASG_LEASED);
  ck_assert_int_eq(fx_unit(&f, w.unit_id).results, 0);
  ck_assert_int_eq(fx_report(&f, a, w.id, w.unit, &good, NQ_SOLVER_VERSION, T0, NULL), 0);
  fx_done(&f);
}
END_TEST

START_TEST(banned_client_gets_nothing) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b");
  srv_work_t w[2], wb[2];
  ck_assert_int_eq(fx_work(&f, a, 2, T0, w, NULL), 2);
  ck_assert_int_eq(srv_client_ban(f.st, a, T0 + 1), 0);
  ck_assert_int_eq(srv_client_ban(f.st, a, T0 + 1), 0); /* idempotent */
  ck_assert_int_eq(fx_client_of(&f, a).banned, 1);
  ck_assert_int_eq(fx_client_of(&f, a).outstanding, 0);
  ck_assert_int_eq(fx_asg_state(&f, w[0].id), SRV_ASG_EXPIRED);
  ck_assert_int_eq(fx_unit(&f, w[0].unit_id).state, SRV_UNIT_PENDING);
  ck_assert_int_eq(fx_work(&f, a, 2, T0 + 2, wb, NULL), NQ_EBANNED);
  ck_assert_int_eq(fx_report_true(&f, a, &w[0], T0 + 2, NULL), NQ_EBANNED);
  int64_t dl;
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(prog(&f, a, w[0].id, T0 + 2, &dl), NQ_EBANNED);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  /* The released units go to the next client at once. */
  ck_assert_int_eq(fx_work(&f, b, 2, T0 + 3, wb, NULL), 2);
  ck_assert_int_eq(wb[0].unit_id, w[0].unit_id);
  ck_assert_int_eq(wb[1].unit_id, w[1].unit_id);
  ck_assert_int_eq(srv_client_ban(f.st, 9999, T0), NQ_ENOTFOUND);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* A client whose wrong results reach the threshold (and outnumber its right ones) is banned by
 * the result that proves it, and its other leases go back to the pool. */
START_TEST(auto_ban_past_threshold) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.ban_threshold = 2;
  fx_init(&f, 8, 3, 2, 5, &cfg);
  int64_t liar = fx_client(&f, "liar"), h1 = fx_client(&f, "h1"), h2 = fx_client(&f, "h2");
  srv_work_t wl[3], w1[2], w2[2];
  ck_assert_int_eq(fx_work(&f, liar, 3, T0, wl, NULL), 3);
  ck_assert_int_eq(fx_work(&f, h1, 2, T0, w1, NULL), 2);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(w1[i].unit_id, wl[i].unit_id);
    nq_counts_t bad = fx_lie(wl[i].unit);
    ck_assert_int_eq(fx_report(&f, liar, wl[i].id, wl[i].unit, &bad, NQ_SOLVER_VERSION, T0, NULL), 0);
    ck_assert_int_eq(fx_report_true(&f, h1, &w1[i], T0, NULL), 0);
  }
  ck_assert_int_eq(fx_work(&f, h2, 2, T0, w2, NULL), 2);
  srv_result_info_t info;
  ck_assert_int_eq(w2[0].unit_id, wl[0].unit_id);
  ck_assert_int_eq(fx_report_true(&f, h2, &w2[0], T0, &info), 0);
  ck_assert(info.unit_verified);
  ck_assert_int_eq(info.banned, 0);
  ck_assert_int_eq(fx_client_of(&f, liar).invalid, 1);
  ck_assert_int_eq(w2[1].unit_id, wl[1].unit_id);
  ck_assert_int_eq(fx_report_true(&f, h2, &w2[1], T0, &info), 0);
  ck_assert_int_eq(info.banned, 1);
  srv_client_t l = fx_client_of(&f, liar);
  ck_assert_int_eq(l.invalid, 2);
  ck_assert_int_eq(l.banned, 1);
  ck_assert_int_eq(l.outstanding, 0);
  ck_assert_int_eq(fx_asg_state(&f, wl[2].id), SRV_ASG_EXPIRED);
  ck_assert_int_eq(fx_unit(&f, wl[2].unit_id).state, SRV_UNIT_PENDING);
  ck_assert_int_eq(fx_client_of(&f, h1).banned, 0);
  ck_assert_int_eq(fx_client_of(&f, h1).valid, 2);
  srv_work_t x;
  ck_assert_int_eq(fx_work(&f, liar, 1, T0, &x, NULL), NQ_EBANNED);
  srv_stats_t stats;
  ck_assert_int_eq(srv_store_stats(f.st, f.job.id, T0, 60, 60, &stats), 0);
  ck_assert_int_eq(stats.clients_banned, 1);
  ck_assert_int_eq(stats.clients_active, 2);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* The threshold counts recent results. A client honest for six units that then lies
 * is banned by its third lie (threshold 3), although its lifetime valid results outnumber its
 * invalid ones; under the old rule (invalid > valid) it would have lied seven times. */
START_TEST(auto_ban_after_honest_history) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.ban_threshold = 3;
  cfg.spot_check = 0;
  fx_init(&f, 9, 4, 2, 5, &cfg);
  int64_t turn = fx_client(&f, "turncoat"), h1 = fx_client(&f, "h1"), h2 = fx_client(&f, "h2");
  srv_work_t wt, w1, w2;
  srv_result_info_t info;
  for (int i = 0; i < 6; i++) {
    ck_assert_int_eq(fx_work(&f, turn, 1, T0 + i, &wt, NULL), 1);
    ck_assert_int_eq(fx_work(&f, h1, 1, T0 + i, &w1, NULL), 1);
    ck_assert_int_eq(w1.unit_id, wt.unit_id);
    ck_assert_int_eq(fx_report_true(&f, turn, &wt, T0 + i, NULL), 0);
    ck_assert_int_eq(fx_report_true(&f, h1, &w1, T0 + i, &info), 0);
    ck_assert(info.unit_verified);
  }
  ck_assert_int_eq(fx_client_of(&f, turn).valid, 6);
  for (int lie = 1; lie <= 3; lie++) {
    int64_t now = T0 + 10 + lie;
    ck_assert_int_eq(fx_work(&f, turn, 1, now, &wt, NULL), 1);
    ck_assert_int_eq(fx_work(&f, h1, 1, now, &w1, NULL), 1);
    ck_assert_int_eq(w1.unit_id, wt.unit_id);
    nq_counts_t bad = fx_lie(wt.unit);
    ck_assert_int_eq(fx_report(&f, turn, wt.id, wt.unit, &bad, NQ_SOLVER_VERSION, now, NULL), 0);
    ck_assert_int_eq(fx_report_true(&f, h1, &w1, now, NULL), 0);
    ck_assert_int_eq(fx_work(&f, h2, 1, now, &w2, NULL), 1);
    ck_assert_int_eq(w2.unit_id, wt.unit_id);
    ck_assert_int_eq(fx_report_true(&f, h2, &w2, now, &info), 0);
    ck_assert(info.unit_verified);
    srv_client_t c = fx_client_of(&f, turn);
    ck_assert_int_eq(c.invalid, lie);
    ck_assert_int_eq(c.banned, lie == 3);
    ck_assert_int_eq(info.banned, lie == 3);
  }
  ck_assert_int_eq(fx_client_of(&f, h1).banned, 0);
  ck_assert_int_eq(fx_client_of(&f, h2).banned, 0);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* The scheduler never commits on its own: without the caller's transaction it refuses. */
START_TEST(sched_requires_transaction) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = fx_client(&f, "a");
  srv_work_t w;
  int n = 0;
  srv_nowork_t why;
  int64_t dl;
  nq_counts_t c = {0, 0, 1, 0, 1};
  ck_assert_int_eq(srv_sched_get_work(&f.sched, a, 1, T0, &w, &n, &why), NQ_ETXN);
  ck_assert_int_eq(prog(&f, a, 1, T0, &dl), NQ_ETXN);
  ck_assert_int_eq(fx_sched_result(&f.sched, a, 1, "x", &c, 1, "s", NULL, T0, NULL), NQ_ETXN);
  ck_assert_int_eq(srv_sched_expire(&f.sched, T0, NULL), NQ_ETXN);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments"), 0);
  ck_assert_int_eq(fx_work(&f, 4242, 1, T0, &w, NULL), NQ_ENOTFOUND);
  fx_done(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("sched");
  TCase *tc = tcase_create("sched");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, full_job_n8_three_clients);
  tcase_add_test(tc, mismatch_escalates_to_third_replica);
  tcase_add_test(tc, agreement_rule_solver_versions);
  tcase_add_test(tc, dispute_after_max_results);
  tcase_add_test(tc, dispute_retry_to_quorum);
  tcase_add_test(tc, expiry_reissue_and_late_results);
  tcase_add_test(tc, expired_lease_leased_again_to_same_client);
  tcase_add_test(tc, late_wrong_result_is_invalid);
  tcase_add_test(tc, late_results_agreement_rule);
  tcase_add_test(tc, progress_extends_and_revives);
  tcase_add_test(tc, progress_report_kept);
  tcase_add_test(tc, no_two_replicas_and_resend);
  tcase_add_test(tc, per_client_cap);
  tcase_add_test(tc, lease_sized_from_expected_cost);
  tcase_add_test(tc, duplicate_counted_once);
  tcase_add_test(tc, foreign_and_unknown_refused);
  tcase_add_test(tc, impossible_numbers_refused);
  tcase_add_test(tc, banned_client_gets_nothing);
  tcase_add_test(tc, auto_ban_past_threshold);
  tcase_add_test(tc, auto_ban_after_honest_history);
  tcase_add_test(tc, sched_requires_transaction);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
