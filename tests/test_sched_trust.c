/* The scheduler against a hostile fleet (issue 12, the trust half): hoarded leases are drained,
 * colluding tokens of one owner never verify a lie, spot checks catch two colluding owners after
 * the fact and re-open their units, a ban re-opens and re-verifies what a client verified, and the
 * job's counters stay equal to a recount through all of it. N = 8 (44 units at depth 3), whose
 * published totals are the ground truth. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "fx_store.h"
#include "nq/plan.h"
#include "nq/solver.h"
#include "nq/versions.h"
#include "store_public.h"
#include "store_trusted.h"
#include "testutil.h"

/* A client that keeps asking for work and answers every unit with the truth or a lie. */
typedef struct actor_s {
  int64_t id;
  int liar;
} actor_t;

/* One round: every actor that is not banned asks for up to `want` units and answers them. Returns
 * 1 when the job was done at the end of the round (no actor got new work and one was told so). */
static int round_of(fx_t *f, actor_t *a, int na, int want, int64_t *now) {
  srv_work_t w[16];
  int got = 0, told_done = 0;
  for (int i = 0; i < na; i++) {
    srv_nowork_t why = SRV_NOWORK_NONE;
    int n = fx_work(f, a[i].id, want, (*now)++, w, &why);
    if (n == NQ_EBANNED) continue;
    ck_assert_int_ge(n, 0);
    if (n == 0 && why == SRV_NOWORK_DONE) told_done = 1;
    for (int k = 0; k < n; k++) {
      nq_counts_t c = a[i].liar ? fx_lie(w[k].unit) : fx_solve(w[k].unit);
      int rc = fx_report(f, a[i].id, w[k].id, w[k].unit, &c, NQ_SOLVER_VERSION, *now, NULL);
      ck_assert(rc == 0 || rc == NQ_EBANNED); /* banned by an earlier result of this batch */
      got++;
    }
  }
  return got == 0 && told_done;
}

/* Rounds until the job is done and nobody is handed work any more. */
static void run_until_quiet(fx_t *f, actor_t *a, int na, int want, int64_t *now) {
  int quiet = 0;
  for (int r = 0; r < 2000 && !quiet; r++) quiet = round_of(f, a, na, want, now);
  ck_assert_msg(quiet, "the job never finished");
}

static srv_job_t job_of(fx_t *f) {
  srv_job_t j;
  ck_assert_int_eq(srv_job_get(f->st, f->job.id, &j), 0);
  return j;
}

static int64_t new_owner(fx_t *f, const char *name) {
  srv_owner_t o;
  ck_assert_int_eq(srv_owner_create(f->st, name, NULL, f->t0, &o), 0);
  return o.id;
}

/* The hold limit: a multiple of the longer of --lease-seconds and the unit's estimated time. */
START_TEST(hold_limit) {
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  cfg.hold_factor = 8;
  ck_assert_int_eq(srv_sched_hold(&cfg, -1), 800);
  ck_assert_int_eq(srv_sched_hold(&cfg, 1000), 800);                  /* a 1 us unit */
  ck_assert_int_eq(srv_sched_hold(&cfg, (int64_t)500 * 1000000000), 4000); /* 500 s */
  ck_assert_int_gt(srv_sched_hold(&cfg, INT64_MAX), 0);                /* no overflow */
}
END_TEST

/* An identity farm takes every replica of the job and keeps it with progress: reports that do
 * not advance extend nothing, so the leases run out and an honest client gets the work; reports
 * that fake an advance are stopped by the hold limit. */
