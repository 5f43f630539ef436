/* nq-server: the scheduler -- leases, reissue, quorum, trust (contracts in sched.h, model in
 * docs/store.md). All state lives in the store; this file holds the rules, and asks the store
 * (store.h's typed functions) for every read and write: it has no SQL. */
#include "sched.h"

#include "kernels.h"
#include "store_kernels.h"
#include "store_stall.h"
#include "nq/certs.h"
#include "nq/estimate.h"
#include "nq/plan.h"
#include "nq/versions.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define WANT_MAX 256

/* srv_sched_config_default: sched_opts.c, from the options table that declares the defaults. */

/* splitmix64: the spot-check draw needs no more than an even spread, and a state of its own. */
static uint64_t rng_next(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int srv_sched_init(srv_sched_t *s, srv_store_t *st, int64_t job_id,
                   const srv_sched_config_t *cfg) {
  memset(s, 0, sizeof *s);
  s->store = st;
  if (cfg) s->cfg = *cfg;
  else srv_sched_config_default(&s->cfg);
  if (s->cfg.lease_seconds < 1 || s->cfg.lease_min < 1 || s->cfg.max_outstanding < 1 ||
      s->cfg.ban_threshold < 0 || (unsigned)s->cfg.quorum_distinct >= SRV_DISTINCT_NMODES ||
      !(s->cfg.spot_check >= 0 && s->cfg.spot_check <= 100) || s->cfg.hold_factor < 1)
    return srv_store_failf(st, NQ_ERANGE, "scheduler config out of range");
  s->rng = s->cfg.seed;
  if (s->rng == 0) {
    /* Unpredictable, so that a colluder cannot tell which of its units will be checked. */
    char hex[17];
    if (nq_random_token(hex, 8) == 0) s->rng = strtoull(hex, NULL, 16);
  }
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

/* The client must exist and not be banned; its activity is recorded. *out (may be NULL) gets
 * it. */
static int client_get_ok(srv_sched_t *s, int64_t client_id, int64_t now, srv_client_t *out) {
  srv_client_t tmp, *c = out ? out : &tmp;
  int rc = srv_client_get(s->store, client_id, c);
  if (rc) return rc;
  if (c->banned) return srv_store_failf(s->store, NQ_EBANNED, "client %s is banned", c->name);
  return srv_client_touch(s->store, client_id, now);
}

static int client_ok(srv_sched_t *s, int64_t client_id, int64_t now) {
  return client_get_ok(s, client_id, now, NULL);
}

/* Trusted resolution: `on` while any trusted owner is not banned (a disagreement then
 * waits for a trusted result instead of a vote), `active` (looked up only when want_active: it
 * counts the trusted owners' clients) while a client of one was seen within
 * SRV_TRUSTED_ACTIVE_WINDOW s (spot checks are then theirs only). */
typedef struct trust_s {
  int on, active;
} trust_t;

static int trust_get(srv_sched_t *s, int64_t now, int want_active, trust_t *t) {
  int64_t owners = 0, active = 0;
  int rc = srv_trust_counts(s->store, now - SRV_TRUSTED_ACTIVE_WINDOW, &owners,
                            want_active ? &active : NULL);
  t->on = owners > 0;
  t->active = active > 0;
  return rc;
}


int srv_sched_lapse_factor(int64_t lapses) {
  if (lapses <= 0) return 1;
  int64_t f = 1 + lapses / SRV_LAPSE_STEP;
  return f < SRV_LAPSE_FACTOR_MAX ? (int)f : SRV_LAPSE_FACTOR_MAX;
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
typedef enum {
  PICK_OPEN, PICK_SPOT, PICK_NEW, PICK_CONTESTED, PICK_EVIDENCE, PICK_TAIL
} pick_kind_t;

/* The client's leases in this call: `mean` its expected seconds per unit, `lapse` its lapse
 * factor (srv_sched_lapse_factor). */
typedef struct {
  double mean;
  int lapse;
  int kernels; /* the job's diverse_kernels: >= 2 names a kernel in each lease (kernels.h) */
  char native[NQ_PROTO_BACKEND_MAX + 1];        /* its own kernel (srv_kernel_native) */
  char refused[SRV_KERNELS_REFUSED_MAX + 1];    /* the kernels it refused */
} lease_plan_t;

/* The kernel a new lease of unit w names (kernels.h), into w->kernel ("" none), and how many
 * times slower than the client's own kernel it is expected to run (1 when none is named). */
static int lease_kernel(srv_sched_t *s, const lease_plan_t *lp, srv_work_t *w, double *slow,
                        int *lacking) {
  char present[256];
  *slow = 1.0;
  *lacking = 0;
  w->kernel[0] = '\0';
  if (lp->kernels < 2) return 0;
  int rc = srv_unit_kernels_present(s->store, w->unit_id, present, sizeof present);
  if (rc) return rc;
  const char *k = srv_kernel_choose(lp->native, present, lp->refused);
  if (k) {
    snprintf(w->kernel, sizeof w->kernel, "%s", k);
    *slow = srv_kernel_slowdown(lp->native, k);
    *lacking = !srv_kernel_listed(present, k);
  }
  return 0;
}

static int lease_new(srv_sched_t *s, pick_kind_t kind, int64_t client_id, int64_t now, int room,
                     int ahead, const lease_plan_t *lp, srv_work_t *out, int *n_out,
                     int *dropped) {
  int first = *n_out;
  /* A replica past its key's hold limit waits one nominal lease for a client of another key. */
  srv_pick_t pk = {.job_id = s->job.id, .client_id = client_id, .distinct = s->cfg.quorum_distinct,
                   .now = now, .cooldown = s->cfg.lease_seconds,
                   .self_net = s->cfg.self_joined == SRV_SELF_JOINED_OWNER_AND_NET};
  int rc = kind == PICK_SPOT        ? srv_unit_pick_spot(s->store, &pk, room, out, n_out)
         : kind == PICK_CONTESTED ? srv_unit_pick_contested(s->store, &pk, room, out, n_out)
         : kind == PICK_EVIDENCE  ? srv_unit_pick_evidence(s->store, &pk, room, out, n_out)
         : kind == PICK_TAIL      ? srv_unit_pick_tail(s->store, &pk, now - SRV_TAIL_AFTER_S,
                                                       room, out, n_out)
                                  : srv_unit_pick(s->store, &pk, kind == PICK_OPEN, room, out,
                                                  n_out);
  for (int i = first; i < *n_out && rc == 0; i++) {
    srv_work_t *w = &out[i];
    double slow = 1.0;
    int lacking = 1;
    if ((rc = lease_kernel(s, lp, w, &slow, &lacking)) != 0) break;
    /* Kernel evidence is worth leasing only with a kernel the unit lacks: drop the pick. */
    if (w->evidence && (!w->kernel[0] || !lacking)) {
      if ((rc = srv_asg_evidence_none(s->store, w->unit_id, client_id, now)) != 0) break;
      (*dropped)++;
      memmove(w, w + 1, (size_t)(*n_out - i - 1) * sizeof *w);
      (*n_out)--;
      i--;
      continue;
    }
    int64_t lease = srv_sched_lease_for(&s->cfg, lp->mean, ahead + (i - first));
    /* A client whose leases lapse gets shorter ones, down to the shortest. */
    if (lp->lapse > 1) {
      int64_t min = s->cfg.lease_min < lease ? s->cfg.lease_min : lease;
      lease = lease / lp->lapse > min ? lease / lp->lapse : min;
    }
    /* The hold counts from the first time a client of this key was given the replica: a lease
     * taken again after one ran out keeps it (srv_unit_pick says which). */
    /* A slower kernel than the client's own gets a lease and a hold as much longer. */
    if (slow > 1) lease = (int64_t)ceil((double)lease * slow);
    if (w->hold_until <= now)
      w->hold_until = now + (int64_t)ceil((double)srv_sched_hold(&s->cfg, w->est_nodes) * slow);
    w->deadline = now + lease < w->hold_until ? now + lease : w->hold_until;
    rc = srv_asg_lease_work(s->store, w, client_id, now, kind == PICK_SPOT);
    if (rc == 0 && lp->kernels >= 2) rc = srv_asg_kernel_set(s->store, w->id, w->kernel);
  }
  return rc;
}

static int drop_spots_locked(srv_sched_t *s, int64_t now, int64_t *dropped,
                             srv_result_info_t *info);

int srv_sched_get_work(srv_sched_t *s, int64_t client_id, int want, int64_t now, srv_work_t *out,
                       int *n_out, srv_nowork_t *why) {
  *n_out = 0;
  *why = SRV_NOWORK_PENDING;
  if (want < 1 || want > WANT_MAX)
    return srv_store_failf(s->store, NQ_EINVAL, "want %d outside 1..%d", want, WANT_MAX);
  int rc = need_tx(s);
  if (rc == 0) rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  int held = 0, cap = s->cfg.max_outstanding;
  srv_client_t cl;
  /* Expiry first, so that the client's lapses include the leases it just let run out. */
  if ((rc = srv_asg_expire_due(s->store, now, NULL)) != 0) goto out;
  if ((rc = client_get_ok(s, client_id, now, &cl)) != 0) goto out;
  /* A client that asks for work is not paused (any more). */
  if ((rc = srv_client_pause(s->store, client_id, 0, now, 0, 0)) != 0) goto out;
  int64_t dropped = 0;
  srv_result_info_t dinfo;
  memset(&dinfo, 0, sizeof dinfo);
  if ((rc = drop_spots_locked(s, now, &dropped, &dinfo)) != 0) goto out;
  if ((rc = srv_job_get(s->store, s->job.id, &s->job)) != 0) goto out;
  /* A finished job still hands out the spot checks it wants (one may re-open it); an archived
   * one has nothing more to do. */
  int done = s->job.state != SRV_JOB_RUNNING;
  if (s->job.state != SRV_JOB_RUNNING && s->job.state != SRV_JOB_DONE) {
    *why = SRV_NOWORK_DONE;
    goto out;
  }
  if ((rc = srv_asg_held(s->store, client_id, out, want, n_out, &held)) != 0) goto out;
  /* Its lapses (leases run out without a result) shrink what it may hold: a hoarder that lets
   * leases expire and asks again ends up with one at a time (docs/store.md, "Leases"). */
  lease_plan_t lp = {.mean = -1, .lapse = srv_sched_lapse_factor(cl.lapses), .kernels = 0};
  cap = s->cfg.max_outstanding / lp.lapse;
  if (cap < 1) cap = 1;
  int room = want - *n_out;
  if (room > cap - held) room = cap - held;
  if (room > 0 && (rc = expected_seconds(s, client_id, &lp.mean)) != 0) goto out;
  if ((rc = srv_job_kernels_get(s->store, s->job.id, &lp.kernels)) != 0) goto out;
  if (room > 0 && lp.kernels >= 2) {
    char backends[512], kept[NQ_PROTO_BACKEND_MAX + 1];
    if ((rc = srv_client_kernels(s->store, client_id, backends, sizeof backends, kept,
                                 sizeof kept, lp.refused, sizeof lp.refused)) != 0)
      goto out;
    srv_kernel_native(backends, lp.native, sizeof lp.native);
    if (strcmp(kept, lp.native) != 0 &&
        (rc = srv_client_kernel_native_set(s->store, client_id, lp.native)) != 0)
      goto out;
  }
  /* A resent assignment names the kernel it named when it was leased. */
  for (int i = 0; i < *n_out && lp.kernels >= 2 && rc == 0; i++)
    rc = srv_asg_kernel_get(s->store, out[i].id, out[i].kernel, sizeof out[i].kernel);
  if (rc) goto out;
  /* Quorums in progress first, then spot checks (a share of the verified units, checked while
   * the job runs rather than all at its end), then untouched work. A trusted owner's client
   * first settles contested units, then checks: that is what only it can do; while
   * one is active, nobody else gets a spot check. */
  static const pick_kind_t order[] = {PICK_OPEN, PICK_EVIDENCE, PICK_SPOT, PICK_NEW, PICK_TAIL};
  static const pick_kind_t order_trusted[] = {PICK_CONTESTED, PICK_SPOT, PICK_OPEN,
                                              PICK_EVIDENCE, PICK_NEW, PICK_TAIL};
  trust_t tm = {0, 0};
  int trusted = 0;
  if (room > 0 && (rc = trust_get(s, now, 1, &tm)) == 0 && tm.on)
    rc = srv_client_trusted(s->store, client_id, &trusted);
  const pick_kind_t *ord = trusted ? order_trusted : order;
  size_t nord = trusted ? 6 : 5;
  int start = *n_out;
  for (size_t k = 0; k < nord && rc == 0 && room > 0; k++) {
    if (done && ord[k] != PICK_SPOT) continue;
    if (ord[k] == PICK_SPOT && (s->cfg.spot_check <= 0 || (tm.active && !trusted))) continue;
    if (ord[k] == PICK_EVIDENCE && lp.kernels < 2) continue;
    /* Tail reissue: only to a client that found nothing else to do in this call. */
    if (ord[k] == PICK_TAIL && *n_out > start) continue;
    int before = *n_out, gone = 0;
    rc = lease_new(s, ord[k], client_id, now, room, held + (before - start), &lp, out, n_out,
                   &gone);
    room -= *n_out - before;
    /* Evidence picks this client cannot add a kernel to are marked and dropped: pick again (each
     * round marks at least one, so this ends). */
    if (rc == 0 && gone > 0 && room > 0) k--;
  }
  if (rc == 0 && done && *n_out == start) *why = SRV_NOWORK_DONE;
out:
  rc = srv_store_release(s->store, rc);
  if (rc) *n_out = 0;
  else if (*n_out > held) *why = SRV_NOWORK_NONE; /* something new was leased */
  else if (*why != SRV_NOWORK_DONE && held >= cap) *why = SRV_NOWORK_CAP;
  return rc;
}

/* ---- progress ----------------------------------------------------------------------------- */

int64_t srv_sched_hold(const srv_sched_config_t *cfg, int64_t est_nodes) {
  double base = cfg->lease_seconds;
  double est = est_nodes > 0 ? (double)est_nodes / NQ_REF_NODES_PER_SEC : 0;
  if (est > base) base = est;
  double hold = base * cfg->hold_factor;
  return hold < (double)INT32_MAX * 64 ? (int64_t)hold : (int64_t)INT32_MAX * 64;
}

/* A report advances when the share done or the nodes counted grew since the last one; the
 * first report of a lease always does. Time alone is not progress: a hoarder's clock runs too. */
static int progress_advances(const srv_asg_info_t *a, const nq_progress_t *p) {
  if (a->progress_at == 0) return 1;
  if (p->has_fraction && (a->progress < 0 || p->fraction > a->progress)) return 1;
  return p->has_nodes && p->nodes > a->progress_nodes;
}

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
  int64_t limit = a.hold_until > 0 ? a.hold_until : a.issued + srv_sched_hold(&s->cfg, u.est_nodes);
  if (d > limit) d = limit;
  if (a.state == SRV_ASG_LEASED) {
    /* Never shorten a lease: a late or reordered progress must not pull the deadline back; a
     * report that does not advance leaves the deadline as it was. */
    if (d < a.deadline || !progress_advances(&a, p)) d = a.deadline;
    rc = srv_asg_set_deadline(s->store, a.id, d);
  } else if (a.state == SRV_ASG_EXPIRED) {
    /* Revived while its unit is undecided and still short of replicas, i.e. nobody has been
     * given the unit in its place; otherwise the client's work would be redundant. Never past
     * the hold limit, and only for a report that advances. */
    if (u.state == SRV_UNIT_VERIFIED)
      rc = srv_store_failf(s->store, NQ_ENOTFOUND, "assignment %lld expired and its unit is "
                           "verified", (long long)p->id);
    else if (d <= now || !progress_advances(&a, p))
      rc = srv_store_failf(s->store, NQ_EEXPIRED, "assignment %lld expired (held too long, or no "
                           "progress)", (long long)p->id);
    else rc = srv_asg_revive(s->store, a.id, a.unit_id, d);
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
  /* A paused client (its solver waits: a pause file, window or battery) keeps its leases: each
   * runs to a full lease from now, within its hold limit, instead of lapsing (sched.h). */
  if (rc == 0)
    rc = srv_client_pause(s->store, client_id, p->paused, now, s->cfg.lease_seconds,
                          srv_sched_hold(&s->cfg, -1));
  if (rc == 0 && p->paused) {
    srv_asg_info_t a;
    if ((rc = srv_asg_get(s->store, p->id, &a)) == 0) *deadline = a.deadline;
  }
  return srv_store_release(s->store, rc);
}

/* ---- refusal: a kernel the client cannot run ---------------------------------------------- */

int srv_sched_refuse(srv_sched_t *s, int64_t client_id, int64_t asg_id, int64_t now,
                     char *kernel, size_t len) {
  int rc = need_tx(s);
  if (rc == 0) rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  kernel[0] = '\0';
  rc = client_ok(s, client_id, now);
  if (rc == 0) rc = srv_asg_kernel_get(s->store, asg_id, kernel, len);
  /* Only a kernel the server named can be refused: anything else is a client that does not want
   * its work, and a lease it lets lapse says that already. */
  if (rc == 0 && !kernel[0])
    rc = srv_store_failf(s->store, NQ_ENOTFOUND, "assignment %lld names no kernel",
                         (long long)asg_id);
  if (rc == 0) rc = srv_asg_refuse(s->store, asg_id, client_id, kernel, now);
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
  /* A closed list (nq/versions.h): a made-up version would carry made-up nodes. */
  if (!nq_solver_known(solver))
    return srv_store_failf(st, NQ_EINVAL, "unknown solver version \"%s\" (this server knows "
                           "nq-solver-1..4; upgrade the server before its clients)", solver);
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

static int sched_ban(srv_sched_t *s, int64_t client_id, int64_t now, int64_t *reopened,
                     int *job_reopened);

/* Ban a client once `threshold` of its last 2 x threshold - 1 judged results are invalid (so
 * they are a majority of them): a rare honest loss (a flipped bit) among agreeing results is
 * tolerated, a liar is not -- a new one after `threshold` lies, and so is a client that was
 * honest for a long time and then lies (comparing lifetime counts let one with 806
 * valid results lie 809 times). The units it helped verify are verified again without it. */
static int maybe_ban(srv_sched_t *s, int64_t client_id, int64_t now, srv_result_info_t *info) {
  if (s->cfg.ban_threshold <= 0) return 0;
  /* With a trusted owner, only a trusted result bans (settle_locked): never a vote. */
  trust_t tm;
  int rc = trust_get(s, now, 0, &tm);
  if (rc || tm.on) return rc;
  srv_client_t c;
  int recent = 0;
  rc = srv_client_get(s->store, client_id, &c);
  if (rc || c.banned || c.invalid < s->cfg.ban_threshold) return rc;
  rc = srv_client_recent_invalid(s->store, client_id, 2 * s->cfg.ban_threshold - 1, &recent);
  if (rc || recent < s->cfg.ban_threshold) return rc;
  int jr = 0;
  rc = sched_ban(s, client_id, now, NULL, &jr);
  if (rc == 0) {
    info->banned++;
    info->job_reopened |= jr;
  }
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
  int64_t id, client_id, owner_id;
  uint64_t c2, c4, c8, nodes;
  char solver[SRV_SOLVER_MAX + 1];
  char net[48];
  char backend[NQ_PROTO_BACKEND_MAX + 1]; /* the kernel that computed it ("" unknown) */
  int tree;   /* the search tree its solver version walks at the job's N (nq/versions.h) */
  int novote; /* voided, or its client is banned or suspect: judged, but no vote */
  int self_joined; /* its owner joined by itself (schema 022) */
  int in;     /* in the agreeing group being looked at */
} res_t;

typedef struct res_vec_s {
  res_t *v;
  int n;
  size_t cap;
  int board; /* the job's N: the tree of each result's solver version */
} res_vec_t;

static int res_add(const srv_asg_info_t *a, void *arg) {
  res_vec_t *rv = arg;
  if (nq_grow(&rv->v, &rv->cap, (size_t)rv->n, sizeof *rv->v, 8) != 0) return NQ_ENOMEM;
  res_t *r = &rv->v[rv->n++];
  memset(r, 0, sizeof *r);
  r->id = a->id;
  r->client_id = a->client_id;
  r->owner_id = a->owner_id;
  r->c2 = a->counts.c2;
  r->c4 = a->counts.c4;
  r->c8 = a->counts.c8;
  r->nodes = a->counts.nodes;
  r->novote = a->novote;
  r->self_joined = a->self_joined;
  snprintf(r->solver, sizeof r->solver, "%s", a->solver);
  snprintf(r->net, sizeof r->net, "%s", a->net);
  snprintf(r->backend, sizeof r->backend, "%s", a->backend);
  r->tree = nq_solver_tree(r->solver, rv->board);
  return 0;
}

/* The undecided results of a unit, oldest first. */
static int res_load(srv_store_t *st, int board, int64_t unit_id, res_t **out, int *count) {
  res_vec_t rv = {NULL, 0, 0, board};
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

/* The same search tree: two known solver versions that walk the same tree at the job's N
 * (nq/versions.h). A result of an unknown version (stored before the list was closed) shares no
 * tree with anything: its nodes are never compared, and never the unit's. */
static int same_tree(const res_t *a, const res_t *b) { return a->tree != 0 && a->tree == b->tree; }

/* Results of one counts class and one search tree: their nodes must agree too. */
static int same_kind(const res_t *a, const res_t *b) { return same_counts(a, b) && same_tree(a, b); }

/* Two results come from the same voter under --quorum-distinct: the same client, owner, or
 * network (a result of unknown network is its client's own). By owner, when either result's
 * owner joined by itself (nq-client --join), the same network makes them one voter too (unless
 * --self-joined-distinct owner): one person with many self-made owners on one network is one
 * vote. */
static int same_voter(const srv_sched_t *s, const res_t *a, const res_t *b) {
  switch (s->cfg.quorum_distinct) {
  case SRV_DISTINCT_OWNER:
    return a->owner_id == b->owner_id ||
           (s->cfg.self_joined == SRV_SELF_JOINED_OWNER_AND_NET &&
            (a->self_joined || b->self_joined) && a->net[0] && strcmp(a->net, b->net) == 0);
  case SRV_DISTINCT_NETWORK:
    return a->client_id == b->client_id || (a->net[0] && strcmp(a->net, b->net) == 0);
  default: return a->client_id == b->client_id;
  }
}

/* The votes among the voting results with in == which: one per distinct voter. */
static int votes(const srv_sched_t *s, const res_t *r, int n, int which) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (r[i].novote || r[i].in != which) continue;
    int first = 1;
    for (int j = 0; j < i && first; j++)
      first = r[j].novote || r[j].in != which || !same_voter(s, &r[j], &r[i]);
    k += first;
  }
  return k;
}

/* The tree the unit's nodes come from: among the voting results of the marked group (in = 1),
 * the search tree with the most votes (distinct voters, as votes() counts them), this server's
 * own tree on a tie. *tv gets its votes. The unit's node count -- the job's node total and every
 * volunteer's credit -- is an agreed one only when those votes reach the quorum (quorum_check):
 * a version of another tree is compared on counts alone and never sets the nodes by itself, and
 * no single claim does. 0 when no voting result of the group has a known tree. */
static int nodes_tree(const srv_sched_t *s, const res_t *r, int n, int *tv) {
  int own = nq_solver_tree(NQ_SOLVER_VERSION, s->job.n), best = 0;
  *tv = 0;
  for (int i = 0; i < n; i++) {
    if (r[i].novote || !r[i].in || !r[i].tree) continue;
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = !r[j].novote && r[j].in && r[j].tree == r[i].tree;
    if (seen) continue;
    int k = 0;
    for (int a = 0; a < n; a++) {
      if (r[a].novote || !r[a].in || r[a].tree != r[i].tree) continue;
      int first = 1;
      for (int b = 0; b < a && first; b++)
        first = r[b].novote || !r[b].in || r[b].tree != r[i].tree || !same_voter(s, &r[b], &r[a]);
      k += first;
    }
    if (k > *tv || (k == *tv && r[i].tree == own)) {
      *tv = k;
      best = r[i].tree;
    }
  }
  return best;
}

/* The largest set of mutually agreeing voting results with the counts of r[anchor] gets in = 1
 * (the others 0). Agreement is not transitive across solver versions, so: within the class, take
 * for each solver version the nodes value most results share (the oldest on a tie); results of
 * different versions agree on counts alone. Returns the group's votes; *others (may be NULL) gets
 * the votes outside it. Results are few (<= the unit's cap), so the quadratic scans cost
 * nothing. */
static int group(const srv_sched_t *s, res_t *r, int n, int anchor, int *others) {
  for (int i = 0; i < n; i++) r[i].in = 0;
  for (int i = 0; i < n; i++) {
    if (r[i].novote || !same_counts(&r[i], &r[anchor])) continue;
    int first = 1;
    for (int j = 0; j < i && first; j++) first = r[j].novote || !same_kind(&r[j], &r[i]);
    if (!first) continue; /* this solver version was handled at its first result */
    int best = 0, best_j = i;
    for (int j = i; j < n; j++) {
      if (r[j].novote || !same_kind(&r[j], &r[i])) continue;
      int k = 0;
      for (int m = 0; m < n; m++)
        k += !r[m].novote && same_kind(&r[m], &r[j]) && r[m].nodes == r[j].nodes;
      if (k > best) {
        best = k;
        best_j = j;
      }
    }
    for (int m = 0; m < n; m++)
      if (!r[m].novote && same_kind(&r[m], &r[best_j]) && r[m].nodes == r[best_j].nodes)
        r[m].in = 1;
  }
  if (others) *others = votes(s, r, n, 0);
  return votes(s, r, n, 1);
}

/* The group with the most votes over all counts classes, left marked (in = 1); *anchor gets one
 * of its results (-1 when no result votes), *others the votes against it. */
static int best_group(const srv_sched_t *s, res_t *r, int n, int *anchor, int *others) {
  int best = 0;
  *anchor = -1;
  for (int i = 0; i < n; i++) {
    if (r[i].novote) continue;
    int g = group(s, r, n, i, NULL);
    if (g > best) {
      best = g;
      *anchor = i;
    }
  }
  if (*anchor >= 0) return group(s, r, n, *anchor, others);
  for (int i = 0; i < n; i++) r[i].in = 0;
  *others = 0;
  return 0;
}

/* The agreement rule, the only definition of it (docs/store.md, "Agreement"): result x agrees
 * with a set of accepted results when it has their counts k (c2, c4, c8) and the same nodes as
 * every one of them computed by x's solver version; results of different versions agree on
 * counts alone (a version may count nodes differently). The set is acc[0..n) (only those with
 * in = 1 when in_only). Every judgement goes through it: two results (agree_pair), a result
 * against the winning group (agrees), a late or spot-check result against the verified unit's
 * valid results (agrees_verified). */
static int agree_with(const res_t *x, const res_t *k, const res_t *acc, int n, int in_only) {
  if (!same_counts(x, k)) return 0;
  for (int m = 0; m < n; m++)
    if ((!in_only || acc[m].in) && same_tree(&acc[m], x) && acc[m].nodes != x->nodes)
      return 0;
  return 1;
}

/* Result i agrees with the winning group (in = 1, w one of it). Non-voting results are judged by
 * this too. */
static int agrees(const res_t *r, int n, int i, int w) {
  return r[i].in || agree_with(&r[i], &r[w], r, n, 1);
}

/* The unit's valid results (srv_asg_list_unit's filter for agrees_verified). */
static int res_add_valid(const srv_asg_info_t *a, void *arg) {
  return a->state == SRV_ASG_VALID ? res_add(a, arg) : 0;
}

/* *ok: a result with counts c from `solver` agrees with the verified unit -- its counts, and the
 * nodes of its valid results of the same solver version (the agreement rule). */
static int agrees_verified(srv_store_t *st, int board, int64_t unit_id, const nq_counts_t *c,
                           const char *solver, int *ok) {
  srv_unit_info_t u;
  res_vec_t rv = {NULL, 0, 0, board};
  res_t x = {.c2 = c->c2, .c4 = c->c4, .c8 = c->c8, .nodes = c->nodes}, k = {0};
  *ok = 0;
  int rc = srv_unit_get(st, unit_id, &u);
  if (rc == 0) rc = srv_asg_list_unit(st, unit_id, res_add_valid, &rv);
  if (rc == NQ_ENOMEM) srv_store_failf(st, rc, "results: out of memory");
  if (rc == 0) {
    snprintf(x.solver, sizeof x.solver, "%s", solver ? solver : "");
    x.tree = nq_solver_tree(x.solver, board);
    k.c2 = u.counts.c2;
    k.c4 = u.counts.c4;
    k.c8 = u.counts.c8;
    *ok = agree_with(&x, &k, rv.v, rv.n, 0);
  }
  free(rv.v);
  return rc;
}

/* Clients whose wrong result agreed with another wrong result of the unit: two voters on one
 * wrong answer is collusion (or one broken build), not a flipped bit. They stop voting. */
static int mark_suspects(srv_sched_t *s, const res_t *r, const int *ok, int n,
                         srv_result_info_t *info) {
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    if (ok[i]) continue;
    int shared = 0;
    for (int j = 0; j < n && !shared; j++) shared = j != i && !ok[j] && same_counts(&r[i], &r[j]);
    if (!shared) continue;
    srv_client_t c;
    if ((rc = srv_client_get(s->store, r[i].client_id, &c)) != 0 || c.suspect) continue;
    rc = srv_client_set_suspect(s->store, r[i].client_id, 1);
    if (rc == 0) info->suspects++;
  }
  return rc;
}

/* The job is done once its last unit is verified -- and, with a trusted owner, once
 * no spot check is wanted or out any more: a check may still contest a unit. */
static int job_finish(srv_sched_t *s, int64_t job_id, int64_t now, srv_result_info_t *info) {
  trust_t tm;
  int64_t spot = 0;
  int done = 0;
  int rc = trust_get(s, now, 0, &tm);
  if (rc == 0 && tm.on) rc = srv_job_spot_pending(s->store, job_id, &spot);
  if (rc == 0 && spot == 0) rc = srv_job_finish_if_complete(s->store, job_id, now, &done);
  info->job_done |= done;
  return rc;
}

/* The distinct kernels (backends; an unknown one counts for none) among the voting results of
 * the marked group (in = 1). */
static int group_kernels(const res_t *r, int n) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (r[i].novote || !r[i].in || !r[i].backend[0]) continue;
    int first = 1;
    for (int j = 0; j < i && first; j++)
      first = r[j].novote || !r[j].in || strcmp(r[j].backend, r[i].backend) != 0;
    k += first;
  }
  return k;
}

