/* nq-server core: the admin commands of the status family -- `status`, the job's whole state as
 * one view (nq/admin_view.h "status"), which the page's public status also starts from. */
#include "admin_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evkey.h"
#include "nq/certs.h"
#include "nq/hash.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "store_audit.h"
#include "store_kernels.h"
#include "store_queue.h"
#include "store_stall.h"

/* The totals view of a totals record. */
static void totals_view(const nq_totals_t *t, nq_view_totals_t *v) {
  memset(v, 0, sizeof *v);
  v->total = nq_totals_total(t);
  v->unique = nq_totals_unique(t);
  v->c2 = t->c2;
  v->c4 = t->c4;
  v->c8 = t->c8;
  v->nodes = t->nodes;
}

/* The final totals, and with them the job's node count as nq-solve counts N (the units' nodes
 * plus the plan's split nodes, docs/planning.md), when the split nodes are known. */
static void final_view(const srv_job_t *job, nq_view_totals_t *v) {
  totals_view(&job->totals, v);
  v->has_solve_nodes = job->has_internal;
  v->solve_nodes = job->totals.nodes + job->internal;
}

static void job_view(const srv_job_t *job, nq_view_job_t *v) {
  memset(v, 0, sizeof *v);
  v->id = job->id;
  v->n = job->n;
  v->depth = job->depth;
  v->min_depth = job->min_depth ? job->min_depth : job->depth;
  v->unit_seconds = job->unit_seconds;
  v->quorum = job->quorum;
  v->max_results = job->max_results;
  v->state = srv_job_state_name(job->state);
  v->created = job->created;
  v->finished = job->finished;
  v->archived = job->archived;
  v->units = job->units;
  v->has_internal = job->has_internal;
  v->internal = job->internal;
  v->has_est_nodes = v->has_est_se = job->est_nodes > 0;
  v->est_nodes = (double)job->est_nodes;
  v->est_se = job->est_se;
  v->seed = (int64_t)job->seed;
  v->has_final = srv_job_is_done(job);
  if (v->has_final) final_view(job, &v->final);
}

json_t *srv_job_json(const srv_job_t *job) {
  nq_view_job_t v;
  job_view(job, &v);
  return nq_view_job_pack(&v);
}

/* The strings a status view points to while it is packed. */
typedef struct status_bufs_s {
  char match[200];
  char estimated[48];
  char stall[1024];
  char backup_file[900], backup_error[900];
  char cert_file[1100], cert_names[600];
  nq_admin_audit_t audit;
  char evkey[65];
} status_bufs_t;

/* The answer checked against the published table: "known" (the published values or null),
 * "match" (true/false, or null while running or beyond the table) and "match_text" (one line). */
static void match_view(const srv_job_t *job, nq_view_status_t *v, status_bufs_t *b) {
  const nq_known_t *k = nq_known(job->n);
  char *line = b->match;
  size_t len = sizeof b->match;
  v->has_known = k != NULL;
  v->has_match = 0;
  v->match_text = line;
  if (k) v->known = (nq_view_known_t){k->total, k->unique, k->c2, k->c4, k->c8};
  if (!k) {
    snprintf(line, len, "N=%d is beyond the published table; no reference to compare", job->n);
  } else if (!srv_job_is_done(job)) {
    snprintf(line, len, "not done yet; published TOTAL for N=%d is %s", job->n, k->total);
  } else {
    char t[40], u[40], c2[40], c4[40], c8[40];
    nq_u128_str(nq_totals_total(&job->totals), t);
    nq_u128_str(nq_totals_unique(&job->totals), u);
    nq_u128_str(job->totals.c2, c2);
    nq_u128_str(job->totals.c4, c4);
    nq_u128_str(job->totals.c8, c8);
    int same = !strcmp(t, k->total) && !strcmp(u, k->unique) && !strcmp(c2, k->c2) &&
               !strcmp(c4, k->c4) && !strcmp(c8, k->c8);
    v->has_match = 1;
    v->match = same;
    snprintf(line, len,
             same ? "MATCH: TOTAL, UNIQUE and COUNT2/4/8 equal the published values for N=%d"
                  : "MISMATCH: the answer differs from the published values for N=%d",
             job->n);
  }
}

