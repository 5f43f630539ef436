/* nq-server: the message handlers (docs/protocol.md). Each runs inside the batch transaction opened
 * by srv.c and only prepares its reply; srv.c sends it after the commit. Messages are read and
 * built only through nq/proto.h (common/net/proto.c); dispatch is the table at the end. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_api.h"
#include "nq/certs.h"
#include "nq/hash.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "srv.h"
#include "srv_req.h"
#include "srv_signup.h"
#include "store_export.h"
#include "store_kernels.h"
#include "web.h"

#include <arpa/inet.h>

#include "nq/addr.h"

static int news_item_cb(const srv_news_t *n, void *arg) {
  srv_news_buf_t *b = arg;
  if (b->msg.n >= NQ_PROTO_NEWS_MAX) return 0;
  b->items[b->msg.n] = *n;
  srv_news_t *it = &b->items[b->msg.n];
  b->msg.items[b->msg.n++] = (nq_news_item_t){it->id, it->at, it->text};
  return 0;
}

int srv_proto_news(srv_t *s, srv_news_buf_t *b) {
  memset(b, 0, sizeof *b);
  int rc = srv_news_list(s->store, NQ_PROTO_NEWS_MAX, news_item_cb, b);
  if (rc) {
    nq_log(NQ_LOG_WARN, "reading the news: %s", srv_store_errmsg(s->store));
    memset(b, 0, sizeof *b);
  }
  return rc;
}

/* A non-fatal error reply about assignment `id` (id < 0: none). */
static void reply_error(srv_req_t *r, nq_errcode_t code, const char *message, int64_t id) {
  nq_error_msg_t e = {code, NULL, message, 0, id, 0, 0};
  r->reply = nq_error_pack(&e);
}

/* The answer to a message its parser refused: the error frame the parser chose. */
static void refuse(srv_req_t *r, const nq_proto_err_t *err) {
  if (err->fatal) srv_req_fatal(r, err->code, "%s", err->message);
  else reply_error(r, err->code, err->message, err->id);
  if (err->fatal && err->min_version > 0) {
    /* upgrade_required names the minimum in a field of its own: the frame is sent before the
     * close (srv.c) instead of the plain code-and-message one. */
    nq_error_msg_t e = {err->code, NULL, err->message, 1, -1, err->min_version, 0};
    r->reply = nq_error_pack(&e);
  }
}

/* Map a scheduler failure that is fatal for the connection. */
static void sched_fatal(srv_t *s, srv_req_t *r, int rc, const char *what) {
  if (rc == NQ_EBANNED) {
    srv_req_fatal(r, NQ_ERR_BANNED, "client %s is banned", r->sc->name);
  } else if (rc == NQ_ENOTFOUND) {
    srv_req_fatal(r, NQ_ERR_AUTH, "client %s no longer exists", r->sc->name);
  } else {
    nq_log(NQ_LOG_ERROR, "%s for %s: %s", what, r->sc->name, srv_store_errmsg(s->store));
    srv_req_fatal(r, NQ_ERR_INTERNAL, "store failure; retry later");
  }
}

/* ---- hello ---- */

/* A successful login gets its own INFO line while fewer than SRV_LOGIN_LINES_MAX were logged in
 * the current summary interval; past that it is counted for the summary (one token reconnecting
 * in a loop wrote 1,772 lines in 10 s). */
static int login_loggable(srv_t *s, const srv_conn_t *sc) {
  if (s->login_lines < SRV_LOGIN_LINES_MAX) {
    s->login_lines++;
    return 1;
  }
  srv_peers_count(&s->peers, sc->peer, SRV_PEER_LOGIN_QUIET);
  return 0;
}

/* Compare the SHA-256 of `secret` with the hash stored under meta key `key`. */
static int secret_matches(srv_t *s, const char *key, const char *secret) {
  char want[SRV_HASH_MAX + 1], got[65];
  if (srv_meta_get(s->store, key, want, sizeof want) != 0) return 0;
  if (nq_sha256_hex(secret, got) != 0) return 0;
  return nq_secure_streq(want, got);
}

/* The public page's address for welcome (srv_cfg_t.page_url), in buf; NULL when there is none. */
static const char *page_url(srv_t *s, char *buf, size_t len) {
  if (s->cfg.page_url) return s->cfg.page_url;
  const char *b = srv_web_bound(s);
  if (!b || !strncmp(b, "0.0.0.0:", 8) || !strncmp(b, "[::]:", 5)) return NULL;
  snprintf(buf, len, "http://%s/", b);
  return buf;
}

