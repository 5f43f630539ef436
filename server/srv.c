/* nq-server: the server context -- listener, connections, timers, signals and the group commit
 * (see srv.h and docs/server.md). The message handlers live in srv_proto.c. */
#include "srv.h"
#include "evkey.h"
#include "srv_cert.h"
#include "srv_req.h"
#include "web.h"

#include <arpa/inet.h>
#include <assert.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/addr.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/solver.h"

enum {
  H_LISTENER = 1 << 0,
  H_CHECK = 1 << 1,
  H_SWEEP = 1 << 2,
  H_CONNT = 1 << 3,
  H_EXIT = 1 << 4,
  H_SIGINT = 1 << 5,
  H_SIGTERM = 1 << 6,
  H_SUMMARY = 1 << 7,
  H_IDLE = 1 << 8
};

#define CONN_TIMER_MS 1000
/* Connections accepted per loop turn. libuv's listener callback accepts until the kernel's queue
 * is empty, and a flood that reconnects as fast as it is served (each eviction answered by a new
 * connection, each recycled one adding another) keeps that queue from ever emptying: the loop
 * then stays in accept, with no read (an honest ClientHello is never answered), no timer (uv_now
 * stands still: every connection looks 0 ms old) and no close callback. Past this many the
 * pending connection is left in libuv, which stops watching the listener, and taken in the check
 * phase, after the turn's reads (accept_resume). */
#define ACCEPT_BURST 64
/* Connections accepted beyond --max-conns still get a TLS handshake (to be told `busy`); past this
 * many more they are dropped at once without one. */
#define BUSY_SLACK 64

int srv_config_set_listen(srv_config_t *cfg, const char *spec) {
  return srv_listen_parse(spec, cfg->listen_host, sizeof cfg->listen_host, &cfg->listen_port);
}

/* ---- connections ---- */

static void conn_unlink(srv_t *s, srv_conn_t *sc) {
  if (sc->prev) sc->prev->next = sc->next;
  else s->conns = sc->next;
  if (sc->next) sc->next->prev = sc->prev;
  sc->prev = sc->next = NULL;
  if (!sc->refused) {
    assert(s->nconns > 0);
    s->nconns--;
  }
}

/* A srv_conn_t is freed when both its transport has closed (conn == NULL) and no queued request
 * refers to it (refs == 0), whichever comes last. */
static void conn_unref(srv_conn_t *sc) {
  assert(sc->refs > 0);
  if (--sc->refs == 0 && !sc->conn) free(sc);
}

static void on_conn_open(nq_conn_t *c) {
  srv_conn_t *sc = nq_conn_data(c);
  sc->last_frame_ms = uv_now(sc->srv->loop);
  if (sc->busy) {
    /* retry_after paces the way back: the client waits that long plus up to half again
     * (jitter), rather than its own backoff of 0.5 s doubling (docs/protocol.md, `busy`). */
    nq_error_msg_t e = {NQ_ERR_BUSY, NULL, "too many connections; try again later", 1, -1, 0,
                        sc->srv->cfg.sched.retry_after};
    sc->state = SRV_CONN_DEAD;
    nq_conn_close_error(c, &e);
  }
}

/* What a request's reply may hold, in assignments (SRV_BATCH_WEIGHT): a get_work's answer
 * re-sends up to min(want, max_outstanding) of them; a malformed want is refused with a small
 * error. */
static int req_weight(const srv_t *s, const json_t *msg) {
  nq_get_work_t g;
  nq_proto_err_t err;
  if (nq_msg_type(msg, NULL) != NQ_MSG_GET_WORK || nq_get_work_parse(msg, &g, &err) != 0) return 1;
  return g.want > s->cfg.sched.max_outstanding ? s->cfg.sched.max_outstanding : g.want;
}

static void on_conn_frame(nq_conn_t *c, json_t *msg) {
  srv_conn_t *sc = nq_conn_data(c);
  srv_t *s = sc->srv;
  assert(sc->conn == c);
  if (sc->state == SRV_CONN_DEAD || s->stopping) return;
  sc->last_frame_ms = uv_now(s->loop);
  if (nq_grow(&s->batch, &s->capbatch, s->nbatch, sizeof *s->batch, 64) != 0) {
    sc->state = SRV_CONN_DEAD;
    nq_conn_close(c, nq_errcode_name(NQ_ERR_INTERNAL), "out of memory");
    return;
  }
  srv_req_t *r = &s->batch[s->nbatch++];
  memset(r, 0, sizeof *r);
  r->sc = sc;
  r->msg = json_incref(msg);
  r->weight = req_weight(s, msg);
  sc->pending_w += r->weight;
  s->batch_w += r->weight;
  sc->refs++;
  /* A peer that pipelines requests gets no more read until this batch has answered them, so
   * what it can make us hold is bounded by requests, not by the bytes it sends: at most
   * SRV_CONN_MAX_PENDING replies, and only one while earlier output still waits in user space
   * (the kernel's buffer is full: the peer is not reading). With the layer's pause past the
   * high-water mark, its output stays under SRV_CONN_HIGH_WATER + one reply. A full batch
   * (SRV_BATCH_MAX) holds every connection that delivers a frame, which bounds the replies
   * built at once whatever the number of connections. The held list keeps a reference. */
  if ((sc->refs >= SRV_CONN_MAX_PENDING || sc->pending_w >= SRV_CONN_PENDING_WEIGHT ||
       nq_conn_queued(c) > 0 || s->nbatch >= SRV_BATCH_MAX || s->batch_w >= SRV_BATCH_WEIGHT) &&
      !sc->held) {
    sc->held = 1;
    sc->refs++;
    sc->held_next = s->held;
    s->held = sc;
    nq_conn_hold(c, 1);
  }
}