/* Progress and speed (docs/operations.md). With the plan's estimates (every unit of a job made
 * since schema 5 has one) the percent is the verified units' share of the estimated work, and the
 * work left is the unverified units' estimates scaled by how the verified units came out against
 * theirs (calibration = verified nodes / their estimates: the estimator's bias on this job). A job
 * made before schema 5 falls back to the average verified unit; with nothing verified the percent
 * is the share of verified units (0). The ETA divides the work left, times the quorum's replicas,
 * less what the live leases report done (each lease's share of an average unverified unit), by the
 * node rate of the rate window (without node data: replicas left / results per second). Results
 * already in for awaiting units are not subtracted, so the ETA errs long near the end. Stalled
 * units (store_stall.h) are left out of the work: they will not finish at any rate, so when every
 * unit left is stalled there is no ETA (null) rather than one that grows for ever. */
static void progress_view(const srv_stats_t *s, const srv_stalls_t *x, int64_t now,
                          nq_view_progress_t *p, nq_view_rate_t *r, status_bufs_t *b) {
  int64_t spot_stalled = x->by[SRV_STALL_SPOT], stalled = x->units - spot_stalled;
  const srv_job_t *job = &s->job;
  int64_t total = job->units, verified = s->units[SRV_UNIT_VERIFIED];
  int64_t left = total - verified;
  double vnodes = (double)s->verified.nodes;
  double e_all = (double)s->est_total, e_ver = (double)s->est_verified;
  int by_est = total > 0 && s->est_units == total && e_all > 0;
  double calib = by_est && e_ver > 0 && vnodes > 0 ? vnodes / e_ver : 1.0;
  double avg = verified > 0 ? vnodes / (double)verified : 0.0;
  double remaining = by_est ? (e_all - e_ver) * calib : avg * (double)left;
  double est_total = vnodes + remaining;
  double percent;
  const char *method;
  int done = srv_job_is_done(job);
  if (done) {
    percent = 100.0, method = "done";
  } else if (by_est) {
    percent = 100.0 * e_ver / e_all, method = "estimate";
  } else if (verified > 0 && est_total > 0) {
    percent = 100.0 * vnodes / est_total, method = "nodes";
  } else {
    percent = total > 0 ? 100.0 * (double)verified / (double)total : 0.0, method = "units";
  }
  if (!done && percent > 99.99 && left > 0) percent = 99.99;

  /* A job younger than the window has only been running for its age. */
  int64_t window = s->rate_window;
  if (now - job->created < window) window = now - job->created;
  if (window < 1) window = 1;
  double rps = (double)s->recent_results / (double)window;
  double nps = (double)s->recent_nodes / (double)window;
  memset(r, 0, sizeof *r);
  if (!done) {
    /* Replicas still to run, less the live leases' reported shares (progress, 0..1 each). */
    int64_t moving = left - (stalled < left ? stalled : left);
    double work = (double)moving * (double)job->quorum - s->leased_progress;
    if (work < 0) work = 0;
    double per_unit = left > 0 ? remaining / (double)left : 0.0;
    /* Every unit verified, the job not done: what is left is its spot checks (a trusted owner's
     * job waits for them), one replica of an average unit each; none that can move, no ETA. */
    if (left == 0) {
      int64_t spots = s->spot_pending - spot_stalled;
      work = spots > 0 ? (double)spots : 0;
      per_unit = verified > 0 ? vnodes / (double)verified : 0.0;
      moving = spots;
    }
    if (moving <= 0) r->has_eta_s = 0;
    else if (per_unit > 0 && nps > 0) r->has_eta_s = srv_seconds(work * per_unit / nps, &r->eta_s);
    else if (rps > 0) r->has_eta_s = srv_seconds(work / rps, &r->eta_s);
  } else {
    r->has_eta_s = 1, r->eta_s = 0;
  }
  int64_t elapsed = (done ? job->finished : now) - job->created;
  r->window = window;
  r->results = s->recent_results;
  r->results_per_s = rps;
  r->nodes_per_s = nps;
  r->elapsed_s = elapsed < 0 ? 0 : elapsed;
  snprintf(b->estimated, sizeof b->estimated, "%.0f", est_total);
  *p = (nq_view_progress_t){
      .percent = percent,
      .units_percent = total > 0 ? 100.0 * (double)verified / (double)total : 0.0,
      .method = method,
      .verified_nodes = s->verified.nodes,
      .estimated_nodes = b->estimated,
      .leased = s->leased,
      .leased_done = s->leased_progress,
      .units_estimate = s->est_total,
      .has_units_estimate = by_est,
      .verified_estimate = s->est_verified,
      .has_verified_estimate = by_est,
      .calibration = calib,
      .has_calibration = by_est && e_ver > 0};
}

