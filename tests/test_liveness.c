/* The liveness rule (docs/reliability.md, "Liveness"), proven over small fleets: every job either
 * finishes with the published totals (MATCH), or, whenever nothing moves, every unit it has not
 * verified is counted stalled with a reason (srv_stalls_compute), and the action that reason names,
 * applied here as an operator would, makes it finish. The scheduler and the store are the real
 * ones, in process, on a simulated clock; the clients are simulated (they run the kernel a lease
 * names when they can, refuse it when they cannot, and lie as their shape says).
 *
 * Each round every client that is online asks for work first -- so replicas of one unit are
 * leased at the same time -- and then reports. A round in which nothing was leased or reported,
 * and no lease is out, is a standstill: there the rule is checked. The suite prints one line per
 * shape (`liveness: ...`), the table in docs/reliability.md. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_api.h"
#include "fx_store.h"
#include "nq/solver.h"
#include "store_clients.h"
#include "store_kernels.h"
#include "store_stall.h"
#include "store_queue.h"
#include "store_trusted.h"
#include "testutil.h"

#define ROUND_S 60      /* simulated seconds per round */
#define MAX_ROUNDS 4000 /* a shape that needs more has failed */
#define MAX_CLIENTS 8

typedef enum { HONEST = 0, LIAR_ALL, LIAR_SPOT, LIAR_ONE } behave_t;

typedef struct {
  const char *owner;  /* clients of one owner share its vote */
  int trusted;        /* the owner is trusted (nq-admin owner trust) */
  const char *native; /* the kernel it runs when none is named: avx512, avx2, neon */
  int only_own;       /* it runs its own kernel only (refuses any other named) */
  behave_t behave;
  int off_from, off_to; /* offline for rounds [off_from, off_to) (off_to 0: for good) */
  int ban_at;           /* the operator bans it at this round (0: never) */
  int pause_from, pause_to; /* its solver is paused for rounds [pause_from, pause_to): it keeps
                               the units it was leased at pause_from and says so in progress */
  int want;             /* units asked for at a time */
} sim_client_t;

typedef struct {
  const char *name;
  int n, depth, kernels;
  double spot;
  int restart_at; /* the server restarts at this round (0: never) */
  int nclients;
  sim_client_t cl[MAX_CLIENTS];
} shape_t;

typedef struct {
  fx_t f;
  const shape_t *sh;
  int64_t id[MAX_CLIENTS + 4];
  sim_client_t cl[MAX_CLIENTS + 4];
  int ncl;
  int64_t now;
  int round;
  char actions[256]; /* what the operator did, for the table */
  int results;
  srv_work_t kept[MAX_CLIENTS + 4][16]; /* what a paused client holds */
  int nkept[MAX_CLIENTS + 4];
} sim_t;

static int runs_kernel(const sim_client_t *c, const char *k) {
  if (!k || !*k || strcmp(k, c->native) == 0) return 1;
  if (c->only_own) return 0;
  if (strcmp(k, "scalar") == 0 || strcmp(k, "reference") == 0) return 1;
  return strcmp(c->native, "avx512") == 0 && strcmp(k, "avx2") == 0;
}

static int online(const sim_t *s, int i) {
  const sim_client_t *c = &s->cl[i];
  if (c->off_from > 0 && s->round >= c->off_from && (c->off_to == 0 || s->round < c->off_to))
    return 0;
  return 1;
}

static void note(sim_t *s, const char *what) {
  size_t u = strlen(s->actions);
  if (strstr(s->actions, what)) return;
  snprintf(s->actions + u, sizeof s->actions - u, "%s%s", u ? "; " : "", what);
}

static int64_t add_client(sim_t *s, const sim_client_t *c) {
  srv_owner_t o;
  int rc = srv_owner_find_name(s->f.st, c->owner, &o);
  if (rc == NQ_ENOTFOUND) {
    ck_assert_int_eq(srv_owner_create(s->f.st, c->owner, NULL, s->now, &o), 0);
    if (c->trusted) ck_assert_int_eq(srv_owner_set_trusted(s->f.st, o.id, 1), 0);
  } else {
    ck_assert_int_eq(rc, 0);
  }
  char name[48];
  snprintf(name, sizeof name, "%s-%d", c->owner, s->ncl);
  s->cl[s->ncl] = *c;
  s->id[s->ncl] = fx_client_of_owner(&s->f, name, o.id);
  return s->id[s->ncl++];
}