START_TEST(hoarding_farm_drained) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  cfg.hold_factor = 3;
  cfg.max_outstanding = 32;
  cfg.quorum_distinct = SRV_DISTINCT_CLIENT; /* a farm of distinct clients takes every replica */
  cfg.spot_check = 0;
  fx_init(&f, 8, 3, 2, 3, &cfg);
  const int nfarm = 4;
  int64_t farm[4], honest = fx_client(&f, "honest");
  srv_work_t w[4][32];
  int n[4];
  char name[16];
  for (int i = 0; i < nfarm; i++) {
    snprintf(name, sizeof name, "farm%d", i);
    farm[i] = fx_client(&f, name);
    n[i] = fx_work(&f, farm[i], 32, T0, w[i], NULL);
    ck_assert_int_gt(n[i], 0);
  }
  ck_assert_int_eq(n[0] + n[1] + n[2] + n[3], 2 * (int)f.job.units); /* every replica is held */
  srv_nowork_t why;
  srv_work_t hw[4];
  ck_assert_int_eq(fx_work(&f, honest, 4, T0 + 1, hw, &why), 0);
  ck_assert_int_eq(why, SRV_NOWORK_PENDING);
  /* Farms 0-2 repeat the same report; farm 3 fakes an advance every time. */
  int64_t now = T0;
  for (int step = 1; step <= 6; step++) {
    now = T0 + step * 50;
    ck_assert_int_eq(srv_store_begin(f.st), 0);
    for (int i = 0; i < nfarm; i++)
      for (int k = 0; k < n[i]; k++) {
        nq_progress_t p = {.id = w[i][k].id, .has_fraction = 1,
                           .fraction = i == 3 ? 0.1 * step : 0.5, .has_nodes = 1,
                           .nodes = i == 3 ? (uint64_t)step * 1000 : 1000};
        int64_t dl = 0;
        int rc = srv_sched_progress(&f.sched, farm[i], &p, now, &dl);
        ck_assert(rc == 0 || rc == NQ_EEXPIRED || rc == NQ_ENOTFOUND);
        if (rc == 0 && step == 1) ck_assert_int_eq(dl, now + 100); /* the first one counts */
        if (rc == 0 && i < 3 && step > 1) ck_assert_int_le(dl, T0 + 150);
        if (rc == 0) ck_assert_int_le(dl, T0 + 300); /* never past the hold limit */
      }
    ck_assert_int_eq(srv_store_commit(f.st), 0);
    if (step == 4) {
      /* T0 + 200: the stuck farms' leases ran out; the honest client is served. */
      ck_assert_int_eq(fx_work(&f, honest, 4, now, hw, &why), 4);
      for (int k = 0; k < 4; k++) ck_assert_int_eq(fx_report_true(&f, honest, &hw[k], now, NULL), 0);
    }
  }
  /* T0 + 300: the faker's leases reached the hold limit as well. */
  ck_assert_int_eq(srv_store_begin(f.st), 0);
  ck_assert_int_eq(srv_sched_expire(&f.sched, T0 + 300, NULL), 0);
  ck_assert_int_eq(srv_store_commit(f.st), 0);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments WHERE state = 'leased'"), 0);
  /* The honest client (and a second one) finish the job with the exact totals. */
  int64_t honest2 = fx_client(&f, "honest2");
  actor_t a[2] = {{honest, 0}, {honest2, 0}};
  now += 1;
  run_until_quiet(&f, a, 2, 8, &now);
  fx_check_n8_totals(&f);
  fx_check_invariants(&f);
  fx_check_counters(&f);
  fx_done(&f);
}
END_TEST

/* Two tokens of one owner that report the same lie never verify it: they are never given the same
 * unit, and when they do both answer one (an expired lease, reported late), their results are one
 * vote. Honest owners outvote them; the liars end suspect, the totals exact. */