/* The unit reached its quorum: store its counts, judge every result (voting or not), mark the
 * colluders, maybe ask for a spot check (draw: not for a unit a trusted owner's result verified),
 * close it; if it was the job's last open unit the job is done, in the same transaction. The
 * unit's nodes are those of the oldest winning result (they can differ between solver
 * versions). */
static int unit_verify(srv_sched_t *s, int64_t unit_id, int64_t job_id, res_t *r, int n,
                       int64_t now, int draw, srv_result_info_t *info) {
  int tv = 0, tree = nodes_tree(s, r, n, &tv), w = 0;
  while (!r[w].in || (tree && r[w].tree != tree)) w++;
  int *ok = calloc((size_t)n, sizeof *ok);
  if (!ok) return srv_store_failf(s->store, NQ_ENOMEM, "verify: out of memory");
  for (int i = 0; i < n; i++) ok[i] = agrees(r, n, i, w);
  nq_counts_t c = {r[w].c2, r[w].c4, r[w].c8, 0, r[w].nodes};
  int rc = srv_unit_verify(s->store, unit_id, &c, now);
  /* Settled by its quorum (again: a unit a trusted result or an audit once settled may have been
   * re-opened since): the evidence names the quorum's rule. */
  if (rc == 0) rc = srv_unit_set_contest(s->store, unit_id, SRV_CONTEST_NONE);
  if (rc == 0) rc = srv_unit_kernels_set(s->store, unit_id, group_kernels(r, n));
  if (rc == 0) rc = mark_suspects(s, r, ok, n, info);
  /* Valid ones first, so a client's wins are counted before its losses are weighed for a ban. */
  for (int pass = 1; pass >= 0 && rc == 0; pass--)
    for (int i = 0; i < n && rc == 0; i++)
      if (ok[i] == pass) rc = judge(s, r[i].id, r[i].client_id, pass, now, info);
  free(ok);
  /* The draw: 53 random bits against the share asked for. */
  if (rc == 0 && draw && s->cfg.spot_check > 0 &&
      (double)(rng_next(&s->rng) >> 11) * (100.0 / 9007199254740992.0) < s->cfg.spot_check)
    rc = srv_unit_set_spot(s->store, unit_id, 1);
  if (rc == 0) info->unit_verified = 1;
  if (rc == 0) rc = job_finish(s, job_id, now, info);
  return rc;
}

