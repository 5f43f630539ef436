/* nq-server core: the admin commands' table -- the handler and reply columns of the rows of
 * NQ_ADMIN_CMD_MAP (nq/admin_cmd.h) -- and the one dispatch through it (srv_admin_call), for the
 * server's admin sessions and nq-admin's local mode; with the helpers the family files share
 * (admin_int.h). */
#include "admin_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nq/admin_db.h"
#include "nq/nq.h"
#include "store_stall.h"

static const struct {
  srv_admin_fn fn;
  const nq_view_t *reply;
} rows[NQ_ADMIN_NCMDS] = {
#define ROW_ONE(e, name, rq, fn, reply) {fn, &nq_view_##reply##_desc},
    NQ_ADMIN_CMD_MAP(ROW_ONE)
#undef ROW_ONE
};

const nq_view_t *nq_admin_reply_view(nq_admin_cmd_t c) {
  return (unsigned)c < NQ_ADMIN_NCMDS ? rows[c].reply : NULL;
}

int srv_admin_call(srv_store_t *st, const srv_job_t *job, int64_t serving,
                   const srv_sched_config_t *cfg, const nq_admin_req_t *req, int64_t now,
                   json_t **data, srv_admin_effects_t *fx, nq_proto_err_t *err) {
  *data = NULL;
  memset(fx, 0, sizeof *fx);
  if ((unsigned)req->cmd >= NQ_ADMIN_NCMDS)
    return srv_adm_refuse(err, NQ_ERR_BAD_MESSAGE, "admin: unknown cmd");
  /* A command may change what is stalled (a ban, an owner, a retry): the next view computes. */
  if (req->cmd != NQ_ADMIN_STATUS) srv_stalls_forget(st);
  srv_admin_ctx_t ctx = {st, job, serving, cfg, now, fx, err};
  int rc = rows[req->cmd].fn(&ctx, req, data);
  if (rc) return rc;
  return *data ? 0 : srv_adm_store_refuse(st, NQ_EIO, "store", err);
}

int srv_adm_append(json_t *arr, json_t *o) {
  return o && json_array_append_new(arr, o) == 0 ? 0 : NQ_ENOMEM;
}

json_t *srv_adm_wrap(srv_store_t *st, const char *key, json_t *arr, int rc) {
  if (rc == NQ_ENOMEM || !arr) srv_store_failf(st, NQ_ENOMEM, "the %s view: out of memory", key);
  if (rc != 0 || !arr) {
    json_decref(arr);
    return NULL;
  }
  return json_pack("{s:o}", key, arr);
}

int srv_adm_refuse(nq_proto_err_t *err, nq_errcode_t code, const char *fmt, ...) {
  err->code = code;
  err->fatal = 0; /* the server turns `internal` into a fatal error itself */
  err->id = -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return code == NQ_ERR_INTERNAL ? NQ_EIO : NQ_EINVAL;
}

int srv_adm_store_refuse(srv_store_t *st, int rc, const char *what, nq_proto_err_t *err) {
  switch (rc) {
  case NQ_EEXIST: return srv_adm_refuse(err, NQ_ERR_EXISTS, "%s already exists", what);
  case NQ_ENOTFOUND: return srv_adm_refuse(err, NQ_ERR_NOT_FOUND, "no such %s", what);
  case NQ_EINVAL: return srv_adm_refuse(err, NQ_ERR_BAD_MESSAGE, "invalid %s", what);
  default:
    return srv_adm_refuse(err, NQ_ERR_INTERNAL, "%s: %s", nq_strerror(rc), srv_store_errmsg(st));
  }
}

int srv_adm_sched(srv_admin_ctx_t *ctx, srv_sched_t *out) {
  int rc = srv_sched_init(out, ctx->st, ctx->job->id, ctx->cfg);
  return rc ? srv_adm_store_refuse(ctx->st, rc, "scheduler", ctx->err) : 0;
}

