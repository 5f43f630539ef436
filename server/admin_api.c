/* nq-server: the admin API -- the operators' commands and the JSON views of the store they answer
 * with (see admin_api.h). */
#include "admin_api.h"
#include "store_audit.h"
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

/* Set key to a new value, remembering the first failure (allocation) in *ok. */
static void put(json_t *obj, const char *key, json_t *v, int *ok) {
  if (!v || json_object_set_new(obj, key, v) != 0) *ok = 0;
}

json_t *srv_json_finite(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

json_t *srv_json_seconds(double x) {
  if (isnan(x)) return json_null();
  if (x < 0) x = 0;
  if (x > SRV_SECONDS_MAX) x = SRV_SECONDS_MAX;
  return json_integer((json_int_t)(x + 0.5));
}

static json_t *u128_json(nq_u128 v) {
  char buf[40];
  return json_string(nq_u128_str(v, buf));
}

/* {"total","unique","c2","c4","c8","nodes"} of a totals record, all decimal strings. */
static json_t *totals_json(const nq_totals_t *t) {
  json_t *o = json_object();
  int ok = o != NULL;
  if (o) {
    put(o, "total", u128_json(nq_totals_total(t)), &ok);
    put(o, "unique", u128_json(nq_totals_unique(t)), &ok);
    put(o, "c2", u128_json(t->c2), &ok);
    put(o, "c4", u128_json(t->c4), &ok);
    put(o, "c8", u128_json(t->c8), &ok);
    put(o, "nodes", u128_json(t->nodes), &ok);
  }
  if (!ok) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* The final totals, and with them the job's node count as nq-solve counts N (the units' nodes
 * plus the plan's split nodes, docs/planning.md), when the split nodes are known. */
static json_t *final_json(const srv_job_t *job) {
  json_t *f = totals_json(&job->totals);
  int ok = f != NULL;
  if (f && job->has_internal) put(f, "solve_nodes", u128_json(job->totals.nodes + job->internal), &ok);
  if (!ok) {
    json_decref(f);
    return NULL;
  }
  return f;
}

json_t *srv_job_json(const srv_job_t *job) {
  json_t *o = json_object();
  int ok = o != NULL;
  if (!o) return NULL;
  put(o, "id", json_integer(job->id), &ok);
  put(o, "n", json_integer(job->n), &ok);
  put(o, "depth", json_integer(job->depth), &ok);
  put(o, "min_depth", json_integer(job->min_depth ? job->min_depth : job->depth), &ok);
  put(o, "unit_seconds", json_real(job->unit_seconds), &ok);
  put(o, "quorum", json_integer(job->quorum), &ok);
  put(o, "max_results", json_integer(job->max_results), &ok);
  put(o, "state", json_string(srv_job_state_name(job->state)), &ok);
  put(o, "created", json_integer(job->created), &ok);
  put(o, "finished", json_integer(job->finished), &ok);
  put(o, "archived", json_integer(job->archived), &ok);
  put(o, "units", json_integer(job->units), &ok);
  put(o, "internal", job->has_internal ? u128_json(job->internal) : json_null(), &ok);
  put(o, "est_nodes", job->est_nodes > 0 ? json_real(job->est_nodes) : json_null(), &ok);
  put(o, "est_se", job->est_nodes > 0 ? json_real(job->est_se) : json_null(), &ok);
  put(o, "seed", json_integer((json_int_t)job->seed), &ok);
  put(o, "final", srv_job_is_done(job) ? final_json(job) : json_null(), &ok);
  if (!ok) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* The answer checked against the published table: sets "known" (the published values or null),
 * "match" (true/false, or null while running or beyond the table) and "match_text" (one line). */
static void put_match(json_t *o, const srv_job_t *job, int *ok) {
  const nq_known_t *k = nq_known(job->n);
  char line[200];
  json_t *known = json_null();
  json_t *match = json_null();
  if (k) {
    known = json_pack("{s:s, s:s, s:s, s:s, s:s}", "total", k->total, "unique", k->unique, "c2",
                      k->c2, "c4", k->c4, "c8", k->c8);
  }
  if (!k) {
    snprintf(line, sizeof line, "N=%d is beyond the published table; no reference to compare",
             job->n);
  } else if (!srv_job_is_done(job)) {
    snprintf(line, sizeof line, "not done yet; published TOTAL for N=%d is %s", job->n, k->total);
  } else {
    char t[40], u[40], c2[40], c4[40], c8[40];
    nq_u128_str(nq_totals_total(&job->totals), t);
    nq_u128_str(nq_totals_unique(&job->totals), u);
    nq_u128_str(job->totals.c2, c2);
    nq_u128_str(job->totals.c4, c4);
    nq_u128_str(job->totals.c8, c8);
    int same = !strcmp(t, k->total) && !strcmp(u, k->unique) && !strcmp(c2, k->c2) &&
               !strcmp(c4, k->c4) && !strcmp(c8, k->c8);
    match = json_boolean(same);
    snprintf(line, sizeof line,
             same ? "MATCH: TOTAL, UNIQUE and COUNT2/4/8 equal the published values for N=%d"
                  : "MISMATCH: the answer differs from the published values for N=%d",
             job->n);
  }
  put(o, "known", known, ok);
  put(o, "match", match, ok);
  put(o, "match_text", json_string(line), ok);
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
static json_t *progress_json(const srv_stats_t *s, int64_t stalled, int64_t now,
                             json_t **rate_out) {
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
  json_t *eta = json_null();
  if (!done) {
    /* Replicas still to run, less the live leases' reported shares (progress, 0..1 each). */
    int64_t moving = left - (stalled < left ? stalled : left);
    double work = (double)moving * (double)job->quorum - s->leased_progress;
    if (work < 0) work = 0;
    double per_unit = left > 0 ? remaining / (double)left : 0.0;
    if (left > 0 && moving == 0) eta = json_null();
    else if (per_unit > 0 && nps > 0) eta = srv_json_seconds(work * per_unit / nps);
    else if (rps > 0) eta = srv_json_seconds(work / rps);
  } else {
    eta = json_integer(0);
  }
  int64_t elapsed = (done ? job->finished : now) - job->created;
  *rate_out = json_pack("{s:I, s:I, s:f, s:f, s:o, s:I}", "window", (json_int_t)window,
                        "results", (json_int_t)s->recent_results, "results_per_s", rps,
                        "nodes_per_s", nps, "eta_s", eta, "elapsed_s",
                        (json_int_t)(elapsed < 0 ? 0 : elapsed));
  char vn[40], en[40], ea[40], ev[40];
  nq_u128_str(s->verified.nodes, vn);
  snprintf(en, sizeof en, "%.0f", est_total);
  json_t *o = json_pack("{s:f, s:f, s:s, s:s, s:s, s:I, s:f}", "percent", percent,
                        "units_percent",
                        total > 0 ? 100.0 * (double)verified / (double)total : 0.0, "method",
                        method, "verified_nodes", vn, "estimated_nodes", en, "leased",
                        (json_int_t)s->leased, "leased_done", s->leased_progress);
  int ok = o != NULL;
  if (o) {
    put(o, "units_estimate", by_est ? json_string(nq_u128_str(s->est_total, ea)) : json_null(),
        &ok);
    put(o, "verified_estimate",
        by_est ? json_string(nq_u128_str(s->est_verified, ev)) : json_null(), &ok);
    put(o, "calibration", by_est && e_ver > 0 ? json_real(calib) : json_null(), &ok);
  }
  if (!ok) {
    json_decref(o);
    return NULL;
  }
  return o;
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
static json_t *backup_json(srv_store_t *st) {
  char file[900], why[900];
  int64_t good = backup_meta(st, SRV_META_BACKUP_OK, file, sizeof file);
  int64_t bad = backup_meta(st, SRV_META_BACKUP_ERROR, why, sizeof why);
  int failing = bad > 0 && bad >= good;
  return json_pack("{s:o, s:o, s:o, s:o}", "last_good", good ? json_integer(good) : json_null(),
                   "file", good ? json_string(file) : json_null(), "failed_at",
                   failing ? json_integer(bad) : json_null(), "error",
                   failing ? json_string(why) : json_null());
}

/* Kernel-diverse verification (issue 30): the job's rule and how many verified units rest on two
 * kernels or more. NULL on a store failure. */
static json_t *srv_kernels_json(srv_store_t *st, int64_t job_id) {
  int k = 0;
  int64_t two = 0;
  if (srv_job_kernels_get(st, job_id, &k) != 0 || srv_job_units_two_kernels(st, job_id, &two) != 0)
    return NULL;
  return json_pack("{s:i, s:I}", "diverse", k, "units_two_kernels", (json_int_t)two);
}

/* The reference audits of the job (nq-admin audit): how many, how many disagreed, the newest.
 * NULL on a store failure. */
static json_t *srv_audits_json(srv_store_t *st, int64_t job_id) {
  int64_t count = 0, bad = 0;
  nq_admin_audit_t a;
  if (srv_audit_summary(st, job_id, &count, &bad, &a) != 0) return NULL;
  json_t *last = count == 0 ? json_null()
                 : json_pack("{s:I, s:i, s:I, s:i, s:i, s:f, s:s, s:s}", "at", (json_int_t)a.at,
                             "sample", a.sample, "seed", (json_int_t)a.seed, "checked", a.checked,
                             "mismatched", a.mismatched, "seconds", a.seconds, "outcome",
                             a.outcome, "detail", a.detail);
  return json_pack("{s:I, s:I, s:o}", "count", (json_int_t)count, "disagreed", (json_int_t)bad,
                   "last", last);
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
static json_t *stalled_json(const srv_stalls_t *x) {
  char msg[512];
  json_t *by = json_object();
  int ok = by != NULL;
  for (int i = 0; i < SRV_STALL_NREASONS && by; i++)
    put(by, srv_stall_reason_name((srv_stall_reason_t)i), json_integer(x->by[i]), &ok);
  stall_message(x, msg, sizeof msg);
  json_t *o = ok ? json_pack("{s:I, s:o, s:I, s:I, s:i, s:s, s:i, s:I, s:o}", "units",
                             (json_int_t)x->units, "by", by, "keys", (json_int_t)x->keys,
                             "keys_online", (json_int_t)x->keys_online, "quorum", x->quorum,
                             "distinct", srv_distinct_name(x->distinct), "window",
                             SRV_STATUS_ACTIVE_WINDOW, "at", (json_int_t)x->at, "message",
                             msg[0] ? json_string(msg) : json_null())
                 : NULL;
  if (!o && !ok) json_decref(by);
  return o;
}

json_t *srv_status_json(srv_store_t *st, const srv_job_t *job_in, const srv_sched_config_t *cfg,
                        int64_t now) {
  srv_stats_t s;
  srv_stalls_t x;
  srv_distinct_t mode = cfg ? cfg->quorum_distinct : stall_mode(st);
  if (srv_store_stats(st, job_in->id, now, SRV_STATUS_ACTIVE_WINDOW, SRV_STATUS_RATE_WINDOW, &s) ||
      srv_stalls_get(st, job_in->id, mode, now, SRV_STATUS_ACTIVE_WINDOW, &x))
    return NULL;
  json_t *o = json_object();
  if (!o) return NULL;
  int ok = 1;
  const srv_job_t *job = &s.job; /* fresh from the store, not the caller's possibly stale copy */
  put(o, "now", json_integer(now), &ok);
  put(o, "done", json_boolean(srv_job_is_done(job)), &ok);
  put(o, "job", srv_job_json(job), &ok);
  json_t *u = json_object();
  put(o, "units", u, &ok);
  if (u) {
    put(u, "total", json_integer(job->units), &ok);
    for (int i = 0; i < SRV_UNIT_NSTATES; i++)
      put(u, srv_unit_state_name((srv_unit_state_t)i), json_integer(s.units[i]), &ok);
    put(u, "blocked", json_integer(s.blocked), &ok);
    put(u, "spot_checks", json_integer(s.spot_pending), &ok);
    put(u, "contested", json_integer(s.contested), &ok);
  }
  /* What the answer rests on (issue 30): trusted owners settle disagreements, or votes alone. */
  put(o, "trust", json_pack("{s:I, s:I, s:s}", "trusted_owners", (json_int_t)s.trusted_owners,
                            "trusted_active", (json_int_t)s.trusted_active, "rests_on",
                            s.trusted_owners > 0 ? "trusted" : "votes"), &ok);
  put(o, "results", json_integer(s.results), &ok);
  json_t *rate = NULL;
  put(o, "progress", progress_json(&s, x.units, now, &rate), &ok);
  put(o, "rate", rate, &ok);
  put(o, "stalled", stalled_json(&x), &ok);
  put(o, "verified", totals_json(&s.verified), &ok);
  put(o, "final", srv_job_is_done(job) ? final_json(job) : json_null(), &ok);
  put_match(o, job, &ok);
  put(o, "clients", json_pack("{s:I, s:I, s:I, s:I}", "active", (json_int_t)s.clients_active,
                              "known", (json_int_t)s.clients_known, "banned",
                              (json_int_t)s.clients_banned, "suspect",
                              (json_int_t)s.clients_suspect), &ok);
  put(o, "backup", backup_json(st), &ok);
  put(o, "kernels", srv_kernels_json(st, job->id), &ok);
  put(o, "audits", srv_audits_json(st, job->id), &ok);
  json_t *d = ok ? srv_units_json(st, job->id, SRV_UNIT_DISPUTED, SRV_STATUS_DISPUTED_MAX, now)
                 : NULL;
  if (d) {
    put(o, "disputed", json_incref(json_object_get(d, "units")), &ok);
    json_decref(d);
  } else {
    ok = 0;
  }
  if (!ok) {
    if (d) srv_store_failf(st, NQ_ENOMEM, "the status view: out of memory");
    json_decref(o);
    return NULL;
  }
  return o;
}

/* ---- lists ---------------------------------------------------------------------------------- */

typedef struct {
  json_t *arr;
  int64_t now;
  srv_store_t *st;
} list_ctx_t;

static json_t *wrap(srv_store_t *st, const char *key, json_t *arr, int rc);

static int client_cb(const srv_client_t *c, void *arg) {
  list_ctx_t *l = arg;
  int active = !c->banned && c->last_seen >= l->now - SRV_STATUS_ACTIVE_WINDOW;
  srv_owner_t own;
  int rc = srv_owner_get(l->st, c->owner_id, &own);
  if (rc) return rc;
  json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:b, s:I, s:I, s:b, s:I, s:s, s:b, s:s, s:s?, s:I, "
                        "s:I, s:b}",
                        "name", c->name, "id", (json_int_t)c->id, "created",
                        (json_int_t)c->created, "last_seen", (json_int_t)c->last_seen, "active",
                        active, "valid", (json_int_t)c->valid, "invalid", (json_int_t)c->invalid,
                        "banned", c->banned, "outstanding", (json_int_t)c->outstanding, "owner",
                        own.name, "suspect", c->suspect, "network", c->net, "software",
                        c->software[0] ? c->software : NULL, "protocol", (json_int_t)c->protocol,
                        "lapses", (json_int_t)c->lapses, "hoarding",
                        srv_sched_lapse_factor(c->lapses) > 1);
  if (!o) return NQ_ENOMEM;
  char backends[512];
  rc = srv_client_backends(l->st, c->id, backends, sizeof backends);
  if (rc == 0 && json_object_set_new(o, "backends", json_string(backends)) != 0) rc = NQ_ENOMEM;
  if (rc) {
    json_decref(o);
    return rc;
  }
  /* Credit (schema 009): the verified nodes its agreeing results earned, and its public name. */
  srv_credit_t cr;
  int ok = 1;
  rc = srv_credit_get(l->st, c->id, &cr);
  if (rc != 0) {
    json_decref(o);
    return rc;
  }
  put(o, "credit", u128_json(cr.credit), &ok);
  put(o, "public_name", cr.named ? json_string(cr.display) : json_null(), &ok);
  put(o, "display_name", json_string(cr.display), &ok);
  return ok && json_array_append_new(l->arr, o) == 0 ? 0 : (json_decref(o), NQ_ENOMEM);
}

static int owner_cb(const srv_owner_t *w, void *arg) {
  list_ctx_t *l = arg;
  nq_u128 credit;
  int rc = srv_owner_credit(l->st, w->id, &credit), ok = 1;
  if (rc) return rc;
  json_t *o = json_pack("{s:s, s:I, s:I, s:b, s:b, s:I, s:b}", "name", w->name, "id",
                        (json_int_t)w->id, "created", (json_int_t)w->created, "banned",
                        w->banned, "has_key", w->has_key, "clients", (json_int_t)w->clients,
                        "trusted", w->trusted);
  if (!o) return NQ_ENOMEM;
  put(o, "credit", u128_json(credit), &ok);
  return ok && json_array_append_new(l->arr, o) == 0 ? 0 : (json_decref(o), NQ_ENOMEM);
}

json_t *srv_owners_json(srv_store_t *st, int64_t now) {
  list_ctx_t l = {json_array(), now, st};
  int rc = l.arr ? srv_owner_list(st, owner_cb, &l) : NQ_ENOMEM;
  return wrap(st, "owners", l.arr, rc);
}

/* Wrap the array of a finished walk as {key: arr}; consumes arr. */
/* {key: arr}, or NULL with the store's message saying why (a builder's own failure is an
 * allocation: the store's last message would be stale). */
static json_t *wrap(srv_store_t *st, const char *key, json_t *arr, int rc) {
  if (rc == NQ_ENOMEM || !arr) srv_store_failf(st, NQ_ENOMEM, "the %s view: out of memory", key);
  if (rc != 0 || !arr) {
    json_decref(arr);
    return NULL;
  }
  return json_pack("{s:o}", key, arr);
}

json_t *srv_clients_json(srv_store_t *st, int64_t now) {
  list_ctx_t l = {json_array(), now, st};
  int rc = l.arr ? srv_client_list(st, client_cb, &l) : NQ_ENOMEM;
  return wrap(st, "clients", l.arr, rc);
}

static int job_cb(const srv_job_t *job, void *arg) {
  list_ctx_t *l = arg;
  json_t *o = srv_job_json(job);
  return o && json_array_append_new(l->arr, o) == 0 ? 0 : NQ_ENOMEM;
}

json_t *srv_jobs_json(srv_store_t *st) {
  list_ctx_t l = {json_array(), 0, st};
  int rc = l.arr ? srv_job_list(st, job_cb, &l) : NQ_ENOMEM;
  return wrap(st, "jobs", l.arr, rc);
}

static int asg_cb(const srv_asg_info_t *a, void *arg) {
  list_ctx_t *l = arg;
  if (a->reported_at == 0) return 0; /* only results take part in the vote */
  srv_client_t c;
  const char *who = srv_client_get(l->st, a->client_id, &c) == 0 ? c.name : "?";
  json_t *o = json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:s?, s:I}", "assignment",
                        (json_int_t)a->id, "client", who, "state", srv_asg_state_name(a->state),
                        "c2", (json_int_t)a->counts.c2, "c4", (json_int_t)a->counts.c4, "c8",
                        (json_int_t)a->counts.c8, "nodes", (json_int_t)a->counts.nodes, "solver",
                        a->solver, "backend", a->backend[0] ? a->backend : NULL, "reported_at",
                        (json_int_t)a->reported_at);
  int ok = o != NULL;
  if (o) put(o, "votes", json_boolean(!a->novote), &ok);
  if (o) put(o, "voided", json_boolean(a->voided), &ok);
  return ok && json_array_append_new(l->arr, o) == 0 ? 0 : (json_decref(o), NQ_ENOMEM);
}

/* A live lease and its last progress report: who runs the unit, how far it is, how fast, and
 * when it should end. The rate is the client's own (fraction per second of its solve time, every
 * run of a resumed unit together), so a client that was off for a while does not look slow; the
 * ETA counts from now, less the time since the report. */
static int running_cb(const srv_asg_info_t *a, void *arg) {
  list_ctx_t *l = arg;
  if (a->state != SRV_ASG_LEASED) return 0;
  srv_client_t c;
  const char *who = srv_client_get(l->st, a->client_id, &c) == 0 ? c.name : "?";
  json_t *o = json_pack("{s:I, s:s, s:I, s:I}", "assignment", (json_int_t)a->id, "client", who,
                        "issued", (json_int_t)a->issued, "deadline", (json_int_t)a->deadline);
  if (!o) return NQ_ENOMEM;
  int ok = 1;
  double f = a->progress, secs = a->progress_seconds;
  /* Every number here comes from one client's report: a rate or an ETA it makes absurd (nodes
   * 2^63-1 in 5e-324 s, a fraction of 1e-300) is shown as null or clamped, never inf, never an
   * undefined conversion to int64, never a failed view. */
  json_t *eta = json_null(), *nps = json_null();
  if (f > 0 && secs > 0)
    eta = srv_json_seconds(secs * (1 - f) / f - (double)(l->now - a->progress_at));
  if (secs > 0 && a->progress_nodes > 0) nps = srv_json_finite((double)a->progress_nodes / secs);
  put(o, "percent", f >= 0 ? srv_json_finite(100.0 * f) : json_null(), &ok);
  put(o, "seconds", secs >= 0 ? srv_json_finite(secs) : json_null(), &ok);
  put(o, "nodes", a->progress_at ? json_integer((json_int_t)a->progress_nodes) : json_null(), &ok);
  put(o, "nodes_per_s", nps, &ok);
  put(o, "eta_s", eta, &ok);
  put(o, "progress_at", json_integer(a->progress_at), &ok);
  if (!ok || json_array_append_new(l->arr, o) != 0) return NQ_ENOMEM;
  return 0;
}

static int unit_cb(const srv_unit_info_t *u, void *arg) {
  list_ctx_t *l = arg;
  json_t *o = json_pack("{s:I, s:I, s:s, s:s, s:i, s:i}", "id", (json_int_t)u->id, "idx",
                        (json_int_t)u->idx, "unit", u->text, "state",
                        srv_unit_state_name(u->state), "live", u->live, "results", u->results);
  if (!o) return NQ_ENOMEM;
  /* Issue 30: contested (waiting for a trusted result), or what settled it. */
  int rc = json_object_set_new(o, "contest", json_string(srv_contest_name(u->contest))) ? NQ_ENOMEM
                                                                                        : 0;
  if (u->state == SRV_UNIT_VERIFIED) {
    json_t *c = json_pack("{s:I, s:I, s:I, s:I, s:I}", "c2", (json_int_t)u->counts.c2, "c4",
                          (json_int_t)u->counts.c4, "c8", (json_int_t)u->counts.c8, "nodes",
                          (json_int_t)u->counts.nodes, "verified_at",
                          (json_int_t)u->verified_at);
    if (!c || json_object_update(o, c) != 0) rc = NQ_ENOMEM;
    json_decref(c);
  }
  /* The results that voted, with the backend that computed each: a verified unit's evidence,
   * and what a disputed or awaiting unit has so far (voided ones included: `voided`). */
  if (rc == 0 && (u->state == SRV_UNIT_VERIFIED || u->state == SRV_UNIT_DISPUTED ||
                  u->state == SRV_UNIT_AWAITING)) {
    list_ctx_t r = {json_array(), l->now, l->st};
    rc = r.arr ? srv_asg_list_unit(l->st, u->id, asg_cb, &r) : NQ_ENOMEM;
    if (rc == 0 && json_object_set_new(o, "replicas", r.arr) != 0) rc = NQ_ENOMEM;
    if (rc != 0) json_decref(r.arr);
  }
  if (rc == 0 && u->live > 0) {
    list_ctx_t r = {json_array(), l->now, l->st};
    rc = r.arr ? srv_asg_list_unit(l->st, u->id, running_cb, &r) : NQ_ENOMEM;
    if (rc == 0 && json_object_set_new(o, "running", r.arr) != 0) rc = NQ_ENOMEM;
    if (rc != 0) json_decref(r.arr);
  }
  if (rc == 0 && json_array_append_new(l->arr, o) != 0) return NQ_ENOMEM;
  if (rc != 0) json_decref(o);
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
  if (rc == 0 && !(*out = json_pack("{s:s, s:s, s:s}", "name", c.name, "owner", o.name, "token",
                                    token)))
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
  if (rc == 0 && !(*out = json_pack("{s:s, s:b, s:I, s:I}", "name", c.name, "banned", 1,
                                    "released", (json_int_t)(c.banned ? 0 : c.outstanding),
                                    "reopened", (json_int_t)reopened)))
    rc = NQ_ENOMEM;
  return rc ? store_refuse(st, rc, "client", err) : 0;
}

/* client_unban: {"name", "banned": false}; the suspicion is lifted too. */
static int cmd_client_unban(srv_store_t *st, const char *name, json_t **out,
                            nq_proto_err_t *err) {
  srv_client_t c;
  int rc = srv_client_find_name(st, name, &c);
  if (rc == 0) rc = srv_client_unban(st, c.id);
  if (rc == 0 && !(*out = json_pack("{s:s, s:b, s:b}", "name", c.name, "banned", 0, "suspect", 0)))
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
  if (rc == 0 && !(*out = json_pack("{s:s, s:I, s:s}", "name", o.name, "id", (json_int_t)o.id,
                                    "enrol_key", key)))
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
  if (rc == 0 && !(*out = json_pack("{s:s, s:b, s:i}", "name", o.name, "banned", 0,
                                    "clients_banned", banned)))
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
  if (rc == 0 && !(*out = json_pack("{s:s, s:I, s:s}", "name", o.name, "id", (json_int_t)o.id,
                                    "enrol_key", key)))
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
  if (rc == 0 && !(*out = json_pack("{s:s, s:b, s:I, s:I}", "name", o.name, "banned", 1,
                                    "clients", (json_int_t)o.clients, "reopened",
                                    (json_int_t)reopened)))
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
  if (rc == 0 && !(*out = json_pack("{s:s, s:b, s:I, s:i}", "name", o.name, "trusted", trust,
                                    "trusted_owners", (json_int_t)owners, "recounted",
                                    recounted)))
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

/* One unit as `units` shows it, with the members of `extra` (consumed) added. */
static int unit_reply(srv_store_t *st, const srv_unit_info_t *u, int64_t now, json_t *extra,
                      json_t **out, nq_proto_err_t *err) {
  list_ctx_t l = {json_array(), now, st};
  int rc = l.arr ? unit_cb(u, &l) : NQ_ENOMEM;
  json_t *o = rc == 0 ? json_incref(json_array_get(l.arr, 0)) : NULL;
  json_decref(l.arr);
  if (!o || !extra || json_object_update(o, extra) != 0) {
    json_decref(o);
    json_decref(extra);
    return store_refuse(st, NQ_ENOMEM, "unit", err);
  }
  json_decref(extra);
  *out = o;
  return 0;
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
  return unit_reply(st, &u, now, json_pack("{s:b}", "job_reopened", fx->job_reopened), out, err);
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
                             const int64_t *ids, int n, int extra, int64_t now, json_t *arr,
                             int64_t *restored, int *verified, srv_admin_effects_t *fx,
                             nq_proto_err_t *err) {
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
    if (rc == 0 && json_array_append_new(arr, json_integer(ids[i])) != 0) rc = NQ_ENOMEM;
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
  json_t *arr = json_array();
  if (!arr) rc = NQ_ENOMEM;
  if (rc == 0) rc = srv_units_disputed(st, job->id, client_id, &ids, &n);
  for (int i = 0; i < n && rc == 0; i++) {
    rc = srv_unit_retry(st, ids[i], extra, now, NULL);
    if (rc == 0 && json_array_append_new(arr, json_integer(ids[i])) != 0) rc = NQ_ENOMEM;
  }
  free(ids);
  if (rc) {
    free(waiting);
    json_decref(arr);
    return store_refuse(st, rc, "unit", err);
  }
  int verified = 0;
  int64_t restored = 0;
  rc = retry_awaiting_of(st, job, cfg, waiting, na, extra, now, arr, &restored, &verified, fx,
                         err);
  free(waiting);
  if (rc) {
    json_decref(arr);
    return rc;
  }
  if (!(*out = json_pack("{s:i, s:I, s:o, s:i, s:I, s:i, s:b}", "retried", n + na, "added",
                         (json_int_t)extra, "units", arr, "awaiting", na, "restored",
                         (json_int_t)restored, "verified", verified, "job_done", fx->job_done)))
    return store_refuse(st, NQ_ENOMEM, "unit", err);
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
  return unit_reply(st, &u, now,
                    json_pack("{s:i, s:I, s:i, s:I, s:b}", "extra_results", u.extra_results,
                              "max_results", (json_int_t)job->max_results + u.extra_results,
                              "added", extra, "restored", (json_int_t)restored, "job_done",
                              info.job_done),
                    out, err);
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
  *out = json_pack("{s:I, s:i, s:s, s:I, s:I, s:b}", "id", (json_int_t)p.job.id, "n", p.job.n,
                   "state", del ? "deleted" : "archived", "units", (json_int_t)p.job.units,
                   "released", (json_int_t)leases, "deleted", del);
  return *out ? 0 : store_refuse(st, NQ_ENOMEM, "job", err);
}

/* ---- the job queue (issue 36) --------------------------------------------------------------- */

/* One queue entry: {"id", "n", "depth", "unit_seconds", "max_depth", "quorum", "max_results",
 * "diverse_kernels" (-1: N's default), "state" (queued/started/cancelled/failed), "added",
 * "changed", "job_id" (started: its job, else null), "error" (failed: why, else null)}. */
static json_t *queued_json(const srv_queued_t *q) {
  return json_pack("{s:I, s:i, s:i, s:f, s:i, s:i, s:i, s:i, s:s, s:I, s:I, s:o, s:o}", "id",
                   (json_int_t)q->id, "n", q->opts.n, "depth", q->opts.depth, "unit_seconds",
                   q->opts.unit_seconds, "max_depth", q->opts.max_depth, "quorum",
                   q->opts.quorum, "max_results", q->opts.max_results, "diverse_kernels",
                   q->opts.diverse_kernels, "state",
                   srv_queue_state_name(q->state), "added", (json_int_t)q->added, "changed",
                   (json_int_t)q->changed, "job_id",
                   q->job_id ? json_integer(q->job_id) : json_null(), "error",
                   q->error[0] ? json_string(q->error) : json_null());
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
  json_t *list = queue_json(st, 0);
  *out = queued_json(&q);
  if (!list || !*out) {
    json_decref(list);
    json_decref(*out);
    *out = NULL;
    return store_refuse(st, NQ_ENOMEM, "queued job", err);
  }
  json_object_set_new(*out, "position", json_integer((json_int_t)json_array_size(
                                            json_object_get(list, "queue"))));
  json_decref(list);
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
  *out = json_pack("{s:o, s:o}", "next", queued_json(&q), "set_aside",
                   running ? json_integer(cur.id) : json_null());
  if (!*out) return store_refuse(st, NQ_ENOMEM, "job next", err);
  fx->next = running ? 2 : 1;
  (void)job;
  return 0;
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
  default: return refuse(err, NQ_ERR_BAD_MESSAGE, "admin: unknown cmd");
  }
  return *data ? 0 : store_refuse(st, NQ_EIO, "store", err);
}