START_TEST(colluding_tokens_one_owner) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  cfg.ban_threshold = 0; /* watch the votes, not the bans */
  cfg.spot_check = 0;
  fx_init(&f, 8, 3, 2, 4, &cfg);
  int64_t mallory = new_owner(&f, "mallory");
  int64_t m1 = fx_client_of_owner(&f, "m1", mallory), m2 = fx_client_of_owner(&f, "m2", mallory);
  int64_t h1 = fx_client(&f, "h1"), h2 = fx_client(&f, "h2");
  srv_work_t w1, w2, w3[2];
  /* m1 takes a unit; m2 is given another one, never the same. */
  ck_assert_int_eq(fx_work(&f, m1, 1, T0, &w1, NULL), 1);
  ck_assert_int_eq(fx_work(&f, m2, 1, T0, &w2, NULL), 1);
  ck_assert_int_ne(w1.unit_id, w2.unit_id);
  /* m1's lease expires; m2 is given the unit; m1 reports late: the same lie twice, one vote. */
  ck_assert_int_eq(fx_work(&f, m2, 2, T0 + 200, w3, NULL), 2); /* w2 resent, then one more */
  srv_work_t both[2];
  ck_assert_int_eq(fx_work(&f, m2, 2, T0 + 201, both, NULL), 2);
  int64_t u = w1.unit_id;
  ck_assert(both[0].unit_id == u || both[1].unit_id == u);
  srv_work_t *mw = both[0].unit_id == u ? &both[0] : &both[1];
  nq_counts_t lie = fx_lie(w1.unit);
  srv_result_info_t info;
  ck_assert_int_eq(fx_report(&f, m1, w1.id, w1.unit, &lie, NQ_SOLVER_VERSION, T0 + 202, &info), 0);
  ck_assert_int_eq(fx_report(&f, m2, mw->id, mw->unit, &lie, NQ_SOLVER_VERSION, T0 + 203, &info), 0);
  ck_assert(!info.unit_verified);
  ck_assert_int_eq(fx_unit(&f, u).best, 1);
  /* Every unit of the job from now on: mallory's two tokens lie, h1 and h2 tell the truth. */
  actor_t a[4] = {{m1, 1}, {m2, 1}, {h1, 0}, {h2, 0}};
  int64_t now = T0 + 300;
  run_until_quiet(&f, a, 4, 4, &now);
  fx_check_n8_totals(&f);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments a JOIN clients c "
                                 "ON c.id = a.client_id WHERE c.owner_id = 2 AND a.state = 'valid'"),
                   0);
  ck_assert_int_eq(fx_client_of(&f, m1).suspect, 1);
  ck_assert_int_eq(fx_client_of(&f, m2).suspect, 1);
  ck_assert_int_eq(fx_client_of(&f, h1).suspect, 0);
  fx_check_invariants(&f);
  fx_check_counters(&f);
  fx_done(&f);
}
END_TEST

/* Two colluding owners verify a lie on every unit and the job finishes with a wrong total. Spot
 * checks at 100% send each verified unit to yet another owner; every disagreement re-opens the
 * unit (the finished job runs again), honest owners outvote the liars, the liars are suspect, and
 * the job finishes again with the exact totals; the counters equal a recount all along. */