/* One backup meta row, "<unix time> <text>": the time (0 when absent) and the text. */
static int64_t backup_meta(srv_store_t *st, const char *key, char *text, size_t len) {
  char v[900];
  text[0] = 0;
  if (srv_meta_get(st, key, v, sizeof v) != 0) return 0;
  char *sp = strchr(v, ' ');
  snprintf(text, len, "%s", sp ? sp + 1 : "");
  return strtoll(v, NULL, 10);
}

/* The scheduled backups (srv_backup.h): the last good one, and a failure since. */
static void backup_view(srv_store_t *st, nq_view_backup_t *v, status_bufs_t *b) {
  int64_t good = backup_meta(st, SRV_META_BACKUP_OK, b->backup_file, sizeof b->backup_file);
  int64_t bad = backup_meta(st, SRV_META_BACKUP_ERROR, b->backup_error, sizeof b->backup_error);
  int failing = bad > 0 && bad >= good;
  *v = (nq_view_backup_t){.last_good = good,
                          .has_last_good = good != 0,
                          .file = good ? b->backup_file : NULL,
                          .failed_at = bad,
                          .has_failed_at = failing,
                          .error = failing ? b->backup_error : NULL};
}

/* The server certificate the server last recorded (srv_cert.c): absent before it ever did. */
static void cert_view(srv_store_t *st, int64_t now, nq_view_status_t *v, status_bufs_t *b) {
  char row[1200];
  long long not_after = 0;
  int warn = 0, used = 0;
  if (srv_meta_get(st, SRV_META_TLS_CERT, row, sizeof row) != 0 ||
      sscanf(row, "%lld %d %n", &not_after, &warn, &used) != 2 || used <= 0)
    return;
  snprintf(b->cert_file, sizeof b->cert_file, "%s", row + used);
  if (srv_meta_get(st, SRV_META_TLS_CERT_NAMES, b->cert_names, sizeof b->cert_names) != 0)
    b->cert_names[0] = 0;
  double left = (double)(not_after - now) / 86400.0;
  v->has_cert = 1;
  v->cert = (nq_view_cert_t){b->cert_file, b->cert_names, not_after, left, warn, left < warn};
}

/* Kernel-diverse verification: the job's rule and how many verified units rest on two
 * kernels or more. Then the reference audits of the job (nq-admin audit): how many, how many
 * disagreed, the newest. A store failure's code. */
static int evidence_view(srv_store_t *st, int64_t job_id, nq_view_status_t *v, status_bufs_t *b) {
  int k = 0;
  int64_t two = 0, count = 0, bad = 0;
  nq_admin_audit_t *a = &b->audit;
  int rc = srv_job_kernels_get(st, job_id, &k);
  if (rc == 0) rc = srv_job_units_two_kernels(st, job_id, &two);
  if (rc == 0) rc = srv_audit_summary(st, job_id, &count, &bad, a);
  if (rc) return rc;
  v->has_kernels = v->has_audits = 1;
  v->kernels = (nq_view_kernels_t){k, two};
  v->audits = (nq_view_audits_t){.count = count, .disagreed = bad, .has_last = count != 0};
  v->audits.last = (nq_view_audit_t){a->at,      a->sample,  (int64_t)a->seed, a->checked,
                                     a->mismatched, a->seconds, a->outcome,      a->detail};
  /* The fingerprint of the key the evidence is signed with (evkey.h), for anyone to pin. */
  srv_evkey_fingerprint(st, b->evkey);
  v->has_evidence_key = b->evkey[0] != '\0';
  v->evidence_key = b->evkey;
  return 0;
}