/* What a client hears when no job runs: `waiting` if it waits between jobs (its hello said `wait`)
 * and the server stays up for the next one; else `done`, as before the job queue. */
static nq_job_state_t done_state(const srv_t *s, int waits) {
  return waits && !s->cfg.exit_when_done ? NQ_JOB_WAITING : NQ_JOB_DONE;
}

/* client_id > 0: a client session, told its public name and credit too. */
static json_t *welcome_new(srv_t *s, int64_t speak, const char *client, const char *token,
                           int64_t client_id, int waits) {
  const srv_job_t *j = &s->sched.job;
  int interval = s->cfg.sched.lease_seconds / 4;
  /* A finished job with spot checks still wanted is not done for a client: it may be the owner
   * that checks them (get_work says `done` to one that may not). */
  int64_t spot = 0;
  if (s->job_done && client && srv_job_spot_pending(s->store, j->id, &spot) != 0) spot = 0;
  nq_welcome_t w = {speak, client, token, j->n, j->depth,
                    s->job_done && spot == 0 ? done_state(s, waits) : NQ_JOB_RUNNING,
                    s->cfg.sched.max_outstanding, interval < 1 ? 1 : interval, NULL, NULL, NULL,
                    s->evkey_fpr[0] ? s->evkey_fpr : NULL, {0}};
  char url[NQ_PROTO_PAGE_MAX + 1], credit[40];
  srv_news_buf_t news;
  if (client_id > 0 && srv_proto_news(s, &news) == 0) w.news = news.msg;
  srv_credit_t c;
  if (client_id > 0) {
    w.page = page_url(s, url, sizeof url);
    /* informative: a store failure leaves the fields out rather than refusing the session */
    if (srv_credit_get(s->store, client_id, &c) == 0) {
      w.shown_as = c.display;
      w.credit = nq_u128_str(c.credit, credit);
    }
  }
  return nq_welcome_pack(&w);
}

/* The network a peer ("ip:port", "[ipv6]:port") is on, for --quorum-distinct network: the /24 of
 * an IPv4 address, the /64 of an IPv6 one, as text ("" when the address does not parse). */
static void peer_net(const char *peer, char *net, size_t len) {
  char host[NQ_HOST_MAX];
  int port = 0;
  unsigned char a[16];
  net[0] = 0;
  if (nq_hostport_parse(peer, host, sizeof host, &port, 0) != 0) return;
  if (inet_pton(AF_INET, host, a) == 1) {
    snprintf(net, len, "%u.%u.%u.0/24", a[0], a[1], a[2]);
  } else if (inet_pton(AF_INET6, host, a) == 1) {
    memset(a + 8, 0, 8);
    char t[INET6_ADDRSTRLEN];
    if (inet_ntop(AF_INET6, a, t, sizeof t)) snprintf(net, len, "%s/64", t);
  }
}

/* The client authenticated on this connection: remember its network (informative; a failure here
 * is not worth a refusal, the scheduler then treats its results as from a network of its own).
 * When it was seen, its software and protocol are recorded once per hello (srv_client_hello). */
static void client_seen(srv_t *s, srv_req_t *r, int64_t client_id) {
  char net[INET6_ADDRSTRLEN + 8]; /* the /64 text of any IPv6 address */
  peer_net(nq_conn_peer(r->sc->conn), net, sizeof net);
  srv_client_set_net(s->store, client_id, net);
}

/* The owner an enrolment key belongs to: the server's own key is the default owner's; an owner's
 * key (nq-admin owner add) is that owner's. NQ_ENOTFOUND for a wrong key, NQ_EBANNED for the key
 * of a banned owner, NQ_ESTATE for the server's own key once owners exist (whoever
 * holds it and an owner key would have two votes) unless --keep-default-enrol. */
static int enrol_owner(srv_t *s, const char *key, int64_t *owner_id) {
  char hash[65];
  srv_owner_t o;
  if (secret_matches(s, SRV_META_ENROL_HASH, key)) {
    int64_t owners = 0;
    if (!s->cfg.keep_default_enrol && srv_owner_count_named(s->store, &owners) != 0)
      return NQ_EIO;
    if (owners > 0) return NQ_ESTATE;
    *owner_id = SRV_OWNER_DEFAULT;
    return 0;
  }
  if (nq_sha256_hex(key, hash) != 0) return NQ_ENOTFOUND;
  int rc = srv_owner_find_key(s->store, hash, &o);
  if (rc) return rc;
  if (o.banned) return NQ_EBANNED;
  *owner_id = o.id;
  return 0;
}

