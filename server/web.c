/* nq-server: the public view over HTTP (see web.h): routing, the JSON endpoints, the metrics
 * text and the history sampler. The HTML page is in web_page.c. */
#include "web.h"
#include "srv_cert.h"
#include "web_export.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_api.h"
#include "nq/admin_view.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/solver.h"
#include "store_stall.h"
#include "web_buf.h"

struct srv_web_s {
  srv_t *srv;
  srv_http_t *http;
  uv_timer_t sampler;
  int sampler_open;
  json_t *cache;       /* the last public status object ... */
  uint64_t cache_ms;   /* ... built at this uv_now */
};

srv_web_route_t srv_web_route(const char *path) {
  static const struct {
    const char *path;
    srv_web_route_t route;
  } routes[] = {{"/", SRV_WEB_PAGE},
                {"/index.html", SRV_WEB_PAGE},
                {"/metrics", SRV_WEB_METRICS},
                {"/api/status", SRV_WEB_STATUS},
                {"/api/history", SRV_WEB_HISTORY},
                {"/api/export", SRV_WEB_EXPORT},
                {"/api/volunteers", SRV_WEB_VOLUNTEERS},
                {"/api/teams", SRV_WEB_TEAMS}};
  if (!strncmp(path, "/v/", 3) && nq_proto_name_valid(path + 3)) return SRV_WEB_VOLUNTEER;
  for (size_t i = 0; i < sizeof routes / sizeof *routes; i++)
    if (!strcmp(path, routes[i].path)) return routes[i].route;
  return SRV_WEB_NOT_FOUND;
}

/* ---- JSON ---- */

static int leader_cb(const srv_credit_t *c, int rank, void *arg) {
  nq_view_leader_t v = {rank, c->display, c->named, c->credit, c->valid};
  json_t *o = nq_view_leader_pack(&v);
  return o && json_array_append_new(arg, o) == 0 ? 0 : NQ_ENOMEM;
}