static int is_spot(sim_t *s, int64_t asg) {
  char q[96];
  snprintf(q, sizeof q, "SELECT spot FROM assignments WHERE id = %lld", (long long)asg);
  return fx_q1(s->f.path, q) != 0;
}

static nq_counts_t answer(sim_t *s, int i, const srv_work_t *w) {
  nq_counts_t c = fx_solve(w->unit);
  switch (s->cl[i].behave) {
  case LIAR_ALL: return fx_lie(w->unit);
  case LIAR_SPOT: return is_spot(s, w->id) ? fx_lie(w->unit) : c;
  case LIAR_ONE: return w->unit_id == s->f.job.first_unit + 3 ? fx_lie(w->unit) : c;
  default: return c;
  }
}

static void restart(sim_t *s) {
  srv_sched_config_t cfg = s->f.sched.cfg;
  srv_store_close(s->f.st);
  fx_reopen(&s->f);
  ck_assert_int_eq(srv_sched_init(&s->f.sched, s->f.st, s->f.job.id, &cfg), 0);
  ck_assert_int_eq(srv_store_begin(s->f.st), 0);
  ck_assert_int_eq(srv_sched_recount_disputed(&s->f.sched, s->now, NULL), 0);
  ck_assert_int_eq(srv_store_commit(s->f.st), 0);
  note(s, "restart");
}

/* One round; returns the leases and results it saw. */
static int round_of(sim_t *s) {
  srv_work_t w[MAX_CLIENTS + 4][16];
  int n[MAX_CLIENTS + 4] = {0}, moved = 0;
  s->round++;
  s->now += ROUND_S;
  if (s->sh->restart_at && s->round == s->sh->restart_at) restart(s);
  for (int i = 0; i < s->ncl; i++) {
    if (s->cl[i].ban_at && s->round == s->cl[i].ban_at) {
      ck_assert_int_eq(srv_store_begin(s->f.st), 0);
      ck_assert_int_eq(srv_sched_ban(&s->f.sched, s->id[i], s->now, NULL, NULL), 0);
      ck_assert_int_eq(srv_store_commit(s->f.st), 0);
      note(s, "ban");
    }
  }
  /* A paused client asks for nothing; it says it is paused on a unit it holds (the units leased
   * at the round its pause began), and reports them once it resumes. */
  for (int i = 0; i < s->ncl; i++) {
    const sim_client_t *c = &s->cl[i];
    if (!c->pause_from || !online(s, i)) continue;
    if (s->round == c->pause_from) {
      int k = fx_work(&s->f, s->id[i], c->want > 0 ? c->want : 4, s->now, s->kept[i], NULL);
      s->nkept[i] = k > 0 ? k : 0;
      moved += s->nkept[i];
    } else if (s->round > c->pause_from && s->round < c->pause_to && s->nkept[i] > 0) {
      nq_progress_t pr = {.id = s->kept[i][0].id, .paused = 1};
      int64_t dl = 0;
      ck_assert_int_eq(srv_store_begin(s->f.st), 0);
      int rc = srv_sched_progress(&s->f.sched, s->id[i], &pr, s->now, &dl);
      ck_assert_int_eq(srv_store_commit(s->f.st), 0);
      ck_assert(rc == 0 || rc == NQ_ENOTFOUND || rc == NQ_EEXPIRED || rc == NQ_EBANNED);
    }
  }
  /* Everyone asks first: replicas are leased at the same time. */
  for (int i = 0; i < s->ncl; i++) {
    if (!online(s, i)) continue;
    if (s->cl[i].pause_from && s->round >= s->cl[i].pause_from && s->round < s->cl[i].pause_to)
      continue;
    srv_nowork_t why;
    int want = s->cl[i].want > 0 ? s->cl[i].want : 4;
    int k = fx_work(&s->f, s->id[i], want, s->now, w[i], &why);
    if (k == NQ_EBANNED) continue;
    ck_assert_int_ge(k, 0);
    n[i] = k;
    for (int j = 0; j < k; j++) moved += !w[i][j].resent;
    /* Resumed: what it kept is among the resent (the server kept the leases for it). */
    s->nkept[i] = 0;
  }
  for (int i = 0; i < s->ncl; i++)
    for (int j = 0; j < n[i]; j++) {
      srv_work_t *x = &w[i][j];
      const char *kern = x->kernel[0] ? x->kernel : s->cl[i].native;
      if (!runs_kernel(&s->cl[i], kern)) {
        char k[NQ_KERNEL_NAME_MAX];
        ck_assert_int_eq(srv_store_begin(s->f.st), 0);
        int rc = srv_sched_refuse(&s->f.sched, s->id[i], x->id, s->now, k, sizeof k);
        ck_assert_int_eq(srv_store_commit(s->f.st), 0);
        ck_assert(rc == 0 || rc == NQ_EBANNED || rc == NQ_ENOTFOUND);
        moved++;
        continue;
      }
      nq_counts_t c = answer(s, i, x);
      srv_result_info_t info;
      memset(&info, 0, sizeof info);
      ck_assert_int_eq(srv_store_begin(s->f.st), 0);
      int rc = fx_sched_result(&s->f.sched, s->id[i], x->id, x->unit, &c, 0.5,
                                NQ_SOLVER_VERSION, kern, s->now, &info);
      ck_assert_int_eq(srv_store_commit(s->f.st), 0);
      /* Banned by an earlier result of its batch, or its lease lapsed and the unit was settled
       * meanwhile. */
      ck_assert_msg(rc == 0 || rc == NQ_EBANNED || rc == NQ_ENOTFOUND, "result: %d", rc);
      if (rc == 0) {
        moved++;
        s->results++;
      }
    }
  return moved;
}