/* Identities cost something: the total is capped (--max-clients) and each address may enrol
 * only so often (--enrol-per-addr, peers.h). Returns 0, or -1 with r refused. */
static int enrol_allowed(srv_t *s, srv_req_t *r) {
  srv_peer_t *pe = r->sc->peer;
  if (s->cfg.max_clients > 0) {
    int64_t n = 0;
    if (srv_client_count(s->store, &n) != 0) {
      nq_log(NQ_LOG_ERROR, "enrolment: %s", srv_store_errmsg(s->store));
      srv_req_fatal(r, NQ_ERR_INTERNAL, "enrolment failed; retry later");
      return -1;
    }
    if (n >= s->cfg.max_clients) {
      srv_peers_count(&s->peers, pe, SRV_PEER_ENROL_CAP);
      srv_req_fatal(r, NQ_ERR_ENROL_CLOSED, "enrolment closed: this server has its maximum of "
                      "%d clients; ask its operator", s->cfg.max_clients);
      return -1;
    }
  }
  if (!srv_peer_enrol_take(&s->peers, pe, uv_now(s->loop))) {
    srv_peers_count(&s->peers, pe, SRV_PEER_ENROL_RATE);
    srv_req_fatal(r, NQ_ERR_RATE_LIMITED, "too many enrolments from this address (at most %d "
                    "an hour); try again later", s->cfg.enrol_per_addr);
    return -1;
  }
  return 0;
}

/* Enrolment: a new client with a fresh token, returned once in the welcome. */
static int hello_enrol(srv_t *s, srv_req_t *r, const nq_hello_t *h, int64_t now, char *token) {
  char hash[65];
  srv_client_t cl;
  int64_t owner = 0;
  int rc = enrol_owner(s, h->enrol, &owner);
  if (rc == NQ_EBANNED) {
    srv_req_fatal(r, NQ_ERR_AUTH, "this enrolment key was revoked (its owner is banned)");
    return -1;
  }
  if (rc == NQ_ESTATE) {
    /* At most sizeof err_msg - 1 (159) characters. */
    srv_req_fatal(r, NQ_ERR_ENROL_CLOSED, "the server's own enrolment key is closed: owners "
                    "exist; enrol with your owner's key (nq-admin owner add), or the operator "
                    "keeps it open (--keep-default-enrol)");
    return -1;
  }
  if (rc == NQ_EIO) {
    nq_log(NQ_LOG_ERROR, "enrolment: %s", srv_store_errmsg(s->store));
    srv_req_fatal(r, NQ_ERR_INTERNAL, "enrolment failed; retry later");
    return -1;
  }
  if (rc != 0) {
    srv_req_fatal(r, NQ_ERR_AUTH, "wrong enrolment key");
    return -1;
  }
  if (enrol_allowed(s, r) != 0) return -1;
  if (nq_random_token(token, SRV_SECRET_BYTES) != 0 || nq_sha256_hex(token, hash) != 0) {
    srv_req_fatal(r, NQ_ERR_INTERNAL, "cannot make a token");
    return -1;
  }
  rc = srv_client_enrol(s->store, h->name, hash, now, &cl);
  if (rc == NQ_EINVAL) {
    srv_req_fatal(r, NQ_ERR_BAD_MESSAGE, "hello: bad client name");
    return -1;
  }
  if (rc == 0 && owner != SRV_OWNER_DEFAULT) rc = srv_client_set_owner(s->store, cl.id, owner);
  if (rc != 0) {
    nq_log(NQ_LOG_ERROR, "enrol %s: %s", h->name, srv_store_errmsg(s->store));
    srv_req_fatal(r, NQ_ERR_INTERNAL, "enrolment failed; retry later");
    return -1;
  }
  r->sc->client_id = cl.id;
  snprintf(r->sc->name, sizeof r->sc->name, "%s", cl.name);
  client_seen(s, r, cl.id);
  nq_log(NQ_LOG_INFO, "enrolled client %s from %s", cl.name, nq_conn_peer(r->sc->conn));
  return 0;
}