static void on_conn_error(nq_conn_t *c, int status) {
  srv_conn_t *sc = nq_conn_data(c);
  /* Failures before hello (port probes, plaintext, bad certificates on the client side) are
   * routine on an open port: keep them out of the default log. */
  int level = sc->state == SRV_CONN_AWAIT_HELLO ? NQ_LOG_DEBUG : NQ_LOG_INFO;
  sc->state = SRV_CONN_DEAD;
  nq_log(level, "connection %s%s%s: %s (%s)", nq_conn_peer(c), sc->name[0] ? " " : "",
         sc->name, nq_conn_errstr(c), nq_strerror(status));
}

/* The connection no longer counts as pre-auth for its address (hello succeeded, or it closed). */
static void conn_preauth_done(srv_conn_t *sc) {
  if (!sc->preauth) return;
  srv_t *s = sc->srv;
  if (sc->pa_prev) sc->pa_prev->pa_next = sc->pa_next;
  else s->pa_head = sc->pa_next;
  if (sc->pa_next) sc->pa_next->pa_prev = sc->pa_prev;
  else s->pa_tail = sc->pa_prev;
  sc->pa_prev = sc->pa_next = NULL;
  assert(s->npreauth > 0);
  s->npreauth--;
  sc->preauth = 0;
  if (sc->peer) {
    assert(sc->peer->preauth > 0);
    sc->peer->preauth--;
  }
}

static void on_conn_close(nq_conn_t *c) {
  srv_conn_t *sc = nq_conn_data(c);
  srv_t *s = sc->srv;
  nq_log(NQ_LOG_DEBUG, "connection %s closed", nq_conn_peer(c));
  assert(sc->conn == c); /* on_close comes once, last */
  sc->conn = NULL;
  sc->state = SRV_CONN_DEAD;
  conn_preauth_done(sc);
  if (sc->peer) {
    assert(sc->peer->conns > 0);
    sc->peer->conns--;
    sc->peer = NULL; /* the entry may be pruned from now on */
  }
  conn_unlink(s, sc);
  if (sc->refs == 0) free(sc);
}

static void on_reject_closed(uv_handle_t *h) {
  free(h);
}

/* Accept and drop at once: libuv keeps reporting a pending connection until it is accepted.
 * `count`: summarise the refusal under the peer's address (SRV_PEER_REFUSED_BUSY). */
static void reject_raw(srv_t *s, uv_stream_t *server, int count) {
  uv_tcp_t *t = malloc(sizeof *t);
  if (!t || uv_tcp_init(s->loop, t) != 0) {
    free(t);
    if (count) srv_peers_count(&s->peers, NULL, SRV_PEER_REFUSED_BUSY);
    return;
  }
  srv_peer_t *pe = NULL;
  if (uv_accept(server, (uv_stream_t *)t) == 0 && count) {
    struct sockaddr_storage ss;
    int len = sizeof ss;
    srv_addr_key_t k;
    if (uv_tcp_getpeername(t, (struct sockaddr *)&ss, &len) == 0 && srv_addr_key(&ss, &k) == 0)
      pe = srv_peers_get(&s->peers, &k, uv_now(s->loop));
  }
  if (count) srv_peers_count(&s->peers, pe, SRV_PEER_REFUSED_BUSY);
  uv_close((uv_handle_t *)t, on_reject_closed);
}

/* Room for clients that log in: close a connection that has not said hello (other than `keep`,
 * and never one with a request in the current batch: its hello is being handled), among the
 * EVICT_SCAN oldest. A flood holds many pre-auth connections per address (up to
 * --max-preauth-per-addr), an honest client one: the victim is the one whose address holds the
 * most, then the oldest. It must not have been answered, nor have bytes waiting unread in the
 * kernel (in a reconnect storm the loop reaches hundreds of honest hellos one after the other;
 * a flood's few bytes are read within a loop turn, ACCEPT_BURST), and must have sent only part
 * of a hello (read, not answered) for EVICT_PARTIAL_MS -- a flood that sends a few bytes to look
 * busy, however often it is recycled: an honest ClientHello is answered as soon as it is read --
 * or nothing for EVICT_SILENT_MS -- an idle flood; an honest client sends its ClientHello at
 * once, but one process opening hundreds of connections in a reconnect storm takes a while to
 * write them all on a busy machine: 100 ms cut 42-192 of 400, 500 ms none -- or either for any
 * time when the server is full (`full`). Failing that, one in its TLS handshake for
 * EVICT_HEARD_MS (an honest client says hello well before that). Returns 1 if one was closed.
 * It stops counting against --max-conns at once. */
#define EVICT_SCAN 64
#define EVICT_PARTIAL_MS 100
#define EVICT_SILENT_MS 500
#define EVICT_HEARD_MS 2000
static int evict_preauth(srv_t *s, const srv_conn_t *keep, int full) {
  srv_conn_t *victim = NULL, *heard_old = NULL;
  int victim_n = 0;
  uint64_t now = uv_now(s->loop);
  int scanned = 0;
  for (srv_conn_t *sc = s->pa_head; sc && scanned < EVICT_SCAN; sc = sc->pa_next, scanned++) {
    if (sc == keep || sc->refs > 0 || !sc->conn) continue;
    uint64_t age = now - sc->opened_ms;
    if (!nq_conn_answered(sc->conn)) {
      int n = sc->peer ? sc->peer->preauth : 1;
      if (n <= victim_n) continue;
      /* Read from: part of a hello. Else one look at the kernel (one, or bytes arriving between
       * two looks would pass for part of a hello): bytes there are a hello not read yet. */
      int part = nq_conn_read_any(sc->conn);
      if (!part && nq_conn_heard(sc->conn)) continue;
      if (full || age >= (part ? EVICT_PARTIAL_MS : EVICT_SILENT_MS)) {
        victim = sc;
        victim_n = n;
      }
    } else if (!heard_old && age >= EVICT_HEARD_MS) {
      heard_old = sc;
    }
  }
  if (!victim) victim = heard_old;
  if (!victim) return 0;
  srv_peers_count(&s->peers, victim->peer, SRV_PEER_EVICTED);
  conn_preauth_done(victim);
  victim->refused = 1;
  s->nconns--;
  victim->state = SRV_CONN_DEAD;
  nq_conn_abort(victim->conn);
  return 1;
}