/* ---- result: trusted resolution ------------------------------------------------------------ */

/* Two results agree (the agreement rule with a set of one). */
static int agree_pair(const res_t *a, const res_t *b) { return agree_with(a, b, b, 1, 0); }

static int ban_owner_locked(srv_sched_t *s, int64_t owner_id, int64_t now, int64_t *reopened,
                            int *job_reopened);

/* Ban the owners whose results a trusted result proved wrong. Every one of them, and every
 * client of each, is banned before any unit is re-opened, so that no re-count in between still
 * counts a vote of one of them (a colluder's vote would keep the lie alive). */
static int ban_owners(srv_sched_t *s, const int64_t *owners, int n, int64_t now,
                      srv_result_info_t *info) {
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    int64_t *ids = NULL;
    int nc = 0;
    rc = srv_owner_set_banned(s->store, owners[i], 1);
    if (rc == 0) rc = srv_owner_clients(s->store, owners[i], &ids, &nc);
    for (int k = 0; k < nc && rc == 0; k++) {
      srv_client_t c;
      if ((rc = srv_client_get(s->store, ids[k], &c)) == 0 && !c.banned) {
        rc = srv_client_ban(s->store, ids[k], now);
        info->banned++;
      }
    }
    free(ids);
  }
  for (int i = 0; i < n && rc == 0; i++) {
    int64_t reopened = 0;
    int jr = 0;
    rc = ban_owner_locked(s, owners[i], now, &reopened, &jr);
    info->job_reopened |= jr;
  }
  return rc;
}