/* The one line for people that says why units are stalled (status, the page): the quorum that
 * cannot be reached, or the count of each reason. */
static void stall_message(const srv_stalls_t *x, char *buf, size_t len) {
  const char *key = srv_distinct_name(x->distinct);
  buf[0] = '\0';
  if (x->units == 0) return;
  if (x->by[SRV_STALL_OWNERS] > 0 && x->keys == 0) {
    snprintf(buf, len, "no unit can be verified: no client that can vote has enrolled yet "
             "(quorum %d by %s)", x->quorum, key);
    return;
  }
  if (x->by[SRV_STALL_OWNERS] > 0) {
    int n = snprintf(buf, len, "no unit can be verified: quorum %d by %s needs %d %ss that can "
                     "vote, and there %s %lld", x->quorum, key, x->quorum, key,
                     x->keys == 1 ? "is" : "are", (long long)x->keys);
    if (n > 0 && (size_t)n < len && x->distinct == SRV_DISTINCT_OWNER)
      snprintf(buf + n, len - (size_t)n, " (every client enrolled with enrol.key belongs to the "
               "owner `default`): add owners (nq-admin owner add NAME) and enrol clients with "
               "their keys, or run with --quorum-distinct client");
    return;
  }
  size_t used = 0;
  for (int i = 0; i < SRV_STALL_NREASONS && used < len; i++) {
    if (x->by[i] == 0) continue;
    int n = snprintf(buf + used, len - used, "%s%lld %s (%s)", used ? "; " : "",
                     (long long)x->by[i], srv_stall_reason_name((srv_stall_reason_t)i),
                     srv_stall_reason_text((srv_stall_reason_t)i));
    if (n < 0) break;
    used += (size_t)n;
  }
}

/* Without the server's settings (nq-admin's local mode): the --quorum-distinct the server last
 * ran with (srv_stall.c records it), else the default, by owner. */
static srv_distinct_t stall_mode(srv_store_t *st) {
  char v[32];
  int d = srv_meta_get(st, SRV_META_QUORUM_DISTINCT, v, sizeof v) == 0 ? srv_distinct_parse(v) : -1;
  return d >= 0 ? (srv_distinct_t)d : SRV_DISTINCT_OWNER;
}

/* {"units", "by": {reason: count}, "keys", "keys_online", "quorum", "distinct", "window", "at"
 * (0: not counted yet), "message" (null with none)}. */
static void stalled_view(const srv_stalls_t *x, nq_view_stalled_t *v, status_bufs_t *b) {
  _Static_assert(SRV_STALL_NREASONS == NQ_STALL_REASON_N, "one table of stall reasons");
  memset(v, 0, sizeof *v);
  for (int i = 0; i < SRV_STALL_NREASONS; i++) v->by.reason[i] = x->by[i];
  stall_message(x, b->stall, sizeof b->stall);
  v->units = x->units;
  v->keys = x->keys;
  v->keys_online = x->keys_online;
  v->quorum = x->quorum;
  v->distinct = srv_distinct_name(x->distinct);
  v->window = SRV_STATUS_ACTIVE_WINDOW;
  v->at = x->at;
  v->message = b->stall[0] ? b->stall : NULL;
}

static int queue_count_cb(const srv_queued_t *q, void *arg) {
  (void)q;
  ++*(int64_t *)arg;
  return 0;
}

/* A job that cannot finish as the fleet stands never holds the queue silently: when everything
 * it has left is stalled and jobs are queued behind it, the stall message names the command that
 * moves on (docs/reliability.md, "Liveness"). */