/* Find the address entry of a new connection and count it there. Returns 0, or -1 when its
 * address is over the pre-auth limit (the caller refuses it). */
static int conn_attach_peer(srv_t *s, srv_conn_t *sc) {
  struct sockaddr_storage ss;
  srv_addr_key_t k;
  srv_peer_t *pe = NULL;
  if (nq_conn_peer_addr(sc->conn, &ss) == 0 && srv_addr_key(&ss, &k) == 0)
    pe = srv_peers_get(&s->peers, &k, uv_now(s->loop));
  if (!srv_peer_preauth_ok(&s->peers, pe)) {
    srv_peers_count(&s->peers, pe, SRV_PEER_REFUSED_PREAUTH);
    return -1;
  }
  sc->peer = pe;
  sc->preauth = 1;
  sc->pa_prev = s->pa_tail;
  if (s->pa_tail) s->pa_tail->pa_next = sc;
  else s->pa_head = sc;
  s->pa_tail = sc;
  s->npreauth++;
  if (pe) {
    pe->conns++;
    pe->preauth++;
  }
  return 0;
}

static void on_connection(uv_stream_t *server, int status) {
  srv_t *s = server->data;
  if (status < 0) {
    nq_log(NQ_LOG_WARN, "accept: %s", uv_strerror(status));
    return;
  }
  if (s->accepts_turn >= ACCEPT_BURST) {
    s->accept_deferred = 1; /* libuv keeps it and stops watching the listener: accept_resume */
    return;
  }
  s->accepts_turn++;
  if (s->stopping) {
    reject_raw(s, server, 0);
    return;
  }
  if (s->nconns >= s->cfg.max_conns + BUSY_SLACK && !evict_preauth(s, NULL, 1)) {
    reject_raw(s, server, 1);
    return;
  }
  srv_conn_t *sc = calloc(1, sizeof *sc);
  if (!sc) {
    reject_raw(s, server, 0);
    return;
  }
  sc->srv = s;
  sc->state = SRV_CONN_AWAIT_HELLO;
  sc->opened_ms = uv_now(s->loop);
  sc->last_frame_ms = sc->opened_ms;
  /* Our own timer enforces the protocol's hello and idle timeouts with the `timeout` code; the
   * layer's idle timeout is only a backstop (it also catches peers that stop reading). */
  nq_conn_opts_t o = {
      .on_open = on_conn_open, .on_frame = on_conn_frame, .on_error = on_conn_error,
      .on_close = on_conn_close, .data = sc,
      .handshake_timeout_ms = (uint64_t)s->cfg.hello_timeout * 1000,
      .idle_timeout_ms =
          s->cfg.idle_timeout > 0 ? (uint64_t)(s->cfg.idle_timeout + 30) * 1000 : 0,
      .high_water = SRV_CONN_HIGH_WATER, .hard_limit = SRV_CONN_HARD_LIMIT,
      .sock_buf = SRV_CONN_SOCK_BUF, .tag = "srv"};
  int r = nq_conn_accept(s->loop, server, s->tls, &o, &sc->conn);
  if (r < 0) {
    nq_log(NQ_LOG_WARN, "accept: %s", nq_strerror(r));
    free(sc);
    return;
  }
  sc->next = s->conns;
  if (s->conns) s->conns->prev = sc;
  s->conns = sc;
  s->nconns++;
  /* Refusals are counted for the periodic summary rather than logged one by one: a flood would
   * otherwise write a line per connection. */
  if (conn_attach_peer(s, sc) != 0) {
    /* Dropped without a handshake: the cheapest answer, and the flood gets nothing to read.
     * It stops counting against --max-conns now, not when its close completes: a burst of
     * refusals must not crowd out the next honest connection. */
    sc->refused = 1;
    s->nconns--;
    sc->state = SRV_CONN_DEAD;
    nq_conn_abort(sc->conn);
    return;
  }
  /* Logged-in clients keep their slots: connections that have not said hello get at most
   * preauth_cap of them, and when the server is full the oldest of those makes room. When none
   * may be closed (all young and in their handshake) the share is exceeded rather than an
   * honest handshake cut; --max-conns still holds (busy). */
  while ((s->npreauth > s->preauth_cap || s->nconns > s->cfg.max_conns) &&
         evict_preauth(s, sc, s->nconns > s->cfg.max_conns)) {
  }
  if (s->nconns > s->cfg.max_conns) {
    sc->busy = 1;
    srv_peers_count(&s->peers, sc->peer, SRV_PEER_REFUSED_BUSY);
  }
}

/* Hello and idle timeouts, checked once a second. A connection with requests in the current
 * batch is never idle. */
