/* nq-server core: the admin commands of the public family -- the project's news (news,
 * news_add, news_remove) and teams (teams, team_add, team_rename, team_remove) -- and the
 * volunteers' and teams' rankings the page shows. */
#include "admin_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/nq.h"

/* ---- news and teams (store_community.h) ---- */

static int news_cb(const srv_news_t *n, void *arg) {
  srv_adm_list_t *l = arg;
  return srv_adm_append(l->arr, nq_view_news_item_pack(&(nq_view_news_item_t){n->id, n->at,
                                                                              n->text}));
}

json_t *srv_news_json(srv_store_t *st, int limit) {
  srv_adm_list_t l = {json_array(), 0, st};
  int rc = l.arr ? srv_news_list(st, limit, news_cb, &l) : NQ_ENOMEM;
  return srv_adm_wrap(st, "news", l.arr, rc);
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
    rc = srv_adm_append(arr, nq_view_volunteer_pack(&x));
  }
  free(v);
  return srv_adm_wrap(st, "volunteers", arr, rc);
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
    rc = srv_adm_append(arr, nq_view_team_pack(&x));
  }
  free(v);
  free(r.v);
  return srv_adm_wrap(st, "teams", arr, rc);
}

int srv_adm_news_add(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  srv_news_t n;
  int rc = srv_news_add(st, req->q.news_add.text, ctx->now, &n);
  if (rc == NQ_EINVAL) return srv_adm_refuse(err, NQ_ERR_BAD_MESSAGE, "%s", srv_store_errmsg(st));
  if (rc == 0 && !(*out = nq_view_news_item_pack(&(nq_view_news_item_t){n.id, n.at, n.text})))
    rc = NQ_ENOMEM;
  if (rc == 0) ctx->fx->news = 1;
  return rc ? srv_adm_store_refuse(st, rc, "news", err) : 0;
}

int srv_adm_news_remove(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  int rc = srv_news_remove(st, req->q.news_remove.id);
  if (rc == NQ_ENOTFOUND)
    return srv_adm_refuse(err, NQ_ERR_NOT_FOUND, "no news item %lld (nq-admin news list)",
                  (long long)req->q.news_remove.id);
  if (rc == 0 && !(*out = srv_news_json(st, 0))) rc = NQ_EIO;
  return rc ? srv_adm_store_refuse(st, rc, "news", err) : 0;
}

int srv_adm_team(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  srv_store_t *st = ctx->st;
  nq_proto_err_t *err = ctx->err;
  /* team_add and team_remove take q_team, team_rename q_team_rename. */
  int rename = req->cmd == NQ_ADMIN_TEAM_RENAME;
  const char *name = rename ? req->q.team_rename.name : req->q.team_add.name;
  const char *to = rename ? req->q.team_rename.to : NULL;
  int rc = req->cmd == NQ_ADMIN_TEAM_ADD ? srv_team_add(st, name, ctx->now, NULL)
           : rename                      ? srv_team_rename(st, name, to)
                                         : srv_team_remove(st, name);
  if (rc == NQ_EEXIST)
    return srv_adm_refuse(err, NQ_ERR_EXISTS, "a team named %s exists", rename ? to : name);
  if (rc == NQ_ENOTFOUND) return srv_adm_refuse(err, NQ_ERR_NOT_FOUND, "no team %s", name);
  if (rc == NQ_EINVAL) return srv_adm_refuse(err, NQ_ERR_BAD_MESSAGE, "%s", srv_store_errmsg(st));
  if (rc == 0 && !(*out = srv_teams_json(st))) rc = NQ_EIO;
  return rc ? srv_adm_store_refuse(st, rc, "team", err) : 0;
}


int srv_adm_news(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  (void)req;
  *out = srv_news_json(ctx->st, 0);
  return 0;
}

int srv_adm_teams(srv_admin_ctx_t *ctx, const nq_admin_req_t *req, json_t **out) {
  (void)req;
  *out = srv_teams_json(ctx->st);
  return 0;
}