START_TEST(spot_checks_catch_colluding_owners) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.spot_check = 100;
  cfg.ban_threshold = 0;
  fx_init(&f, 8, 3, 2, 3, &cfg);
  int64_t e1 = fx_client(&f, "evil1"), e2 = fx_client(&f, "evil2");
  int64_t h1 = fx_client(&f, "honest1"), h2 = fx_client(&f, "honest2");
  actor_t evil[2] = {{e1, 1}, {e2, 1}};
  int64_t now = T0;
  run_until_quiet(&f, evil, 2, 8, &now);
  srv_job_t j = job_of(&f);
  ck_assert_int_eq(j.state, SRV_JOB_DONE);
  char buf[40];
  ck_assert_str_ne(nq_u128_str(nq_totals_total(&j.totals), buf), nq_known(8)->total);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM units WHERE spot = 1"), f.job.units);
  fx_check_counters(&f);
  /* An honest owner asks: the finished job hands it spot checks; the first disagreement
   * re-opens its unit and the job. */
  srv_work_t w;
  ck_assert_int_eq(fx_work(&f, h1, 1, now, &w, NULL), 1);
  ck_assert_int_eq(fx_unit(&f, w.unit_id).state, SRV_UNIT_VERIFIED);
  srv_result_info_t info;
  ck_assert_int_eq(fx_report_true(&f, h1, &w, now + 1, &info), 0);
  ck_assert_int_eq(info.status, SRV_RESULT_ACCEPTED);
  ck_assert(info.unit_reopened && info.job_reopened);
  ck_assert_int_eq(job_of(&f).state, SRV_JOB_RUNNING);
  ck_assert_int_eq(fx_unit(&f, w.unit_id).state, SRV_UNIT_AWAITING);
  fx_check_counters(&f);
  fx_check_invariants(&f);
  /* Everyone goes on (the liars still lying): the honest owners win every unit. */
  actor_t all[4] = {{e1, 1}, {e2, 1}, {h1, 0}, {h2, 0}};
  now += 2;
  run_until_quiet(&f, all, 4, 4, &now);
  fx_check_n8_totals(&f);
  ck_assert_int_eq(fx_client_of(&f, e1).suspect, 1);
  ck_assert_int_eq(fx_client_of(&f, e2).suspect, 1);
  ck_assert_int_eq(fx_client_of(&f, h1).suspect + fx_client_of(&f, h2).suspect, 0);
  ck_assert_int_eq(fx_client_of(&f, e1).valid, 0);
  ck_assert_int_eq(fx_client_of(&f, e1).invalid, f.job.units);
  fx_check_invariants(&f);
  fx_check_counters(&f);
  fx_done(&f);
}
END_TEST

/* Banning a client re-opens every unit it helped verify, the finished job included; the units are
 * verified again without its vote, and the totals and counters stay exact. The operator's reopen
 * of one unit voids all its results. */
START_TEST(ban_reopens_and_reverifies) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.spot_check = 0;
  fx_init(&f, 8, 3, 2, 3, &cfg);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b"), c = fx_client(&f, "c");
  actor_t ab[2] = {{a, 0}, {b, 0}};
  int64_t now = T0;
  run_until_quiet(&f, ab, 2, 8, &now);
  fx_check_n8_totals(&f);
  int64_t verified_by_a = fx_client_of(&f, a).valid;
  ck_assert_int_eq(verified_by_a, f.job.units);
  int64_t reopened = 0;
  int job_reopened = 0;
  ck_assert_int_eq(srv_sched_ban(&f.sched, a, now, &reopened, &job_reopened), 0);
  ck_assert_int_eq(reopened, f.job.units);
  ck_assert(job_reopened);
  ck_assert_int_eq(job_of(&f).state, SRV_JOB_RUNNING);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM units WHERE state = 'verified'"), 0);
  ck_assert_int_eq(fx_client_of(&f, a).valid, 0); /* its results are judged again */
  fx_check_counters(&f);
  /* A second ban re-opens nothing. */
  ck_assert_int_eq(srv_sched_ban(&f.sched, a, now, &reopened, &job_reopened), 0);
  ck_assert_int_eq(reopened, 0);
  /* c gives each unit its second vote. */
  actor_t bc[2] = {{b, 0}, {c, 0}};
  run_until_quiet(&f, bc, 2, 8, &now);
  fx_check_n8_totals(&f);
  ck_assert_int_eq(fx_client_of(&f, c).valid, f.job.units);
  fx_check_counters(&f);
  fx_check_invariants(&f);
  /* The operator re-opens one unit: none of its results votes; two fresh owners verify it. */
  srv_unit_info_t u;
  ck_assert_int_eq(srv_unit_find_text(f.st, f.job.id, "8:c:3:0,2,4", &u) == 0 ||
                   srv_unit_get(f.st, f.job.first_unit, &u) == 0, 1);
  ck_assert_int_eq(srv_sched_reopen(&f.sched, u.id, now, &job_reopened), 0);
  ck_assert(job_reopened);
  ck_assert_int_eq(fx_unit(&f, u.id).state, SRV_UNIT_AWAITING);
  ck_assert_int_eq(srv_sched_reopen(&f.sched, 999999, now, NULL), NQ_ENOTFOUND);
  int64_t d = fx_client(&f, "d"), e = fx_client(&f, "e");
  actor_t de[3] = {{b, 0}, {d, 0}, {e, 0}};
  run_until_quiet(&f, de, 3, 8, &now);
  fx_check_n8_totals(&f);
  fx_check_counters(&f);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* Owners: made with or without a key, found by the key's hash, banned (with their clients), and
 * listed; the default owner holds the clients made without one. */