static void on_conn_timer(uv_timer_t *t) {
  srv_t *s = t->data;
  uint64_t now = uv_now(s->loop);
  uint64_t idle_ms = (uint64_t)s->cfg.idle_timeout * 1000;
  uint64_t hello_ms = (uint64_t)s->cfg.hello_timeout * 1000;
  for (srv_conn_t *sc = s->conns; sc; sc = sc->next) {
    if (sc->conn && sc->close_at_ms && now >= sc->close_at_ms) {
      sc->close_at_ms = 0;
      nq_conn_close(sc->conn, nq_errcode_name(sc->close_code), sc->close_msg);
      continue;
    }
    if (!sc->conn || sc->state == SRV_CONN_DEAD || sc->refs > 0) continue;
    if (sc->state == SRV_CONN_AWAIT_HELLO) {
      /* Before TLS is up the layer's handshake timeout (the same) closes it; no frame can be
       * sent then anyway. */
      if (now - sc->opened_ms >= hello_ms && nq_conn_state(sc->conn) == NQ_CONN_OPEN) {
        char m[64];
        snprintf(m, sizeof m, "no hello within %d s", s->cfg.hello_timeout);
        sc->state = SRV_CONN_DEAD;
        nq_conn_close(sc->conn, nq_errcode_name(NQ_ERR_TIMEOUT), m);
      }
    } else if (idle_ms && now - sc->last_frame_ms >= idle_ms) {
      nq_log(NQ_LOG_INFO, "connection %s %s: idle timeout", nq_conn_peer(sc->conn), sc->name);
      sc->state = SRV_CONN_DEAD;
      nq_conn_close(sc->conn, nq_errcode_name(NQ_ERR_TIMEOUT), "idle timeout");
    }
  }
}

/* ---- group commit ---- */

/* After a committed ban (admin command or automatic), end the banned clients' connections. */
static void close_banned(srv_t *s) {
  for (srv_conn_t *sc = s->conns; sc; sc = sc->next) {
    srv_client_t cl;
    if (!sc->conn || sc->state != SRV_CONN_CLIENT) continue;
    if (srv_client_get(s->store, sc->client_id, &cl) != 0 || !cl.banned) continue;
    nq_log(NQ_LOG_INFO, "closing the connection of banned client %s", sc->name);
    sc->state = SRV_CONN_DEAD;
    nq_conn_close(sc->conn, nq_errcode_name(NQ_ERR_BANNED), "this client has been banned");
  }
}

/* Send the fatal error of r and close, or, for a failed login from an address over
 * --auth-fail-limit, do so later (on_conn_timer): meanwhile the connection stays pre-auth and
 * takes no input, so one address gets at most --max-preauth-per-addr refusals per delay. */
static void conn_refuse(srv_t *s, srv_conn_t *sc, const srv_req_t *r) {
  if (r->err_code == NQ_ERR_AUTH) {
    uint64_t now = uv_now(s->loop);
    srv_peers_count(&s->peers, sc->peer, SRV_PEER_AUTH_FAILED);
    uint64_t delay = srv_peer_auth_failed(&s->peers, sc->peer, now);
    if (delay) {
      srv_peers_count(&s->peers, sc->peer, SRV_PEER_AUTH_DELAYED);
      sc->close_at_ms = now + delay;
      sc->close_code = r->err_code;
      snprintf(sc->close_msg, sizeof sc->close_msg, "%s", r->err_msg);
      nq_conn_hold(sc->conn, 1);
      return;
    }
  }
  nq_conn_close(sc->conn, r->err_code ? nq_errcode_name(r->err_code) : NULL, r->err_msg);
}

/* Give the connections held for this batch their input back. The list is detached first: a
 * resumed connection may deliver frames (into the next batch) and be held again at once. */
static void release_held(srv_t *s) {
  srv_conn_t *list = s->held;
  s->held = NULL;
  while (list) {
    srv_conn_t *sc = list;
    list = sc->held_next;
    sc->held_next = NULL;
    sc->held = 0;
    if (sc->conn && sc->state != SRV_CONN_DEAD) nq_conn_hold(sc->conn, 0);
    conn_unref(sc);
  }
}

static void tell_news(srv_t *s);
static int next_job(srv_t *s, int force);

static void on_idle(uv_idle_t *h) {
  (void)h; /* its only purpose is to be active */
}

/* Handle every queued request in one transaction, then send the replies (or, if the commit
 * failed, `internal` errors). */
