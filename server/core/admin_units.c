/* nq-server core: the admin commands of the units family -- units (with each unit's votes and
 * live leases), unit_retry and unit_reopen. */
#include "admin_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/nq.h"

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
  /* Contested (waiting for a trusted result), or what settled it. */
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
  srv_adm_list_t *l = arg;
  nq_view_unit_t v;
  asg_rows_t rows;
  int rc = unit_view(l->st, u, l->now, &rows, &v);
  if (rc == 0) rc = srv_adm_append(l->arr, nq_view_unit_pack(&v));
  unit_view_free(&v, &rows);
  return rc;
}

json_t *srv_units_json(srv_store_t *st, int64_t job_id, int state, int limit, int64_t now) {
  srv_adm_list_t l = {json_array(), now, st};
  int rc = l.arr ? srv_unit_list(st, job_id, state, limit, unit_cb, &l) : NQ_ENOMEM;
  return srv_adm_wrap(st, "units", l.arr, rc);
}


/* The unit a unit_retry / unit_reopen request names, in the job; a refusal otherwise. */
static int req_unit(srv_store_t *st, const srv_job_t *job, const nq_view_ref_t *ref,
                    srv_unit_info_t *u, nq_proto_err_t *err) {
  int rc;
  if (ref->text) {
    rc = srv_unit_find_text(st, job->id, ref->text, u);
  } else {
    rc = srv_unit_get(st, ref->id, u);
    if (rc == 0 && u->job_id != job->id)
      return srv_adm_refuse(err, NQ_ERR_NOT_FOUND, "unit %lld is not in the job for N=%d",
                    (long long)u->id, job->n);
  }
  if (rc == NQ_ENOTFOUND) return srv_adm_refuse(err, NQ_ERR_NOT_FOUND, "%s", srv_store_errmsg(st));
  return rc ? srv_adm_store_refuse(st, rc, "unit", err) : 0;
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
  return rc ? srv_adm_store_refuse(st, rc, "unit", err) : 0;
}

/* unit_reopen: the unit as in `units` after it was re-opened (its results voided), plus
 * "job_reopened". */