/* Settle a unit with an authoritative answer (a trusted owner's result, or an audit's count):
 * it is verified with those counts (re-opened first if it was verified), every result is judged
 * against them (the nodes too, for results of the same solver version), and the owners of the
 * untrusted results that disagree are banned (unless --ban-threshold 0), which re-opens what
 * they helped verify. Nobody is banned for a disagreement among untrusted results alone. */
static int settle_locked(srv_sched_t *s, int64_t unit_id, const nq_counts_t *c,
                         const char *solver, srv_contest_t how, int64_t by_asg, int64_t now,
                         srv_result_info_t *info) {
  srv_unit_info_t u;
  res_t *r = NULL, auth = {0};
  int64_t *owners = NULL;
  int n = 0, nb = 0, jr = 0;
  int rc = srv_unit_get(s->store, unit_id, &u);
  if (rc == 0 && u.state == SRV_UNIT_VERIFIED) {
    rc = srv_unit_reopen(s->store, unit_id, 0, &jr);
    info->unit_reopened = 1;
    info->job_reopened |= jr;
  }
  if (rc == 0) rc = res_load(s->store, s->job.n, unit_id, &r, &n);
  if (rc == 0 && n > 0 && !(owners = calloc((size_t)n, sizeof *owners)))
    rc = srv_store_failf(s->store, NQ_ENOMEM, "settle: out of memory");
  if (rc == 0) rc = srv_unit_verify(s->store, unit_id, c, now);
  if (rc == 0) rc = srv_unit_set_contest(s->store, unit_id, how);
  if (rc == 0) rc = srv_unit_set_settled_by(s->store, unit_id, how == SRV_CONTEST_TRUSTED ? by_asg : 0);
  auth.c2 = c->c2;
  auth.c4 = c->c4;
  auth.c8 = c->c8;
  auth.nodes = c->nodes;
  snprintf(auth.solver, sizeof auth.solver, "%s", solver ? solver : "");
  auth.tree = nq_solver_tree(auth.solver, s->job.n);
  for (int i = 0; i < n && rc == 0; i++) {
    int ok = agree_pair(&r[i], &auth), trusted = 0;
    if ((rc = srv_asg_judge(s->store, r[i].id, r[i].client_id, ok)) != 0) break;
    if (ok || (rc = srv_client_trusted(s->store, r[i].client_id, &trusted)) != 0 || trusted)
      continue;
    int seen = 0;
    for (int k = 0; k < nb && !seen; k++) seen = owners[k] == r[i].owner_id;
    if (!seen) owners[nb++] = r[i].owner_id;
  }
  if (rc == 0) {
    info->unit_verified = 1;
    info->unit_settled = 1;
  }
  if (rc == 0 && s->cfg.ban_threshold > 0 && nb > 0) rc = ban_owners(s, owners, nb, now, info);
  if (rc == 0) rc = job_finish(s, s->job.id, now, info);
  free(owners);
  free(r);
  return rc;
}