json_t *srv_web_status_json(srv_t *s, int64_t now) {
  json_t *o = srv_status_json(s->store, &s->sched.job, &s->sched.cfg, now);
  if (!o) return NULL;
  /* The voters of a disputed unit are clients' private names: only the count is public. */
  json_object_del(o, "disputed");
  json_t *leaders = json_array();
  int ok = leaders && srv_credit_top(s->store, SRV_WEB_LEADERS, leader_cb, leaders) == 0;
  ok = ok && json_object_set_new(o, "leaderboard", leaders) == 0;
  if (!ok && leaders && !json_object_get(o, "leaderboard")) json_decref(leaders);
  json_t *srv = nq_view_server_pack(&(nq_view_server_t){NQ_VERSION_STRING, NQ_PROTO_VERSION});
  ok = ok && srv && json_object_set_new(o, "server", srv) == 0;
  /* The root of the results so far, as the worker last took it (srv_root.h). */
  if (ok && s->root.have && s->root.job == s->sched.job.id) {
    json_t *root = nq_view_root_pack(&(nq_view_root_t){s->root.hex, s->root.leaves, s->root.at});
    ok = root && json_object_set_new(o, "root", root) == 0;
  }
  /* What a public project shows: its news, its volunteers (owners) and teams by credit. */
  const char *keys[] = {"news", "volunteers", "teams"};
  json_t *parts[] = {ok ? srv_news_json(s->store, NQ_PROTO_NEWS_MAX) : NULL,
                     ok ? srv_volunteers_json(s->store, SRV_WEB_VOLUNTEERS_MAX) : NULL,
                     ok ? srv_teams_json(s->store) : NULL};
  for (int i = 0; i < 3; i++) {
    ok = ok && parts[i] && json_object_set(o, keys[i], json_object_get(parts[i], keys[i])) == 0;
    json_decref(parts[i]);
  }
  if (!ok) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* The cached public status (SRV_WEB_CACHE_MS); a borrowed reference. */
static json_t *status_cached(srv_web_t *w) {
  uint64_t t = uv_now(w->srv->loop);
  if (w->cache && t - w->cache_ms < SRV_WEB_CACHE_MS) return w->cache;
  json_t *o = srv_web_status_json(w->srv, nq_now_wall());
  if (!o) return w->cache; /* a failed build keeps showing the last one */
  json_decref(w->cache);
  w->cache = o;
  w->cache_ms = t;
  return o;
}

typedef struct {
  json_t *arr;
  srv_history_t prev;
  int have_prev;
} hist_ctx_t;

/* A sample, with the rates since the previous one (null for the first). */
static int hist_cb(const srv_history_t *h, void *arg) {
  hist_ctx_t *c = arg;
  nq_view_sample_t v = {.t = h->t,
                        .verified = h->verified,
                        .results = h->results,
                        .verified_nodes = h->nodes,
                        .share = h->share,
                        .has_root = h->root[0] != '\0',
                        .root = h->root,
                        .has_leaves = h->root[0] != '\0',
                        .leaves = h->leaves};
  if (c->have_prev && h->t > c->prev.t) {
    double dt = (double)(h->t - c->prev.t);
    double dn = h->nodes >= c->prev.nodes ? (double)(h->nodes - c->prev.nodes) : 0.0;
    int64_t dr = h->results - c->prev.results;
    v.results_per_s = (double)(dr > 0 ? dr : 0) / dt;
    v.nodes_per_s = dn / dt;
    v.has_results_per_s = isfinite(v.results_per_s);
    v.has_nodes_per_s = isfinite(v.nodes_per_s);
  }
  c->prev = *h;
  c->have_prev = 1;
  json_t *o = nq_view_sample_pack(&v);
  return o && json_array_append_new(c->arr, o) == 0 ? 0 : NQ_ENOMEM;
}

json_t *srv_web_history_json(srv_t *s) {
  hist_ctx_t c = {json_array(), {0}, 0};
  if (!c.arr) return NULL;
  if (srv_history_list(s->store, s->sched.job.id, hist_cb, &c) != 0) {
    json_decref(c.arr);
    return NULL;
  }
  return json_pack("{s:i, s:i, s:i, s:o}", "n", s->sched.job.n, "interval",
                   SRV_WEB_SAMPLE_MS / 1000, "max_samples", SRV_HISTORY_MAX, "samples", c.arr);
}

/* ---- metrics ---- */

static void metric_head(web_buf_t *b, const char *name, const char *type, const char *help) {
  web_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void metric_hist(web_buf_t *b, const char *name, const char *help, const srv_hist_t *h) {
  metric_head(b, name, "histogram", help);
  uint64_t cum = 0;
  for (int i = 0; i < SRV_HIST_NBOUNDS; i++) {
    cum += h->buckets[i];
    web_buf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, srv_hist_bounds[i],
                   (unsigned long long)cum);
  }
  web_buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9f\n%s_count %llu\n", name,
                 (unsigned long long)h->count, name, h->sum, name, (unsigned long long)h->count);
}

static void metrics_job(web_buf_t *b, const srv_stats_t *st) {
  char v[40];
  metric_head(b, "nq_job_n", "gauge", "Board size N of the job this server serves.");
  web_buf_printf(b, "nq_job_n %d\n", st->job.n);
  metric_head(b, "nq_job_done", "gauge", "1 once every unit of the job is verified.");
  web_buf_printf(b, "nq_job_done %d\n", st->job.state == SRV_JOB_DONE);
  metric_head(b, "nq_units", "gauge", "Units of the job by state.");
  for (int i = 0; i < SRV_UNIT_NSTATES; i++)
    web_buf_printf(b, "nq_units{state=\"%s\"} %lld\n", srv_unit_state_name((srv_unit_state_t)i),
                   (long long)st->units[i]);
  metric_head(b, "nq_job_results", "gauge", "Results received for the job (durable, all runs).");
  web_buf_printf(b, "nq_job_results %lld\n", (long long)st->results);
  metric_head(b, "nq_verified_nodes", "gauge", "Search-tree nodes of the verified units.");
  web_buf_printf(b, "nq_verified_nodes %s\n", nq_u128_str(st->verified.nodes, v));
  metric_head(b, "nq_verified_solutions", "gauge",
              "Solutions counted in the verified units (total, unique, COUNT2/4/8).");
  static const char *const kinds[] = {"total", "unique", "c2", "c4", "c8"};
  nq_u128 vals[] = {nq_totals_total(&st->verified), nq_totals_unique(&st->verified),
                    st->verified.c2, st->verified.c4, st->verified.c8};
  for (int i = 0; i < 5; i++)
    web_buf_printf(b, "nq_verified_solutions{kind=\"%s\"} %s\n", kinds[i],
                   nq_u128_str(vals[i], v));
  metric_head(b, "nq_clients", "gauge", "Volunteer clients: active (seen within 10 min, not "
              "banned), known, banned.");
  web_buf_printf(b, "nq_clients{state=\"active\"} %lld\nnq_clients{state=\"known\"} %lld\n"
                 "nq_clients{state=\"banned\"} %lld\n", (long long)st->clients_active,
                 (long long)st->clients_known, (long long)st->clients_banned);
  metric_head(b, "nq_leases", "gauge", "Live leases of the job's units.");
  web_buf_printf(b, "nq_leases %lld\n", (long long)st->leased);
}

