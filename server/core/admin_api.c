/* nq-server: the admin API -- the operators' commands and the JSON views of the store they answer
 * with (see admin_api.h). */
#include "admin_api.h"
#include "nq/admin_view.h"
#include "store_audit.h"
#include "evkey.h"
#include "store_kernels.h"
#include "store_queue.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/certs.h"
#include "nq/hash.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "store_stall.h"

int srv_seconds(double x, int64_t *out) {
  if (isnan(x)) return 0;
  if (x < 0) x = 0;
  if (x > SRV_SECONDS_MAX) x = SRV_SECONDS_MAX;
  *out = (int64_t)(x + 0.5);
  return 1;
}

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

/* Kernel-diverse verification (issue 30): the job's rule and how many verified units rest on two
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
  /* What the answer rests on (issue 30): trusted owners settle disagreements, or votes alone. */
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

/* ---- lists ---------------------------------------------------------------------------------- */

/* A list is packed element by element as the store walks it (nq/admin_view.h). */
typedef struct {
  json_t *arr;
  int64_t now;
  srv_store_t *st;
} list_ctx_t;

/* Append a packed element (consumed); NQ_ENOMEM when it or the append failed. */
static int append(json_t *arr, json_t *o) {
  return o && json_array_append_new(arr, o) == 0 ? 0 : NQ_ENOMEM;
}

/* {key: arr}, or NULL with the store's message saying why (a builder's own failure is an
 * allocation: the store's last message would be stale). Consumes arr. */
static json_t *wrap(srv_store_t *st, const char *key, json_t *arr, int rc) {
  if (rc == NQ_ENOMEM || !arr) srv_store_failf(st, NQ_ENOMEM, "the %s view: out of memory", key);
  if (rc != 0 || !arr) {
    json_decref(arr);
    return NULL;
  }
  return json_pack("{s:o}", key, arr);
}

static int client_cb(const srv_client_t *c, void *arg) {
  list_ctx_t *l = arg;
  srv_owner_t own;
  srv_credit_t cr;
  char backends[512];
  int rc = srv_owner_get(l->st, c->owner_id, &own);
  if (rc == 0) rc = srv_client_backends(l->st, c->id, backends, sizeof backends);
  /* Credit (schema 009): the verified nodes its agreeing results earned, and its public name. */
  if (rc == 0) rc = srv_credit_get(l->st, c->id, &cr);
  if (rc) return rc;
  nq_view_client_t v = {
      .name = c->name,
      .id = c->id,
      .created = c->created,
      .last_seen = c->last_seen,
      .active = !c->banned && c->last_seen >= l->now - SRV_STATUS_ACTIVE_WINDOW,
      .valid = c->valid,
      .invalid = c->invalid,
      .banned = c->banned,
      .outstanding = c->outstanding,
      .owner = own.name,
      .suspect = c->suspect,
      .network = c->net,
      .software = c->software[0] ? c->software : NULL,
      .protocol = c->protocol,
      .lapses = c->lapses,
      .hoarding = srv_sched_lapse_factor(c->lapses) > 1,
      .backends = backends,
      .credit = cr.credit,
      .public_name = cr.named ? cr.display : NULL,
      .display_name = cr.display};
  return append(l->arr, nq_view_client_pack(&v));
}

json_t *srv_clients_json(srv_store_t *st, int64_t now) {
  list_ctx_t l = {json_array(), now, st};
  int rc = l.arr ? srv_client_list(st, client_cb, &l) : NQ_ENOMEM;
  return wrap(st, "clients", l.arr, rc);
}

static int owner_cb(const srv_owner_t *w, void *arg) {
  list_ctx_t *l = arg;
  nq_u128 credit;
  int rc = srv_owner_credit(l->st, w->id, &credit);
  if (rc) return rc;
  nq_view_owner_t v;
  memset(&v, 0, sizeof v);
  v.name = w->name;
  v.id = w->id;
  v.created = w->created;
  v.banned = w->banned;
  v.has_key = w->has_key;
  v.clients = w->clients;
  v.trusted = w->trusted;
  v.credit = credit;
  v.has_self_joined = 1;
  v.self_joined = w->self_joined;
  v.has_public_name = w->public_name[0] != 0; /* absent: anonymous */
  v.public_name = w->public_name;
  return append(l->arr, nq_view_owner_pack(&v));
}

json_t *srv_owners_json(srv_store_t *st, int64_t now) {
  list_ctx_t l = {json_array(), now, st};
  int rc = l.arr ? srv_owner_list(st, owner_cb, &l) : NQ_ENOMEM;
  return wrap(st, "owners", l.arr, rc);
}

static int job_cb(const srv_job_t *job, void *arg) {
  list_ctx_t *l = arg;
  return append(l->arr, srv_job_json(job));
}

json_t *srv_jobs_json(srv_store_t *st) {
  list_ctx_t l = {json_array(), 0, st};
  int rc = l.arr ? srv_job_list(st, job_cb, &l) : NQ_ENOMEM;
  return wrap(st, "jobs", l.arr, rc);
}

/* The assignments of one unit that a unit view shows, copied out of the store's walk with the
 * names of their clients: those with a result (replicas) or a live lease (running). */
typedef struct asg_row_s {
  srv_asg_info_t a;
  char client[SRV_NAME_MAX + 1];
} asg_row_t;

typedef struct {
  srv_store_t *st;
  asg_row_t *rows;
  size_t n, cap;
} asg_rows_t;

static int asg_collect(const srv_asg_info_t *a, void *arg) {
  asg_rows_t *r = arg;
  if (a->reported_at == 0 && a->state != SRV_ASG_LEASED) return 0;
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 8;
    asg_row_t *rows = realloc(r->rows, cap * sizeof *rows);
    if (!rows) return NQ_ENOMEM;
    r->rows = rows, r->cap = cap;
  }
  asg_row_t *row = &r->rows[r->n++];
  srv_client_t c;
  row->a = *a;
  snprintf(row->client, sizeof row->client, "%s",
           srv_client_get(r->st, a->client_id, &c) == 0 ? c.name : "?");
  return 0;
}

/* A result that takes part in the vote. */
static void replica_view(const asg_row_t *row, nq_view_replica_t *v) {
  const srv_asg_info_t *a = &row->a;
  *v = (nq_view_replica_t){.assignment = a->id,
                           .client = row->client,
                           .state = srv_asg_state_name(a->state),
                           .c2 = (int64_t)a->counts.c2,
                           .c4 = (int64_t)a->counts.c4,
                           .c8 = (int64_t)a->counts.c8,
                           .nodes = (int64_t)a->counts.nodes,
                           .solver = a->solver,
                           .backend = a->backend[0] ? a->backend : NULL,
                           .reported_at = a->reported_at,
                           .votes = !a->novote,
                           .voided = a->voided};
}