static srv_job_t job_now(sim_t *s) {
  srv_job_t j;
  ck_assert_int_eq(srv_job_get(s->f.st, s->f.job.id, &j), 0);
  return j;
}

static int64_t live_leases(sim_t *s) {
  char q[160];
  snprintf(q, sizeof q, "SELECT count(*) FROM assignments a JOIN units u ON u.id = a.unit_id "
                        "WHERE u.job_id = %lld AND a.state = 'leased'", (long long)s->f.job.id);
  return fx_q1(s->f.path, q);
}

/* nq-admin audit --sample K: the contested units settled with the reference solver's count. */
static int audit_contested(sim_t *s) {
  int64_t *ids = NULL;
  int n = 0;
  ck_assert_int_eq(srv_units_contested(s->f.st, s->f.job.id, 1000, &ids, &n), 0);
  for (int i = 0; i < n; i++) {
    srv_unit_info_t u = fx_unit(&s->f, ids[i]);
    nq_unit_t unit;
    nq_counts_t c;
    char why[128];
    ck_assert_int_eq(nq_unit_parse(u.text, &unit, why, sizeof why), 0);
    ck_assert_int_eq(nq_ref_solve_unit(&unit, &c), 0);
    ck_assert_int_eq(srv_store_begin(s->f.st), 0);
    ck_assert_int_eq(srv_sched_settle(&s->f.sched, ids[i], &c, NQ_SOLVER_VERSION, s->now, NULL),
                     0);
    ck_assert_int_eq(srv_store_commit(s->f.st), 0);
  }
  free(ids);
  return n > 0;
}

/* Apply what the stall reasons name. Returns 1 when something was done. */
static int act(sim_t *s, const srv_stalls_t *x) {
  int did = 0;
  if (x->by[SRV_STALL_CONTESTED] && audit_contested(s)) {
    note(s, "audit");
    return 1;
  }
  if (x->by[SRV_STALL_SPOT]) {
    /* Dropped by the scheduler SRV_SPOT_WAIT_S after the unit was verified: time passes. */
    note(s, "spot checks dropped");
    return 1;
  }
  if (x->by[SRV_STALL_KERNELS]) {
    sim_client_t c = {.owner = "erin", .native = "avx512"};
    add_client(s, &c);
    note(s, "add an owner with another kernel");
    return 1;
  }
  if (x->by[SRV_STALL_OFFLINE] || x->by[SRV_STALL_CONTESTED]) {
    /* "bring the clients back online" (the contested reason: the trusted owner's) */
    for (int i = 0; i < s->ncl; i++)
      if (!online(s, i) && (x->by[SRV_STALL_OFFLINE] || s->cl[i].trusted)) {
        s->cl[i].off_to = s->round + 1;
        did = 1;
      }
    if (did) note(s, x->by[SRV_STALL_OFFLINE] ? "bring clients online" : "trusted online");
  }
  if (!did && (x->by[SRV_STALL_OWNERS] || x->by[SRV_STALL_VOTED])) {
    sim_client_t c = {.owner = s->ncl % 2 ? "carol" : "dave", .native = "avx512"};
    add_client(s, &c);
    note(s, "add an owner");
    did = 1;
  }
  if (!did && x->by[SRV_STALL_BLOCKED]) {
    int64_t *ids = NULL;
    int cnt = 0;
    ck_assert_int_eq(srv_units_disputed(s->f.st, s->f.job.id, 0, &ids, &cnt), 0);
    ck_assert_int_eq(srv_store_begin(s->f.st), 0);
    for (int i = 0; i < cnt; i++)
      ck_assert_int_eq(srv_sched_retry(&s->f.sched, ids[i], 3, s->now, NULL, NULL), 0);
    ck_assert_int_eq(srv_store_commit(s->f.st), 0);
    free(ids);
    note(s, "unit retry");
    did = cnt > 0;
  }
  return did;
}