/* Stalled units (store_stall.h), by reason: an alert on nq_units_stalled > 0 for a while says a
 * job cannot finish as the fleet stands. The cache the status page uses serves it too. */
static int metrics_stalls(web_buf_t *b, srv_t *s, int64_t now) {
  srv_stalls_t x;
  int rc = srv_stalls_get(s->store, s->sched.job.id, s->sched.cfg.quorum_distinct, now,
                          SRV_STATUS_ACTIVE_WINDOW, &x);
  if (rc) return rc;
  metric_head(b, "nq_units_stalled", "gauge", "Units of the job that cannot finish as the fleet "
              "stands, by reason (docs/operations.md); left out of the ETA.");
  for (int i = 0; i < SRV_STALL_NREASONS; i++)
    web_buf_printf(b, "nq_units_stalled{reason=\"%s\"} %lld\n",
                   srv_stall_reason_name((srv_stall_reason_t)i), (long long)x.by[i]);
  metric_head(b, "nq_voters", "gauge", "Keys (--quorum-distinct) that can vote: all, and online "
              "within 10 min; the job needs nq_job_quorum of them.");
  web_buf_printf(b, "nq_voters{state=\"can_vote\"} %lld\nnq_voters{state=\"online\"} %lld\n",
                 (long long)x.keys, (long long)x.keys_online);
  metric_head(b, "nq_job_quorum", "gauge", "Agreeing results from distinct keys a unit needs.");
  web_buf_printf(b, "nq_job_quorum %d\n", x.quorum);
  metric_head(b, "nq_stall_count_timestamp_seconds", "gauge",
              "When the stalled units were last counted (a worker thread, every 10 s or less "
              "often when a count takes long); 0: not yet.");
  web_buf_printf(b, "nq_stall_count_timestamp_seconds %lld\n", (long long)x.at);
  metric_head(b, "nq_stall_count_duration_seconds", "gauge", "How long that count took.");
  web_buf_printf(b, "nq_stall_count_duration_seconds %.3f\n", x.seconds);
  return 0;
}

/* Scheduled backups (srv_backup.h): a failure shows here as well as in the log. */
static void metrics_backup(web_buf_t *b, const srv_metrics_t *m) {
  metric_head(b, "nq_backups_total", "counter",
              "Scheduled backups since the server started, by outcome (a failed one is an ERROR).");
  web_buf_printf(b, "nq_backups_total{outcome=\"good\"} %llu\nnq_backups_total{outcome=\"failed\"} "
                 "%llu\n", (unsigned long long)m->backups_ok, (unsigned long long)m->backups_failed);
  metric_head(b, "nq_backup_last_good_timestamp_seconds", "gauge",
              "When the last good (checked) backup of this run was taken; 0: none yet.");
  web_buf_printf(b, "nq_backup_last_good_timestamp_seconds %lld\n", (long long)m->backup_last_ok);
  metric_head(b, "nq_backup_last_duration_seconds", "gauge",
              "Copy and check of the last good backup.");
  web_buf_printf(b, "nq_backup_last_duration_seconds %.3f\n", m->backup_last_seconds);
  metric_head(b, "nq_backup_last_size_bytes", "gauge", "Size of the last good backup.");
  web_buf_printf(b, "nq_backup_last_size_bytes %lld\n", (long long)m->backup_last_bytes);
}