/* A live lease and its last progress report: who runs the unit, how far it is, how fast, and
 * when it should end. The rate is the client's own (fraction per second of its solve time, every
 * run of a resumed unit together), so a client that was off for a while does not look slow; the
 * ETA counts from now, less the time since the report. Every number here comes from one
 * client's report: a rate or an ETA it makes absurd (nodes 2^63-1 in 5e-324 s, a fraction of
 * 1e-300) is shown as null or clamped, never inf, never an undefined conversion to int64, never
 * a failed view. */
static void running_view(const asg_row_t *row, int64_t now, nq_view_running_t *v) {
  const srv_asg_info_t *a = &row->a;
  double f = a->progress, secs = a->progress_seconds;
  *v = (nq_view_running_t){.assignment = a->id,
                           .client = row->client,
                           .issued = a->issued,
                           .deadline = a->deadline,
                           .percent = 100.0 * f,
                           .has_percent = f >= 0 && isfinite(100.0 * f),
                           .seconds = secs,
                           .has_seconds = secs >= 0 && isfinite(secs),
                           .nodes = (int64_t)a->progress_nodes,
                           .has_nodes = a->progress_at != 0,
                           .progress_at = a->progress_at};
  if (f > 0 && secs > 0)
    v->has_eta_s = srv_seconds(secs * (1 - f) / f - (double)(now - a->progress_at), &v->eta_s);
  if (secs > 0 && a->progress_nodes > 0) {
    v->nodes_per_s = (double)a->progress_nodes / secs;
    v->has_nodes_per_s = isfinite(v->nodes_per_s);
  }
}

/* The unit view of u, its assignments in *rows (release with free(rows->rows)) and its arrays
 * (nq_view_unit_free); the extras are the caller's. */
static int unit_view(srv_store_t *st, const srv_unit_info_t *u, int64_t now, asg_rows_t *rows,
                     nq_view_unit_t *v) {
  memset(v, 0, sizeof *v);
  *rows = (asg_rows_t){st, NULL, 0, 0};
  v->id = u->id;
  v->idx = u->idx;
  v->unit = u->text;
  v->state = srv_unit_state_name(u->state);
  v->live = u->live;
  v->results = u->results;
  /* Issue 30: contested (waiting for a trusted result), or what settled it. */
  v->contest = srv_contest_name(u->contest);
  if (u->state == SRV_UNIT_VERIFIED) {
    v->has_c2 = v->has_c4 = v->has_c8 = v->has_nodes = v->has_verified_at = 1;
    v->c2 = (int64_t)u->counts.c2;
    v->c4 = (int64_t)u->counts.c4;
    v->c8 = (int64_t)u->counts.c8;
    v->nodes = (int64_t)u->counts.nodes;
    v->verified_at = u->verified_at;
  }
  /* The results that voted, with the backend that computed each: a verified unit's evidence,
   * and what a disputed or awaiting unit has so far (voided ones included: `voided`). */
  v->has_replicas = u->state == SRV_UNIT_VERIFIED || u->state == SRV_UNIT_DISPUTED ||
                    u->state == SRV_UNIT_AWAITING;
  v->has_running = u->live > 0;
  int rc = v->has_replicas || v->has_running ? srv_asg_list_unit(st, u->id, asg_collect, rows) : 0;
  if (rc == 0 && rows->n > 0) {
    v->replicas = calloc(rows->n, sizeof *v->replicas);
    v->running = calloc(rows->n, sizeof *v->running);
    if (!v->replicas || !v->running) rc = NQ_ENOMEM;
  }
  for (size_t i = 0; rc == 0 && i < rows->n; i++) {
    const asg_row_t *row = &rows->rows[i];
    if (v->has_replicas && row->a.reported_at != 0)
      replica_view(row, &v->replicas[v->n_replicas++]);
    if (v->has_running && row->a.state == SRV_ASG_LEASED)
      running_view(row, now, &v->running[v->n_running++]);
  }
  return rc;
}

static void unit_view_free(nq_view_unit_t *v, asg_rows_t *rows) {
  nq_view_unit_free(v);
  free(rows->rows);
}

static int unit_cb(const srv_unit_info_t *u, void *arg) {
  list_ctx_t *l = arg;
  nq_view_unit_t v;
  asg_rows_t rows;
  int rc = unit_view(l->st, u, l->now, &rows, &v);
  if (rc == 0) rc = append(l->arr, nq_view_unit_pack(&v));
  unit_view_free(&v, &rows);
  return rc;
}

json_t *srv_units_json(srv_store_t *st, int64_t job_id, int state, int limit, int64_t now) {
  list_ctx_t l = {json_array(), now, st};
  int rc = l.arr ? srv_unit_list(st, job_id, state, limit, unit_cb, &l) : NQ_ENOMEM;
  return wrap(st, "units", l.arr, rc);
}

/* ---- the commands ---------------------------------------------------------------------------- */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int refuse(nq_proto_err_t *err, nq_errcode_t code, const char *fmt, ...) {
  err->code = code;
  err->fatal = 0; /* the server turns `internal` into a fatal error itself */
  err->id = -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return code == NQ_ERR_INTERNAL ? NQ_EIO : NQ_EINVAL;
}

/* The refusal for a failed store call: the protocol's code for the expected outcomes, `internal`
 * (with the store's reason) for everything else. */
static int store_refuse(srv_store_t *st, int rc, const char *what, nq_proto_err_t *err) {
  switch (rc) {
  case NQ_EEXIST: return refuse(err, NQ_ERR_EXISTS, "%s already exists", what);
  case NQ_ENOTFOUND: return refuse(err, NQ_ERR_NOT_FOUND, "no such %s", what);
  case NQ_EINVAL: return refuse(err, NQ_ERR_BAD_MESSAGE, "invalid %s", what);
  default:
    return refuse(err, NQ_ERR_INTERNAL, "%s: %s", nq_strerror(rc), srv_store_errmsg(st));
  }
}

/* client_add: a client NAME with a fresh random token, which only this reply shows (the store
 * keeps its SHA-256 hex): {"name", "owner", "token"}. With `owner` it belongs to that owner
 * (which must exist and not be banned), else to `default`; both steps in one transaction. */