/* The rule at a standstill: the job is done, or every unit not verified is stalled with a
 * reason. Returns 1 when the job is done. */
static int check_standstill(sim_t *s) {
  srv_job_t j = job_now(s);
  if (j.state == SRV_JOB_DONE) return 1;
  srv_stalls_t x;
  ck_assert_int_eq(srv_stalls_compute(s->f.st, s->f.job.id, s->f.sched.cfg.quorum_distinct,
                                      s->now, SRV_STATUS_ACTIVE_WINDOW, &x), 0);
  srv_stats_t c;
  memset(&c, 0, sizeof c);
  ck_assert_int_eq(srv_store_counters(s->f.st, s->f.job.id, &c), 0);
  int64_t open = j.units - c.units[SRV_UNIT_VERIFIED];
  if (!(x.units >= open && x.units > 0) && getenv("NQ_LIVENESS_DEBUG")) {
    char q[400];
    snprintf(q, sizeof q, "SELECT group_concat(id || ':' || state || ' need ' || need || ' live ' || live || ' res ' || results || ' ks ' || kshort || ' best ' || best || ' oth ' || others, char(10)) FROM units WHERE job_id = %lld AND state != 'verified'", (long long)s->f.job.id);
    char buf[8192];
    fx_qs(s->f.path, q, buf, sizeof buf);
    printf("%s\n", buf);
    fx_qs(s->f.path, "SELECT group_concat(name || ' ' || kernels_refused || ' nat ' || kernel_native, char(10)) FROM clients", buf, sizeof buf);
    printf("%s\n", buf);
  }
  ck_assert_msg(x.units >= open && x.units > 0,
                "%s: round %d: a standstill with %lld unit(s) not verified but %lld stalled "
                "(the job waits without a reason)", s->sh->name, s->round, (long long)open,
                (long long)x.units);
  ck_assert_msg(act(s, &x), "%s: round %d: stalled, but no action applies", s->sh->name,
                s->round);
  return 0;
}

typedef struct {
  int rounds, results;
  char actions[256];
} outcome_t;

/* Run a shape to its end; prints its row; *out (may be NULL) gets what it took. */
static void run_shape(const shape_t *sh, uint64_t seed, outcome_t *out) {
  sim_t *s = calloc(1, sizeof *s);
  ck_assert_ptr_nonnull(s);
  s->sh = sh;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 600;
  cfg.lease_min = 60;
  cfg.spot_check = sh->spot;
  cfg.seed = seed;
  fx_init(&s->f, sh->n, sh->depth, 2, 3, &cfg);
  if (sh->kernels) ck_assert_int_eq(srv_job_kernels_set(s->f.st, s->f.job.id, sh->kernels), 0);
  s->now = T0;
  for (int i = 0; i < sh->nclients; i++) add_client(s, &sh->cl[i]);
  int done = 0, idle = 0;
  while (!done && s->round < MAX_ROUNDS) {
    int moved = round_of(s);
    if (moved) {
      idle = 0;
      continue;
    }
    if (job_now(s).state == SRV_JOB_DONE) break;
    /* Leases out to clients that went away run out first. */
    if (live_leases(s) > 0 || ++idle < 2) continue;
    idle = 0;
    done = check_standstill(s);
  }
  srv_job_t j = job_now(s);
  ck_assert_msg(j.state == SRV_JOB_DONE, "%s: not done after %d rounds", sh->name, s->round);
  const nq_known_t *k = nq_known(sh->n);
  char tot[48];
  nq_u128_str(nq_totals_total(&j.totals), tot);
  ck_assert_msg(strcmp(tot, k->total) == 0, "%s: total %s, published %s", sh->name, tot,
                k->total);
  fx_check_invariants(&s->f);
  if (out) {
    out->rounds = s->round;
    out->results = s->results;
    snprintf(out->actions, sizeof out->actions, "%s", s->actions);
  }
  int64_t dropped = 0;
  ck_assert_int_eq(srv_job_spot_dropped(s->f.st, s->f.job.id, &dropped), 0);
  if (dropped > 0) note(s, "spot checks dropped");
  printf("| %s | MATCH | %d | %d | %lld | %s |\n", sh->name, s->round, s->results,
         (long long)dropped, s->actions[0] ? s->actions : "none");
  fflush(stdout);
  fx_done(&s->f);
  free(s);
}

