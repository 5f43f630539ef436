/* nq-server: the scheduler -- leases, reissue, quorum, trust (contracts in sched.h, model in
 * docs/store.md). All state lives in the store; this file holds the rules, and asks the store
 * (store.h's typed functions) for every read and write: it has no SQL. */
#include "sched.h"

#include "nq/plan.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define WANT_MAX 256

void srv_sched_config_default(srv_sched_config_t *cfg) {
  cfg->lease_seconds = 3600;
  cfg->lease_min = 60;
  cfg->max_outstanding = 16;
  cfg->ban_threshold = 3;
  cfg->retry_after = 30;
}

int srv_sched_init(srv_sched_t *s, srv_store_t *st, int64_t job_id,
                   const srv_sched_config_t *cfg) {
  memset(s, 0, sizeof *s);
  s->store = st;
  if (cfg) s->cfg = *cfg;
  else srv_sched_config_default(&s->cfg);
  if (s->cfg.lease_seconds < 1 || s->cfg.lease_min < 1 || s->cfg.max_outstanding < 1 ||
      s->cfg.ban_threshold < 0)
    return srv_store_failf(st, NQ_ERANGE, "scheduler config out of range");
  return srv_job_get(st, job_id, &s->job);
}

nq_nowork_reason_t srv_nowork_code(srv_nowork_t why) {
  assert(why != SRV_NOWORK_NONE); /* something was leased: the answer is work, not no_work */
  switch (why) {
  case SRV_NOWORK_CAP: return NQ_NOWORK_CAP;
  case SRV_NOWORK_DONE: return NQ_NOWORK_DONE;
  default: return NQ_NOWORK_NONE_PENDING;
  }
}

nq_ack_status_t srv_result_ack(srv_result_status_t st) {
  switch (st) {
  case SRV_RESULT_DUPLICATE: return NQ_ACK_DUPLICATE;
  case SRV_RESULT_LATE: return NQ_ACK_LATE;
  default: return NQ_ACK_ACCEPTED;
  }
}

/* ---- helpers ------------------------------------------------------------------------------ */

/* The group-commit contract: the caller owns the transaction, so acks follow its commit. */
static int need_tx(srv_sched_t *s) {
  if (srv_store_in_tx(s->store)) return 0;
  return srv_store_failf(s->store, NQ_ETXN, "scheduler call outside a transaction");
}

/* The client must exist and not be banned; its activity is recorded. */
static int client_ok(srv_sched_t *s, int64_t client_id, int64_t now) {
  srv_client_t c;
  int rc = srv_client_get(s->store, client_id, &c);
  if (rc) return rc;
  if (c.banned) return srv_store_failf(s->store, NQ_EBANNED, "client %s is banned", c.name);
  return srv_client_touch(s->store, client_id, now);
}

/* ---- expiry ------------------------------------------------------------------------------- */

int srv_sched_expire(srv_sched_t *s, int64_t now, int64_t *n_expired) {
  int rc = need_tx(s);
  if (rc == 0) rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  return srv_store_release(s->store, srv_asg_expire_due(s->store, now, n_expired));
}

int srv_sched_next_deadline(srv_sched_t *s, int64_t *deadline) {
  return srv_asg_next_deadline(s->store, deadline);
}

/* ---- get_work ----------------------------------------------------------------------------- */

int64_t srv_sched_lease_for(const srv_sched_config_t *cfg, double mean, int ahead) {
  int64_t max = cfg->lease_seconds, min = cfg->lease_min < max ? cfg->lease_min : max;
  if (mean < 0 || ahead < 0) return max;
  double x = LEASE_SLACK * mean * (ahead + 1); /* seconds, rounded up below */
  if (!(x < (double)(max - min))) return max;  /* also catches NaN */
  int64_t up = (int64_t)x;
  if ((double)up < x) up++;
  return min + up;
}

/* The client's expected seconds per unit in this job: the mean of its last LEASE_HISTORY reported
 * solve times, or -1 with fewer than LEASE_HISTORY_MIN of them. */
static int expected_seconds(srv_sched_t *s, int64_t client_id, double *mean) {
  int count = 0;
  double m = 0;
  int rc = srv_client_recent_seconds(s->store, client_id, s->job.id, LEASE_HISTORY, &count, &m);
  *mean = rc == 0 && count >= LEASE_HISTORY_MIN ? m : -1;
  return rc;
}