static int hello_token(srv_t *s, srv_req_t *r, const nq_hello_t *h, int64_t now) {
  char hash[65];
  srv_client_t cl;
  if (nq_sha256_hex(h->token, hash) != 0) {
    srv_req_fatal(r, NQ_ERR_INTERNAL, "cannot hash the token");
    return -1;
  }
  int rc = srv_client_find_token(s->store, hash, &cl);
  if (rc == NQ_ENOTFOUND) {
    srv_req_fatal(r, NQ_ERR_AUTH, "unknown token");
    return -1;
  }
  if (rc != 0) {
    nq_log(NQ_LOG_ERROR, "token lookup: %s", srv_store_errmsg(s->store));
    srv_req_fatal(r, NQ_ERR_INTERNAL, "store failure; retry later");
    return -1;
  }
  if (cl.banned) {
    srv_req_fatal(r, NQ_ERR_BANNED, "client %s is banned", cl.name);
    return -1;
  }
  client_seen(s, r, cl.id);
  r->sc->client_id = cl.id;
  snprintf(r->sc->name, sizeof r->sc->name, "%s", cl.name);
  return 0;
}

static void h_hello(srv_t *s, srv_req_t *r, int64_t now) {
  nq_hello_t h;
  nq_proto_err_t err;
  if (nq_hello_parse(r->msg, &h, &err) != 0) {
    refuse(r, &err);
    return;
  }
  srv_conn_t *sc = r->sc;
  if (h.role == NQ_ROLE_ADMIN) {
    if (!secret_matches(s, SRV_META_ADMIN_HASH, h.token)) {
      srv_req_fatal(r, NQ_ERR_AUTH, "wrong admin token");
      return;
    }
    sc->state = SRV_CONN_ADMIN;
    snprintf(sc->name, sizeof sc->name, "admin");
    if (login_loggable(s, sc))
      nq_log(NQ_LOG_INFO, "admin connected from %s", nq_conn_peer(sc->conn));
    r->reply = welcome_new(s, h.speak, NULL, NULL, 0, 0);
    return;
  }
  char token[2 * SRV_SECRET_BYTES + 1];
  int enrolled = h.enrol != NULL;
  if ((enrolled ? hello_enrol(s, r, &h, now, token) : hello_token(s, r, &h, now)) != 0) return;
  /* The name to be shown under on the public page, or none (anonymous), as of this hello. */
  if (srv_client_set_public_name(s->store, sc->client_id, h.public_name) != 0)
    nq_log(NQ_LOG_WARN, "public name of %s: %s", sc->name, srv_store_errmsg(s->store));
  sc->state = SRV_CONN_CLIENT;
  sc->waits = h.wait;
  /* Seen now, and what it runs (for `nq-admin clients`): informative, so a failure is only
   * logged, not worth a refusal. */
  if (srv_client_hello(s->store, sc->client_id, now, h.software, h.speak) != 0)
    nq_log(NQ_LOG_WARN, "cannot record the version of client %s: %s", sc->name,
           srv_store_errmsg(s->store));
  /* Its own kernel, as it says: the kernel rule then names it the others from its first lease,
   * rather than taking the kernels it was named for its kind (docs/reliability.md). A claim
   * buys nothing: a named kernel is still the one a result must come from. */
  if (h.kernel && srv_client_kernel_native_set(s->store, sc->client_id, h.kernel) != 0)
    nq_log(NQ_LOG_WARN, "cannot record the kernel of client %s: %s", sc->name,
           srv_store_errmsg(s->store));
  if (login_loggable(s, sc))
    nq_log(NQ_LOG_INFO, "client %s connected from %s (%s, %d threads, %s, protocol %lld)",
           sc->name, nq_conn_peer(sc->conn), h.solver ? h.solver : "?",
           h.threads ? h.threads : 1, h.software ? h.software : "?", (long long)h.speak);
  r->reply = welcome_new(s, h.speak, sc->name, enrolled ? token : NULL, sc->client_id,
                         sc->waits);
}

/* ---- client requests ---- */