/* The shape: N = 11 at depth 3, --diverse-kernels 2, owners alice (trusted) and bob with
 * one AVX-512 client each, leased at the same time. It stalled for good (both first replicas ran
 * avx512, and the only keys that could add the missing kernel had voted). 20 runs, the batch
 * sizes and spot-check draws varied. */
START_TEST(two_owners_kernel_rule_finishes) {
  for (int run = 0; run < 20; run++) {
    shape_t sh = {.name = "2 owners, K=2, trusted online", .n = 11, .depth = 3, .kernels = 2,
                  .spot = 2, .nclients = 2,
                  .cl = {{.owner = "alice", .trusted = 1, .native = "avx512",
                          .want = 1 + run % 5},
                         {.owner = "bob", .native = "avx512", .want = 1 + (run * 7) % 8}}};
    outcome_t o;
    run_shape(&sh, 0x5eed + (uint64_t)run, &o);
    /* No operator step, and two replicas a unit: both kernels came from the two owners. */
    ck_assert_str_eq(o.actions, "");
    ck_assert_int_eq(o.results, 2 * 173);
  }
}
END_TEST

/* The walk-through's queue blocker: a trusted owner offline, every unit verified by votes, spot
 * checks that nobody online may take. Status says so, counts them stalled (`spot`), has no ETA
 * (never "ETA 0s"), and with a job queued behind names the command that moves on; moving past
 * (srv_sched_set_aside, what `job next --force` does) finishes the job with its totals and the
 * drop on record. Left alone, the scheduler drops them SRV_SPOT_WAIT_S after verification. */
static void spot_blocked_job(fx_t *f, int64_t *now) {
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.spot_check = 100;
  fx_init(f, 8, 3, 2, 3, &cfg);
  srv_owner_t o;
  ck_assert_int_eq(srv_owner_create(f->st, "tr", NULL, T0, &o), 0);
  ck_assert_int_eq(srv_owner_set_trusted(f->st, o.id, 1), 0);
  fx_client_of_owner(f, "tr-1", o.id);
  int64_t cl[2] = {fx_client(f, "bob"), fx_client(f, "carol")};
  *now = T0 + 2 * SRV_TRUSTED_ACTIVE_WINDOW; /* tr was last seen long ago */
  for (int r = 0; r < 200; r++) {
    int got = 0;
    for (int i = 0; i < 2; i++) {
      srv_work_t w[4];
      int n = fx_work(f, cl[i], 4, ++*now, w, NULL);
      ck_assert_int_ge(n, 0);
      for (int k = 0; k < n; k++, got++)
        ck_assert_int_eq(fx_report_true(f, cl[i], &w[k], *now, NULL), 0);
    }
    if (!got) break;
  }
}