/* Pick up to `room` units (in progress first, or pending) and lease each to the client; `ahead`
 * counts the client's assignments before the first of them (it grows by one per lease), `mean`
 * is its expected seconds per unit. The picks are read completely before any insert, so the
 * pick never sees its own writes. A unit never goes to a client that holds or reported it; one
 * whose lease merely expired with this client may come back to it, on the same assignment:
 * otherwise a job with few clients stalls for good once every eligible client has let a lease
 * of one unit expire. */
static int lease_new(srv_sched_t *s, int in_progress, int64_t client_id, int64_t now, int room,
                     int ahead, double mean, srv_work_t *out, int *n_out) {
  int first = *n_out;
  int rc = srv_unit_pick(s->store, s->job.id, client_id, in_progress, room, out, n_out);
  for (int i = first; i < *n_out && rc == 0; i++) {
    srv_work_t *w = &out[i];
    w->deadline = now + srv_sched_lease_for(&s->cfg, mean, ahead + (i - first));
    rc = srv_asg_lease(s->store, w->unit_id, client_id, now, w->deadline, &w->id);
  }
  return rc;
}

int srv_sched_get_work(srv_sched_t *s, int64_t client_id, int want, int64_t now, srv_work_t *out,
                       int *n_out, srv_nowork_t *why) {
  *n_out = 0;
  *why = SRV_NOWORK_PENDING;
  if (want < 1 || want > WANT_MAX)
    return srv_store_failf(s->store, NQ_EINVAL, "want %d outside 1..%d", want, WANT_MAX);
  int rc = need_tx(s);
  if (rc == 0) rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  int held = 0;
  if ((rc = client_ok(s, client_id, now)) != 0) goto out;
  if ((rc = srv_asg_expire_due(s->store, now, NULL)) != 0) goto out;
  if ((rc = srv_job_get(s->store, s->job.id, &s->job)) != 0) goto out;
  if (s->job.state != SRV_JOB_RUNNING) { /* done (or archived: nothing more to do either) */
    *why = SRV_NOWORK_DONE;
    goto out;
  }
  if ((rc = srv_asg_held(s->store, client_id, out, want, n_out, &held)) != 0) goto out;
  int room = want - *n_out;
  if (room > s->cfg.max_outstanding - held) room = s->cfg.max_outstanding - held;
  double mean = -1;
  if (room > 0 && (rc = expected_seconds(s, client_id, &mean)) != 0) goto out;
  int before = *n_out;
  if (room > 0) rc = lease_new(s, 1, client_id, now, room, held, mean, out, n_out);
  int leased = *n_out - before;
  room -= leased;
  if (rc == 0 && room > 0)
    rc = lease_new(s, 0, client_id, now, room, held + leased, mean, out, n_out);
out:
  rc = srv_store_release(s->store, rc);
  if (rc) *n_out = 0;
  else if (*n_out > held) *why = SRV_NOWORK_NONE; /* something new was leased */
  else if (*why != SRV_NOWORK_DONE && held >= s->cfg.max_outstanding) *why = SRV_NOWORK_CAP;
  return rc;
}

/* ---- progress ----------------------------------------------------------------------------- */

static int progress_locked(srv_sched_t *s, int64_t client_id, const nq_progress_t *p,
                           int64_t now, int64_t *deadline) {
  srv_asg_info_t a;
  srv_unit_info_t u;
  int rc = srv_asg_get_unit(s->store, p->id, &a, &u);
  if (rc) return rc;
  /* The protocol does not tell a client whether someone else's assignment exists; one of
   * another job (archived) is not work any more. */
  if (a.client_id != client_id || u.job_id != s->job.id)
    return srv_store_failf(s->store, NQ_ENOTFOUND, "no assignment %lld", (long long)p->id);
  int64_t d = now + s->cfg.lease_seconds;
  if (a.state == SRV_ASG_LEASED) {
    /* Never shorten a lease: a late or reordered progress must not pull the deadline back. */
    if (d < a.deadline) d = a.deadline;
    rc = srv_asg_set_deadline(s->store, a.id, d);
  } else if (a.state == SRV_ASG_EXPIRED) {
    /* Revived while its unit is undecided and still short of replicas, i.e. nobody has been
     * given the unit in its place; otherwise the client's work would be redundant. */
    rc = srv_asg_revive(s->store, a.id, a.unit_id, d);
  } else {
    rc = srv_store_failf(s->store, NQ_ENOTFOUND, "assignment %lld already reported",
                         (long long)p->id);
  }
  /* The report is kept for a live lease only: it is what the operator watches. */
  if (rc == 0) rc = srv_asg_set_progress(s->store, a.id, p, now);
  if (rc == 0) *deadline = d;
  return rc;
}