static void batch_run(srv_t *s) {
  if (s->nbatch == 0) return;
  assert(s->nbatch <= s->capbatch);
  /* The batch owns the transaction: the sweep never leaves one open between loop iterations. */
  assert(!srv_store_in_tx(s->store));
  int64_t now = nq_now_wall();
  int rc = srv_store_begin(s->store);
  if (rc == 0) {
    for (size_t i = 0; i < s->nbatch; i++) {
      srv_req_t *r = &s->batch[i];
      if (!r->sc->conn || r->sc->state == SRV_CONN_DEAD) continue;
      r->handled = 1;
      srv_proto_handle(s, r, now);
      assert(r->reply || r->close || nq_msg_type(r->msg, NULL) == NQ_MSG_ERROR);
    }
    uint64_t t0 = uv_hrtime();
    rc = srv_store_commit(s->store);
    srv_hist_observe(&s->metrics.commit, srv_metrics_since(t0));
    if (rc != 0 && srv_store_in_tx(s->store)) srv_store_rollback(s->store);
  }
  if (rc != 0) {
    nq_log(NQ_LOG_ERROR, "store transaction failed (%zu requests): %s", s->nbatch,
           srv_store_errmsg(s->store));
    s->commits_failed++;
    s->done_pending = 0;
    s->ban_pending = 0;
    s->reopen_pending = 0;
    for (size_t i = 0; i < s->nbatch; i++) {
      srv_req_t *r = &s->batch[i];
      if (!r->handled && r->sc->state == SRV_CONN_DEAD) continue;
      json_decref(r->reply);
      r->reply = NULL;
      if (!r->close || r->err_code != NQ_ERR_INTERNAL)
        srv_req_fatal(r, NQ_ERR_INTERNAL, "store failure; retry later");
    }
  }
  s->batches++;
  s->batch_reqs += s->nbatch;
  for (size_t i = 0; i < s->nbatch; i++) {
    srv_req_t *r = &s->batch[i];
    srv_conn_t *sc = r->sc;
    if (sc->conn && nq_conn_state(sc->conn) == NQ_CONN_OPEN) {
      if (sc->state == SRV_CONN_CLIENT || sc->state == SRV_CONN_ADMIN) conn_preauth_done(sc);
      if (r->close && r->reply) { /* a fatal error frame with fields of its own */
        nq_conn_send(sc->conn, r->reply);
        nq_conn_close(sc->conn, NULL, NULL);
      } else if (r->close) {
        conn_refuse(s, sc, r);
      } else if (r->reply) {
        nq_conn_send(sc->conn, r->reply); /* failures reach on_conn_error */
      }
    }
    json_decref(r->reply);
    json_decref(r->msg);
    sc->pending_w -= r->weight;
    conn_unref(sc);
  }
  s->nbatch = 0;
  s->batch_w = 0;
  release_held(s);
  if (s->ban_pending) {
    s->ban_pending = 0;
    close_banned(s);
  }
  if (s->news_pending) {
    s->news_pending = 0;
    if (rc == 0) tell_news(s);
  }
  if (s->queue_pending || s->next_pending) {
    int force = s->next_pending == 2;
    s->queue_pending = s->next_pending = 0;
    if ((s->job_done || force) && !s->reopen_pending && !s->done_pending)
      next_job(s, force);
  }
  if (s->reopen_pending || s->done_pending) {
    /* One batch may finish the job and re-open it (a spot check that disagrees right after the
     * last verification), or the reverse: what counts is the job as committed, not the order of
     * the flags. Acting on the flags alone once announced a finished job with empty totals and
     * told every client `done` while re-opened units waited. */
    int reopened = s->reopen_pending;
    s->reopen_pending = s->done_pending = 0;
    srv_job_t job;
    if (srv_job_get(s->store, s->sched.job.id, &job) != 0) {
      nq_log(NQ_LOG_ERROR, "after a batch, reading the job failed: %s",
             srv_store_errmsg(s->store));
    } else if (job.state == SRV_JOB_DONE) {
      if (reopened) srv_job_reopened(s); /* done again: the new totals are announced */
      srv_job_finished(s);
    } else {
      srv_job_reopened(s);
    }
  }
  /* Frames delivered by release_held wait for the next batch: the loop must not block in poll
   * meanwhile (an active idle handle makes its timeout zero). */
  if (s->handles_open & H_IDLE) {
    if (s->nbatch > 0) uv_idle_start(&s->idle, on_idle);
    else uv_idle_stop(&s->idle);
  }
}

/* The check phase, after this turn's reads: a new turn of accepts. The connection left pending
 * when the turn's share ran out is taken now, and uv_accept watches the listener again. */
static void accept_resume(srv_t *s) {
  s->accepts_turn = 0;
  if (!s->accept_deferred) return;
  s->accept_deferred = 0;
  if (s->handles_open & H_LISTENER) on_connection((uv_stream_t *)&s->listener, 0);
}

static void on_batch_check(uv_check_t *h) {
  batch_run(h->data);
  accept_resume(h->data);
}

/* ---- timers, signals, shutdown ---- */

static void on_sweep(uv_timer_t *t) {
  srv_t *s = t->data;
  if (s->stopping || srv_store_in_tx(s->store)) return;
  int64_t n = 0, dropped = 0;
  int rc = srv_store_begin(s->store);
  if (rc == 0) {
    rc = srv_sched_expire(&s->sched, nq_now_wall(), &n);
    /* Spot checks nobody may take never hold the job (sched.h). */
    if (rc == 0) rc = srv_sched_drop_spots(&s->sched, nq_now_wall(), &dropped, NULL);
    if (rc == 0) rc = srv_store_commit(s->store);
    else srv_store_rollback(s->store);
  }
  if (rc != 0) nq_log(NQ_LOG_ERROR, "lease sweep: %s", srv_store_errmsg(s->store));
  else if (n > 0) nq_log(NQ_LOG_INFO, "%lld expired lease(s) released", (long long)n);
  if (rc == 0 && dropped > 0)
    nq_log(NQ_LOG_WARN, "%lld spot check(s) of job %lld (N=%d) dropped: no client that may take "
           "them has been online for %d s since their units were verified (nq-admin status "
           "counts them)", (long long)dropped, (long long)s->sched.job.id, s->sched.job.n,
           SRV_SPOT_WAIT_S);
  /* The job may have been finished by that, or by a get_work that dropped the last of them. */
  if (rc == 0 && !s->job_done && srv_job_get(s->store, s->sched.job.id, &s->sched.job) == 0 &&
      srv_job_is_done(&s->sched.job))
    srv_job_finished(s);
  /* A job queued in local mode (nq-admin --data DIR job add) while none runs starts here. */
  if (s->job_done) next_job(s, 0);
}

static void on_summary_timer(uv_timer_t *t) {
  srv_t *s = t->data;
  srv_peers_summary(&s->peers, s->cfg.summary_seconds, uv_now(s->loop));
  s->login_lines = 0;
}

static void on_exit_timer(uv_timer_t *t) {
  srv_t *s = t->data;
  nq_log(NQ_LOG_INFO, "job done and --exit-when-done: stopping");
  srv_stop(s, 0);
}

static void on_signal(uv_signal_t *h, int signum) {
  srv_t *s = h->data;
  nq_log(NQ_LOG_INFO, "signal %d: shutting down", signum);
  srv_stop(s, 0);
}

static void close_handle(srv_t *s, int bit, uv_handle_t *h) {
  if (!(s->handles_open & bit)) return;
  s->handles_open &= ~bit;
  uv_close(h, NULL);
}