START_TEST(spot_checks_never_hold_the_queue) {
  fx_t f;
  int64_t now;
  spot_blocked_job(&f, &now);
  srv_job_t j;
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &j), 0);
  ck_assert_int_eq(j.state, SRV_JOB_RUNNING);
  srv_stalls_t x;
  ck_assert_int_eq(srv_stalls_compute(f.st, f.job.id, SRV_DISTINCT_OWNER, now,
                                      SRV_STATUS_ACTIVE_WINDOW, &x), 0);
  ck_assert_int_eq(x.by[SRV_STALL_SPOT], f.job.units); /* every unit drew one at 100 % */
  nq_jobopts_t q;
  nq_jobopts_default(&q);
  q.n = 9;
  srv_queued_t qd;
  ck_assert_int_eq(srv_queue_add(f.st, &q, now, &qd), 0);
  json_t *st = srv_status_json(f.st, &f.job, &f.sched.cfg, now);
  ck_assert_ptr_nonnull(st);
  json_t *rate = json_object_get(st, "rate"), *stl = json_object_get(st, "stalled");
  ck_assert(json_is_null(json_object_get(rate, "eta_s"))); /* no "ETA 0s" */
  const char *msg = json_string_value(json_object_get(stl, "message"));
  ck_assert_ptr_nonnull(msg);
  ck_assert_ptr_nonnull(strstr(msg, "spot"));
  ck_assert_ptr_nonnull(strstr(msg, "nq-admin job next --force"));
  json_decref(st);
  /* Moved past: finished with its totals, the drop on record. */
  int64_t dropped = 0;
  int done = 0;
  ck_assert_int_eq(srv_sched_set_aside(&f.sched, now, &dropped, &done), 0);
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(dropped, f.job.units);
  fx_check_n8_totals(&f);
  ck_assert_int_eq(srv_job_spot_dropped(f.st, f.job.id, &dropped), 0);
  ck_assert_int_eq(dropped, f.job.units);
  fx_done(&f);
  /* Left alone: a client that asks after the bound finds them dropped and the job done. */
  spot_blocked_job(&f, &now);
  srv_work_t w[4];
  int64_t bob = fx_q1(f.path, "SELECT id FROM clients WHERE name = 'bob'");
  ck_assert_int_eq(fx_work(&f, bob, 4, now + 1, w, NULL), 0);
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &j), 0);
  ck_assert_int_eq(j.state, SRV_JOB_RUNNING); /* within the bound: still waiting */
  srv_nowork_t why;
  ck_assert_int_eq(fx_work(&f, bob, 4, now + SRV_SPOT_WAIT_S + 1, w, &why), 0);
  ck_assert_int_eq(why, SRV_NOWORK_DONE);
  fx_check_n8_totals(&f);
  fx_done(&f);
}
END_TEST

/* A paused client says so in its progress: every lease it holds runs to a full lease from that
 * report (within the hold limit), so a pause longer than a lease does not lapse them; status
 * counts it paused; a report without the flag, or a get_work, clears it. A client that says
 * nothing loses its leases as before. */
START_TEST(paused_client_keeps_its_leases) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 100;
  cfg.spot_check = 0;
  fx_init(&f, 8, 3, 2, 3, &cfg);
  int64_t p = fx_client(&f, "paused"), q = fx_client(&f, "silent");
  srv_work_t wp[4], wq[4];
  ck_assert_int_eq(fx_work(&f, p, 4, T0, wp, NULL), 4);
  ck_assert_int_eq(fx_work(&f, q, 4, T0, wq, NULL), 4);
  int64_t now = T0;
  for (int step = 1; step <= 5; step++) { /* 5 x 80 s: four times the lease */
    now += 80;
    nq_progress_t pr = {.id = wp[0].id, .paused = 1};
    int64_t dl = 0;
    ck_assert_int_eq(srv_store_begin(f.st), 0);
    ck_assert_int_eq(srv_sched_progress(&f.sched, p, &pr, now, &dl), 0);
    ck_assert_int_eq(srv_sched_expire(&f.sched, now, NULL), 0);
    ck_assert_int_eq(srv_store_commit(f.st), 0);
    ck_assert_int_eq(dl, now + 100);
    for (int k = 0; k < 4; k++) ck_assert_int_eq(fx_asg_state(&f, wp[k].id), SRV_ASG_LEASED);
  }
  for (int k = 0; k < 4; k++) ck_assert_int_eq(fx_asg_state(&f, wq[k].id), SRV_ASG_EXPIRED);
  int64_t n = 0;
  ck_assert_int_eq(srv_clients_paused(f.st, now - 600, &n), 0);
  ck_assert_int_eq(n, 1);
  json_t *st = srv_status_json(f.st, &f.job, &f.sched.cfg, now);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(st, "clients"), "paused")),
                   1);
  json_decref(st);
  /* Never past the hold limit (8 x the lease from the first lease). */
  for (int step = 0; step < 20; step++) {
    now += 80;
    nq_progress_t pr = {.id = wp[0].id, .paused = 1};
    int64_t dl = 0;
    ck_assert_int_eq(srv_store_begin(f.st), 0);
    int rc = srv_sched_progress(&f.sched, p, &pr, now, &dl);
    ck_assert_int_eq(srv_sched_expire(&f.sched, now, NULL), 0);
    ck_assert_int_eq(srv_store_commit(f.st), 0);
    if (rc == 0) ck_assert_int_le(dl, T0 + srv_sched_hold(&cfg, -1));
  }
  ck_assert_int_eq(fx_asg_state(&f, wp[1].id), SRV_ASG_EXPIRED);
  /* Asking for work again: not paused any more. */
  ck_assert_int_ge(fx_work(&f, p, 1, now, wp, NULL), 0);
  ck_assert_int_eq(srv_clients_paused(f.st, now - 600, &n), 0);
  ck_assert_int_eq(n, 0);
  fx_done(&f);
}
END_TEST