int srv_sched_progress(srv_sched_t *s, int64_t client_id, const nq_progress_t *p, int64_t now,
                       int64_t *deadline) {
  int rc = need_tx(s);
  if (rc == 0) rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  rc = client_ok(s, client_id, now);
  if (rc == 0) rc = progress_locked(s, client_id, p, now, deadline);
  return srv_store_release(s->store, rc);
}

/* ---- result: validation ------------------------------------------------------------------- */

/* Numbers no correct solver can produce are refused before anything is stored. */
static int result_check(srv_store_t *st, const srv_asg_info_t *a, const srv_unit_info_t *u,
                        const char *unit_text, const nq_counts_t *c, double seconds,
                        const char *solver) {
  if (!unit_text || strcmp(unit_text, u->text) != 0)
    return srv_store_failf(st, NQ_EINVAL, "assignment %lld is unit %s, not %s", (long long)a->id,
                           u->text, unit_text ? unit_text : "(none)");
  if (!c) return srv_store_failf(st, NQ_EINVAL, "no counts");
  if (c->c2 > INT64_MAX || c->c4 > INT64_MAX || c->c8 > INT64_MAX || c->nodes > INT64_MAX)
    return srv_store_failf(st, NQ_EINVAL, "count above 2^63-1");
  if (c->count1 != 0) return srv_store_failf(st, NQ_EINVAL, "count1 is only for N = 1");
  if (c->nodes < 1) return srv_store_failf(st, NQ_EINVAL, "nodes must be >= 1");
  if ((nq_u128)c->c2 + c->c4 + c->c8 > c->nodes)
    return srv_store_failf(st, NQ_EINVAL, "more solutions than nodes");
  if (u->part == 'c' && (c->c2 || c->c4))
    return srv_store_failf(st, NQ_EINVAL, "corner unit with COUNT2/COUNT4 solutions");
  if (!(seconds >= 0) || !isfinite(seconds))
    return srv_store_failf(st, NQ_EINVAL, "bad seconds");
  if (!solver || !*solver || strlen(solver) > SRV_SOLVER_MAX)
    return srv_store_failf(st, NQ_EINVAL, "bad solver version");
  /* The plan's result guard (nq/plan.h): nodes within the unit's provable bound, and the rest of
   * what every honest result satisfies. */
  nq_unit_t unit;
  char why[200];
  if (nq_unit_parse(u->text, &unit, why, sizeof why) != 0)
    return srv_store_failf(st, NQ_EIO, "unit %s: stored text does not parse: %s", u->text, why);
  if (nq_plan_check_result(&unit, c, why, sizeof why) != 0)
    return srv_store_failf(st, NQ_EINVAL, "%s", why);
  return 0;
}

/* ---- result: trust ------------------------------------------------------------------------ */

/* Ban a client once its invalid results reach the threshold and outnumber its valid ones: a rare
 * honest loss (a flipped bit) among many agreeing results is tolerated, a liar is not. */
static int maybe_ban(srv_sched_t *s, int64_t client_id, int64_t now, srv_result_info_t *info) {
  if (s->cfg.ban_threshold <= 0) return 0;
  srv_client_t c;
  int rc = srv_client_get(s->store, client_id, &c);
  if (rc || c.banned || c.invalid < s->cfg.ban_threshold || c.invalid <= c.valid) return rc;
  rc = srv_client_ban(s->store, client_id, now);
  if (rc == 0) info->banned++;
  return rc;
}

/* Mark one result valid or invalid and count it for its client. */
static int judge(srv_sched_t *s, int64_t asg_id, int64_t client_id, int valid, int64_t now,
                 srv_result_info_t *info) {
  int rc = srv_asg_judge(s->store, asg_id, client_id, valid);
  if (rc == 0 && !valid) rc = maybe_ban(s, client_id, now, info);
  return rc;
}

/* ---- result: quorum ----------------------------------------------------------------------- */

typedef struct res_s {
  int64_t id, client_id;
  uint64_t c2, c4, c8, nodes;
  char solver[SRV_SOLVER_MAX + 1];
  int member; /* in the winning group */
} res_t;

typedef struct res_vec_s {
  res_t *v;
  int n, cap;
} res_vec_t;