/* The certificate in use (srv_cert.h): days until it expires, for an alert well before. */
static void metrics_cert(web_buf_t *b, const srv_t *s, int64_t now) {
  int64_t na = srv_cert_not_after(s);
  if (na <= 0) return;
  metric_head(b, "nq_tls_cert_expiry_days", "gauge",
              "Days until the server certificate expires (negative: it has expired).");
  web_buf_printf(b, "nq_tls_cert_expiry_days %.3f\n", (double)(na - now) / 86400.0);
  metric_head(b, "nq_tls_cert_not_after_timestamp_seconds", "gauge",
              "When the server certificate expires (Unix seconds).");
  web_buf_printf(b, "nq_tls_cert_not_after_timestamp_seconds %lld\n", (long long)na);
}

char *srv_web_metrics_text(srv_t *s, int64_t now, size_t *len) {
  srv_stats_t st;
  if (srv_store_stats(s->store, s->sched.job.id, now, SRV_STATUS_ACTIVE_WINDOW,
                      SRV_STATUS_RATE_WINDOW, &st) != 0)
    return NULL;
  web_buf_t b;
  web_buf_init(&b);
  metric_head(&b, "nq_build_info", "gauge", "The server's version and protocol version.");
  web_buf_printf(&b, "nq_build_info{version=\"%s\",protocol=\"%d\"} 1\n", NQ_VERSION_STRING,
                 NQ_PROTO_VERSION);
  metrics_job(&b, &st);
  if (metrics_stalls(&b, s, now) != 0) {
    free(web_buf_take(&b, len));
    return NULL;
  }
  metric_head(&b, "nq_results_total", "counter",
              "Result messages since the server started, by outcome.");
  for (int i = 0; i < SRV_OUTCOME_N; i++)
    web_buf_printf(&b, "nq_results_total{outcome=\"%s\"} %llu\n",
                   srv_outcome_name((srv_outcome_t)i), (unsigned long long)s->metrics.results[i]);
  metric_head(&b, "nq_connections", "gauge", "Open connections: protocol (TLS) and http.");
  web_buf_printf(&b, "nq_connections{kind=\"protocol\"} %d\nnq_connections{kind=\"http\"} %d\n",
                 s->nconns, s->web && s->web->http ? srv_http_conns(s->web->http) : 0);
  metric_head(&b, "nq_http_refused_total", "counter",
              "HTTP connections refused: 503 over the connection limit, 429 over the "
              "per-address limit.");
  web_buf_printf(&b, "nq_http_refused_total %llu\n",
                 (unsigned long long)(s->web && s->web->http ? srv_http_refused(s->web->http) : 0));
  metric_head(&b, "nq_commits_failed_total", "counter", "Group commits that failed.");
  web_buf_printf(&b, "nq_commits_failed_total %llu\n", (unsigned long long)s->commits_failed);
  metric_hist(&b, "nq_commit_duration_seconds", "Time of one group commit.", &s->metrics.commit);
  metric_hist(&b, "nq_get_work_duration_seconds", "Time to handle one get_work request.",
              &s->metrics.get_work);
  metrics_backup(&b, &s->metrics);
  metrics_cert(&b, s, now);
  metric_head(&b, "nq_batch_requests_total", "counter", "Requests handled in group commits.");
  web_buf_printf(&b, "nq_batch_requests_total %llu\n", (unsigned long long)s->batch_reqs);
  return web_buf_take(&b, len);
}

/* ---- the handler ---- */

static char *json_body(json_t *o, size_t *len) {
  char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
  if (!t) return NULL;
  size_t n = strlen(t);
  t[n] = '\0';
  *len = n;
  return t;
}

static void text_resp(srv_http_resp_t *r, int status, const char *text) {
  r->status = status;
  r->type = NULL;
  r->body = strdup(text);
  r->len = r->body ? strlen(r->body) : 0;
}

/* /api/export: the evidence file of the finished job, streamed (web_export.h); 404 while the
 * job runs, 503 while SRV_EXPORT_STREAMS downloads run. */