/* Tail reissue: a client that holds the last unit and never reports (slow, or paused past
 * reason) does not hold the end: once its lease is SRV_TAIL_AFTER_S old, an idle client of
 * another key is given the unit as an extra replica, and the job finishes long before that lease
 * would have run out. */
START_TEST(tail_reissued_to_idle_client) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 3600;
  cfg.spot_check = 0;
  fx_init(&f, 8, 3, 2, 3, &cfg);
  int64_t slow = fx_client(&f, "slow"), b = fx_client(&f, "b"), c = fx_client(&f, "c");
  srv_work_t ws, w[4];
  int64_t now = T0;
  ck_assert_int_eq(fx_work(&f, slow, 1, now, &ws, NULL), 1);
  for (int r = 0; r < 200; r++) {
    int got = 0;
    int64_t who[2] = {b, c};
    for (int i = 0; i < 2; i++) {
      int n = fx_work(&f, who[i], 4, ++now, w, NULL);
      ck_assert_int_ge(n, 0);
      for (int k = 0; k < n; k++, got++)
        ck_assert_int_eq(fx_report_true(&f, who[i], &w[k], now, NULL), 0);
    }
    if (!got) break;
  }
  ck_assert_int_lt(now, T0 + SRV_TAIL_AFTER_S);
  srv_job_t j;
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &j), 0);
  ck_assert_int_eq(j.state, SRV_JOB_RUNNING); /* the slow client's unit is the end */
  /* Past the tail bound, an idle client of a key that had not the unit gets it. */
  now = T0 + SRV_TAIL_AFTER_S;
  int got = 0;
  int64_t who[2] = {b, c};
  for (int i = 0; i < 2; i++) {
    int n = fx_work(&f, who[i], 4, now, w, NULL);
    for (int k = 0; k < n; k++, got++) {
      ck_assert_int_eq(w[k].unit_id, ws.unit_id);
      ck_assert_int_eq(fx_report_true(&f, who[i], &w[k], now, NULL), 0);
    }
  }
  ck_assert_int_eq(got, 1);
  fx_check_n8_totals(&f);
  ck_assert_int_lt(now, ws.deadline); /* long before the slow lease would have run out */
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

#define HON(o, nat) {.owner = o, .native = nat}
#define TRU(o) {.owner = o, .trusted = 1, .native = "avx512"}

/* The fleet shapes: owners 2/3/4, kernel rule 0/2/3, clients of one kernel or several, trusted
 * owner none/online/offline/going offline, liars (everything, spot checks only, one unit), a
 * client banned mid-job, a restart mid-job. Each must finish with MATCH, through the actions its
 * stalls name. */