/* With a trusted owner: a trusted result settles any disagreement (and a contest); without one,
 * a disagreement contests the unit (not verified, nobody judged, no untrusted replica) until a
 * trusted result comes; agreeing results verify it by the quorum as before. Two trusted results
 * that disagree leave it contested for the operator (an audit, srv_sched_settle). */
static int trusted_decide(srv_sched_t *s, const srv_unit_info_t *u, const srv_job_t *job,
                          res_t *r, int n, int best, int others, int64_t now,
                          srv_result_info_t *info) {
  int t = -1, split = 0, against = 0, rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    int trusted = 0;
    if (r[i].novote || (rc = srv_client_trusted(s->store, r[i].client_id, &trusted)) != 0 ||
        !trusted)
      continue;
    if (t < 0) t = i;
    else split |= !agree_pair(&r[t], &r[i]);
  }
  if (rc) return rc;
  if (t >= 0 && !split) {
    for (int i = 0; i < n; i++) against |= !r[i].novote && !agree_pair(&r[i], &r[t]);
    if (against || u->contest == SRV_CONTEST_OPEN) {
      nq_counts_t c = {r[t].c2, r[t].c4, r[t].c8, 0, r[t].nodes};
      return settle_locked(s, u->id, &c, r[t].solver, SRV_CONTEST_TRUSTED, r[t].id, now, info);
    }
    return best >= job->quorum ? unit_verify(s, u->id, job->id, r, n, now, 0, info) : 0;
  }
  if (split || others > 0) {
    if (u->contest == SRV_CONTEST_OPEN) return 0;
    rc = srv_unit_contest(s->store, u->id);
    if (rc == 0) info->unit_contested = 1;
    return rc;
  }
  /* The results agree (again: a dissenter stopped voting): the quorum decides. */
  if (u->contest == SRV_CONTEST_OPEN) rc = srv_unit_uncontest(s->store, u->id);
  if (rc == 0 && best >= job->quorum) return unit_verify(s, u->id, job->id, r, n, now, 1, info);
  if (rc == 0 && u->state != SRV_UNIT_DISPUTED && u->contest != SRV_CONTEST_OPEN &&
      u->results >= job->max_results + u->extra_results) {
    rc = srv_unit_dispute(s->store, u->id);
    if (rc == 0) info->unit_disputed = 1;
  }
  return rc;
}