static void h_get_work(srv_t *s, srv_req_t *r, int64_t now) {
  nq_get_work_t g;
  nq_proto_err_t err;
  if (nq_get_work_parse(r->msg, &g, &err) != 0) {
    refuse(r, &err);
    return;
  }
  /* One reply's worth of assignments (NQ_PROTO_WANT_MAX): kept off the stack of the loop. */
  srv_work_t *out = malloc((size_t)g.want * sizeof *out);
  nq_work_t *w = malloc(sizeof *w);
  if (!out || !w) {
    srv_req_fatal(r, NQ_ERR_INTERNAL, "out of memory");
    goto out;
  }
  int n = 0;
  srv_nowork_t why = SRV_NOWORK_NONE;
  int rc = srv_sched_get_work(&s->sched, r->sc->client_id, g.want, now, out, &n, &why);
  if (rc != 0) {
    sched_fatal(s, r, rc, "get_work");
  } else if (n > 0) {
    assert(n <= g.want);
    w->n = n;
    for (int i = 0; i < n; i++)
      w->a[i] = (nq_assignment_t){out[i].id, out[i].unit, out[i].deadline,
                                  out[i].deadline > now ? out[i].deadline - now : 0,
                                  out[i].kernel[0] ? out[i].kernel : NULL};
    r->reply = nq_work_pack(w);
  } else {
    nq_no_work_t nw = {s->cfg.sched.retry_after, srv_nowork_code(why)};
    if (nw.reason == NQ_NOWORK_DONE && done_state(s, r->sc->waits) == NQ_JOB_WAITING)
      nw.reason = NQ_NOWORK_WAITING;
    r->reply = nq_no_work_pack(&nw);
  }
out:
  free(w);
  free(out);
}

static void h_progress(srv_t *s, srv_req_t *r, int64_t now) {
  nq_progress_t p;
  nq_proto_err_t err;
  if (nq_progress_parse(r->msg, &p, &err) != 0) {
    refuse(r, &err);
    return;
  }
  nq_lease_t l = {p.id, 0};
  int rc = srv_sched_progress(&s->sched, r->sc->client_id, &p, now, &l.deadline);
  if (rc == 0)
    r->reply = nq_lease_pack(&l);
  else if (rc == NQ_EEXPIRED)
    reply_error(r, NQ_ERR_LEASE_EXPIRED, "the lease expired and the unit went to another client; "
                "a result is still taken until the unit is decided", p.id);
  else if (rc == NQ_ENOTFOUND)
    reply_error(r, NQ_ERR_UNKNOWN_ASSIGNMENT, "no such running assignment of this client", p.id);
  else
    sched_fatal(s, r, rc, "progress");
}

static void h_result(srv_t *s, srv_req_t *r, int64_t now) {
  nq_result_t res;
  nq_proto_err_t err;
  if (nq_result_parse(r->msg, &res, &err) != 0) {
    refuse(r, &err);
    return;
  }
  srv_result_info_t info;
  memset(&info, 0, sizeof info);
  int rc = srv_sched_result(&s->sched, r->sc->client_id, &res, now, &info);
  switch (rc) {
  case 0: {
    nq_ack_t a = {.id = res.id, .status = srv_result_ack(info.status)};
    /* The credit as this answer leaves (informative: a store failure leaves it out). */
    srv_credit_t cr;
    char credit[40];
    if (srv_credit_get(s->store, r->sc->client_id, &cr) == 0)
      a.credit = nq_u128_str(cr.credit, credit);
    /* The receipt: the result's leaf in the job's Merkle tree, as the export will write it. */
    char unit[NQ_UNIT_TEXT_MAX], leaf[65];
    unsigned char md[32];
    if (srv_result_leaf(s->store, res.id, &a.job, unit, sizeof unit, md) == 0) {
      nq_hex_encode(md, sizeof md, leaf);
      a.has_receipt = 1;
      a.unit = unit;
      a.leaf = leaf;
    }
    s->metrics.results[info.status == SRV_RESULT_DUPLICATE ? SRV_OUTCOME_DUPLICATE
                       : info.status == SRV_RESULT_LATE    ? SRV_OUTCOME_LATE
                                                           : SRV_OUTCOME_ACCEPTED]++;
    r->reply = nq_ack_pack(&a);
    if (info.unit_disputed)
      nq_log(NQ_LOG_WARN, "unit of assignment %lld is disputed", (long long)res.id);
    /* Trusted resolution. */
    if (info.unit_contested)
      nq_log(NQ_LOG_WARN, "unit of assignment %lld is contested: its results disagree; it waits "
             "for a trusted owner's result", (long long)res.id);
    if (info.unit_settled)
      nq_log(NQ_LOG_WARN, "unit of assignment %lld settled by a trusted owner's result%s",
             (long long)res.id, info.banned ? "; the owners it proved wrong are banned" : "");
    if (info.banned) {
      nq_log(NQ_LOG_WARN, "%d client(s) auto-banned", info.banned);
      s->ban_pending = 1;
    }
    if (info.unit_reopened)
      nq_log(NQ_LOG_WARN, "spot check of assignment %lld disagreed: the unit is re-opened%s",
             (long long)res.id, info.suspects ? " and its colluders marked suspect" : "");
    else if (info.suspects)
      nq_log(NQ_LOG_WARN, "%d client(s) agreed on a losing answer: marked suspect",
             info.suspects);
    if (info.job_reopened) s->reopen_pending = 1;
    if (info.job_done) s->done_pending = 1;
    break;
  }
  case NQ_ENOTFOUND:
    reply_error(r, NQ_ERR_UNKNOWN_ASSIGNMENT, "no such assignment", res.id);
    break;
  case NQ_EAUTH:
    reply_error(r, NQ_ERR_NOT_YOURS, "the assignment belongs to another client", res.id);
    break;
  case NQ_EINVAL:
    reply_error(r, NQ_ERR_BAD_RESULT, srv_store_errmsg(s->store), res.id);
    break;
  default:
    sched_fatal(s, r, rc, "result");
  }
  if (rc == NQ_ENOTFOUND || rc == NQ_EAUTH || rc == NQ_EINVAL)
    s->metrics.results[SRV_OUTCOME_INVALID]++;
}

