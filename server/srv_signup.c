/* nq-server: sign-ups (see srv_signup.h). Runs inside the batch transaction like every handler:
 * the reply is sent only after the commit. */
#include "srv_signup.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nq/certs.h"
#include "nq/hash.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "srv.h"
#include "srv_req.h"
#include "store_signup.h"

#define HOUR 3600
#define DAY 86400
/* Old rows are pruned at most this often, and kept this long (the windows are a day at most). */
#define PRUNE_EVERY HOUR
#define KEEP (2 * DAY)

/* The address (IPv4; the /64 of IPv6) and network (/24; /48) of a peer, as text. A v4-mapped
 * IPv6 address counts as its IPv4 one. -1 when the address is unknown. */
static int peer_keys(const srv_conn_t *sc, char *addr, char *net, size_t len) {
  struct sockaddr_storage ss;
  unsigned char a[16];
  if (!sc->conn || nq_conn_peer_addr(sc->conn, &ss) != 0) return -1;
  if (ss.ss_family == AF_INET) {
    memcpy(a, &((struct sockaddr_in *)&ss)->sin_addr, 4);
  } else if (ss.ss_family == AF_INET6) {
    const unsigned char *b = ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr;
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(b, mapped, 12) != 0) {
      char t[INET6_ADDRSTRLEN + 8];
      memcpy(a, b, 16);
      memset(a + 8, 0, 8);
      if (!inet_ntop(AF_INET6, a, t, sizeof t)) return -1;
      snprintf(addr, len, "%s/64", t);
      memset(a + 6, 0, 10);
      if (!inet_ntop(AF_INET6, a, t, sizeof t)) return -1;
      snprintf(net, len, "%s/48", t);
      return 0;
    }
    memcpy(a, b + 12, 4);
  } else {
    return -1;
  }
  snprintf(addr, len, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
  snprintf(net, len, "%u.%u.%u.0/24", a[0], a[1], a[2]);
  return 0;
}

static void store_fatal(srv_t *s, srv_req_t *r, const char *what) {
  nq_log(NQ_LOG_ERROR, "sign-up: %s: %s", what, srv_store_errmsg(s->store));
  srv_req_fatal(r, NQ_ERR_INTERNAL, "sign-up failed; retry later");
}

/* A refusal that says when to come back: rate_limited with retry_after (capped at what the
 * protocol carries; the message names the exact time). */
static void refuse_until(srv_req_t *r, int64_t now, int64_t at, const char *what, int limit,
                         const char *per) {
  int64_t wait = at - now + 1;
  if (wait < 1) wait = 1;
  char when[32];
  time_t t = (time_t)(now + wait);
  struct tm tm;
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&t, &tm));
  nq_error_msg_t e = {NQ_ERR_RATE_LIMITED, NULL, NULL, 1, -1, 0,
                      wait > NQ_RETRY_AFTER_MAX ? NQ_RETRY_AFTER_MAX : wait};
  char msg[NQ_PROTO_ERRMSG_MAX];
  snprintf(msg, sizeof msg, "too many sign-ups %s (at most %d %s); try again after %s (in %lld s)",
           what, limit, per, when, (long long)wait);
  e.message = msg;
  srv_req_fatal(r, NQ_ERR_RATE_LIMITED, "%s", msg);
  r->reply = nq_error_pack(&e); /* sent before the close, with retry_after (srv.c) */
}

/* The limits on admitted sign-ups. 0: admitted; -1: r refused. */
static int within_limits(srv_t *s, srv_req_t *r, const char *addr, const char *net, int64_t now) {
  const srv_config_t *c = &s->cfg;
  struct {
    srv_signup_by_t by;
    const char *key, *what, *per;
    int limit;
    int64_t window;
  } lim[] = {{SRV_SIGNUP_BY_ADDR, addr, "from this address", "an hour", c->signup_per_addr, HOUR},
             {SRV_SIGNUP_BY_NET, net, "from this network", "an hour", c->signup_per_net, HOUR},
             {SRV_SIGNUP_BY_ALL, NULL, "on this server today", "a day", c->signup_per_day, DAY}};
  for (size_t i = 0; i < sizeof lim / sizeof *lim; i++) {
    int64_t n = 0, oldest = 0;
    if (srv_signup_window(s->store, lim[i].by, lim[i].key, now - lim[i].window, &n, &oldest)) {
      store_fatal(s, r, "counting");
      return -1;
    }
    if (n >= lim[i].limit) {
      srv_peers_count(&s->peers, r->sc->peer, SRV_PEER_ENROL_RATE);
      refuse_until(r, now, oldest + lim[i].window, lim[i].what, lim[i].limit, lim[i].per);
      return -1;
    }
  }
  if (c->max_clients > 0) {
    int64_t n = 0;
    if (srv_client_count(s->store, &n) != 0) {
      store_fatal(s, r, "counting clients");
      return -1;
    }
    if (n >= c->max_clients) {
      srv_peers_count(&s->peers, r->sc->peer, SRV_PEER_ENROL_CAP);
      srv_req_fatal(r, NQ_ERR_ENROL_CLOSED, "sign-ups closed: this server has its maximum of "
                      "%d clients; ask its operator", c->max_clients);
      return -1;
    }
  }
  return 0;
}