int srv_adm_unit_reopen(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  srv_admin_effects_t *fx = ctx->fx;
  int64_t now = ctx->now;
  srv_unit_info_t u;
  srv_sched_t sch;
  int rc = srv_adm_sched(ctx, &sch);
  if (rc == 0) rc = req_unit(st, ctx->job, &req->q.unit_reopen.unit, &u, err);
  if (rc) return rc;
  if ((rc = srv_sched_reopen(&sch, u.id, now, &fx->job_reopened)) != 0 ||
      (rc = srv_unit_get(st, u.id, &u)) != 0)
    return srv_adm_store_refuse(st, rc, "unit", err);
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
/* unit_retry --client NAME, its awaiting units `ids`: each retried through the
 * scheduler, which restores the votes nothing voting contradicts any more (the units a banned
 * liar's spot checks re-opened are verified again by the honest votes). Their ids go into arr;
 * *restored and *verified count. */
static int retry_awaiting_of(srv_admin_ctx_t *ctx, const int64_t *ids, int n, int extra,
                             int64_t *restored, int *verified) {
  srv_sched_t sch;
  srv_result_info_t info;
  int64_t r = 0;
  int rc = n > 0 ? srv_adm_sched(ctx, &sch) : 0;
  if (rc) return rc;
  for (int i = 0; i < n && rc == 0; i++) {
    rc = srv_sched_retry(&sch, ids[i], extra, ctx->now, &r, &info);
    *restored += r;
    *verified += info.unit_verified;
    ctx->fx->job_done |= info.job_done;
  }
  return rc ? srv_adm_store_refuse(ctx->st, rc, "unit", ctx->err) : 0;
}

static int unit_retry_many(srv_admin_ctx_t *ctx, const nq_view_q_unit_retry_t *q, json_t **out) {
  srv_store_t *st = ctx->st;
  const srv_job_t *job = ctx->job;
  nq_proto_err_t *err = ctx->err;
  srv_admin_effects_t *fx = ctx->fx;
  int64_t now = ctx->now;
  int64_t client_id = 0, *ids = NULL;
  int n = 0, rc = 0;
  if (q->client) {
    srv_client_t c;
    if ((rc = srv_client_find_name(st, q->client, &c)) != 0)
      return srv_adm_store_refuse(st, rc, "client", err);
    client_id = c.id;
  }
  int extra = q->extra > 0 ? (int)q->extra : job->quorum;
  /* The client's awaiting units are taken before its disputed ones are retried (which makes
   * them awaiting too). */
  int64_t *waiting = NULL;
  int na = 0;
  if (client_id > 0 && (rc = srv_units_awaiting_of(st, job->id, client_id, &waiting, &na)) != 0)
    return srv_adm_store_refuse(st, rc, "unit", err);
  rc = srv_units_disputed(st, job->id, client_id, &ids, &n);
  for (int i = 0; i < n && rc == 0; i++) rc = srv_unit_retry(st, ids[i], extra, now, NULL);
  if (rc) {
    free(ids);
    free(waiting);
    return srv_adm_store_refuse(st, rc, "unit", err);
  }
  int verified = 0;
  nq_view_retried_t v = {.retried = n + na, .added = extra, .awaiting = na};
  rc = retry_awaiting_of(ctx, waiting, na, extra, &v.restored, &verified);
  v.verified = verified;
  /* The units: the disputed ones retried, then the awaiting ones. */
  int64_t *all = rc == 0 && n + na > 0 ? malloc((size_t)(n + na) * sizeof *all) : NULL;
  if (rc == 0 && n + na > 0 && !all) rc = srv_adm_store_refuse(st, NQ_ENOMEM, "unit", err);
  if (all) {
    if (n) memcpy(all, ids, (size_t)n * sizeof *all);
    if (na) memcpy(all + n, waiting, (size_t)na * sizeof *all);
  }
  v.units = all, v.n_units = (size_t)(n + na), v.job_done = fx->job_done;
  if (rc == 0 && !(*out = nq_view_retried_pack(&v))) rc = srv_adm_store_refuse(st, NQ_ENOMEM,
                                                                               "unit", err);
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
int srv_adm_unit_retry(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  const nq_view_q_unit_retry_t *q = &req->q.unit_retry;
  if (q->all_disputed || q->client) return unit_retry_many(ctx, q, out);
  srv_store_t *st = ctx->st;
  const srv_job_t *job = ctx->job;
  nq_proto_err_t *err = ctx->err;
  srv_admin_effects_t *fx = ctx->fx;
  int64_t now = ctx->now;
  srv_unit_info_t u;
  srv_sched_t sch;
  srv_result_info_t info;
  int64_t restored = 0;
  int rc = srv_adm_sched(ctx, &sch);
  if (rc == 0) rc = req_unit(st, job, &q->unit, &u, err);
  if (rc) return rc;
  int extra = q->extra > 0 ? (int)q->extra : job->quorum;
  rc = srv_sched_retry(&sch, u.id, extra, now, &restored, &info);
  if (rc == 0) rc = srv_unit_get(st, u.id, &u);
  if (rc == NQ_ESTATE) return srv_adm_refuse(err, NQ_ERR_BAD_STATE, "%s", srv_store_errmsg(st));
  if (rc == NQ_ENOTFOUND) return srv_adm_refuse(err, NQ_ERR_NOT_FOUND, "%s", srv_store_errmsg(st));
  if (rc) return srv_adm_store_refuse(st, rc, "unit", err);
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


/* units: "all" is every state (-1 to the store); anything else must name one. */
int srv_adm_units(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  const nq_view_q_units_t *q = &req->q.units;
  int all = strcmp(q->state, "all") == 0, state = all ? -1 : srv_unit_state_parse(q->state);
  if (state < 0 && !all) return srv_adm_refuse(ctx->err, NQ_ERR_BAD_MESSAGE,
                                               "units: unknown state");
  *out = srv_units_json(ctx->st, ctx->job->id, state, (int)q->limit, ctx->now);
  return 0;
}