START_TEST(owners_and_owner_ban) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  fx_init(&f, 8, 3, 2, 3, &cfg);
  srv_owner_t o;
  ck_assert_int_eq(srv_owner_create(f.st, "lab", "hash-lab", T0, &o), 0);
  ck_assert_int_eq(o.has_key, 1);
  ck_assert_int_eq(srv_owner_create(f.st, "lab", "hash-other", T0, NULL), NQ_EEXIST);
  ck_assert_int_eq(srv_owner_create(f.st, "lab2", "hash-lab", T0, NULL), NQ_EEXIST);
  ck_assert_int_eq(srv_owner_create(f.st, "bad name", NULL, T0, NULL), NQ_EINVAL);
  srv_owner_t k;
  ck_assert_int_eq(srv_owner_find_key(f.st, "hash-lab", &k), 0);
  ck_assert_int_eq(k.id, o.id);
  ck_assert_int_eq(srv_owner_find_key(f.st, "nope", &k), NQ_ENOTFOUND);
  srv_client_t plain;
  ck_assert_int_eq(srv_client_create(f.st, "plain", "hash-plain", T0, &plain), 0);
  ck_assert_int_eq(plain.owner_id, SRV_OWNER_DEFAULT);
  int64_t l1 = fx_client_of_owner(&f, "l1", o.id), l2 = fx_client_of_owner(&f, "l2", o.id);
  ck_assert_int_eq(srv_owner_find_name(f.st, "lab", &k), 0);
  ck_assert_int_eq(k.clients, 2);
  int64_t r = 0;
  int jr = 0;
  ck_assert_int_eq(srv_sched_ban_owner(&f.sched, o.id, T0, &r, &jr), 0);
  ck_assert_int_eq(fx_client_of(&f, l1).banned, 1);
  ck_assert_int_eq(fx_client_of(&f, l2).banned, 1);
  ck_assert_int_eq(srv_owner_find_name(f.st, "lab", &k), 0);
  ck_assert_int_eq(k.banned, 1);
  ck_assert_int_eq(srv_client_unban(f.st, l1), 0);
  ck_assert_int_eq(fx_client_of(&f, l1).banned, 0);
  ck_assert_int_eq(srv_client_unban(f.st, 99999), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_sched_ban_owner(&f.sched, 99999, T0, &r, &jr), NQ_ENOTFOUND);
  fx_done(&f);
}
END_TEST

/* Hoarding by re-grab (issue 33): two owners' farms take every replica, never report, and ask
 * again the second each lease runs out. The hold limit counts from the first lease of a unit to
 * the farm's owner, so re-asking does not reset it: once it has passed, the replicas wait a whole
 * lease for other owners, and honest clients asking every 30 s get work within one hold limit
 * (before: the farm got the same assignments back every time, and the honest clients nothing).
 * The farm's lapses shrink what each of its clients may hold. */