static int cmd_client_add(srv_store_t *st, const char *name, const char *owner, int64_t now,
                          json_t **out, nq_proto_err_t *err) {
  char token[65], hash[65];
  srv_client_t c;
  srv_owner_t o;
  int rc = owner ? srv_owner_find_name(st, owner, &o) : srv_owner_get(st, SRV_OWNER_DEFAULT, &o);
  if (rc == NQ_ENOTFOUND)
    return refuse(err, NQ_ERR_NOT_FOUND, "no such owner '%s' (nq-admin owner add NAME)",
                  owner ? owner : "default");
  if (rc) return store_refuse(st, rc, "owner", err);
  if (o.banned)
    return refuse(err, NQ_ERR_BAD_STATE, "owner '%s' is banned (nq-admin owner unban %s)", o.name,
                  o.name);
  /* The server runs requests inside its batch's transaction; local mode has none open. */
  int own_tx = !srv_store_in_tx(st);
  if (own_tx && (rc = srv_store_begin(st)) != 0) return store_refuse(st, rc, "client", err);
  rc = nq_random_token(token, 32);
  if (rc == 0) rc = nq_sha256_hex(token, hash);
  if (rc == 0) rc = srv_client_create(st, name, hash, now, &c);
  if (rc == 0 && o.id != SRV_OWNER_DEFAULT) rc = srv_client_set_owner(st, c.id, o.id);
  if (own_tx && rc == 0) rc = srv_store_commit(st);
  else if (own_tx) srv_store_rollback(st);
  if (rc == 0 && !(*out = nq_view_client_added_pack(&(nq_view_client_added_t){c.name, o.name,
                                                                            token})))
    rc = NQ_ENOMEM;
  memset(token, 0, sizeof token);
  return rc ? store_refuse(st, rc, "client", err) : 0;
}

/* A scheduler on the store for the trust commands (bans and re-opening count votes again): the
 * server's settings when it runs the command, else the defaults (local mode). */
static int trust_sched(srv_store_t *st, const srv_job_t *job, const srv_sched_config_t *cfg,
                       srv_sched_t *out, nq_proto_err_t *err) {
  int rc = srv_sched_init(out, st, job->id, cfg);
  return rc ? store_refuse(st, rc, "scheduler", err) : 0;
}

/* client_ban (idempotent): {"name", "banned": true, "released": leases given back, "reopened":
 * units it had helped verify, re-opened to be verified without it}. */
static int cmd_client_ban(srv_store_t *st, const srv_job_t *job, const srv_sched_config_t *cfg,
                          const char *name, int64_t now, json_t **out, srv_admin_effects_t *fx,
                          nq_proto_err_t *err) {
  srv_client_t c;
  srv_sched_t sch;
  int64_t reopened = 0;
  int rc = trust_sched(st, job, cfg, &sch, err);
  if (rc) return rc;
  rc = srv_client_find_name(st, name, &c);
  if (rc == 0) rc = srv_sched_ban(&sch, c.id, now, &reopened, &fx->job_reopened);
  if (rc == 0) fx->banned = 1;
  fx->reopened_units = reopened;
  if (rc == 0 && !(*out = nq_view_client_banned_pack(&(nq_view_client_banned_t){
                        c.name, 1, c.banned ? 0 : c.outstanding, reopened})))
    rc = NQ_ENOMEM;
  return rc ? store_refuse(st, rc, "client", err) : 0;
}

/* client_unban: {"name", "banned": false}; the suspicion is lifted too. */
static int cmd_client_unban(srv_store_t *st, const char *name, json_t **out,
                            nq_proto_err_t *err) {
  srv_client_t c;
  int rc = srv_client_find_name(st, name, &c);
  if (rc == 0) rc = srv_client_unban(st, c.id);
  if (rc == 0 && !(*out = nq_view_client_unbanned_pack(&(nq_view_client_unbanned_t){c.name, 0, 0})))
    rc = NQ_ENOMEM;
  return rc ? store_refuse(st, rc, "client", err) : 0;
}

/* owner_add: an owner NAME with a fresh random enrolment key, which only this reply shows (the
 * store keeps its SHA-256 hex): {"name", "id", "enrol_key"}. */
static int cmd_owner_add(srv_store_t *st, const char *name, int64_t now, json_t **out,
                         nq_proto_err_t *err) {
  char key[65], hash[65];
  srv_owner_t o;
  int rc = nq_random_token(key, 32);
  if (rc == 0) rc = nq_sha256_hex(key, hash);
  if (rc == 0) rc = srv_owner_create(st, name, hash, now, &o);
  if (rc == 0 && !(*out = nq_view_owner_key_pack(&(nq_view_owner_key_t){o.name, o.id, key})))
    rc = NQ_ENOMEM;
  memset(key, 0, sizeof key);
  return rc ? store_refuse(st, rc, "owner", err) : 0;
}

/* owner_unban: {"name", "banned": false, "clients_banned": its clients still banned}. Its key
 * enrols again; its clients keep their own bans (one may have lied): `client unban` lifts them
 * one by one. */
static int cmd_owner_unban(srv_store_t *st, const char *name, json_t **out, nq_proto_err_t *err) {
  srv_owner_t o;
  int64_t *ids = NULL;
  int n = 0, banned = 0;
  int rc = srv_owner_find_name(st, name, &o);
  if (rc == 0) rc = srv_owner_set_banned(st, o.id, 0);
  if (rc == 0) rc = srv_owner_clients(st, o.id, &ids, &n);
  for (int i = 0; rc == 0 && i < n; i++) {
    srv_client_t c;
    if ((rc = srv_client_get(st, ids[i], &c)) == 0) banned += c.banned != 0;
  }
  free(ids);
  if (rc == 0 &&
      !(*out = nq_view_owner_unbanned_pack(&(nq_view_owner_unbanned_t){o.name, 0, banned})))
    rc = NQ_ENOMEM;
  return rc ? store_refuse(st, rc, "owner", err) : 0;
}

/* owner_rekey: a fresh enrolment key for an owner that has one of its own (`default` enrols
 * with the server's enrol.key), shown only in this reply; the old key enrols nobody from now
 * on, while clients enrolled with it keep their tokens: {"name", "id", "enrol_key"}. */
static int cmd_owner_rekey(srv_store_t *st, const char *name, json_t **out, nq_proto_err_t *err) {
  char key[65], hash[65];
  srv_owner_t o;
  int rc = srv_owner_find_name(st, name, &o);
  if (rc) return store_refuse(st, rc, "owner", err);
  if (!o.has_key)
    return refuse(err, NQ_ERR_BAD_STATE, "owner '%s' enrols with the server's enrol.key, not a "
                  "key of its own: replace that file (and restart the server) instead", o.name);
  rc = nq_random_token(key, 32);
  if (rc == 0) rc = nq_sha256_hex(key, hash);
  if (rc == 0) rc = srv_owner_set_key(st, o.id, hash);
  if (rc == 0 && !(*out = nq_view_owner_key_pack(&(nq_view_owner_key_t){o.name, o.id, key})))
    rc = NQ_ENOMEM;
  memset(key, 0, sizeof key);
  return rc ? store_refuse(st, rc, "owner", err) : 0;
}