static int res_add(const srv_asg_info_t *a, void *arg) {
  res_vec_t *rv = arg;
  if (rv->n == rv->cap) {
    int cap = rv->cap ? rv->cap * 2 : 8;
    res_t *p = realloc(rv->v, (size_t)cap * sizeof *p);
    if (!p) return NQ_ENOMEM;
    rv->v = p;
    rv->cap = cap;
  }
  res_t *r = &rv->v[rv->n++];
  memset(r, 0, sizeof *r);
  r->id = a->id;
  r->client_id = a->client_id;
  r->c2 = a->counts.c2;
  r->c4 = a->counts.c4;
  r->c8 = a->counts.c8;
  r->nodes = a->counts.nodes;
  snprintf(r->solver, sizeof r->solver, "%s", a->solver);
  return 0;
}

/* The undecided results of a unit, oldest first. */
static int res_load(srv_store_t *st, int64_t unit_id, res_t **out, int *count) {
  res_vec_t rv = {NULL, 0, 0};
  int rc = srv_asg_list_reported(st, unit_id, res_add, &rv);
  if (rc == NQ_ENOMEM) srv_store_failf(st, rc, "results: out of memory");
  if (rc) {
    free(rv.v);
    rv.v = NULL;
    rv.n = 0;
  }
  *out = rv.v;
  *count = rv.n;
  return rc;
}

static int same_counts(const res_t *a, const res_t *b) {
  return a->c2 == b->c2 && a->c4 == b->c4 && a->c8 == b->c8;
}

/* Results of one counts class and one solver version: their nodes must agree too. */
static int same_kind(const res_t *a, const res_t *b) {
  return same_counts(a, b) && strcmp(a->solver, b->solver) == 0;
}

/* The largest set of mutually agreeing results with the counts of r[anchor]. Agreement is not
 * transitive across solver versions, so: within the class, take for each solver version the
 * nodes value most results share (the oldest on a tie); results of different versions agree on
 * counts alone. With mark, the chosen results get member = 1. Results are few (<= max_results
 * plus late ones), so the quadratic scans cost nothing. */
static int group(res_t *r, int n, int anchor, int mark) {
  int total = 0;
  for (int i = 0; i < n; i++) {
    if (!same_counts(&r[i], &r[anchor])) continue;
    int first = 1;
    for (int j = 0; j < i && first; j++) first = !same_kind(&r[j], &r[i]);
    if (!first) continue; /* this solver version was handled at its first result */
    int best = 0, best_j = i;
    for (int j = i; j < n; j++) {
      if (!same_kind(&r[j], &r[i])) continue;
      int k = 0;
      for (int m = 0; m < n; m++) k += same_kind(&r[m], &r[j]) && r[m].nodes == r[j].nodes;
      if (k > best) { best = k; best_j = j; }
    }
    total += best;
    for (int m = 0; mark && m < n; m++)
      if (same_kind(&r[m], &r[best_j]) && r[m].nodes == r[best_j].nodes) r[m].member = 1;
  }
  return total;
}

/* The biggest agreeing group over all counts classes; *anchor gets a result of it. */
static int best_group(res_t *r, int n, int *anchor) {
  int best = 0;
  *anchor = 0;
  for (int i = 0; i < n; i++) {
    int g = group(r, n, i, 0);
    if (g > best) { best = g; *anchor = i; }
  }
  return best;
}

/* The unit reached its quorum: store its counts, judge every result, close it; if it was the
 * job's last open unit the job is done, in the same transaction. The unit's nodes are those of
 * the oldest winning result (they can differ between solver versions). */
static int unit_verify(srv_sched_t *s, int64_t unit_id, int64_t job_id, res_t *r, int n,
                       int anchor, int64_t now, srv_result_info_t *info) {
  group(r, n, anchor, 1);
  int w = 0;
  while (!r[w].member) w++;
  nq_counts_t c = {r[w].c2, r[w].c4, r[w].c8, 0, r[w].nodes};
  int rc = srv_unit_verify(s->store, unit_id, &c, now);
  /* Valid ones first, so a client's wins are counted before its losses are weighed for a ban. */
  for (int pass = 1; pass >= 0 && rc == 0; pass--)
    for (int i = 0; i < n && rc == 0; i++)
      if (r[i].member == pass) rc = judge(s, r[i].id, r[i].client_id, pass, now, info);
  if (rc == 0) info->unit_verified = 1;
  if (rc == 0) rc = srv_job_finish_if_complete(s->store, job_id, now, &info->job_done);
  return rc;
}