START_TEST(regrab_cannot_reset_hold) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  cfg.lease_min = 10;
  cfg.hold_factor = 3; /* hold 300 s: the units of N = 8 are tiny */
  cfg.max_outstanding = 64;
  cfg.spot_check = 0;
  fx_init(&f, 8, 3, 2, 3, &cfg);
  int64_t farm[6], owner_a = new_owner(&f, "farmA"), owner_b = new_owner(&f, "farmB");
  char name[16];
  for (int i = 0; i < 6; i++) {
    snprintf(name, sizeof name, "farm%d", i);
    farm[i] = fx_client_of_owner(&f, name, i < 3 ? owner_a : owner_b);
  }
  int64_t honest[2] = {fx_client(&f, "h1"), fx_client_of_owner(&f, "h2", new_owner(&f, "h2o"))};
  srv_work_t w[64];
  srv_nowork_t why;
  int held = 0;
  for (int i = 0; i < 6; i++) held += fx_work(&f, farm[i], 64, T0, w, NULL);
  ck_assert_int_eq(held, 2 * (int)f.job.units); /* every replica */
  int64_t first_served = 0;
  for (int64_t now = T0 + 1; now <= T0 + 1000 && !first_served; now++) {
    for (int i = 0; i < 6; i++) {
      int n = fx_work(&f, farm[i], 64, now, w, NULL);
      ck_assert_int_ge(n, 0);
      /* Re-grabbed before the hold limit: never past it. */
      for (int k = 0; k < n && now < T0 + 300; k++) ck_assert_int_le(w[k].deadline, T0 + 300);
    }
    if ((now - T0) % 30 == 0)
      for (int h = 0; h < 2 && !first_served; h++)
        if (fx_work(&f, honest[h], 4, now, w, &why) > 0) first_served = now;
  }
  ck_assert_msg(first_served && first_served <= T0 + 300 + 30,
                "honest clients first served at T0 + %lld", (long long)(first_served - T0));
  /* Each farm client let its leases lapse: it is capped well below max_outstanding now. */
  for (int i = 0; i < 6; i++) {
    srv_client_t c = fx_client_of(&f, farm[i]);
    ck_assert_int_gt(c.lapses, 0);
    ck_assert_int_gt(srv_sched_lapse_factor(c.lapses), 1);
  }
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* A job with exactly `quorum` clients still finishes when their leases run past the hold limit
 * (an outage): past it, a unit comes back to its old holder once it has waited one lease for
 * anybody else; and a client's lapses shrink its cap and its leases until results work them
 * off. */
START_TEST(hold_past_limit_quorum_clients_finish) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  cfg.lease_min = 10;
  cfg.hold_factor = 3;
  cfg.max_outstanding = 16;
  cfg.quorum_distinct = SRV_DISTINCT_CLIENT;
  cfg.spot_check = 0;
  fx_init(&f, 8, 3, 2, 3, &cfg);
  int64_t a = fx_client(&f, "a"), b = fx_client(&f, "b");
  srv_work_t w[16];
  srv_nowork_t why;
  ck_assert_int_eq(fx_work(&f, a, 16, T0, w, NULL), 16);
  ck_assert_int_eq(w[0].deadline, T0 + 100);
  /* Re-grabbed after each expiry: the same rows, never past the first lease + 300 s. */
  int64_t first_id = w[0].id;
  ck_assert_int_eq(fx_work(&f, a, 16, T0 + 100, w, NULL), 16 / srv_sched_lapse_factor(16));
  ck_assert_int_eq(w[0].id, first_id);
  ck_assert_int_le(w[0].deadline, T0 + 300);
  ck_assert_int_lt(w[0].deadline, T0 + 200); /* 16 lapses: factor 5, lease 100 / 5 */
  ck_assert_int_eq(fx_client_of(&f, a).lapses, 16);
  /* T0 + 250: still inside the hold; lapses 16 + 3 (factor 5): the same three again, the lease
   * cut at the hold limit. */
  ck_assert_int_eq(fx_work(&f, a, 16, T0 + 250, w, NULL), 3);
  ck_assert_int_eq(w[0].id, first_id);
  ck_assert_int_eq(w[0].deadline, T0 + 270);
  /* T0 + 350: past the hold limit. The three units a held last wait a lease for anybody else
   * (until T0 + 370); the other thirteen waited since T0 + 100 and may come back with a fresh
   * hold. Lapses 22: factor 6, cap 2. */
  int64_t last[3] = {w[0].unit_id, w[1].unit_id, w[2].unit_id};
  ck_assert_int_eq(fx_work(&f, a, 16, T0 + 350, w, &why), 2);
  for (int k = 0; k < 2; k++) {
    for (int j = 0; j < 3; j++) ck_assert_int_ne(w[k].unit_id, last[j]);
    ck_assert_int_eq(w[k].deadline, T0 + 350 + 100 / 6);
  }
  /* b is given them (and a's two in progress); then both finish the job. */
  ck_assert_int_eq(fx_work(&f, b, 16, T0 + 351, w, NULL), 16);
  int found = 0;
  for (int k = 0; k < 16; k++)
    for (int j = 0; j < 3; j++) found += w[k].unit_id == last[j];
  ck_assert_int_eq(found, 3);
  int64_t cl[2] = {a, b}, now = T0 + 400;
  ck_assert_int_gt(fx_run_to_done(&f, cl, 2, &now), 0);
  fx_check_n8_totals(&f);
  ck_assert_int_lt(fx_client_of(&f, a).lapses, 24); /* results worked some off */
  fx_check_invariants(&f);
  fx_check_counters(&f);
  fx_done(&f);
}
END_TEST