/* owner_ban: {"name", "banned": true, "clients": banned with it, "reopened"}. */
static int cmd_owner_ban(srv_store_t *st, const srv_job_t *job, const srv_sched_config_t *cfg,
                         const char *name, int64_t now, json_t **out, srv_admin_effects_t *fx,
                         nq_proto_err_t *err) {
  srv_owner_t o;
  srv_sched_t sch;
  int64_t reopened = 0;
  int rc = trust_sched(st, job, cfg, &sch, err);
  if (rc) return rc;
  rc = srv_owner_find_name(st, name, &o);
  if (rc == 0) rc = srv_sched_ban_owner(&sch, o.id, now, &reopened, &fx->job_reopened);
  if (rc == 0) fx->banned = 1;
  fx->reopened_units = reopened;
  if (rc == 0 && !(*out = nq_view_owner_banned_pack(&(nq_view_owner_banned_t){
                        o.name, 1, o.clients, reopened})))
    rc = NQ_ENOMEM;
  return rc ? store_refuse(st, rc, "owner", err) : 0;
}

/* owner_trust / owner_untrust (issue 30): {"name", "trusted", "trusted_owners" (not banned, after
 * it), "recounted"}. The disputed and contested units are counted again at once: with a trusted
 * owner a disagreement waits for its result, without one the votes decide. */
static int cmd_owner_trust(srv_store_t *st, const srv_job_t *job, const srv_sched_config_t *cfg,
                           const nq_admin_req_t *req, int64_t now, json_t **out,
                           nq_proto_err_t *err) {
  int trust = req->cmd == NQ_ADMIN_OWNER_TRUST, recounted = 0;
  int64_t owners = 0;
  srv_owner_t o;
  srv_sched_t sch;
  int rc = trust_sched(st, job, cfg, &sch, err);
  if (rc) return rc;
  rc = srv_owner_find_name(st, req->name, &o);
  if (rc == 0 && trust && o.banned)
    return refuse(err, NQ_ERR_BAD_STATE, "owner '%s' is banned: a banned owner is not trusted",
                  o.name);
  if (rc == 0) rc = srv_owner_set_trusted(st, o.id, trust);
  if (rc == 0) rc = srv_sched_recount_disputed(&sch, now, &recounted);
  if (rc == 0) rc = srv_trust_counts(st, now, &owners, NULL);
  if (rc == 0 && !(*out = nq_view_owner_trusted_pack(&(nq_view_owner_trusted_t){
                        o.name, trust, owners, recounted})))
    rc = NQ_ENOMEM;
  return rc ? store_refuse(st, rc, "owner", err) : 0;
}

/* The unit a unit_retry / unit_reopen request names, in the job; a refusal otherwise. */
static int req_unit(srv_store_t *st, const srv_job_t *job, const nq_admin_req_t *req,
                    srv_unit_info_t *u, nq_proto_err_t *err) {
  int rc;
  if (req->unit_text) {
    rc = srv_unit_find_text(st, job->id, req->unit_text, u);
  } else {
    rc = srv_unit_get(st, req->unit_id, u);
    if (rc == 0 && u->job_id != job->id)
      return refuse(err, NQ_ERR_NOT_FOUND, "unit %lld is not in the job for N=%d",
                    (long long)u->id, job->n);
  }
  if (rc == NQ_ENOTFOUND) return refuse(err, NQ_ERR_NOT_FOUND, "%s", srv_store_errmsg(st));
  return rc ? store_refuse(st, rc, "unit", err) : 0;
}

/* One unit as `units` shows it, with the command's members of x (job_reopened .. job_done). */
static int unit_reply(srv_store_t *st, const srv_unit_info_t *u, int64_t now,
                      const nq_view_unit_t *x, json_t **out, nq_proto_err_t *err) {
  nq_view_unit_t v;
  asg_rows_t rows;
  int rc = unit_view(st, u, now, &rows, &v);
  v.has_job_reopened = x->has_job_reopened, v.job_reopened = x->job_reopened;
  v.has_extra_results = x->has_extra_results, v.extra_results = x->extra_results;
  v.has_max_results = x->has_max_results, v.max_results = x->max_results;
  v.has_added = x->has_added, v.added = x->added;
  v.has_restored = x->has_restored, v.restored = x->restored;
  v.has_job_done = x->has_job_done, v.job_done = x->job_done;
  if (rc == 0 && !(*out = nq_view_unit_pack(&v))) rc = NQ_ENOMEM;
  unit_view_free(&v, &rows);
  return rc ? store_refuse(st, rc, "unit", err) : 0;
}

/* unit_reopen: the unit as in `units` after it was re-opened (its results voided), plus
 * "job_reopened". */
static int cmd_unit_reopen(srv_store_t *st, const srv_job_t *job, const srv_sched_config_t *cfg,
                           const nq_admin_req_t *req, int64_t now, json_t **out,
                           srv_admin_effects_t *fx, nq_proto_err_t *err) {
  srv_unit_info_t u;
  srv_sched_t sch;
  int rc = trust_sched(st, job, cfg, &sch, err);
  if (rc == 0) rc = req_unit(st, job, req, &u, err);
  if (rc) return rc;
  if ((rc = srv_sched_reopen(&sch, u.id, now, &fx->job_reopened)) != 0 ||
      (rc = srv_unit_get(st, u.id, &u)) != 0)
    return store_refuse(st, rc, "unit", err);
  fx->reopened = 1;
  fx->reopened_units = 1;
  snprintf(fx->unit, sizeof fx->unit, "%s", u.text);
  nq_view_unit_t x = {.has_job_reopened = 1, .job_reopened = fx->job_reopened};
  return unit_reply(st, &u, now, &x, out, err);
}

/* unit_retry --all-disputed | --client NAME: every such disputed unit gets `extra` more results,
 * and with --client the client's awaiting units are retried too (retry_awaiting_of):
 * {"retried": K, "added", "units": [ids], "awaiting": of them, "restored": votes, "verified":
 * units verified by them, "job_done"}. */
/* unit_retry --client NAME, its awaiting units `ids` (issue 36): each retried through the
 * scheduler, which restores the votes nothing voting contradicts any more (the units a banned
 * liar's spot checks re-opened are verified again by the honest votes). Their ids go into arr;
 * *restored and *verified count. */
static int retry_awaiting_of(srv_store_t *st, const srv_job_t *job, const srv_sched_config_t *cfg,
                             const int64_t *ids, int n, int extra, int64_t now, int64_t *restored,
                             int *verified, srv_admin_effects_t *fx, nq_proto_err_t *err) {
  srv_sched_t sch;
  srv_result_info_t info;
  int64_t r = 0;
  int rc = n > 0 ? trust_sched(st, job, cfg, &sch, err) : 0;
  if (rc) return rc;
  for (int i = 0; i < n && rc == 0; i++) {
    rc = srv_sched_retry(&sch, ids[i], extra, now, &r, &info);
    *restored += r;
    *verified += info.unit_verified;
    fx->job_done |= info.job_done;
  }
  return rc ? store_refuse(st, rc, "unit", err) : 0;
}