/* Count a unit's votes: verify it when one answer has at least `quorum` votes and a strict
 * majority of them -- and, in a job with diverse_kernels K, when those votes came from at least K
 * different kernels (a group short of kernels counts as one vote short, so the unit takes one
 * more replica, which names another kernel: kernels.h) -- dispute it when its results reach the
 * cap without one, else leave it open (a disputed unit keeps taking replicas, docs/store.md). */
static int quorum_check(srv_sched_t *s, int64_t unit_id, int64_t job_id, int64_t now,
                        srv_result_info_t *info) {
  srv_job_t job;
  res_t *r = NULL;
  int n = 0, anchor = 0, others = 0;
  srv_unit_info_t u;
  int rc = srv_job_get(s->store, job_id, &job);
  if (rc == 0) rc = srv_unit_get(s->store, unit_id, &u);
  /* A verified unit has no vote to count: its results are judged by its verification (a ban
   * nested in that verification must not count it again). */
  if (rc || u.state == SRV_UNIT_VERIFIED) goto out;
  if ((rc = res_load(s->store, s->job.n, unit_id, &r, &n)) != 0) goto out;
  int best = best_group(s, r, n, &anchor, &others), kernels = 0, tv = 0;
  if ((rc = srv_job_kernels_get(s->store, job_id, &kernels)) != 0) goto out;
  int diverse = kernels < 2 || group_kernels(r, n) >= kernels;
  /* The nodes too need the quorum, within one tree (nodes_tree): a group whose counts have it
   * but whose nodes do not counts as one vote short, so the unit takes one more replica. */
  int nodes_ok = nodes_tree(s, r, n, &tv) != 0 && tv >= job.quorum;
  int shown = (!diverse || !nodes_ok) && best >= job.quorum ? job.quorum - 1 : best;
  if ((rc = srv_unit_set_votes(s->store, unit_id, shown, others)) != 0) goto out;
  /* The votes are there, the kernels not: its voters may add kernel evidence. */
  if ((rc = srv_unit_kshort_set(s->store, unit_id, !diverse && best >= job.quorum &&
                                                       best > others)) != 0)
    goto out;
  /* The cap counts every result of the unit (as `need` does). */
  if ((rc = srv_unit_get(s->store, unit_id, &u)) != 0) goto out;
  trust_t tm;
  if ((rc = trust_get(s, now, 0, &tm)) != 0) goto out;
  if (tm.on) {
    /* A group short of kernels has not the quorum there either (a trusted result that settles
     * a disagreement is the operator's authority, kernels or not). */
    rc = trusted_decide(s, &u, &job, r, n, shown, others, now, info);
    goto out;
  }
  /* No trusted owner (any more): the votes decide, a contest included. */
  if (u.contest == SRV_CONTEST_OPEN && (rc = srv_unit_uncontest(s->store, unit_id)) == 0)
    rc = srv_unit_get(s->store, unit_id, &u);
  if (rc) goto out;
  if (best >= job.quorum && best > others && diverse && nodes_ok) {
    rc = unit_verify(s, unit_id, job_id, r, n, now, 1, info);
  } else if (u.state != SRV_UNIT_DISPUTED && u.results >= job.max_results + u.extra_results) {
    rc = srv_unit_dispute(s->store, unit_id);
    if (rc == 0) info->unit_disputed = 1;
  }
out:
  free(r);
  return rc;
}

/* ---- re-opening --------------------------------------------------------------------------- */

typedef enum { VOID_VALID, VOID_CLIENT, VOID_ALL } void_what_t;

typedef struct asg_ids_s {
  int64_t *v;
  int n;
  size_t cap;
  void_what_t what;
  int64_t client_id;
} asg_ids_t;

static int void_pick(const srv_asg_info_t *a, void *arg) {
  asg_ids_t *l = arg;
  int take = l->what == VOID_VALID ? a->state == SRV_ASG_VALID
           : l->what == VOID_CLIENT ? a->client_id == l->client_id && a->reported_at != 0
                                    : a->reported_at != 0;
  if (!take) return 0;
  if (nq_grow(&l->v, &l->cap, (size_t)l->n, sizeof *l->v, 8) != 0) return NQ_ENOMEM;
  l->v[l->n++] = a->id;
  return 0;
}

/* Re-open a unit with the results `what` selects voided, then count its votes again (it may be
 * verified again at once by the votes it has left). */
static int reopen_voiding(srv_sched_t *s, int64_t unit_id, void_what_t what, int64_t client_id,
                          int64_t now, srv_result_info_t *info) {
  asg_ids_t l = {NULL, 0, 0, what, client_id};
  int jr = 0;
  int rc = srv_asg_list_unit(s->store, unit_id, void_pick, &l);
  if (rc == NQ_ENOMEM) rc = srv_store_failf(s->store, rc, "reopen: out of memory");
  if (rc == 0) rc = srv_unit_reopen(s->store, unit_id, 2 * s->job.quorum + 1, &jr);
  for (int i = 0; i < l.n && rc == 0; i++) rc = srv_asg_void(s->store, l.v[i]);
  free(l.v);
  if (rc == 0) {
    info->unit_reopened = 1;
    info->job_reopened |= jr;
    rc = quorum_check(s, unit_id, s->job.id, now, info);
  }
  return rc;
}

/* A spot check's result on a verified unit: agreeing, it is valid; disagreeing, the unit is
 * re-opened with the group that verified it voided, and more replicas from other owners decide
 * by a strict majority which answer stands. */
