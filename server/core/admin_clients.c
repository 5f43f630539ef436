/* nq-server core: the admin commands of the clients and owners family -- clients, client_add,
 * client_ban, client_unban, owners, owner_add, owner_ban, owner_unban, owner_rekey, owner_trust,
 * owner_untrust, and the sign-ups (signups, owner_approve, owner_reject). */
#include "admin_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/certs.h"
#include "nq/hash.h"
#include "nq/nq.h"

static int client_cb(const srv_client_t *c, void *arg) {
  srv_adm_list_t *l = arg;
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
  return srv_adm_append(l->arr, nq_view_client_pack(&v));
}

json_t *srv_clients_json(srv_store_t *st, int64_t now) {
  srv_adm_list_t l = {json_array(), now, st};
  int rc = l.arr ? srv_client_list(st, client_cb, &l) : NQ_ENOMEM;
  return srv_adm_wrap(st, "clients", l.arr, rc);
}

static int owner_cb(const srv_owner_t *w, void *arg) {
  srv_adm_list_t *l = arg;
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
  return srv_adm_append(l->arr, nq_view_owner_pack(&v));
}

json_t *srv_owners_json(srv_store_t *st, int64_t now) {
  srv_adm_list_t l = {json_array(), now, st};
  int rc = l.arr ? srv_owner_list(st, owner_cb, &l) : NQ_ENOMEM;
  return srv_adm_wrap(st, "owners", l.arr, rc);
}

/* client_add: a client NAME with a fresh random token, which only this reply shows (the store
 * keeps its SHA-256 hex): {"name", "owner", "token"}. With `owner` it belongs to that owner
 * (which must exist and not be banned), else to `default`; both steps in one transaction. */
int srv_adm_client_add(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  const char *name = req->q.client_add.name, *owner = req->q.client_add.owner;
  int64_t now = ctx->now;
  char token[65], hash[65];
  srv_client_t c;
  srv_owner_t o;
  int rc = owner ? srv_owner_find_name(st, owner, &o) : srv_owner_get(st, SRV_OWNER_DEFAULT, &o);
  if (rc == NQ_ENOTFOUND)
    return srv_adm_refuse(err, NQ_ERR_NOT_FOUND, "no such owner '%s' (nq-admin owner add NAME)",
                  owner ? owner : "default");
  if (rc) return srv_adm_store_refuse(st, rc, "owner", err);
  if (o.banned)
    return srv_adm_refuse(err, NQ_ERR_BAD_STATE, "owner '%s' is banned (nq-admin owner unban %s)",
                          o.name,
                  o.name);
  /* The server runs requests inside its batch's transaction; local mode has none open. */
  int own_tx = !srv_store_in_tx(st);
  if (own_tx && (rc = srv_store_begin(st)) != 0) return srv_adm_store_refuse(st, rc, "client", err);
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
  return rc ? srv_adm_store_refuse(st, rc, "client", err) : 0;
}

/* client_ban (idempotent): {"name", "banned": true, "released": leases given back, "reopened":
 * units it had helped verify, re-opened to be verified without it}. */
int srv_adm_client_ban(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  srv_admin_effects_t *fx = ctx->fx;
  srv_client_t c;
  srv_sched_t sch;
  int64_t reopened = 0;
  int rc = srv_adm_sched(ctx, &sch);
  if (rc) return rc;
  rc = srv_client_find_name(st, req->q.client_ban.name, &c);
  if (rc == 0) rc = srv_sched_ban(&sch, c.id, ctx->now, &reopened, &fx->job_reopened);
  if (rc == 0) fx->banned = 1;
  fx->reopened_units = reopened;
  if (rc == 0 && !(*out = nq_view_client_banned_pack(&(nq_view_client_banned_t){
                        c.name, 1, c.banned ? 0 : c.outstanding, reopened})))
    rc = NQ_ENOMEM;
  return rc ? srv_adm_store_refuse(st, rc, "client", err) : 0;
}

/* client_unban: {"name", "banned": false}; the suspicion is lifted too. */
int srv_adm_client_unban(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  const char *name = req->q.client_unban.name;
  srv_client_t c;
  int rc = srv_client_find_name(st, name, &c);
  if (rc == 0) rc = srv_client_unban(st, c.id);
  if (rc == 0 && !(*out = nq_view_client_unbanned_pack(&(nq_view_client_unbanned_t){c.name, 0, 0})))
    rc = NQ_ENOMEM;
  return rc ? srv_adm_store_refuse(st, rc, "client", err) : 0;
}

/* owner_add: an owner NAME with a fresh random enrolment key, which only this reply shows (the
 * store keeps its SHA-256 hex): {"name", "id", "enrol_key"}. */
int srv_adm_owner_add(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  const char *name = req->q.owner_add.name;
  int64_t now = ctx->now;
  char key[65], hash[65];
  srv_owner_t o;
  int rc = nq_random_token(key, 32);
  if (rc == 0) rc = nq_sha256_hex(key, hash);
  if (rc == 0) rc = srv_owner_create(st, name, hash, now, &o);
  if (rc == 0 && !(*out = nq_view_owner_key_pack(&(nq_view_owner_key_t){o.name, o.id, key})))
    rc = NQ_ENOMEM;
  memset(key, 0, sizeof key);
  return rc ? srv_adm_store_refuse(st, rc, "owner", err) : 0;
}

/* owner_unban: {"name", "banned": false, "clients_banned": its clients still banned}. Its key
 * enrols again; its clients keep their own bans (one may have lied): `client unban` lifts them
 * one by one. */
int srv_adm_owner_unban(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  const char *name = req->q.owner_unban.name;
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
  return rc ? srv_adm_store_refuse(st, rc, "owner", err) : 0;
}