static void export_resp(srv_t *s, srv_http_resp_t *r) {
  srv_job_t job;
  char err[256];
  int fd = -1;
  if (srv_job_get(s->store, s->sched.job.id, &job) != 0) {
    text_resp(r, 500, "500 Internal Server Error\n");
    return;
  }
  if (job.state != SRV_JOB_DONE || !job.has_internal) {
    text_resp(r, 404, "404 Not Found: the evidence exists once the job is done\n");
    return;
  }
  int rc = srv_web_export_start(s->dd.db, job.id, (nq_ev_distinct_t)s->cfg.sched.quorum_distinct,
                                s->cfg.export_names, nq_now_wall(), &fd, err, sizeof err);
  if (rc != 0) {
    /* Busy: counted per address in the log's summaries (http.c), not one line each. */
    if (rc != NQ_EBUSY) nq_log(NQ_LOG_WARN, "http /api/export: %s", err);
    text_resp(r, rc == NQ_EBUSY ? 503 : 500,
              rc == NQ_EBUSY ? "503 Service Unavailable: exports busy, retry later\n"
                             : "500 Internal Server Error\n");
    return;
  }
  r->status = 200;
  r->type = "application/x-ndjson";
  r->stream = 1;
  r->stream_fd = fd;
}

/* {"volunteers": [...]} or {"teams": [...]} out of the cached public status. */
static char *list_body(srv_web_t *w, const char *key, size_t *len) {
  json_t *st = status_cached(w);
  json_t *arr = st ? json_object_get(st, key) : NULL;
  if (!arr) return NULL;
  json_t *o = json_pack("{sO}", key, arr);
  char *body = o ? json_body(o, len) : NULL;
  json_decref(o);
  return body;
}

static int machine_cb(const char *name, const nq_u128 *credit, int64_t valid, void *arg) {
  char d[48];
  json_t *o = json_pack("{sssssI}", "name", name, "credit", nq_u128_str(*credit, d), "results",
                        (json_int_t)valid);
  return o && json_array_append_new(arg, o) == 0 ? 0 : NQ_ENOMEM;
}

/* /v/NAME: a volunteer of the public list, by its shown name. */
static void volunteer_resp(srv_web_t *w, const char *name, srv_http_resp_t *r) {
  srv_t *s = w->srv;
  srv_volunteer_t *v = NULL;
  size_t n = 0;
  if (srv_volunteers_ranked(s->store, &v, &n) != 0) {
    text_resp(r, 500, "500 Internal Server Error\n");
    return;
  }
  size_t i = 0;
  while (i < n && strcmp(v[i].display, name) != 0) i++;
  if (i == n) {
    free(v);
    text_resp(r, 404, "404 Not Found: no volunteer by that name\n");
    return;
  }
  nq_view_volunteer_t x = {(int64_t)i + 1, v[i].display, v[i].named,
                           v[i].team[0] ? v[i].team : NULL, v[i].machines, v[i].verified,
                           v[i].credit};
  json_t *vo = nq_view_volunteer_pack(&x);
  json_t *machines = json_array();
  int rc = vo && machines ? srv_owner_machines(s->store, v[i].owner_id, machine_cb, machines)
                          : NQ_ENOMEM;
  free(v);
  r->type = "text/html; charset=utf-8";
  r->body = rc == 0 ? srv_web_volunteer_html(vo, machines, &r->len) : NULL;
  json_decref(vo);
  json_decref(machines);
  if (!r->body) text_resp(r, 500, "500 Internal Server Error\n");
}