/* After a new result for an undecided unit: verify it, dispute it, or leave it open. */
static int quorum_check(srv_sched_t *s, int64_t unit_id, int64_t job_id, int64_t now,
                        srv_result_info_t *info) {
  srv_job_t job;
  res_t *r = NULL;
  int n = 0, anchor = 0;
  int rc = srv_job_get(s->store, job_id, &job);
  if (rc == 0) rc = res_load(s->store, unit_id, &r, &n);
  if (rc) goto out;
  int best = best_group(r, n, &anchor);
  if ((rc = srv_unit_set_best(s->store, unit_id, best)) != 0) goto out;
  /* The cap counts every result of the unit (as `need` does), so results that arrived while it
   * was disputed, before an operator retry, use up its allowance too. */
  srv_unit_info_t u;
  if ((rc = srv_unit_get(s->store, unit_id, &u)) != 0) goto out;
  if (best >= job.quorum) {
    rc = unit_verify(s, unit_id, job_id, r, n, anchor, now, info);
  } else if (u.results >= job.max_results + u.extra_results) {
    rc = srv_unit_dispute(s->store, unit_id);
    if (rc == 0) info->unit_disputed = 1;
  }
out:
  free(r);
  return rc;
}

/* A result for an already verified unit is judged against the winners: same counts, and the same
 * nodes as every valid result of the same solver version. */
static int judge_late(srv_sched_t *s, const srv_asg_info_t *a, const nq_counts_t *c,
                      const char *solver, int64_t now, srv_result_info_t *info) {
  int valid = 0;
  int rc = srv_unit_agrees(s->store, a->unit_id, c, solver, &valid);
  return rc ? rc : judge(s, a->id, a->client_id, valid, now, info);
}

static int result_locked(srv_sched_t *s, int64_t client_id, int64_t asg_id, const char *unit_text,
                         const nq_counts_t *c, double seconds, const char *solver, int64_t now,
                         srv_result_info_t *info) {
  srv_asg_info_t a;
  srv_unit_info_t u;
  int rc = srv_asg_get_unit(s->store, asg_id, &a, &u);
  if (rc) return rc;
  /* An assignment of another job (one archived under a client's feet) is no longer work. */
  if (u.job_id != s->job.id)
    return srv_store_failf(s->store, NQ_ENOTFOUND, "assignment %lld is of another job",
                           (long long)asg_id);
  if (a.client_id != client_id)
    return srv_store_failf(s->store, NQ_EAUTH, "assignment %lld is not yours", (long long)asg_id);
  if ((rc = client_ok(s, client_id, now)) != 0) return rc;
  if ((rc = result_check(s->store, &a, &u, unit_text, c, seconds, solver)) != 0) return rc;
  if (a.reported_at != 0) {
    info->status = SRV_RESULT_DUPLICATE;
    return 0;
  }
  if (u.state == SRV_UNIT_VERIFIED) {
    info->status = SRV_RESULT_LATE;
    rc = srv_asg_set_result(s->store, asg_id, c, seconds, solver, SRV_ASG_REPORTED, 1, now);
    if (rc == 0) rc = srv_store_unit_refresh(s->store, a.unit_id);
    if (rc == 0) rc = judge_late(s, &a, c, solver, now, info);
  } else if (u.state == SRV_UNIT_DISPUTED) {
    /* No consensus to judge against: keep it for the operator. */
    info->status = SRV_RESULT_LATE;
    rc = srv_asg_set_result(s->store, asg_id, c, seconds, solver, SRV_ASG_LATE, 1, now);
    if (rc == 0) rc = srv_store_unit_refresh(s->store, a.unit_id);
  } else {
    info->status = SRV_RESULT_ACCEPTED;
    rc = srv_asg_set_result(s->store, asg_id, c, seconds, solver, SRV_ASG_REPORTED, 0, now);
    if (rc == 0) rc = quorum_check(s, a.unit_id, u.job_id, now, info);
  }
  return rc;
}

int srv_sched_result(srv_sched_t *s, int64_t client_id, int64_t assignment_id,
                     const char *unit_text, const nq_counts_t *counts, double seconds,
                     const char *solver, int64_t now, srv_result_info_t *info) {
  srv_result_info_t tmp;
  if (!info) info = &tmp;
  memset(info, 0, sizeof *info);
  int rc = need_tx(s);
  if (rc == 0) rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  rc = srv_store_release(s->store, result_locked(s, client_id, assignment_id, unit_text, counts,
                                                 seconds, solver, now, info));
  if (rc) memset(info, 0, sizeof *info);
  return rc;
}