static int cmd_unit_retry_many(srv_store_t *st, const srv_job_t *job,
                               const srv_sched_config_t *cfg, const nq_admin_req_t *req,
                               int64_t now, json_t **out, srv_admin_effects_t *fx,
                               nq_proto_err_t *err) {
  int64_t client_id = 0, *ids = NULL;
  int n = 0, rc = 0;
  if (req->client) {
    srv_client_t c;
    if ((rc = srv_client_find_name(st, req->client, &c)) != 0)
      return store_refuse(st, rc, "client", err);
    client_id = c.id;
  }
  int extra = req->extra > 0 ? req->extra : job->quorum;
  /* The client's awaiting units are taken before its disputed ones are retried (which makes
   * them awaiting too). */
  int64_t *waiting = NULL;
  int na = 0;
  if (client_id > 0 && (rc = srv_units_awaiting_of(st, job->id, client_id, &waiting, &na)) != 0)
    return store_refuse(st, rc, "unit", err);
  rc = srv_units_disputed(st, job->id, client_id, &ids, &n);
  for (int i = 0; i < n && rc == 0; i++) rc = srv_unit_retry(st, ids[i], extra, now, NULL);
  if (rc) {
    free(ids);
    free(waiting);
    return store_refuse(st, rc, "unit", err);
  }
  int verified = 0;
  nq_view_retried_t v = {.retried = n + na, .added = extra, .awaiting = na};
  rc = retry_awaiting_of(st, job, cfg, waiting, na, extra, now, &v.restored, &verified, fx, err);
  v.verified = verified;
  /* The units: the disputed ones retried, then the awaiting ones. */
  int64_t *all = rc == 0 && n + na > 0 ? malloc((size_t)(n + na) * sizeof *all) : NULL;
  if (rc == 0 && n + na > 0 && !all) rc = store_refuse(st, NQ_ENOMEM, "unit", err);
  if (all) {
    if (n) memcpy(all, ids, (size_t)n * sizeof *all);
    if (na) memcpy(all + n, waiting, (size_t)na * sizeof *all);
  }
  v.units = all, v.n_units = (size_t)(n + na), v.job_done = fx->job_done;
  if (rc == 0 && !(*out = nq_view_retried_pack(&v))) rc = store_refuse(st, NQ_ENOMEM, "unit", err);
  free(all);
  free(ids);
  free(waiting);
  if (rc) return rc;
  fx->reopened_units = n + na;
  fx->added = extra;
  return 0;
}

/* unit_retry: the unit as in `units`, plus "extra_results", "max_results" (its cap now) and
 * "added". */
static int cmd_unit_retry(srv_store_t *st, const srv_job_t *job, const srv_sched_config_t *cfg,
                          const nq_admin_req_t *req, int64_t now, json_t **out,
                          srv_admin_effects_t *fx, nq_proto_err_t *err) {
  if (req->all_disputed || req->client)
    return cmd_unit_retry_many(st, job, cfg, req, now, out, fx, err);
  srv_unit_info_t u;
  srv_sched_t sch;
  srv_result_info_t info;
  int64_t restored = 0;
  int rc = trust_sched(st, job, cfg, &sch, err);
  if (rc == 0) rc = req_unit(st, job, req, &u, err);
  if (rc) return rc;
  int extra = req->extra > 0 ? req->extra : job->quorum;
  rc = srv_sched_retry(&sch, u.id, extra, now, &restored, &info);
  if (rc == 0) rc = srv_unit_get(st, u.id, &u);
  if (rc == NQ_ESTATE) return refuse(err, NQ_ERR_BAD_STATE, "%s", srv_store_errmsg(st));
  if (rc == NQ_ENOTFOUND) return refuse(err, NQ_ERR_NOT_FOUND, "%s", srv_store_errmsg(st));
  if (rc) return store_refuse(st, rc, "unit", err);
  fx->reopened = 1;
  fx->added = extra;
  fx->job_done = info.job_done;
  snprintf(fx->unit, sizeof fx->unit, "%s", u.text);
  nq_view_unit_t x = {.has_extra_results = 1,
                      .extra_results = u.extra_results,
                      .has_max_results = 1,
                      .max_results = job->max_results + u.extra_results,
                      .has_added = 1,
                      .added = extra,
                      .has_restored = 1,
                      .restored = restored,
                      .has_job_done = 1,
                      .job_done = info.job_done};
  return unit_reply(st, &u, now, &x, out, err);
}

/* The job a job_archive/job_delete request names: the one for N that is not archived, else
 * (delete only) the newest archived one. */
typedef struct pick_s {
  int n, archived_ok;
  srv_job_t job;
  int found;
} pick_t;

static int pick_cb(const srv_job_t *j, void *arg) {
  pick_t *p = arg;
  if (j->n != p->n || (j->state == SRV_JOB_ARCHIVED && !p->archived_ok)) return 0;
  if (!p->found || p->job.state == SRV_JOB_ARCHIVED) {
    p->job = *j;
    p->found = 1;
  }
  return 0;
}

/* job_archive / job_delete: {"id", "n", "state" (after), "units", "released" (leases given
 * back with force), "deleted"}. The server's own job is refused (stop the server first);
 * delete only runs in local mode, where it may take minutes in batches of its own transactions. */
static int cmd_job(srv_store_t *st, int64_t serving, const nq_admin_req_t *req, int64_t now,
                   json_t **out, nq_proto_err_t *err) {
  int del = req->cmd == NQ_ADMIN_JOB_DELETE;
  if (del && serving)
    return refuse(err, NQ_ERR_BAD_STATE, "job delete runs in nq-admin's local mode (--data DIR, "
                  "with the server stopped): deleting millions of units takes minutes");
  pick_t p = {req->job_n, del, {0}, 0};
  int rc = srv_job_list(st, pick_cb, &p);
  if (rc) return store_refuse(st, rc, "job", err);
  if (!p.found) return refuse(err, NQ_ERR_NOT_FOUND, "no job for N=%d", req->job_n);
  if (p.job.id == serving)
    return refuse(err, NQ_ERR_BAD_STATE, "the server is serving the job for N=%d: stop it, then "
                  "nq-admin --data DIR job %s %d", p.job.n, del ? "delete" : "archive", p.job.n);
  int64_t leases = 0;
  if ((rc = srv_job_leases(st, &p.job, &leases)) != 0) return store_refuse(st, rc, "job", err);
  rc = del ? srv_job_delete(st, p.job.id, req->force, 0)
           : srv_job_archive(st, p.job.id, req->force, now);
  if (rc == NQ_EBUSY || rc == NQ_ESTATE)
    return refuse(err, NQ_ERR_BAD_STATE, "%s", srv_store_errmsg(st));
  if (rc) return store_refuse(st, rc, "job", err);
  *out = nq_view_job_removed_pack(&(nq_view_job_removed_t){
      p.job.id, p.job.n, del ? "deleted" : "archived", p.job.units, leases, del});
  return *out ? 0 : store_refuse(st, NQ_ENOMEM, "job", err);
}