/* Every handle of the loop's own and every service's: at a stop and when a start fails. */
static void close_all_handles(srv_t *s) {
  close_handle(s, H_LISTENER, (uv_handle_t *)&s->listener);
  close_handle(s, H_CHECK, (uv_handle_t *)&s->batch_check);
  close_handle(s, H_SWEEP, (uv_handle_t *)&s->sweep_timer);
  close_handle(s, H_CONNT, (uv_handle_t *)&s->conn_timer);
  close_handle(s, H_EXIT, (uv_handle_t *)&s->exit_timer);
  close_handle(s, H_SIGINT, (uv_handle_t *)&s->sigint);
  close_handle(s, H_SIGTERM, (uv_handle_t *)&s->sigterm);
  close_handle(s, H_SUMMARY, (uv_handle_t *)&s->summary_timer);
  close_handle(s, H_IDLE, (uv_handle_t *)&s->idle);
  srv_cert_stop(s);
  srv_web_stop(s);
  srv_backup_stop(s);
  srv_stall_stop(s);
  srv_root_stop(s);
  srv_outage_stop(s);
}

void srv_stop(srv_t *s, int exit_code) {
  if (s->stopping) return;
  /* Stop accepting first, then finish what was already read, then tell everyone. */
  close_handle(s, H_LISTENER, (uv_handle_t *)&s->listener);
  batch_run(s);
  s->stopping = 1;
  s->exit_code = exit_code;
  int n = 0;
  for (srv_conn_t *sc = s->conns; sc; sc = sc->next) {
    if (!sc->conn) continue;
    sc->state = SRV_CONN_DEAD;
    nq_conn_close(sc->conn, nq_errcode_name(NQ_ERR_SHUTDOWN), "server stopping");
    n++;
  }
  close_all_handles(s);
  srv_peers_summary(&s->peers, s->cfg.summary_seconds, uv_now(s->loop));
  nq_log(NQ_LOG_INFO, "shutdown: closing %d connection(s); %llu requests in %llu batches "
         "(%.1f per commit), %llu failed commits", n, (unsigned long long)s->batch_reqs,
         (unsigned long long)s->batches,
         s->batches ? (double)s->batch_reqs / (double)s->batches : 0.0,
         (unsigned long long)s->commits_failed);
}

/* ---- news ---- */

/* News was added (nq-admin news add through this server): every client session hears it now,
 * each logs what it has not logged yet (docs/protocol.md, `news`). */
static void tell_news(srv_t *s) {
  srv_news_buf_t b;
  if (srv_proto_news(s, &b) != 0 || b.msg.n == 0) return;
  json_t *m = nq_news_pack(&b.msg);
  int n = 0;
  for (srv_conn_t *sc = s->conns; m && sc; sc = sc->next)
    if (sc->conn && sc->state == SRV_CONN_CLIENT && nq_conn_send(sc->conn, m) == 0) n++;
  json_decref(m);
  nq_log(NQ_LOG_INFO, "news %lld told to %d connected client(s)", (long long)b.msg.items[0].id, n);
}

/* ---- job completion ---- */

/* Every client session hears at once that the job is finished (an unsolicited `no_work` with
 * reason done, docs/protocol.md): one waiting for its retry timer, or for the answer to a
 * get_work that only re-sent what it holds, would otherwise ask again only later, perhaps after
 * an --exit-when-done server has gone, and then retry forever. */
static void tell_done(srv_t *s) {
  /* While spot checks of the finished job are still wanted, a connected client may be the owner
   * that does them: it learns from its next get_work whether there is anything left for it (as
   * the welcome says `running` then, srv_proto.c). Under --exit-when-done the server leaves
   * without them (docs/server.md), so everyone is told. */
  int64_t spot = 0;
  if (!s->cfg.exit_when_done && srv_job_spot_pending(s->store, s->sched.job.id, &spot) == 0 &&
      spot > 0) {
    nq_log(NQ_LOG_INFO, "job done; %lld spot check(s) still wanted: clients are not told done yet",
           (long long)spot);
    return;
  }
  /* Clients that wait between jobs (hello `wait`) hear `waiting` unless the server leaves too
   * (--exit-when-done): the next job comes with `nq-admin job add`. */
  nq_no_work_t nw = {s->cfg.sched.retry_after, NQ_NOWORK_DONE};
  nq_no_work_t nwait = {s->cfg.sched.retry_after, NQ_NOWORK_WAITING};
  json_t *m = nq_no_work_pack(&nw), *mw = nq_no_work_pack(&nwait);
  int n = 0, waiting = 0;
  for (srv_conn_t *sc = s->conns; m && mw && sc; sc = sc->next) {
    if (!sc->conn || sc->state != SRV_CONN_CLIENT) continue;
    int w = sc->waits && !s->cfg.exit_when_done;
    if (nq_conn_send(sc->conn, w ? mw : m) == 0) n++, waiting += w;
  }
  json_decref(m);
  json_decref(mw);
  if (n) nq_log(NQ_LOG_INFO, "told %d connected client(s) that the job is done (%d of them wait "
                "for the next job: nq-admin job add N)", n, waiting);
}

/* The next queued job, when the served one is done (or force): srv_next_start, and the end of
 * the new job at once when it was done already (a queued re-count of a finished plan). 1 if a job
 * started, 0 if none, < 0 on a store failure. */
static int next_job(srv_t *s, int force) {
  int rc = srv_next_start(s, nq_now_wall(), force);
  if (rc == SRV_NEXT_DONE) srv_job_finished(s);
  return rc > 0 ? 1 : rc;
}