static void queue_hint(srv_store_t *st, nq_view_status_t *v, status_bufs_t *b) {
  int64_t queued = 0;
  if (v->done || v->stalled.units == 0 || v->rate.has_eta_s) return;
  if (srv_queue_list(st, 0, queue_count_cb, &queued) != 0 || queued == 0) return;
  size_t used = strlen(b->stall);
  snprintf(b->stall + used, sizeof b->stall - used, "%s%lld queued job(s) wait behind this one: "
           "nq-admin job next --force starts the next (this job keeps its verified counts, and "
           "finishes with its totals when every unit is verified)", used ? "; " : "",
           (long long)queued);
  v->stalled.message = b->stall;
}

json_t *srv_status_json(srv_store_t *st, const srv_job_t *job_in, const srv_sched_config_t *cfg,
                        int64_t now) {
  srv_stats_t s;
  srv_stalls_t x;
  status_bufs_t b;
  nq_view_status_t v;
  srv_distinct_t mode = cfg ? cfg->quorum_distinct : stall_mode(st);
  if (srv_store_stats(st, job_in->id, now, SRV_STATUS_ACTIVE_WINDOW, SRV_STATUS_RATE_WINDOW, &s) ||
      srv_stalls_get(st, job_in->id, mode, now, SRV_STATUS_ACTIVE_WINDOW, &x))
    return NULL;
  memset(&v, 0, sizeof v);
  const srv_job_t *job = &s.job; /* fresh from the store, not the caller's possibly stale copy */
  v.now = now;
  v.done = srv_job_is_done(job);
  job_view(job, &v.job);
  v.units.total = job->units;
  _Static_assert(SRV_UNIT_NSTATES == NQ_UNIT_STATE_N, "one table of unit states");
  for (int i = 0; i < SRV_UNIT_NSTATES; i++) v.units.state[i] = s.units[i];
  v.units.blocked = s.blocked;
  v.units.spot_checks = s.spot_pending;
  v.units.contested = s.contested;
  /* Spot checks dropped because no client could take them (schema 019): the job says so. */
  if (srv_job_spot_dropped(st, job->id, &v.units.spot_dropped) == 0) v.units.has_spot_dropped = 1;
  /* What the answer rests on: trusted owners settle disagreements, or votes alone. */
  v.trust = (nq_view_trust_t){s.trusted_owners, s.trusted_active,
                              s.trusted_owners > 0 ? "trusted" : "votes"};
  v.results = s.results;
  progress_view(&s, &x, now, &v.progress, &v.rate, &b);
  stalled_view(&x, &v.stalled, &b);
  queue_hint(st, &v, &b);
  totals_view(&s.verified, &v.verified);
  v.has_final = v.done;
  if (v.done) final_view(job, &v.final);
  match_view(job, &v, &b);
  v.clients = (nq_view_fleet_t){.active = s.clients_active, .known = s.clients_known,
                                .banned = s.clients_banned, .suspect = s.clients_suspect};
  /* Clients that said they are paused (their solver waits): the ETA is as slow as they are. */
  if (srv_clients_paused(st, now - SRV_STATUS_ACTIVE_WINDOW, &v.clients.paused) == 0)
    v.clients.has_paused = 1;
  backup_view(st, &v.backup, &b);
  cert_view(st, now, &v, &b);
  if (evidence_view(st, job->id, &v, &b) != 0) return NULL;
  json_t *o = nq_view_status_pack(&v);
  json_t *d = o ? srv_units_json(st, job->id, SRV_UNIT_DISPUTED, SRV_STATUS_DISPUTED_MAX, now)
                : NULL;
  /* The disputed units are packed one by one as the store walks them, after the rest. */
  if (!d || json_object_set(o, "disputed", json_object_get(d, "units")) != 0) {
    if (d || !o) srv_store_failf(st, NQ_ENOMEM, "the status view: out of memory");
    json_decref(o);
    json_decref(d);
    return NULL;
  }
  json_decref(d);
  return o;
}


int srv_adm_status(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  (void)req;
  *out = srv_status_json(ctx->st, ctx->job, ctx->cfg, ctx->now);
  return 0;
}