/* ---- the job queue (issue 36) --------------------------------------------------------------- */

/* One queue entry: {"id", "n", "depth", "unit_seconds", "max_depth", "quorum", "max_results",
 * "diverse_kernels" (-1: N's default), "state" (queued/started/cancelled/failed), "added",
 * "changed", "job_id" (started: its job, else null), "error" (failed: why, else null)}. */
static void queued_view(const srv_queued_t *q, nq_view_queued_t *v) {
  *v = (nq_view_queued_t){.id = q->id,
                          .n = q->opts.n,
                          .depth = q->opts.depth,
                          .unit_seconds = q->opts.unit_seconds,
                          .max_depth = q->opts.max_depth,
                          .quorum = q->opts.quorum,
                          .max_results = q->opts.max_results,
                          .diverse_kernels = q->opts.diverse_kernels,
                          .state = srv_queue_state_name(q->state),
                          .added = q->added,
                          .changed = q->changed,
                          .job_id = q->job_id,
                          .has_job_id = q->job_id != 0,
                          .error = q->error[0] ? q->error : NULL};
}

static json_t *queued_json(const srv_queued_t *q) {
  nq_view_queued_t v;
  queued_view(q, &v);
  return nq_view_queued_pack(&v);
}

static int queued_cb(const srv_queued_t *q, void *arg) {
  json_t *v = queued_json(q);
  return v && json_array_append_new(arg, v) == 0 ? 0 : NQ_ENOMEM;
}

/* job_list: {"queue": [entry...]} -- the queued entries, oldest (next) first; with `all`, every
 * entry ever queued. */
static json_t *queue_json(srv_store_t *st, int all) {
  json_t *arr = json_array();
  int rc = arr ? srv_queue_list(st, all, queued_cb, arr) : NQ_ENOMEM;
  return wrap(st, "queue", arr, rc);
}

static int count_cb(const srv_queued_t *q, void *arg) {
  (void)q;
  ++*(int64_t *)arg;
  return 0;
}

/* job_add: the entry as queued, and "position" (1 = next). */
static int cmd_job_add(srv_store_t *st, const nq_admin_req_t *req, int64_t now, json_t **out,
                       srv_admin_effects_t *fx, nq_proto_err_t *err) {
  nq_jobopts_t o;
  nq_jobopts_default(&o);
  o.n = req->job_n;
  o.depth = req->depth;
  o.max_depth = req->max_depth;
  o.unit_seconds = req->unit_seconds;
  if (req->quorum) o.quorum = req->quorum;
  if (req->max_results) o.max_results = req->max_results;
  o.diverse_kernels = req->diverse_kernels;
  srv_queued_t q;
  int rc = srv_queue_add(st, &o, now, &q);
  if (rc == NQ_ERANGE || rc == NQ_EINVAL)
    return refuse(err, NQ_ERR_BAD_MESSAGE, "job add: %s", srv_store_errmsg(st));
  if (rc) return store_refuse(st, rc, "queued job", err);
  nq_view_queued_t v;
  queued_view(&q, &v);
  v.has_position = 1;
  if ((rc = srv_queue_list(st, 0, count_cb, &v.position)) != 0)
    return store_refuse(st, rc, "queued job", err);
  if (!(*out = nq_view_queued_pack(&v))) return store_refuse(st, NQ_ENOMEM, "queued job", err);
  fx->queued = 1;
  return 0;
}

/* job_cancel: the entry afterwards. A started one is refused (bad_state, with how to stop its
 * job); an unknown id is not_found. */
static int cmd_job_cancel(srv_store_t *st, const nq_admin_req_t *req, int64_t now, json_t **out,
                          nq_proto_err_t *err) {
  srv_queued_t q;
  int rc = srv_queue_cancel(st, req->queue_id, now, &q);
  if (rc == NQ_ESTATE) return refuse(err, NQ_ERR_BAD_STATE, "%s", srv_store_errmsg(st));
  if (rc == NQ_ENOTFOUND)
    return refuse(err, NQ_ERR_NOT_FOUND, "no queued job %lld (nq-admin job list --all shows "
                  "them all)", (long long)req->queue_id);
  if (rc) return store_refuse(st, rc, "queued job", err);
  *out = queued_json(&q);
  return *out ? 0 : store_refuse(st, NQ_ENOMEM, "queued job", err);
}

/* job_next: the operator's word to a running server (`serving`): start the next queued job now.
 * {"next": the entry, "set_aside": the served job's id when it runs and force sets it aside, else
 * null}. The server switches after the batch commits (fx->next). Refused: in local mode (no
 * server to switch: bad_state), with nothing queued (not_found), while the served job runs
 * unless force (bad_state, with what force does). */
static int cmd_job_next(srv_store_t *st, const srv_job_t *job, int64_t serving,
                        const nq_admin_req_t *req, json_t **out, srv_admin_effects_t *fx,
                        nq_proto_err_t *err) {
  if (!serving)
    return refuse(err, NQ_ERR_BAD_STATE, "job next is the word to a running server (nq-admin "
                  "--server HOST:PORT job next); a server starts the next queued job by itself "
                  "when the job it serves is done, at start too");
  srv_queued_t q;
  int rc = srv_queue_next(st, &q);
  if (rc == NQ_ENOTFOUND)
    return refuse(err, NQ_ERR_NOT_FOUND, "no job queued (nq-admin job add N ...)");
  if (rc) return store_refuse(st, rc, "queued job", err);
  srv_job_t cur;
  if ((rc = srv_job_get(st, serving, &cur)) != 0) return store_refuse(st, rc, "job", err);
  int running = !srv_job_is_done(&cur);
  if (running && q.opts.n == cur.n)
    return refuse(err, NQ_ERR_BAD_STATE, "the next queued job (%lld) is for N=%d, the job the "
                  "server runs now", (long long)q.id, cur.n);
  if (running && !req->force)
    return refuse(err, NQ_ERR_BAD_STATE, "the job for N=%d (job %lld) is still running: wait "
                  "for it, or --force to set it aside (its leases are released; it stays in the "
                  "store and resumes when N=%d is queued again)", cur.n, (long long)cur.id,
                  cur.n);
  nq_view_job_next_t v = {.set_aside = cur.id, .has_set_aside = running};
  queued_view(&q, &v.next);
  *out = nq_view_job_next_pack(&v);
  if (!*out) return store_refuse(st, NQ_ENOMEM, "job next", err);
  fx->next = running ? 2 : 1;
  (void)job;
  return 0;
}

/* ---- sign-ups (srv_signup.h) ---- */