void srv_job_finished(srv_t *s) {
  if (s->job_done) return;
  s->job_done = 1;
  srv_job_t job;
  int rc = srv_job_get(s->store, s->sched.job.id, &job);
  if (rc != 0) {
    nq_log(NQ_LOG_ERROR, "job done, but reading it failed: %s", srv_store_errmsg(s->store));
  } else {
    s->sched.job = job;
    char t[40], u[40], c2[40], c4[40], c8[40];
    nq_u128_str(nq_totals_total(&job.totals), t);
    nq_u128_str(nq_totals_unique(&job.totals), u);
    nq_u128_str(job.totals.c2, c2);
    nq_u128_str(job.totals.c4, c4);
    nq_u128_str(job.totals.c8, c8);
    const nq_known_t *k = nq_known(job.n);
    const char *match = "no published value";
    if (k)
      match = (!strcmp(k->total, t) && !strcmp(k->unique, u) && !strcmp(k->c2, c2) &&
               !strcmp(k->c4, c4) && !strcmp(k->c8, c8))
                  ? "MATCHES the published values"
                  : "DOES NOT MATCH the published values";
    nq_log(NQ_LOG_INFO, "job N=%d done: TOTAL=%s UNIQUE=%s COUNT2=%s COUNT4=%s COUNT8=%s (%s)",
           job.n, t, u, c2, c4, c8, match);
    if (k && strcmp(k->total, t) != 0)
      nq_log(NQ_LOG_ERROR, "published TOTAL for N=%d is %s", job.n, k->total);
  }
  /* The next queued job starts now; the clients go on with it and hear nothing of `done`. */
  if (next_job(s, 0) > 0) return;
  tell_done(s);
  if (s->cfg.exit_when_done && !s->stopping && (s->handles_open & H_EXIT))
    uv_timer_start(&s->exit_timer, on_exit_timer, (uint64_t)s->cfg.exit_grace_ms, 0);
}

/* A spot check or a ban re-opened a unit of the finished job: it runs again, and a pending exit
 * (--exit-when-done) waits for the new end. */
void srv_job_reopened(srv_t *s) {
  if (!s->job_done) return;
  s->job_done = 0;
  if (s->handles_open & H_EXIT) uv_timer_stop(&s->exit_timer);
  int rc = srv_job_get(s->store, s->sched.job.id, &s->sched.job);
  if (rc != 0) nq_log(NQ_LOG_ERROR, "job re-opened, but reading it failed: %s",
                      srv_store_errmsg(s->store));
  nq_log(NQ_LOG_WARN, "job N=%d re-opened: a verified unit is being verified again; the totals "
         "above are withdrawn", s->cfg.job.n);
}

/* ---- init / free ---- */

static int listen_start(srv_t *s, char *errbuf, size_t errlen) {
  struct sockaddr_storage ss;
  const char *h = s->cfg.listen_host;
  if (uv_ip4_addr(h, s->cfg.listen_port, (struct sockaddr_in *)&ss) != 0 &&
      uv_ip6_addr(h, s->cfg.listen_port, (struct sockaddr_in6 *)&ss) != 0) {
    snprintf(errbuf, errlen, "--listen: %s is not an IP address", h);
    return NQ_EINVAL;
  }
  if (uv_tcp_init(s->loop, &s->listener) != 0) {
    snprintf(errbuf, errlen, "tcp init failed");
    return NQ_EIO;
  }
  s->listener.data = s;
  s->handles_open |= H_LISTENER;
  int r = uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, 0);
  if (r == 0) r = uv_listen((uv_stream_t *)&s->listener, 511, on_connection);
  if (r != 0) {
    snprintf(errbuf, errlen, "listen on %s:%d: %s", h, s->cfg.listen_port, uv_strerror(r));
    return NQ_EIO;
  }
  srv_tcp_bound(&s->listener, s->cfg.listen_port, s->bound, sizeof s->bound);
  return 0;
}

static int handles_start(srv_t *s) {
  int r = uv_check_init(s->loop, &s->batch_check);
  if (r) return r;
  s->batch_check.data = s;
  s->handles_open |= H_CHECK;
  uv_check_start(&s->batch_check, on_batch_check);
  uv_timer_init(s->loop, &s->sweep_timer);
  s->sweep_timer.data = s;
  s->handles_open |= H_SWEEP;
  /* Short leases (tests, demos) are swept more often: at least twice per shortest lease, at most
   * once a second. */
  uint64_t sweep = (uint64_t)s->cfg.sweep_ms;
  const srv_sched_config_t *sc = &s->cfg.sched;
  int shortest = sc->lease_min < sc->lease_seconds ? sc->lease_min : sc->lease_seconds;
  if (shortest > 0 && sweep > (uint64_t)shortest * 500) sweep = (uint64_t)shortest * 500;
  if (sweep < 1000) sweep = 1000;
  uv_timer_start(&s->sweep_timer, on_sweep, sweep, sweep);
  uv_timer_init(s->loop, &s->conn_timer);
  s->conn_timer.data = s;
  s->handles_open |= H_CONNT;
  uv_timer_start(&s->conn_timer, on_conn_timer, CONN_TIMER_MS, CONN_TIMER_MS);
  uv_timer_init(s->loop, &s->exit_timer);
  s->exit_timer.data = s;
  s->handles_open |= H_EXIT;
  uv_timer_init(s->loop, &s->summary_timer);
  s->summary_timer.data = s;
  s->handles_open |= H_SUMMARY;
  uint64_t every = (uint64_t)s->cfg.summary_seconds * 1000;
  uv_timer_start(&s->summary_timer, on_summary_timer, every, every);
  uv_idle_init(s->loop, &s->idle);
  s->idle.data = s;
  s->handles_open |= H_IDLE;
  if (s->cfg.handle_signals) {
    uv_signal_init(s->loop, &s->sigint);
    s->sigint.data = s;
    s->handles_open |= H_SIGINT;
    uv_signal_init(s->loop, &s->sigterm);
    s->sigterm.data = s;
    s->handles_open |= H_SIGTERM;
    if ((r = uv_signal_start(&s->sigint, on_signal, SIGINT)) != 0) return r;
    if ((r = uv_signal_start(&s->sigterm, on_signal, SIGTERM)) != 0) return r;
  }
  return 0;
}