/* ---- inflation through the solver string ------------------------------------------------- */

/* How the inflator labels its results: a version nq does not know, one of another tree, or the
 * server's own (then its nodes contradict the honest ones in the same tree). */
typedef enum { INFL_UNKNOWN, INFL_OTHER_TREE, INFL_SAME_TREE } infl_t;

/* The true counts of a unit with its nodes at the unit's provable bound (the most the server's
 * result guard lets through). */
static nq_counts_t inflated(const char *text) {
  nq_counts_t c = fx_solve(text);
  nq_unit_t u;
  char why[128];
  ck_assert_int_eq(nq_unit_parse(text, &u, why, sizeof why), 0);
  uint64_t b = nq_plan_node_bound(&u);
  c.nodes = b < NQ_PLAN_LIMIT ? b : NQ_PLAN_LIMIT;
  ck_assert_int_ge(c.nodes, fx_solve(text).nodes);
  return c;
}

/* Every unit's nodes are the true count, the job's node total is nq-solve's less the split
 * nodes, and each client's credit is the sum of the true nodes of the units it helped verify. */
static void check_nodes_exact(fx_t *f, const int64_t *cl, int ncl) {
  srv_job_t j;
  ck_assert_int_eq(srv_job_get(f->st, f->job.id, &j), 0);
  ck_assert_int_eq(j.state, SRV_JOB_DONE);
  nq_u128 sum = 0;
  for (int64_t id = j.first_unit; id < j.first_unit + j.units; id++) {
    srv_unit_info_t u = fx_unit(f, id);
    ck_assert_int_eq(u.counts.nodes, fx_solve(u.text).nodes);
    sum += u.counts.nodes;
  }
  nq_counts_t whole;
  ck_assert_int_eq(nq_ref_solve_n(j.n, &whole), 0);
  ck_assert(j.totals.nodes == sum);
  ck_assert(j.totals.nodes + j.internal == whole.nodes);
  for (int i = 0; i < ncl; i++) {
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT coalesce(sum(u.nodes), 0) FROM assignments a JOIN units u "
             "ON u.id = a.unit_id WHERE a.client_id = %lld AND a.state = 'valid'",
             (long long)cl[i]);
    srv_credit_t cr;
    ck_assert_int_eq(srv_credit_get(f->st, cl[i], &cr), 0);
    ck_assert(cr.credit == (nq_u128)fx_q1(f->path, sql));
  }
}