static int signup_view(srv_store_t *st, const srv_signup_t *su, json_t **out) {
  srv_owner_t o;
  const char *owner = NULL;
  if (su->owner_id > 0 && srv_owner_get(st, su->owner_id, &o) == 0) owner = o.name;
  nq_view_signup_t v = {su->id, su->at, su->addr, su->net, srv_signup_state_name(su->state),
                        su->client_name, su->public_name[0] ? su->public_name : NULL,
                        su->team[0] ? su->team : NULL, owner, su->decided};
  *out = nq_view_signup_pack(&v);
  return *out ? 0 : NQ_ENOMEM;
}

static int signup_cb(const srv_signup_t *su, void *arg) {
  list_ctx_t *l = arg;
  json_t *o = NULL;
  int rc = signup_view(l->st, su, &o);
  return rc ? rc : append(l->arr, o);
}

/* signups: the pending requests, oldest first (all: every one kept). */
static json_t *signups_json(srv_store_t *st, int all) {
  list_ctx_t l = {json_array(), 0, st};
  int rc = l.arr ? srv_signup_list(st, all ? -1 : SRV_SIGNUP_PENDING, 0, signup_cb, &l)
                 : NQ_ENOMEM;
  return wrap(st, "signups", l.arr, rc);
}

/* owner_approve, owner_reject: the operator's word on a pending request. An approved one is
 * completed when its client asks again (it makes the owner then, and gets the keys). */
static int cmd_signup_decide(srv_store_t *st, const nq_admin_req_t *req, int64_t now,
                             json_t **out, nq_proto_err_t *err) {
  srv_signup_state_t to =
      req->cmd == NQ_ADMIN_OWNER_APPROVE ? SRV_SIGNUP_APPROVED : SRV_SIGNUP_REJECTED;
  int rc = srv_signup_decide(st, req->request, to, now);
  if (rc == NQ_ENOTFOUND)
    return refuse(err, NQ_ERR_NOT_FOUND, "no sign-up request %lld (nq-admin owner requests)",
                  (long long)req->request);
  if (rc == NQ_ESTATE) return refuse(err, NQ_ERR_BAD_STATE, "%s", srv_store_errmsg(st));
  srv_signup_t su;
  if (rc == 0) rc = srv_signup_get(st, req->request, &su);
  if (rc == 0) rc = signup_view(st, &su, out);
  return rc ? store_refuse(st, rc, "sign-up", err) : 0;
}

/* ---- news and teams (store_community.h) ---- */

static int news_cb(const srv_news_t *n, void *arg) {
  list_ctx_t *l = arg;
  return append(l->arr, nq_view_news_item_pack(&(nq_view_news_item_t){n->id, n->at, n->text}));
}

json_t *srv_news_json(srv_store_t *st, int limit) {
  list_ctx_t l = {json_array(), 0, st};
  int rc = l.arr ? srv_news_list(st, limit, news_cb, &l) : NQ_ENOMEM;
  return wrap(st, "news", l.arr, rc);
}

/* Volunteers and teams ranked by credit: collected, then sorted (owners are few next to units;
 * the page caches what it shows). */
typedef struct rank_ctx_s {
  srv_volunteer_t *v;
  size_t n, cap;
} rank_ctx_t;

static int rank_add(const srv_volunteer_t *v, void *arg) {
  rank_ctx_t *r = arg;
  if (v->banned) return 0;
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 64;
    srv_volunteer_t *p = realloc(r->v, cap * sizeof *p);
    if (!p) return NQ_ENOMEM;
    r->v = p;
    r->cap = cap;
  }
  r->v[r->n++] = *v;
  return 0;
}

static int by_credit(const void *a, const void *b) {
  const srv_volunteer_t *x = a, *y = b;
  if (x->credit != y->credit) return x->credit > y->credit ? -1 : 1;
  return x->owner_id < y->owner_id ? -1 : x->owner_id > y->owner_id;
}

int srv_volunteers_ranked(srv_store_t *st, srv_volunteer_t **out, size_t *n) {
  rank_ctx_t r = {NULL, 0, 0};
  int rc = srv_volunteer_list(st, rank_add, &r);
  if (rc) {
    free(r.v);
    return rc;
  }
  if (r.n) qsort(r.v, r.n, sizeof *r.v, by_credit);
  *out = r.v;
  *n = r.n;
  return 0;
}

json_t *srv_volunteers_json(srv_store_t *st, int limit) {
  srv_volunteer_t *v = NULL;
  size_t n = 0;
  json_t *arr = json_array();
  int rc = arr ? srv_volunteers_ranked(st, &v, &n) : NQ_ENOMEM;
  for (size_t i = 0; rc == 0 && i < n && (limit <= 0 || (int)i < limit); i++) {
    nq_view_volunteer_t x = {(int64_t)i + 1, v[i].display, v[i].named,
                             v[i].team[0] ? v[i].team : NULL, v[i].machines, v[i].verified,
                             v[i].credit};
    rc = append(arr, nq_view_volunteer_pack(&x));
  }
  free(v);
  return wrap(st, "volunteers", arr, rc);
}

typedef struct team_acc_s {
  srv_team_t t;
  nq_u128 credit;
} team_acc_t;

static int team_collect(const srv_team_t *t, void *arg) {
  rank_ctx_t *r = arg; /* reused as a plain vector of team_acc_t through v/cap */
  team_acc_t **tv = (team_acc_t **)&r->v;
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 16;
    team_acc_t *p = realloc(*tv, cap * sizeof *p);
    if (!p) return NQ_ENOMEM;
    *tv = p;
    r->cap = cap;
  }
  (*tv)[r->n++] = (team_acc_t){*t, 0};
  return 0;
}

static int team_by_credit(const void *a, const void *b) {
  const team_acc_t *x = a, *y = b;
  if (x->credit != y->credit) return x->credit > y->credit ? -1 : 1;
  return strcmp(x->t.name, y->t.name);
}

json_t *srv_teams_json(srv_store_t *st) {
  rank_ctx_t r = {NULL, 0, 0};
  srv_volunteer_t *v = NULL;
  size_t nv = 0;
  json_t *arr = json_array();
  int rc = arr ? srv_team_list(st, team_collect, &r) : NQ_ENOMEM;
  if (rc == 0) rc = srv_volunteers_ranked(st, &v, &nv);
  team_acc_t *t = (team_acc_t *)r.v;
  for (size_t i = 0; rc == 0 && i < nv; i++)
    for (size_t k = 0; k < r.n; k++)
      if (t[k].t.id == v[i].team_id) t[k].credit += v[i].credit;
  if (rc == 0 && r.n) qsort(t, r.n, sizeof *t, team_by_credit);
  for (size_t k = 0; rc == 0 && k < r.n; k++) {
    nq_view_team_t x = {(int64_t)k + 1, t[k].t.name, t[k].t.owners, t[k].credit};
    rc = append(arr, nq_view_team_pack(&x));
  }
  free(v);
  free(r.v);
  return wrap(st, "teams", arr, rc);
}