/* The owner, with its key, and this machine's client: the sign-up is complete. */
static void complete(srv_t *s, srv_req_t *r, const srv_signup_t *su, int64_t now) {
  char key[2 * SRV_SECRET_BYTES + 1], token[2 * SRV_SECRET_BYTES + 1], kh[65], th[65];
  char name[SRV_NAME_MAX + 1];
  srv_owner_t o;
  srv_client_t cl;
  int rc = NQ_EEXIST;
  if (nq_random_token(key, SRV_SECRET_BYTES) != 0 || nq_sha256_hex(key, kh) != 0 ||
      nq_random_token(token, SRV_SECRET_BYTES) != 0 || nq_sha256_hex(token, th) != 0) {
    srv_req_fatal(r, NQ_ERR_INTERNAL, "cannot make a key");
    return;
  }
  /* The owner's name is made up (the public name is the volunteer's to choose, and may stay
   * unset): "v-" and 12 hex digits from the CSPRNG; a clash is drawn again. */
  for (int i = 0; i < 4 && rc == NQ_EEXIST; i++) {
    char hex[2 * 6 + 1];
    if (nq_random_token(hex, 6) != 0) break;
    snprintf(name, sizeof name, "v-%s", hex);
    rc = srv_owner_create(s->store, name, kh, now, &o);
  }
  if (rc != 0) {
    store_fatal(s, r, "owner");
    return;
  }
  rc = srv_owner_set_joined(s->store, o.id, su->public_name[0] ? su->public_name : NULL);
  if (rc == NQ_EEXIST) {
    srv_req_fatal(r, NQ_ERR_EXISTS, "the public name %s is taken on this server; join again "
                    "with another --public-name", su->public_name);
    return;
  }
  srv_team_t team;
  if (rc == 0 && su->team[0]) {
    /* The team was there when the request came; one removed since is left out, not refused. */
    int tr = srv_team_find(s->store, su->team, &team);
    if (tr == 0) rc = srv_owner_set_team(s->store, o.id, team.id);
    else if (tr != NQ_ENOTFOUND) rc = tr;
  }
  if (rc == 0) rc = srv_client_enrol(s->store, su->client_name, th, now, &cl);
  if (rc == 0) rc = srv_client_set_owner(s->store, cl.id, o.id);
  if (rc == 0 && su->id > 0) rc = srv_signup_joined(s->store, su->id, o.id);
  if (rc != 0) {
    store_fatal(s, r, "owner and client");
    return;
  }
  nq_log(NQ_LOG_INFO, "sign-up %lld: owner %s%s%s joined with client %s from %s",
         (long long)su->id, o.name, su->public_name[0] ? " shown as " : " (anonymous)",
         su->public_name, cl.name, nq_conn_peer(r->sc->conn));
  nq_signup_reply_t rep = {NQ_SIGNUP_JOINED, o.name, key, cl.name, token, NULL, 0, 0};
  r->reply = nq_signup_reply_pack(&rep);
}

/* A client asks again about its request, with its ticket. */
static void ask_again(srv_t *s, srv_req_t *r, const char *ticket, int64_t now) {
  char h[65];
  srv_signup_t su;
  int rc = nq_sha256_hex(ticket, h) == 0 ? srv_signup_find_ticket(s->store, h, &su) : NQ_EIO;
  if (rc == NQ_ENOTFOUND) {
    srv_req_fatal(r, NQ_ERR_AUTH, "unknown sign-up ticket: the request is gone (completed, or "
                    "pruned); delete signup.ticket in the state folder and join again");
    return;
  }
  if (rc != 0) {
    store_fatal(s, r, "ticket");
    return;
  }
  switch (su.state) {
  case SRV_SIGNUP_PENDING: {
    nq_signup_reply_t rep = {NQ_SIGNUP_PENDING, NULL, NULL, NULL, NULL, NULL, su.id,
                             s->cfg.signup_poll};
    r->reply = nq_signup_reply_pack(&rep);
    return;
  }
  case SRV_SIGNUP_REJECTED:
    srv_req_fatal(r, NQ_ERR_SIGNUP_REJECTED, "the operator rejected sign-up request %lld; ask "
                    "the project's operator why", (long long)su.id);
    return;
  case SRV_SIGNUP_APPROVED:
    complete(s, r, &su, now);
    return;
  default:
    srv_req_fatal(r, NQ_ERR_AUTH, "sign-up request %lld is complete already", (long long)su.id);
  }
}