static int store_start(srv_t *s, int64_t now, char *errbuf, size_t errlen) {
  int rc = srv_store_open(&s->store, s->dd.db, NULL, errbuf, errlen);
  if (rc != 0) return rc;
  if ((rc = srv_datadir_store_hashes(&s->dd, s->store)) != 0) {
    snprintf(errbuf, errlen, "storing secret hashes: %s", srv_store_errmsg(s->store));
    return rc;
  }
  /* The evidence signing key: made with the data directory, kept in the database (evkey.h). */
  if ((rc = srv_evkey_ensure(s->store, s->dd.dir, s->evkey_fpr)) != 0) {
    snprintf(errbuf, errlen, "the evidence signing key: %s", srv_store_errmsg(s->store));
    return rc;
  }
  srv_job_t job;
  srv_job_spec_t spec = srv_job_spec_for(s, &s->cfg.job);
  if (s->cfg.job.n == 0) { /* no --n: the data directory (and its queue) says which job */
    if ((rc = srv_next_pick(s, now, &job, errbuf, errlen)) != 0) return rc;
    s->cfg.job.n = job.n;
  } else if ((rc = srv_job_open(s->store, &spec, now, &job)) != 0) {
    snprintf(errbuf, errlen, "job N=%d: %s", s->cfg.job.n, srv_store_errmsg(s->store));
    return rc;
  } else if (srv_job_is_done(&job)) {
    /* --n names a finished job (a packaged server's first job, NQ_N), but the queue has moved on:
     * serve the job it started rather than the old answer. */
    srv_job_t newer;
    if (srv_next_running(s, &newer) == 0 && newer.id > job.id) {
      nq_log(NQ_LOG_INFO, "the job for N=%d is done; serving job %lld (N=%d), started from the "
             "queue after it", job.n, (long long)newer.id, newer.n);
      job = newer;
      s->cfg.job.n = job.n;
    }
  }
  srv_sched_config_t sc = s->cfg.sched;
  int recounted = 0;
  if ((rc = srv_sched_init(&s->sched, s->store, job.id, &sc)) != 0 ||
      (rc = srv_sched_recount_disputed(&s->sched, now, &recounted)) != 0) {
    snprintf(errbuf, errlen, "scheduler: %s", srv_store_errmsg(s->store));
    return rc;
  }
  if (recounted) nq_log(NQ_LOG_INFO, "votes of %d disputed unit(s) counted again", recounted);
  srv_warn_one_owner(s);
  return 0;
}

int srv_init(srv_t *s, uv_loop_t *loop, const srv_config_t *cfg, char *errbuf, size_t errlen) {
  char dummy[8];
  if (!errbuf || !errlen) {
    errbuf = dummy;
    errlen = sizeof dummy;
  }
  memset(s, 0, sizeof *s);
  s->dd.lock_fd = -1;
  s->loop = loop;
  s->cfg = *cfg;
  s->preauth_cap = cfg->max_preauth > 0 ? cfg->max_preauth : cfg->max_conns / 2;
  if (s->preauth_cap < 1) s->preauth_cap = 1;
  int64_t now = nq_now_wall();
  srv_peer_limits_t lim = {cfg->max_preauth_per_addr, cfg->enrol_per_addr, cfg->auth_fail_limit,
                           cfg->auth_fail_delay * 1000};
  int rc = srv_peers_init(&s->peers, &lim);
  if (rc != 0) {
    snprintf(errbuf, errlen, "out of memory");
    goto fail;
  }
  /* A database restored without its CA keeps its fleet only with the old CA (datadir.h). */
  rc = srv_datadir_ca_check(cfg->data_dir, cfg->new_ca, errbuf, errlen);
  if (rc == 0) rc = srv_datadir_init(&s->dd, cfg->data_dir, cfg->hostnames, errbuf, errlen);
  if (rc != 0) goto fail;
  if ((rc = store_start(s, now, errbuf, errlen)) != 0) goto fail;
  if ((rc = srv_outage_start(s, now, errbuf, errlen)) != 0) goto fail;
  if ((rc = srv_cert_start(s, errbuf, errlen)) != 0) goto fail;
  if ((rc = listen_start(s, errbuf, errlen)) != 0) goto fail;
  int r = handles_start(s);
  if (r != 0) {
    snprintf(errbuf, errlen, "loop handles: %s", uv_strerror(r));
    rc = NQ_EIO;
    goto fail;
  }
  if ((rc = srv_web_start(s, errbuf, errlen)) != 0) goto fail;
  if ((rc = srv_backup_start(s, errbuf, errlen)) != 0) goto fail;
  if ((rc = srv_stall_start(s, errbuf, errlen)) != 0) goto fail;
  if ((rc = srv_root_start(s, errbuf, errlen)) != 0) goto fail;
  if (srv_job_is_done(&s->sched.job)) srv_job_finished(s);
  return 0;
fail:
  close_all_handles(s);
  uv_run(loop, UV_RUN_NOWAIT); /* runs the close callbacks of what was opened */
  srv_free(s);
  return rc;
}

void srv_free(srv_t *s) {
  /* Requests still queued (only if uv_run was left without srv_stop) hold connection refs whose
   * memory the closed loop no longer references. */
  for (size_t i = 0; i < s->nbatch; i++) {
    json_decref(s->batch[i].msg);
    json_decref(s->batch[i].reply);
    conn_unref(s->batch[i].sc);
  }
  s->nbatch = 0;
  while (s->held) {
    srv_conn_t *sc = s->held;
    s->held = sc->held_next;
    conn_unref(sc);
  }
  free(s->batch);
  s->batch = NULL;
  s->capbatch = 0;
  srv_store_close(s->store);
  s->store = NULL;
  nq_tls_ctx_free(s->tls);
  s->tls = NULL;
  srv_peers_free(&s->peers);
  srv_datadir_close(&s->dd); /* last: the directory is ours until the database is closed */
}