static int spot_result(srv_sched_t *s, const srv_asg_info_t *a, const nq_counts_t *c,
                       const char *solver, int64_t now, srv_result_info_t *info) {
  int ok = 0, trusted = 0, jr = 0;
  trust_t tm;
  int rc = agrees_verified(s->store, s->job.n, a->unit_id, c, solver, &ok);
  if (rc == 0) rc = trust_get(s, now, 0, &tm);
  if (rc) return rc;
  if (!tm.on) {
    if (ok) return judge(s, a->id, a->client_id, 1, now, info);
    return reopen_voiding(s, a->unit_id, VOID_VALID, 0, now, info);
  }
  /* Trusted resolution. Agreeing: one check less that the job waits for. */
  if (ok) {
    rc = judge(s, a->id, a->client_id, 1, now, info);
    return rc ? rc : job_finish(s, s->job.id, now, info);
  }
  /* A trusted dissent settles the unit against the votes that verified it. */
  if ((rc = srv_client_trusted(s->store, a->client_id, &trusted)) != 0) return rc;
  if (trusted)
    return settle_locked(s, a->unit_id, c, solver, SRV_CONTEST_TRUSTED, a->id, now, info);
  /* An untrusted one: the unit is not verified any more, and nobody is voided, judged or banned
   * for it: the re-count finds the disagreement and contests it. */
  rc = srv_unit_reopen(s->store, a->unit_id, 0, &jr);
  if (rc == 0) {
    info->unit_reopened = 1;
    info->job_reopened |= jr;
    rc = quorum_check(s, a->unit_id, s->job.id, now, info);
  }
  return rc;
}

/* A result for an already verified unit is judged against the winners by the agreement rule:
 * same counts, and the same nodes as every valid result of the same solver version. */
static int judge_late(srv_sched_t *s, const srv_asg_info_t *a, const nq_counts_t *c,
                      const char *solver, int64_t now, srv_result_info_t *info) {
  int valid = 0;
  int rc = agrees_verified(s->store, s->job.n, a->unit_id, c, solver, &valid);
  return rc ? rc : judge(s, a->id, a->client_id, valid, now, info);
}

static int result_locked(srv_sched_t *s, int64_t client_id, const nq_result_t *r, int64_t now,
                         srv_result_info_t *info) {
  int64_t asg_id = r->id;
  const char *unit_text = r->unit, *solver = r->solver;
  const char *backend = r->backend[0] ? r->backend : NULL; /* "": not said */
  const nq_counts_t *c = &r->counts;
  double seconds = r->seconds;
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
  /* The named kernel is the kernel (kernel-diverse verification): a result that says it ran on
   * another one is refused, and counts for no kernel. The rule guards against an honest kernel's
   * bug; a client that lies about its kernel is the trusted owners' and spot checks' business. */
  char named[NQ_PROTO_BACKEND_MAX + 1] = "";
  if ((rc = srv_asg_kernel_get(s->store, asg_id, named, sizeof named)) != 0) return rc;
  if (named[0] && (!backend || strcmp(backend, named) != 0))
    return srv_store_failf(s->store, NQ_EINVAL, "assignment %lld named kernel %s; the result says "
                           "it ran on %s", (long long)asg_id, named,
                           backend && backend[0] ? backend : "(none)");
  if (a.reported_at != 0) {
    info->status = SRV_RESULT_DUPLICATE;
    return 0;
  }
  if (u.state == SRV_UNIT_VERIFIED) {
    /* A spot check is work the server asked for: accepted. Any other result is late. */
    info->status = a.spot ? SRV_RESULT_ACCEPTED : SRV_RESULT_LATE;
    rc = srv_asg_set_result(s->store, asg_id, c, seconds, solver, SRV_ASG_REPORTED, !a.spot, now);
    if (rc == 0 && backend) rc = srv_asg_set_backend(s->store, asg_id, backend);
    if (rc == 0) rc = srv_store_unit_refresh(s->store, a.unit_id);
    /* With a trusted owner a late result that disagrees is a disagreement like a spot check's;
     * without one it is judged against the verified counts. */
    trust_t tm = {0, 0};
    if (rc == 0 && !a.spot) rc = trust_get(s, now, 0, &tm);
    if (rc == 0)
      rc = a.spot || tm.on ? spot_result(s, &a, c, solver, now, info)
                           : judge_late(s, &a, c, solver, now, info);
  } else {
    /* Open or disputed: the result votes (a disputed unit resolves itself by more votes). */
    info->status = SRV_RESULT_ACCEPTED;
    rc = srv_asg_set_result(s->store, asg_id, c, seconds, solver, SRV_ASG_REPORTED, 0, now);
    if (rc == 0 && backend) rc = srv_asg_set_backend(s->store, asg_id, backend);
    if (rc == 0) rc = quorum_check(s, a.unit_id, u.job_id, now, info);
  }
  return rc;
}

int srv_sched_result(srv_sched_t *s, int64_t client_id, const nq_result_t *r, int64_t now,
                     srv_result_info_t *info) {
  srv_result_info_t tmp;
  if (!info) info = &tmp;
  memset(info, 0, sizeof *info);
  int rc = need_tx(s);
  if (rc == 0) rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  rc = srv_store_release(s->store, result_locked(s, client_id, r, now, info));
  if (rc) memset(info, 0, sizeof *info);
  return rc;
}

/* ---- spot checks that nobody can take ------------------------------------------------------ */

/* *yes = the running job has every unit verified (only spot checks can still be wanted). */
static int all_verified(srv_sched_t *s, int *yes) {
  srv_stats_t c;
  memset(&c, 0, sizeof c);
  *yes = 0;
  int rc = srv_job_get(s->store, s->job.id, &c.job);
  if (rc || c.job.state != SRV_JOB_RUNNING) return rc;
  if ((rc = srv_store_counters(s->store, s->job.id, &c)) != 0) return rc;
  *yes = c.units[SRV_UNIT_VERIFIED] == c.job.units;
  return 0;
}

static int drop_spots_locked(srv_sched_t *s, int64_t now, int64_t *dropped,
                             srv_result_info_t *info) {
  trust_t tm;
  int all;
  int rc = all_verified(s, &all);
  if (rc || !all) return rc;
  if ((rc = trust_get(s, now, 1, &tm)) != 0 || !tm.on) return rc;
  int64_t *ids = NULL;
  int n = 0;
  rc = srv_spot_unreachable(s->store, s->job.id, s->cfg.quorum_distinct,
                            now - SRV_TRUSTED_ACTIVE_WINDOW, tm.active, now - SRV_SPOT_WAIT_S,
                            &ids, &n);
  if (rc == 0 && n > 0) rc = srv_spot_drop(s->store, s->job.id, ids, n);
  free(ids);
  if (rc == 0) *dropped = n;
  /* Nothing wanted any more (dropped, or done by others meanwhile): the job is done. */
  if (rc == 0) rc = job_finish(s, s->job.id, now, info);
  return rc;
}

int srv_sched_drop_spots(srv_sched_t *s, int64_t now, int64_t *dropped, int *job_done) {
  srv_result_info_t info;
  int64_t n = 0;
  memset(&info, 0, sizeof info);
  int rc = need_tx(s);
  if (rc == 0) rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  rc = srv_store_release(s->store, drop_spots_locked(s, now, &n, &info));
  if (rc == 0) rc = srv_job_get(s->store, s->job.id, &s->job);
  if (dropped) *dropped = rc ? 0 : n;
  if (job_done) *job_done = rc ? 0 : info.job_done;
  return rc;
}

static int set_aside_locked(srv_sched_t *s, int64_t now, int64_t *dropped,
                            srv_result_info_t *info) {
  int all;
  int rc = all_verified(s, &all);
  if (rc || !all) return rc;
  if ((rc = srv_spot_drop_all(s->store, s->job.id, dropped)) != 0) return rc;
  return job_finish(s, s->job.id, now, info);
}

int srv_sched_set_aside(srv_sched_t *s, int64_t now, int64_t *dropped, int *job_done) {
  srv_result_info_t info;
  int64_t n = 0;
  memset(&info, 0, sizeof info);
  int rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  rc = srv_store_release(s->store, set_aside_locked(s, now, &n, &info));
  if (dropped) *dropped = rc ? 0 : n;
  if (job_done) *job_done = rc ? 0 : info.job_done;
  return rc;
}