/* ---- admin, bye, error ---- */

static void h_admin(srv_t *s, srv_req_t *r, int64_t now) {
  nq_admin_req_t req;
  nq_proto_err_t err;
  if (nq_admin_req_parse(r->msg, &req, &err) != 0) {
    refuse(r, &err);
    return;
  }
  json_t *data = NULL;
  srv_admin_effects_t fx;
  if (srv_admin_call(s->store, &s->sched.job, s->sched.job.id, &s->sched.cfg, &req, now, &data,
                     &fx, &err) != 0) {
    if (err.code == NQ_ERR_INTERNAL) {
      nq_log(NQ_LOG_ERROR, "admin command %s: %s", nq_admin_cmd_name(req.cmd), err.message);
      srv_req_fatal(r, NQ_ERR_INTERNAL, "store failure; retry later");
    } else {
      refuse(r, &err);
    }
    return;
  }
  /* A ban takes effect on the client's open connection too, once the batch has committed. */
  if (fx.banned) s->ban_pending = 1;
  if (fx.reopened && req.cmd == NQ_ADMIN_UNIT_RETRY)
    nq_log(NQ_LOG_INFO, "admin: unit %s retried for %lld more result(s)", fx.unit,
           (long long)fx.added);
  else if (fx.reopened_units)
    nq_log(NQ_LOG_INFO, "admin %s: %lld unit(s) re-opened", nq_admin_cmd_name(req.cmd),
           (long long)fx.reopened_units);
  if (fx.job_reopened) s->reopen_pending = 1;
  if (fx.queued) s->queue_pending = 1;
  if (fx.next) s->next_pending = fx.next;
  if (fx.job_done) s->done_pending = 1;
  if (fx.news) s->news_pending = 1;
  nq_admin_reply_t rep = {req.cmd, data};
  r->reply = nq_admin_reply_pack(&rep);
  json_decref(data);
}

static void h_bye(srv_t *s, srv_req_t *r, int64_t now) {
  (void)s;
  (void)now;
  srv_req_fatal(r, NQ_ERR_NONE, "bye");
}

/* A client cannot run the kernel its assignment names: the unit goes elsewhere. Nothing is sent
 * back on success (the client has let the unit go); an unknown assignment is answered as
 * progress would be. */
static void h_no_kernel(srv_t *s, srv_req_t *r, int64_t id, int64_t now) {
  char kernel[NQ_KERNEL_NAME_MAX];
  int rc = srv_sched_refuse(&s->sched, r->sc->client_id, id, now, kernel, sizeof kernel);
  if (rc == 0)
    nq_log(NQ_LOG_INFO, "%s cannot run kernel %s: assignment %lld goes elsewhere", r->sc->name,
           kernel, (long long)id);
  else if (rc == NQ_ENOTFOUND)
    reply_error(r, NQ_ERR_UNKNOWN_ASSIGNMENT, "no such running assignment naming a kernel", id);
  else
    sched_fatal(s, r, rc, "no_kernel");
}