/* owner_rekey: a fresh enrolment key for an owner that has one of its own (`default` enrols
 * with the server's enrol.key), shown only in this reply; the old key enrols nobody from now
 * on, while clients enrolled with it keep their tokens: {"name", "id", "enrol_key"}. */
int srv_adm_owner_rekey(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  const char *name = req->q.owner_rekey.name;
  char key[65], hash[65];
  srv_owner_t o;
  int rc = srv_owner_find_name(st, name, &o);
  if (rc) return srv_adm_store_refuse(st, rc, "owner", err);
  if (!o.has_key)
    return srv_adm_refuse(err, NQ_ERR_BAD_STATE,
                          "owner '%s' enrols with the server's enrol.key, not a "
                  "key of its own: replace that file (and restart the server) instead", o.name);
  rc = nq_random_token(key, 32);
  if (rc == 0) rc = nq_sha256_hex(key, hash);
  if (rc == 0) rc = srv_owner_set_key(st, o.id, hash);
  if (rc == 0 && !(*out = nq_view_owner_key_pack(&(nq_view_owner_key_t){o.name, o.id, key})))
    rc = NQ_ENOMEM;
  memset(key, 0, sizeof key);
  return rc ? srv_adm_store_refuse(st, rc, "owner", err) : 0;
}

/* owner_ban: {"name", "banned": true, "clients": banned with it, "reopened"}. */
int srv_adm_owner_ban(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  srv_admin_effects_t *fx = ctx->fx;
  srv_owner_t o;
  srv_sched_t sch;
  int64_t reopened = 0;
  int rc = srv_adm_sched(ctx, &sch);
  if (rc) return rc;
  rc = srv_owner_find_name(st, req->q.owner_ban.name, &o);
  if (rc == 0) rc = srv_sched_ban_owner(&sch, o.id, ctx->now, &reopened, &fx->job_reopened);
  if (rc == 0) fx->banned = 1;
  fx->reopened_units = reopened;
  if (rc == 0 && !(*out = nq_view_owner_banned_pack(&(nq_view_owner_banned_t){
                        o.name, 1, o.clients, reopened})))
    rc = NQ_ENOMEM;
  return rc ? srv_adm_store_refuse(st, rc, "owner", err) : 0;
}

/* owner_trust / owner_untrust: {"name", "trusted", "trusted_owners" (not banned, after
 * it), "recounted"}. The disputed and contested units are counted again at once: with a trusted
 * owner a disagreement waits for its result, without one the votes decide. */
int srv_adm_owner_trust(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  int64_t now = ctx->now;
  int trust = req->cmd == NQ_ADMIN_OWNER_TRUST, recounted = 0;
  int64_t owners = 0;
  srv_owner_t o;
  srv_sched_t sch;
  int rc = srv_adm_sched(ctx, &sch);
  if (rc) return rc;
  rc = srv_owner_find_name(st, req->q.owner_trust.name, &o);
  if (rc == 0 && trust && o.banned)
    return srv_adm_refuse(err, NQ_ERR_BAD_STATE,
                          "owner '%s' is banned: a banned owner is not trusted",
                  o.name);
  if (rc == 0) rc = srv_owner_set_trusted(st, o.id, trust);
  if (rc == 0) rc = srv_sched_recount_disputed(&sch, now, &recounted);
  if (rc == 0) rc = srv_trust_counts(st, now, &owners, NULL);
  if (rc == 0 && !(*out = nq_view_owner_trusted_pack(&(nq_view_owner_trusted_t){
                        o.name, trust, owners, recounted})))
    rc = NQ_ENOMEM;
  return rc ? srv_adm_store_refuse(st, rc, "owner", err) : 0;
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
  srv_adm_list_t *l = arg;
  json_t *o = NULL;
  int rc = signup_view(l->st, su, &o);
  return rc ? rc : srv_adm_append(l->arr, o);
}

/* signups: the pending requests, oldest first (all: every one kept). */
static json_t *signups_json(srv_store_t *st, int64_t all) {
  srv_adm_list_t l = {json_array(), 0, st};
  int rc = l.arr ? srv_signup_list(st, all ? -1 : SRV_SIGNUP_PENDING, 0, signup_cb, &l)
                 : NQ_ENOMEM;
  return srv_adm_wrap(st, "signups", l.arr, rc);
}

/* owner_approve, owner_reject: the operator's word on a pending request. An approved one is
 * completed when its client asks again (it makes the owner then, and gets the keys). */
int srv_adm_signup_decide(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  int64_t id = req->q.owner_approve.id, now = ctx->now;
  srv_signup_state_t to =
      req->cmd == NQ_ADMIN_OWNER_APPROVE ? SRV_SIGNUP_APPROVED : SRV_SIGNUP_REJECTED;
  int rc = srv_signup_decide(st, id, to, now);
  if (rc == NQ_ENOTFOUND)
    return srv_adm_refuse(err, NQ_ERR_NOT_FOUND,
                          "no sign-up request %lld (nq-admin owner requests)",
                  (long long)id);
  if (rc == NQ_ESTATE) return srv_adm_refuse(err, NQ_ERR_BAD_STATE, "%s", srv_store_errmsg(st));
  srv_signup_t su;
  if (rc == 0) rc = srv_signup_get(st, id, &su);
  if (rc == 0) rc = signup_view(st, &su, out);
  return rc ? srv_adm_store_refuse(st, rc, "sign-up", err) : 0;
}


int srv_adm_clients(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  (void)req;
  *out = srv_clients_json(ctx->st, ctx->now);
  return 0;
}

int srv_adm_owners(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  (void)req;
  *out = srv_owners_json(ctx->st, ctx->now);
  return 0;
}

int srv_adm_signups(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  *out = signups_json(ctx->st, req->q.signups.all);
  return 0;
}