static const shape_t shapes[] = {
    {"2 owners, K=0", 10, 3, 0, 2, 0, 2, {HON("alice", "avx512"), HON("bob", "avx512")}},
    {"2 owners, K=2", 10, 3, 2, 2, 0, 2, {HON("alice", "avx512"), HON("bob", "avx2")}},
    {"2 owners, K=2, trusted online", 11, 3, 2, 2, 0, 2, {TRU("alice"), HON("bob", "avx512")}},
    {"2 owners, K=3", 9, 3, 3, 2, 0, 2, {HON("alice", "avx512"), HON("bob", "avx512")}},
    {"2 owners, K=2, one kernel each", 9, 3, 2, 2, 0, 2,
     {{.owner = "alice", .native = "avx512", .only_own = 1},
      {.owner = "bob", .native = "avx512", .only_own = 1}}},
    {"3 owners, K=2, mixed kernels", 10, 3, 2, 2, 0, 3,
     {HON("alice", "avx512"), HON("bob", "avx2"), HON("carol", "neon")}},
    {"3 owners, K=3, one-kernel neon", 9, 3, 3, 2, 0, 3,
     {HON("alice", "avx512"), HON("bob", "avx2"),
      {.owner = "carol", .native = "neon", .only_own = 1}}},
    {"4 owners, K=2, 2 clients each of 2", 10, 3, 2, 2, 0, 6,
     {HON("alice", "avx512"), HON("alice", "avx2"), HON("bob", "avx512"), HON("bob", "avx2"),
      HON("carol", "avx512"), HON("dave", "avx2")}},
    {"3 owners, trusted offline from start", 10, 3, 2, 5, 0, 3,
     {{.owner = "tr", .trusted = 1, .native = "avx512", .off_from = 1},
      HON("bob", "avx512"), HON("carol", "avx512")}},
    {"3 owners, trusted going offline", 10, 3, 2, 5, 0, 3,
     {{.owner = "tr", .trusted = 1, .native = "avx512", .off_from = 5},
      HON("bob", "avx512"), HON("carol", "avx512")}},
    {"2 owners, trusted offline", 9, 3, 0, 2, 0, 2,
     {{.owner = "tr", .trusted = 1, .native = "avx512", .off_from = 1}, HON("bob", "avx512")}},
    {"3 owners, liar, trusted online", 9, 3, 2, 5, 0, 4,
     {TRU("tr"), HON("bob", "avx512"), HON("carol", "avx512"),
      {.owner = "mal", .native = "avx512", .behave = LIAR_ALL}}},
    {"3 owners, liar, trusted offline", 9, 3, 0, 5, 0, 4,
     {{.owner = "tr", .trusted = 1, .native = "avx512", .off_from = 1},
      HON("bob", "avx512"), HON("carol", "avx512"),
      {.owner = "mal", .native = "avx512", .behave = LIAR_ALL}}},
    {"liar on spot checks only, no trusted", 9, 3, 0, 50, 0, 4,
     {HON("alice", "avx512"), HON("bob", "avx512"), HON("carol", "avx512"),
      {.owner = "mal", .native = "avx512", .behave = LIAR_SPOT}}},
    {"liar on spot checks only, trusted offline", 9, 3, 0, 50, 0, 4,
     {{.owner = "tr", .trusted = 1, .native = "avx512", .off_from = 1},
      HON("bob", "avx512"), HON("carol", "avx512"),
      {.owner = "mal", .native = "avx512", .behave = LIAR_SPOT}}},
    {"liar on one unit, no trusted", 9, 3, 2, 2, 0, 3,
     {HON("alice", "avx512"), HON("bob", "avx512"),
      {.owner = "mal", .native = "avx512", .behave = LIAR_ONE}}},
    {"trusted offline, liar banned mid-job", 10, 3, 0, 20, 0, 4,
     {{.owner = "tr", .trusted = 1, .native = "avx512", .off_from = 1},
      HON("bob", "avx512"), HON("carol", "avx512"),
      {.owner = "mal", .native = "avx512", .behave = LIAR_SPOT, .ban_at = 8}}},
    {"client banned mid-job, 3 owners", 10, 3, 2, 2, 0, 3,
     {HON("alice", "avx512"), HON("bob", "avx512"), {.owner = "carol", .native = "avx2",
                                                     .ban_at = 6}}},
    {"client banned mid-job, 2 owners", 9, 3, 2, 2, 0, 2,
     {HON("alice", "avx512"), {.owner = "bob", .native = "avx512", .ban_at = 4}}},
    {"restart mid-job, trusted online", 10, 3, 2, 5, 6, 3,
     {TRU("alice"), HON("bob", "avx512"), HON("carol", "avx2")}},
    {"paused client, 2 owners, K=2", 10, 3, 2, 2, 0, 2,
     {HON("alice", "avx512"), {.owner = "bob", .native = "avx512", .pause_from = 3,
                               .pause_to = 60}}},
    {"paused client in the tail, trusted", 10, 3, 2, 5, 0, 3,
     {TRU("alice"), HON("bob", "avx512"), {.owner = "carol", .native = "avx2", .pause_from = 20,
                                           .pause_to = 80}}},
    {"client offline for a while", 10, 3, 2, 2, 0, 2,
     {HON("alice", "avx512"), {.owner = "bob", .native = "avx512", .off_from = 3, .off_to = 40}}},
};

START_TEST(fleet_shapes) {
  int i = _i;
  run_shape(&shapes[i], 0x1000 + (uint64_t)i, NULL);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("liveness");
  TCase *tc = tcase_create("shapes");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, fleet_shapes, 0, (int)(sizeof shapes / sizeof shapes[0]));
  suite_add_tcase(s, tc);
  TCase *queue = tcase_create("queue");
  tcase_set_timeout(queue, 120);
  tcase_add_test(queue, spot_checks_never_hold_the_queue);
  tcase_add_test(queue, paused_client_keeps_its_leases);
  tcase_add_test(queue, tail_reissued_to_idle_client);
  suite_add_tcase(s, queue);
  TCase *two = tcase_create("two_owners");
  tcase_set_timeout(two, 600);
  tcase_add_test(two, two_owners_kernel_rule_finishes);
  suite_add_tcase(s, two);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
