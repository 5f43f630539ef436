/* nq-server core: the inside of the admin commands' family files (admin_status.c,
 * admin_clients.c, admin_units.c, admin_jobs.c, admin_public.c) and of their table
 * (admin_cmd.c): what a handler is given, the handlers' declarations (one per row of
 * NQ_ADMIN_CMD_MAP, nq/admin_cmd.h) and the helpers they share. Not for use outside server/core.
 */
#ifndef SRV_ADMIN_INT_H
#define SRV_ADMIN_INT_H

#include <jansson.h>
#include <math.h>
#include <stdint.h>

#include "admin_api.h"
#include "nq/admin_view.h"

/* What a handler runs against: the store, the job (the server's, or nq-admin's), the job a running
 * server serves (0 in local mode), the scheduler's settings (NULL: the defaults), the time, the
 * effects it reports and the refusal it fills (srv_admin_call in admin_api.h says which). */
typedef struct srv_admin_ctx_s {
  srv_store_t *st;
  const srv_job_t *job;
  int64_t serving;
  const srv_sched_config_t *cfg;
  int64_t now;
  srv_admin_effects_t *fx;
  nq_proto_err_t *err;
} srv_admin_ctx_t;

/* A handler: 0 with *out (a new reference; NULL means the store failed), or a negative code with
 * ctx->err filled. It reads its own member of req->q (the row's request view). */
typedef int (*srv_admin_fn)(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out);
#define SRV_ADM_DECL_ONE(e, name, rq, fn, reply)                                                   \
  int fn(srv_admin_ctx_t *, const nq_admin_req_t *, json_t **);
NQ_ADMIN_CMD_MAP(SRV_ADM_DECL_ONE)
#undef SRV_ADM_DECL_ONE

/* Whole seconds of a computed duration for a view (SRV_SECONDS_MAX in admin_api.h): 0 for NaN,
 * else 1 and *out rounded and clamped to 0..SRV_SECONDS_MAX. */
static inline int srv_seconds(double x, int64_t *out) {
  if (isnan(x)) return 0;
  if (x < 0) x = 0;
  if (x > SRV_SECONDS_MAX) x = SRV_SECONDS_MAX;
  *out = (int64_t)(x + 0.5);
  return 1;
}

/* A list is packed element by element as the store walks it (nq/admin_view.h). */
typedef struct srv_adm_list_s {
  json_t *arr;
  int64_t now;
  srv_store_t *st;
} srv_adm_list_t;

/* Append a packed element (consumed); NQ_ENOMEM when it or the append failed. */
int srv_adm_append(json_t *arr, json_t *o);
/* {key: arr}, or NULL with the store's message saying why (a builder's own failure is an
 * allocation: the store's last message would be stale). Consumes arr. */
json_t *srv_adm_wrap(srv_store_t *st, const char *key, json_t *arr, int rc);

/* Fill *err (non-fatal) and return NQ_EIO for `internal`, else NQ_EINVAL. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int srv_adm_refuse(nq_proto_err_t *err, nq_errcode_t code, const char *fmt, ...);
/* The refusal for a failed store call: the protocol's code for the expected outcomes, `internal`
 * (with the store's reason) for everything else. */
int srv_adm_store_refuse(srv_store_t *st, int rc, const char *what, nq_proto_err_t *err);
/* A scheduler on the store for the trust commands (bans and re-opening count votes again): the
 * server's settings when it runs the command, else the defaults (local mode). */
int srv_adm_sched(srv_admin_ctx_t *ctx, srv_sched_t *out);

#endif