static void h_error(srv_t *s, srv_req_t *r, int64_t now) {
  (void)s;
  (void)now;
  nq_error_msg_t e;
  nq_proto_err_t err;
  if (nq_error_parse(r->msg, &e, &err) != 0) {
    refuse(r, &err);
    return;
  }
  nq_log(NQ_LOG_INFO, "%s sent error %s: %s", r->sc->name, e.name, e.message);
  if (e.fatal) srv_req_fatal(r, NQ_ERR_NONE, "peer error");
  else if (e.code == NQ_ERR_NO_KERNEL && e.id >= 0 && r->sc->client_id > 0)
    h_no_kernel(s, r, e.id, now);
}

/* A sign-up (srv_signup.h): once per connection, before hello. */
static void h_signup(srv_t *s, srv_req_t *r, int64_t now) {
  if (r->sc->signed_up) {
    srv_req_fatal(r, NQ_ERR_NOT_HELLO, "one signup per connection; hello comes next");
    return;
  }
  r->sc->signed_up = 1;
  srv_signup_handle(s, r, now);
}

/* ---- dispatch ---- */

enum { R_HELLO = 1, R_CLIENT = 2, R_ADMIN = 4 };

/* What a peer may send, by message type: the states in which it is valid and its handler. Types
 * the server only sends (welcome, work, ...) have no handler and are unknown here. */
static const struct {
  int roles;
  void (*fn)(srv_t *s, srv_req_t *r, int64_t now);
} handlers[NQ_MSG_COUNT] = {
    [NQ_MSG_HELLO] = {R_HELLO, h_hello},
    [NQ_MSG_GET_WORK] = {R_CLIENT, h_get_work},
    [NQ_MSG_PROGRESS] = {R_CLIENT, h_progress},
    [NQ_MSG_RESULT] = {R_CLIENT, h_result},
    [NQ_MSG_ADMIN] = {R_ADMIN, h_admin},
    [NQ_MSG_BYE] = {R_CLIENT | R_ADMIN, h_bye},
    [NQ_MSG_ERROR] = {R_CLIENT | R_ADMIN, h_error},
    [NQ_MSG_SIGNUP] = {R_HELLO, h_signup},
};

void srv_proto_handle(srv_t *s, srv_req_t *r, int64_t now) {
  const char *name;
  nq_msg_type_t t = nq_msg_type(r->msg, &name);
  if (!name) {
    srv_req_fatal(r, NQ_ERR_UNKNOWN_TYPE, "the message has no string field type");
    return;
  }
  if (!handlers[t].fn) {
    srv_req_fatal(r, NQ_ERR_UNKNOWN_TYPE, "unknown message type \"%.40s\"", name);
    return;
  }
  srv_conn_state_t st = r->sc->state;
  assert(st != SRV_CONN_DEAD); /* batch_run skips the requests of dead connections */
  int role = st == SRV_CONN_AWAIT_HELLO ? R_HELLO : st == SRV_CONN_CLIENT ? R_CLIENT : R_ADMIN;
  if (!(handlers[t].roles & role)) {
    if (role == R_HELLO)
      srv_req_fatal(r, NQ_ERR_NOT_HELLO, "the first message must be hello, not %s", name);
    else if (t == NQ_MSG_HELLO)
      srv_req_fatal(r, NQ_ERR_NOT_HELLO, "hello was already received");
    else
      srv_req_fatal(r, NQ_ERR_UNKNOWN_TYPE, "%s is not valid for role %s", name,
                      role == R_CLIENT ? "client" : "admin");
    return;
  }
  uint64_t t0 = uv_hrtime();
  handlers[t].fn(s, r, now);
  if (t == NQ_MSG_GET_WORK) srv_hist_observe(&s->metrics.get_work, srv_metrics_since(t0));
  /* Every request but a peer's error frame is answered; a reply that could not be built (out of
   * memory) must not leave a pipelining client waiting forever. */
  if (!r->reply && !r->close && t != NQ_MSG_ERROR)
    srv_req_fatal(r, NQ_ERR_INTERNAL, "out of memory");
}