static int cmd_news(srv_store_t *st, const nq_admin_req_t *req, int64_t now, json_t **out,
                    srv_admin_effects_t *fx, nq_proto_err_t *err) {
  srv_news_t n;
  int rc;
  if (req->cmd == NQ_ADMIN_NEWS_ADD) {
    if ((rc = srv_news_add(st, req->text, now, &n)) == NQ_EINVAL)
      return refuse(err, NQ_ERR_BAD_MESSAGE, "%s", srv_store_errmsg(st));
    if (rc == 0 && !(*out = nq_view_news_item_pack(&(nq_view_news_item_t){n.id, n.at, n.text})))
      rc = NQ_ENOMEM;
    if (rc == 0) fx->news = 1;
    return rc ? store_refuse(st, rc, "news", err) : 0;
  }
  rc = srv_news_remove(st, req->request);
  if (rc == NQ_ENOTFOUND)
    return refuse(err, NQ_ERR_NOT_FOUND, "no news item %lld (nq-admin news list)",
                  (long long)req->request);
  if (rc == 0 && !(*out = srv_news_json(st, 0))) rc = NQ_EIO;
  return rc ? store_refuse(st, rc, "news", err) : 0;
}

static int cmd_team(srv_store_t *st, const nq_admin_req_t *req, int64_t now, json_t **out,
                    nq_proto_err_t *err) {
  int rc = req->cmd == NQ_ADMIN_TEAM_ADD      ? srv_team_add(st, req->name, now, NULL)
           : req->cmd == NQ_ADMIN_TEAM_RENAME ? srv_team_rename(st, req->name, req->to)
                                              : srv_team_remove(st, req->name);
  if (rc == NQ_EEXIST)
    return refuse(err, NQ_ERR_EXISTS, "a team named %s exists",
                  req->cmd == NQ_ADMIN_TEAM_RENAME ? req->to : req->name);
  if (rc == NQ_ENOTFOUND) return refuse(err, NQ_ERR_NOT_FOUND, "no team %s", req->name);
  if (rc == NQ_EINVAL) return refuse(err, NQ_ERR_BAD_MESSAGE, "%s", srv_store_errmsg(st));
  if (rc == 0 && !(*out = srv_teams_json(st))) rc = NQ_EIO;
  return rc ? store_refuse(st, rc, "team", err) : 0;
}

int srv_admin_call(srv_store_t *st, const srv_job_t *job, int64_t serving,
                   const srv_sched_config_t *cfg, const nq_admin_req_t *req, int64_t now,
                   json_t **data, srv_admin_effects_t *fx, nq_proto_err_t *err) {
  *data = NULL;
  memset(fx, 0, sizeof *fx);
  /* A command may change what is stalled (a ban, an owner, a retry): the next view computes. */
  if (req->cmd != NQ_ADMIN_STATUS) srv_stalls_forget(st);
  int state;
  switch (req->cmd) {
  case NQ_ADMIN_STATUS: *data = srv_status_json(st, job, cfg, now); break;
  case NQ_ADMIN_CLIENTS: *data = srv_clients_json(st, now); break;
  case NQ_ADMIN_JOBS: *data = srv_jobs_json(st); break;
  case NQ_ADMIN_UNITS:
    /* "all" is every state (-1 to the store); anything else must name one. */
    state = strcmp(req->state, "all") == 0 ? -1 : srv_unit_state_parse(req->state);
    if (state < 0 && strcmp(req->state, "all") != 0)
      return refuse(err, NQ_ERR_BAD_MESSAGE, "units: unknown state");
    *data = srv_units_json(st, job->id, state, req->limit, now);
    break;
  case NQ_ADMIN_CLIENT_ADD: return cmd_client_add(st, req->name, req->owner, now, data, err);
  case NQ_ADMIN_CLIENT_BAN: return cmd_client_ban(st, job, cfg, req->name, now, data, fx, err);
  case NQ_ADMIN_CLIENT_UNBAN: return cmd_client_unban(st, req->name, data, err);
  case NQ_ADMIN_OWNERS: *data = srv_owners_json(st, now); break;
  case NQ_ADMIN_OWNER_ADD: return cmd_owner_add(st, req->name, now, data, err);
  case NQ_ADMIN_OWNER_BAN: return cmd_owner_ban(st, job, cfg, req->name, now, data, fx, err);
  case NQ_ADMIN_OWNER_TRUST:
  case NQ_ADMIN_OWNER_UNTRUST: return cmd_owner_trust(st, job, cfg, req, now, data, err);
  case NQ_ADMIN_OWNER_UNBAN: return cmd_owner_unban(st, req->name, data, err);
  case NQ_ADMIN_OWNER_REKEY: return cmd_owner_rekey(st, req->name, data, err);
  case NQ_ADMIN_UNIT_REOPEN: return cmd_unit_reopen(st, job, cfg, req, now, data, fx, err);
  case NQ_ADMIN_UNIT_RETRY: return cmd_unit_retry(st, job, cfg, req, now, data, fx, err);
  case NQ_ADMIN_JOB_ARCHIVE:
  case NQ_ADMIN_JOB_DELETE: return cmd_job(st, serving, req, now, data, err);
  case NQ_ADMIN_JOB_ADD: return cmd_job_add(st, req, now, data, fx, err);
  case NQ_ADMIN_JOB_LIST: *data = queue_json(st, req->all); break;
  case NQ_ADMIN_JOB_CANCEL: return cmd_job_cancel(st, req, now, data, err);
  case NQ_ADMIN_JOB_NEXT: return cmd_job_next(st, job, serving, req, data, fx, err);
  case NQ_ADMIN_SIGNUPS: *data = signups_json(st, req->all); break;
  case NQ_ADMIN_OWNER_APPROVE:
  case NQ_ADMIN_OWNER_REJECT: return cmd_signup_decide(st, req, now, data, err);
  case NQ_ADMIN_NEWS_LIST: *data = srv_news_json(st, 0); break;
  case NQ_ADMIN_NEWS_ADD:
  case NQ_ADMIN_NEWS_REMOVE: return cmd_news(st, req, now, data, fx, err);
  case NQ_ADMIN_TEAMS: *data = srv_teams_json(st); break;
  case NQ_ADMIN_TEAM_ADD:
  case NQ_ADMIN_TEAM_RENAME:
  case NQ_ADMIN_TEAM_REMOVE: return cmd_team(st, req, now, data, err);
  default: return refuse(err, NQ_ERR_BAD_MESSAGE, "admin: unknown cmd");
  }
  return *data ? 0 : store_refuse(st, NQ_EIO, "store", err);
}