/* The attack of a volunteer who reports the true counts with its nodes at each unit's bound,
 * beside an honest client and a trusted owner's: under a made-up solver version every such
 * result is refused (bad_result); under a known version of another tree it is compared on counts
 * only and never sets a unit's nodes; under the server's own version its nodes contradict the
 * honest ones, the trusted owner settles the unit and the inflator is banned. In every case the
 * job ends with its node total and every credit exact. A second client of the inflator's owner
 * (another address) adds no vote under --quorum-distinct owner. */
START_TEST(inflation_through_solver_string) {
  infl_t mode = (infl_t)_i;
  const char *label = mode == INFL_UNKNOWN ? "nq-solver-9"
                      : mode == INFL_OTHER_TREE ? "nq-solver-1" : NQ_SOLVER_VERSION;
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 50;
  cfg.lease_min = 10;
  fx_init(&f, 10, 4, 2, 3, &cfg);
  int64_t x = fx_client(&f, "inflator");
  int64_t x2 = fx_client_of_owner(&f, "inflator-2", fx_client_of(&f, x).owner_id);
  int64_t h = fx_client(&f, "honest"), t = fx_client(&f, "lab");
  ck_assert_int_eq(srv_owner_set_trusted(f.st, fx_client_of(&f, t).owner_id, 1), 0);
  int64_t cl[4] = {x, x2, h, t}, now = T0;
  int refused = 0, sent = 0, done = 0;
  for (int r = 0; r < 4000 && !done; r++) {
    for (int i = 0; i < 4 && !done; i++) {
      srv_work_t w[4];
      srv_nowork_t why = SRV_NOWORK_NONE;
      int n = fx_work(&f, cl[i], i < 2 ? 4 : 1, now++, w, &why);
      if (n == NQ_EBANNED) continue;
      ck_assert_int_ge(n, 0);
      done |= n == 0 && why == SRV_NOWORK_DONE;
      for (int k = 0; k < n; k++) {
        srv_result_info_t info;
        int rc;
        if (i < 2) {
          nq_counts_t c = inflated(w[k].unit);
          rc = fx_report(&f, cl[i], w[k].id, w[k].unit, &c, label, now, &info);
          sent++;
          refused += rc == NQ_EINVAL;
          ck_assert(rc == 0 || rc == NQ_EBANNED || (mode == INFL_UNKNOWN && rc == NQ_EINVAL));
        } else {
          rc = fx_report_true(&f, cl[i], &w[k], now, &info);
          ck_assert(rc == 0);
        }
        done |= info.job_done && rc == 0;
      }
    }
  }
  ck_assert(done);
  ck_assert_int_gt(sent, 0);
  if (mode == INFL_UNKNOWN) ck_assert_int_eq(refused, sent);
  if (mode == INFL_SAME_TREE) ck_assert(fx_client_of(&f, x).banned);
  ck_assert(!fx_client_of(&f, h).banned && !fx_client_of(&f, t).banned);
  srv_job_t j;
  char buf[40];
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &j), 0);
  ck_assert_str_eq(nq_u128_str(nq_totals_total(&j.totals), buf), nq_known(10)->total);
  check_nodes_exact(&f, cl, 4);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("sched_trust");
  TCase *tc = tcase_create("trust");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, hold_limit);
  tcase_add_test(tc, hoarding_farm_drained);
  tcase_add_test(tc, regrab_cannot_reset_hold);
  tcase_add_test(tc, hold_past_limit_quorum_clients_finish);
  tcase_add_test(tc, colluding_tokens_one_owner);
  tcase_add_test(tc, spot_checks_catch_colluding_owners);
  tcase_add_test(tc, ban_reopens_and_reverifies);
  tcase_add_test(tc, owners_and_owner_ban);
  tcase_add_loop_test(tc, inflation_through_solver_string, INFL_UNKNOWN, INFL_SAME_TREE + 1);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