void srv_signup_handle(srv_t *s, srv_req_t *r, int64_t now) {
  nq_signup_t m;
  nq_proto_err_t err;
  if (nq_signup_parse(r->msg, &m, &err) != 0) {
    srv_req_fatal(r, err.code, "%s", err.message);
    return;
  }
  if (s->cfg.signup == SRV_SIGNUP_OFF) {
    srv_peers_count(&s->peers, r->sc->peer, SRV_PEER_ENROL_CAP);
    srv_req_fatal(r, NQ_ERR_SIGNUP_CLOSED, "this server takes no sign-ups (--signup off): ask "
                    "its operator for an enrolment key (nq-admin owner add --bundle)");
    return;
  }
  if (now - s->signup_pruned >= PRUNE_EVERY) {
    s->signup_pruned = now;
    if (srv_signup_prune(s->store, now - KEEP, NULL) != 0) {
      store_fatal(s, r, "prune");
      return;
    }
  }
  if (m.ticket) {
    ask_again(s, r, m.ticket, now);
    return;
  }
  srv_signup_t su;
  memset(&su, 0, sizeof su);
  if (peer_keys(r->sc, su.addr, su.net, sizeof su.addr) != 0) {
    srv_req_fatal(r, NQ_ERR_INTERNAL, "cannot tell this connection's address");
    return;
  }
  int taken = 0;
  if (m.public_name && srv_public_name_taken(s->store, m.public_name, &taken) != 0) {
    store_fatal(s, r, "public name");
    return;
  }
  if (taken) {
    srv_req_fatal(r, NQ_ERR_EXISTS, "the public name %s is taken on this server; join again "
                    "with another --public-name", m.public_name);
    return;
  }
  srv_team_t team;
  int tr = m.team ? srv_team_find(s->store, m.team, &team) : 0;
  if (tr == NQ_ENOTFOUND) {
    srv_req_fatal(r, NQ_ERR_NOT_FOUND, "no team %s on this server (its operator makes teams: "
                    "nq-admin team add); join without --team or with another", m.team);
    return;
  }
  if (tr != 0) {
    store_fatal(s, r, "team");
    return;
  }
  if (within_limits(s, r, su.addr, su.net, now) != 0) return;
  su.at = now;
  snprintf(su.client_name, sizeof su.client_name, "%s", m.name);
  snprintf(su.public_name, sizeof su.public_name, "%s", m.public_name ? m.public_name : "");
  snprintf(su.team, sizeof su.team, "%s", m.team ? m.team : "");
  if (s->cfg.signup == SRV_SIGNUP_OPEN) {
    su.state = SRV_SIGNUP_JOINED;
    if (srv_signup_add(s->store, &su, NULL, &su.id) != 0) {
      store_fatal(s, r, "record");
      return;
    }
    complete(s, r, &su, now);
    return;
  }
  int64_t pending = 0;
  if (srv_signup_pending_count(s->store, &pending) != 0) {
    store_fatal(s, r, "pending");
    return;
  }
  if (pending >= s->cfg.signup_pending) {
    srv_peers_count(&s->peers, r->sc->peer, SRV_PEER_ENROL_CAP);
    nq_error_msg_t e = {NQ_ERR_RATE_LIMITED, NULL, NULL, 1, -1, 0, NQ_RETRY_AFTER_MAX};
    char msg[NQ_PROTO_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%lld sign-up requests already wait for the operator (at most %d); "
             "try again in an hour", (long long)pending, s->cfg.signup_pending);
    e.message = msg;
    srv_req_fatal(r, NQ_ERR_RATE_LIMITED, "%s", msg);
    r->reply = nq_error_pack(&e);
    return;
  }
  char ticket[2 * SRV_SECRET_BYTES + 1], th[65];
  if (nq_random_token(ticket, SRV_SECRET_BYTES) != 0 || nq_sha256_hex(ticket, th) != 0) {
    srv_req_fatal(r, NQ_ERR_INTERNAL, "cannot make a ticket");
    return;
  }
  su.state = SRV_SIGNUP_PENDING;
  if (srv_signup_add(s->store, &su, th, &su.id) != 0) {
    store_fatal(s, r, "record");
    return;
  }
  nq_log(NQ_LOG_INFO, "sign-up request %lld from %s (client %s%s%s) waits for the operator: "
         "nq-admin owner approve %lld (or reject)", (long long)su.id, nq_conn_peer(r->sc->conn),
         su.client_name, su.public_name[0] ? ", public name " : "", su.public_name,
         (long long)su.id);
  nq_signup_reply_t rep = {NQ_SIGNUP_PENDING, NULL, NULL, NULL, NULL, ticket, su.id,
                           s->cfg.signup_poll};
  r->reply = nq_signup_reply_pack(&rep);
}