/* ---- trust: bans and re-opened units ------------------------------------------------------- */

/* The units of this job among ids. */
static int in_job(srv_sched_t *s, int64_t unit_id, int *yes) {
  srv_unit_info_t u;
  int rc = srv_unit_get(s->store, unit_id, &u);
  *yes = rc == 0 && u.job_id == s->job.id;
  return rc;
}

/* Is the client's result on the unit voided already (a second ban re-opens nothing)? */
typedef struct voided_s {
  int64_t client_id;
  int voided;
} voided_t;

static int voided_cb(const srv_asg_info_t *a, void *arg) {
  voided_t *v = arg;
  if (a->client_id == v->client_id && a->voided) v->voided = 1;
  return 0;
}

static int sched_ban(srv_sched_t *s, int64_t client_id, int64_t now, int64_t *reopened,
                     int *job_reopened) {
  srv_result_info_t info;
  memset(&info, 0, sizeof info);
  int64_t *ids = NULL, count = 0;
  int n = 0, yes = 0;
  int rc = srv_client_ban(s->store, client_id, now);
  /* The units it helped verify: verified again without its vote. */
  if (rc == 0) rc = srv_client_units(s->store, client_id, SRV_ASG_VALID, &ids, &n);
  for (int i = 0; i < n && rc == 0; i++) {
    voided_t v = {client_id, 0};
    if ((rc = in_job(s, ids[i], &yes)) != 0 || !yes) continue;
    if ((rc = srv_asg_list_unit(s->store, ids[i], voided_cb, &v)) != 0 || v.voided) continue;
    rc = reopen_voiding(s, ids[i], VOID_CLIENT, client_id, now, &info);
    count++;
  }
  free(ids);
  ids = NULL;
  /* Its undecided results stop voting: count those units' votes again. The votes its dissent
   * voided (a spot check that re-opened a verified unit) vote again where nothing voting
   * contradicts them: the honest results a banned liar disputed stand, rather than
   * leave a unit that every key had voted on awaiting for good. */
  if (rc == 0) rc = srv_client_units(s->store, client_id, SRV_ASG_REPORTED, &ids, &n);
  for (int i = 0; i < n && rc == 0; i++) {
    int64_t restored = 0;
    if ((rc = in_job(s, ids[i], &yes)) != 0 || !yes) continue;
    rc = srv_unit_restore_votes(s->store, ids[i], &restored);
    if (rc == 0) rc = quorum_check(s, ids[i], s->job.id, now, &info);
  }
  free(ids);
  if (reopened) *reopened = rc ? 0 : count;
  if (job_reopened) *job_reopened = rc ? 0 : info.job_reopened;
  return rc;
}

int srv_sched_ban(srv_sched_t *s, int64_t client_id, int64_t now, int64_t *reopened,
                  int *job_reopened) {
  int rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  return srv_store_release(s->store, sched_ban(s, client_id, now, reopened, job_reopened));
}

static int ban_owner_locked(srv_sched_t *s, int64_t owner_id, int64_t now, int64_t *reopened,
                            int *job_reopened) {
  int64_t *ids = NULL;
  int n = 0;
  int rc = srv_owner_set_banned(s->store, owner_id, 1);
  if (rc == 0) rc = srv_owner_clients(s->store, owner_id, &ids, &n);
  for (int i = 0; i < n && rc == 0; i++) {
    int64_t r = 0;
    int jr = 0;
    rc = sched_ban(s, ids[i], now, &r, &jr);
    *reopened += r;
    *job_reopened |= jr;
  }
  free(ids);
  return rc;
}

int srv_sched_ban_owner(srv_sched_t *s, int64_t owner_id, int64_t now, int64_t *reopened,
                        int *job_reopened) {
  int64_t r = 0;
  int jr = 0;
  int rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  rc = srv_store_release(s->store, ban_owner_locked(s, owner_id, now, &r, &jr));
  if (reopened) *reopened = rc ? 0 : r;
  if (job_reopened) *job_reopened = rc ? 0 : jr;
  return rc;
}

int srv_sched_reopen(srv_sched_t *s, int64_t unit_id, int64_t now, int *job_reopened) {
  srv_result_info_t info;
  memset(&info, 0, sizeof info);
  int yes = 0;
  int rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  if ((rc = in_job(s, unit_id, &yes)) == 0 && !yes)
    rc = srv_store_failf(s->store, NQ_EINVAL, "unit %lld is not in the job for N=%d",
                         (long long)unit_id, s->job.n);
  if (rc == 0) rc = reopen_voiding(s, unit_id, VOID_ALL, 0, now, &info);
  rc = srv_store_release(s->store, rc);
  if (job_reopened) *job_reopened = rc ? 0 : info.job_reopened;
  return rc;
}

int srv_sched_settle(srv_sched_t *s, int64_t unit_id, const nq_counts_t *c, const char *solver,
                     int64_t now, srv_result_info_t *info) {
  srv_result_info_t tmp;
  if (!info) info = &tmp;
  memset(info, 0, sizeof *info);
  int yes = 0;
  int rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  if (!c || c->nodes < 1 || c->count1 || c->c2 > INT64_MAX || c->c4 > INT64_MAX ||
      c->c8 > INT64_MAX || c->nodes > INT64_MAX || (nq_u128)c->c2 + c->c4 + c->c8 > c->nodes)
    rc = srv_store_failf(s->store, NQ_EINVAL, "settle: impossible counts");
  if (rc == 0 && (rc = in_job(s, unit_id, &yes)) == 0 && !yes)
    rc = srv_store_failf(s->store, NQ_EINVAL, "unit %lld is not in the job for N=%d",
                         (long long)unit_id, s->job.n);
  if (rc == 0) rc = settle_locked(s, unit_id, c, solver, SRV_CONTEST_AUDIT, 0, now, info);
  rc = srv_store_release(s->store, rc);
  if (rc) memset(info, 0, sizeof *info);
  return rc;
}

int srv_sched_retry(srv_sched_t *s, int64_t unit_id, int extra, int64_t now, int64_t *restored,
                    srv_result_info_t *info) {
  srv_result_info_t tmp;
  int64_t n = 0;
  int yes = 0;
  if (!info) info = &tmp;
  memset(info, 0, sizeof *info);
  int rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  if ((rc = in_job(s, unit_id, &yes)) == 0 && !yes)
    rc = srv_store_failf(s->store, NQ_EINVAL, "unit %lld is not in the job for N=%d",
                         (long long)unit_id, s->job.n);
  if (rc == 0) rc = srv_unit_retry(s->store, unit_id, extra, now, NULL);
  if (rc == 0) rc = srv_unit_restore_votes(s->store, unit_id, &n);
  if (rc == 0) rc = quorum_check(s, unit_id, s->job.id, now, info);
  rc = srv_store_release(s->store, rc);
  if (restored) *restored = rc ? 0 : n;
  if (rc) memset(info, 0, sizeof *info);
  return rc;
}

/* ---- start -------------------------------------------------------------------------------- */

int srv_sched_recount_disputed(srv_sched_t *s, int64_t now, int *n) {
  int64_t *ids = NULL;
  int cnt = 0;
  srv_result_info_t info;
  memset(&info, 0, sizeof info);
  if (n) *n = 0;
  int rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  rc = srv_units_disputed(s->store, s->job.id, 0, &ids, &cnt);
  for (int i = 0; i < cnt && rc == 0; i++) rc = quorum_check(s, ids[i], s->job.id, now, &info);
  free(ids);
  rc = srv_store_release(s->store, rc);
  if (rc == 0) rc = srv_job_get(s->store, s->job.id, &s->job);
  if (rc == 0 && n) *n = cnt;
  return rc;
}
