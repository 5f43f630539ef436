/* nq-server core: the admin commands of the jobs and queue family -- jobs, job_archive,
 * job_delete, and the job queue (job_add, job_list, job_cancel, job_next). */
#include "admin_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/nq.h"
#include "store_queue.h"

static int job_cb(const srv_job_t *job, void *arg) {
  srv_adm_list_t *l = arg;
  return srv_adm_append(l->arr, srv_job_json(job));
}

json_t *srv_jobs_json(srv_store_t *st) {
  srv_adm_list_t l = {json_array(), 0, st};
  int rc = l.arr ? srv_job_list(st, job_cb, &l) : NQ_ENOMEM;
  return srv_adm_wrap(st, "jobs", l.arr, rc);
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
int srv_adm_job_remove(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  int64_t serving = ctx->serving;
  const nq_view_q_job_t *q = &req->q.job_archive; /* job_delete's is the same view */
  int del = req->cmd == NQ_ADMIN_JOB_DELETE;
  if (del && serving)
    return srv_adm_refuse(err, NQ_ERR_BAD_STATE,
                          "job delete runs in nq-admin's local mode (--data DIR, "
                  "with the server stopped): deleting millions of units takes minutes");
  pick_t p = {(int)q->n, del, {0}, 0};
  int rc = srv_job_list(st, pick_cb, &p);
  if (rc) return srv_adm_store_refuse(st, rc, "job", err);
  if (!p.found) return srv_adm_refuse(err, NQ_ERR_NOT_FOUND, "no job for N=%d", (int)q->n);
  if (p.job.id == serving)
    return srv_adm_refuse(err, NQ_ERR_BAD_STATE,
                          "the server is serving the job for N=%d: stop it, then "
                  "nq-admin --data DIR job %s %d", p.job.n, del ? "delete" : "archive", p.job.n);
  int64_t leases = 0;
  if ((rc = srv_job_leases(st, &p.job, &leases)) != 0) return srv_adm_store_refuse(st, rc, "job",
                                                                                   err);
  rc = del ? srv_job_delete(st, p.job.id, q->force, 0)
           : srv_job_archive(st, p.job.id, q->force, ctx->now);
  if (rc == NQ_EBUSY || rc == NQ_ESTATE)
    return srv_adm_refuse(err, NQ_ERR_BAD_STATE, "%s", srv_store_errmsg(st));
  if (rc) return srv_adm_store_refuse(st, rc, "job", err);
  *out = nq_view_job_removed_pack(&(nq_view_job_removed_t){
      p.job.id, p.job.n, del ? "deleted" : "archived", p.job.units, leases, del});
  return *out ? 0 : srv_adm_store_refuse(st, NQ_ENOMEM, "job", err);
}

/* ---- the job queue -------------------------------------------------------------------------- */

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
static json_t *queue_json(srv_store_t *st, int64_t all) {
  json_t *arr = json_array();
  int rc = arr ? srv_queue_list(st, all, queued_cb, arr) : NQ_ENOMEM;
  return srv_adm_wrap(st, "queue", arr, rc);
}

static int count_cb(const srv_queued_t *q, void *arg) {
  (void)q;
  ++*(int64_t *)arg;
  return 0;
}

/* job_add: the entry as queued, and "position" (1 = next). */
int srv_adm_job_add(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  const nq_view_q_job_add_t *a = &req->q.job_add;
  nq_jobopts_t o;
  nq_jobopts_default(&o);
  o.n = (int)a->n;
  o.depth = (int)a->depth;
  o.max_depth = (int)a->max_depth;
  o.unit_seconds = a->unit_seconds;
  if (a->quorum) o.quorum = (int)a->quorum;
  if (a->max_results) o.max_results = (int)a->max_results;
  o.diverse_kernels = a->has_diverse_kernels ? (int)a->diverse_kernels : -1;
  srv_queued_t q;
  int rc = srv_queue_add(st, &o, ctx->now, &q);
  if (rc == NQ_ERANGE || rc == NQ_EINVAL)
    return srv_adm_refuse(err, NQ_ERR_BAD_MESSAGE, "job add: %s", srv_store_errmsg(st));
  if (rc) return srv_adm_store_refuse(st, rc, "queued job", err);
  nq_view_queued_t v;
  queued_view(&q, &v);
  v.has_position = 1;
  if ((rc = srv_queue_list(st, 0, count_cb, &v.position)) != 0)
    return srv_adm_store_refuse(st, rc, "queued job", err);
  if (!(*out = nq_view_queued_pack(&v))) return srv_adm_store_refuse(st, NQ_ENOMEM, "queued job",
                                                                     err);
  ctx->fx->queued = 1;
  return 0;
}

/* job_cancel: the entry afterwards. A started one is refused (bad_state, with how to stop its
 * job); an unknown id is not_found. */
int srv_adm_job_cancel(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  srv_queued_t q;
  int rc = srv_queue_cancel(st, req->q.job_cancel.id, ctx->now, &q);
  if (rc == NQ_ESTATE) return srv_adm_refuse(err, NQ_ERR_BAD_STATE, "%s", srv_store_errmsg(st));
  if (rc == NQ_ENOTFOUND)
    return srv_adm_refuse(err, NQ_ERR_NOT_FOUND,
                          "no queued job %lld (nq-admin job list --all shows "
                  "them all)", (long long)req->q.job_cancel.id);
  if (rc) return srv_adm_store_refuse(st, rc, "queued job", err);
  *out = queued_json(&q);
  return *out ? 0 : srv_adm_store_refuse(st, NQ_ENOMEM, "queued job", err);
}

/* job_next: the operator's word to a running server (`serving`): start the next queued job now.
 * {"next": the entry, "set_aside": the served job's id when it runs and force sets it aside, else
 * null}. The server switches after the batch commits (fx->next). Refused: in local mode (no
 * server to switch: bad_state), with nothing queued (not_found), while the served job runs
 * unless force (bad_state, with what force does). */
int srv_adm_job_next(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  int64_t serving = ctx->serving;
  if (!serving)
    return srv_adm_refuse(err, NQ_ERR_BAD_STATE,
                          "job next is the word to a running server (nq-admin "
                  "--server HOST:PORT job next); a server starts the next queued job by itself "
                  "when the job it serves is done, at start too");
  srv_queued_t q;
  int rc = srv_queue_next(st, &q);
  if (rc == NQ_ENOTFOUND)
    return srv_adm_refuse(err, NQ_ERR_NOT_FOUND, "no job queued (nq-admin job add N ...)");
  if (rc) return srv_adm_store_refuse(st, rc, "queued job", err);
  srv_job_t cur;
  if ((rc = srv_job_get(st, serving, &cur)) != 0) return srv_adm_store_refuse(st, rc, "job", err);
  int running = !srv_job_is_done(&cur);
  if (running && q.opts.n == cur.n)
    return srv_adm_refuse(err, NQ_ERR_BAD_STATE,
                          "the next queued job (%lld) is for N=%d, the job the "
                  "server runs now", (long long)q.id, cur.n);
  if (running && !req->q.job_next.force)
    return srv_adm_refuse(err, NQ_ERR_BAD_STATE,
                          "the job for N=%d (job %lld) is still running: wait "
                  "for it, or --force to set it aside (its leases are released; it stays in the "
                  "store and resumes when N=%d is queued again)", cur.n, (long long)cur.id,
                  cur.n);
  nq_view_job_next_t v = {.set_aside = cur.id, .has_set_aside = running};
  queued_view(&q, &v.next);
  *out = nq_view_job_next_pack(&v);
  if (!*out) return srv_adm_store_refuse(st, NQ_ENOMEM, "job next", err);
  ctx->fx->next = running ? 2 : 1;
  return 0;
}


int srv_adm_jobs(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  (void)req;
  *out = srv_jobs_json(ctx->st);
  return 0;
}

int srv_adm_job_list(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  *out = queue_json(ctx->st, req->q.job_list.all);
  return 0;
}