static void web_handle(void *arg, const srv_http_req_t *req, srv_http_resp_t *r) {
  srv_web_t *w = arg;
  srv_t *s = w->srv;
  json_t *hist = NULL;
  r->status = 200;
  switch (srv_web_route(req->path)) {
  case SRV_WEB_PAGE:
    hist = srv_web_history_json(s);
    r->type = "text/html; charset=utf-8";
    r->body = status_cached(w) ? srv_web_page_html(status_cached(w), hist, &r->len) : NULL;
    break;
  case SRV_WEB_METRICS:
    r->type = "text/plain; version=0.0.4; charset=utf-8";
    r->body = srv_web_metrics_text(s, nq_now_wall(), &r->len);
    break;
  case SRV_WEB_STATUS:
    r->type = "application/json";
    r->body = json_body(status_cached(w), &r->len);
    break;
  case SRV_WEB_HISTORY:
    r->type = "application/json";
    hist = srv_web_history_json(s);
    r->body = json_body(hist, &r->len);
    break;
  case SRV_WEB_EXPORT:
    export_resp(s, r);
    return;
  case SRV_WEB_VOLUNTEERS:
  case SRV_WEB_TEAMS:
    r->type = "application/json";
    r->body = list_body(w, srv_web_route(req->path) == SRV_WEB_TEAMS ? "teams" : "volunteers",
                        &r->len);
    break;
  case SRV_WEB_VOLUNTEER:
    volunteer_resp(w, req->path + 3, r);
    return;
  default:
    text_resp(r, 404, "404 Not Found\n");
    return;
  }
  json_decref(hist);
  if (!r->body) {
    nq_log(NQ_LOG_ERROR, "http %s: %s", req->path, srv_store_errmsg(s->store));
    text_resp(r, 500, "500 Internal Server Error\n");
  }
}

/* ---- the sampler ---- */

int srv_web_sample(srv_t *s, int64_t now) {
  srv_stats_t st;
  int rc = srv_store_stats(s->store, s->sched.job.id, now, SRV_STATUS_ACTIVE_WINDOW,
                           SRV_STATUS_RATE_WINDOW, &st);
  if (rc) return rc;
  double share = 0;
  if (st.job.state == SRV_JOB_DONE) share = 1;
  else if (st.est_units == st.job.units && st.est_total > 0)
    share = (double)st.est_verified / (double)st.est_total;
  else if (st.job.units > 0)
    share = (double)st.units[SRV_UNIT_VERIFIED] / (double)st.job.units;
  srv_history_t h = {now, st.units[SRV_UNIT_VERIFIED], st.results, st.verified.nodes, share,
                     "", 0};
  /* The root with each sample (the last one taken): its history, as bounded as the samples. */
  if (s->root.have && s->root.job == s->sched.job.id) {
    snprintf(h.root, sizeof h.root, "%s", s->root.hex);
    h.leaves = s->root.leaves;
  }
  return srv_history_add(s->store, s->sched.job.id, &h);
}

static void on_sample(uv_timer_t *t) {
  srv_web_t *w = t->data;
  srv_t *s = w->srv;
  /* The batch and the sweep never leave a transaction open between loop iterations. */
  if (s->stopping || srv_store_in_tx(s->store)) return;
  if (srv_web_sample(s, nq_now_wall()) != 0)
    nq_log(NQ_LOG_WARN, "history sample: %s", srv_store_errmsg(s->store));
}

static void on_sampler_closed(uv_handle_t *h) {
  srv_web_t *w = h->data;
  json_decref(w->cache);
  free(w);
}

int srv_web_start(srv_t *s, char *errbuf, size_t errlen) {
  if (s->cfg.http_off) return 0;
  srv_web_t *w = calloc(1, sizeof *w);
  if (!w) return nq_errorf(errbuf, errlen, NQ_ENOMEM, "out of memory");
  w->srv = s;
  int rc = srv_http_start(&w->http, s->loop, &s->cfg.http, web_handle, w, errbuf, errlen);
  if (rc == 0) srv_http_set_peers(w->http, &s->peers);
  if (rc != 0) {
    free(w);
    if (s->cfg.http_required) return rc;
    nq_log(NQ_LOG_WARN, "%s: running without the status page (give --http ADDR:PORT or "
           "--http off)", errbuf);
    errbuf[0] = '\0';
    return 0;
  }
  uv_timer_init(s->loop, &w->sampler);
  w->sampler.data = w;
  w->sampler_open = 1;
  /* A first sample soon after the start, then one a minute. */
  uv_timer_start(&w->sampler, on_sample, 1000, SRV_WEB_SAMPLE_MS);
  s->web = w;
  return 0;
}

void srv_web_stop(srv_t *s) {
  srv_web_t *w = s->web;
  if (!w) return;
  s->web = NULL;
  srv_http_stop(w->http);
  uv_close((uv_handle_t *)&w->sampler, on_sampler_closed);
}

const char *srv_web_bound(const srv_t *s) {
  return s->web && s->web->http ? srv_http_bound(s->web->http) : NULL;
}
