/* nq-netem: a fault-injecting TCP proxy for the end-to-end tests (a real network in the
 * tests; docs/reliability.md, "A real network"). It lives in tools/ beside nq-loadgen: no part of
 * nq, a test fixture between a client and a server, on loopback only.
 *
 *   nq-netem --listen 127.0.0.1:P --to 127.0.0.1:Q [--delay MS] [--jitter MS] [--rate BPS]
 *            [--reset-prob P] [--blackhole] [--drop-every S --drop-for D] [--seed X]
 *
 * Every accepted connection gets its own upstream connection; bytes are forwarded in both
 * directions with, per direction:
 *   --delay MS, --jitter MS  each chunk is delivered MS +- JITTER ms after it was read (uniform),
 *                            never before the chunk ahead of it: order is kept (a round trip
 *                            costs 2 x MS on average);
 *   --rate BPS               at most BPS bytes a second (a chunk of L bytes occupies the link
 *                            L / BPS s after the one ahead of it);
 *   --reset-prob P           each chunk, with probability P, is cut: its first half is delivered,
 *                            then both sides are reset (RST) -- a connection lost mid-frame;
 *   --blackhole              connections are accepted and never answered (no upstream, no byte);
 *   --drop-every S --drop-for D  every S seconds the link goes down for D seconds: nothing is
 *                            delivered and new connections wait (a partition: no RST, no FIN;
 *                            what was sent arrives when the link is back, as TCP would retry it).
 *                            SIGUSR1 drops it at once for D seconds.
 * Each side's input stops while more than 4 MiB wait to be delivered (a bounded proxy). Prints
 * "nq-netem: listening on ADDR" when ready, and a line for every drop; SIGINT/SIGTERM end it.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "nq/addr.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/opts.h"

#define QUEUE_MAX (4u << 20) /* bytes waiting in one direction before its input stops */

typedef struct chunk_s {
  struct chunk_s *next;
  uint64_t due_ms;
  size_t len;
  char data[];
} chunk_t;

typedef struct pair_s pair_t;

/* One direction: read from `from`, deliver to `to`. */
typedef struct dir_s {
  pair_t *p;
  uv_tcp_t *from, *to;
  chunk_t *head, *tail;
  size_t queued;
  uint64_t last_due;
  int eof, reading, shut;
  uv_timer_t timer;
} dir_t;

struct pair_s {
  uv_tcp_t down, up;      /* the accepted client side, the upstream side */
  dir_t d[2];             /* 0: client -> server, 1: server -> client */
  uv_connect_t connect;
  int up_connected, closing, open_handles;
};

typedef struct netem_s {
  uv_loop_t *loop;
  struct sockaddr_storage to;
  double delay_ms, jitter_ms, rate, reset_prob;
  int blackhole, drop_every, drop_for;
  int down;               /* the link is down */
  uint64_t up_at_ms;      /* when it comes back */
  unsigned rng;
  pair_t **waiting;       /* connections accepted while the link was down */
  int nwaiting, capwaiting;
  uv_timer_t drop_timer, up_timer;
} netem_t;

static netem_t G;

static double rnd(void) { return (double)rand_r(&G.rng) / ((double)RAND_MAX + 1.0); }

static void on_handle_closed(uv_handle_t *h) {
  pair_t *p = h->data;
  if (--p->open_handles == 0) {
    for (int i = 0; i < 2; i++)
      for (chunk_t *c = p->d[i].head, *n; c; c = n) {
        n = c->next;
        free(c);
      }
    free(p);
  }
}

/* Close both sides (reset: with RST, as a connection lost mid-frame). */
static void pair_close(pair_t *p, int reset) {
  if (p->closing) return;
  p->closing = 1;
  for (int i = 0; i < 2; i++) {
    p->d[i].timer.data = p; /* the close callback frees the pair */
    uv_close((uv_handle_t *)&p->d[i].timer, on_handle_closed);
  }
  uv_tcp_t *t[2] = {&p->down, &p->up};
  for (int i = 0; i < 2; i++) {
    if (i == 1 && !p->up_connected) {
      uv_close((uv_handle_t *)t[i], on_handle_closed);
      continue;
    }
    if (reset) uv_tcp_close_reset(t[i], on_handle_closed);
    else uv_close((uv_handle_t *)t[i], on_handle_closed);
  }
}

static void on_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b) {
  (void)h;
  b->base = malloc(sz);
  b->len = b->base ? sz : 0;
}

static void dir_pump(dir_t *d);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

static void dir_read(dir_t *d, int on) {
  if (d->p->closing || d->eof || d->reading == on) return;
  d->reading = on;
  if (on) uv_read_start((uv_stream_t *)d->from, on_alloc, on_read);
  else uv_read_stop((uv_stream_t *)d->from);
}

typedef struct wr_s {
  uv_write_t req;
  dir_t *d;
  chunk_t *c;
  int reset_after;
} wr_t;

static void on_write(uv_write_t *w, int status) {
  wr_t *r = (wr_t *)w;
  dir_t *d = r->d;
  pair_t *p = d->p;
  d->queued -= r->c->len;
  int reset = r->reset_after;
  free(r->c);
  free(r);
  if (p->closing) return;
  if (status < 0 || reset) {
    pair_close(p, reset);
    return;
  }
  if (d->queued < QUEUE_MAX / 2) dir_read(d, 1);
  dir_pump(d);
}

static void on_shutdown(uv_shutdown_t *s, int status) {
  (void)status;
  free(s);
}

static void on_due(uv_timer_t *t) {
  dir_pump(t->data);
}

/* Deliver every chunk that is due (and the link up); then wait for the next one. */
static void dir_pump(dir_t *d) {
  pair_t *p = d->p;
  if (p->closing || !p->up_connected) return;
  uint64_t now = uv_now(G.loop);
  if (G.down) {
    uv_timer_start(&d->timer, on_due, G.up_at_ms > now ? G.up_at_ms - now : 1, 0);
    return;
  }
  while (d->head && d->head->due_ms <= now) {
    chunk_t *c = d->head;
    d->head = c->next;
    if (!d->head) d->tail = NULL;
    wr_t *r = calloc(1, sizeof *r);
    if (!r) {
      pair_close(p, 1);
      return;
    }
    r->d = d;
    r->c = c;
    uv_buf_t b = uv_buf_init(c->data, (unsigned)c->len);
    if (G.reset_prob > 0 && rnd() < G.reset_prob) {
      b.len = (unsigned)(c->len / 2); /* half of it, then the connection is gone */
      r->reset_after = 1;
    }
    if (uv_write(&r->req, (uv_stream_t *)d->to, &b, 1, on_write) != 0) {
      d->queued -= c->len;
      free(c);
      free(r);
      pair_close(p, 1);
      return;
    }
    if (r->reset_after) return;
  }
  if (d->head) {
    uv_timer_start(&d->timer, on_due, d->head->due_ms - now, 0);
  } else if (d->eof && !d->shut) {
    d->shut = 1;
    uv_shutdown_t *s = malloc(sizeof *s);
    if (!s || uv_shutdown(s, (uv_stream_t *)d->to, on_shutdown) != 0) free(s);
    if (p->d[0].shut && p->d[1].shut) pair_close(p, 0);
  }
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  pair_t *p = s->data;
  dir_t *d = (uv_tcp_t *)s == &p->down ? &p->d[0] : &p->d[1];
  if (n < 0) {
    free(b->base);
    if (n != UV_EOF) {
      pair_close(p, 1); /* a reset side resets the other */
      return;
    }
    d->eof = 1;
    d->reading = 0;
    dir_pump(d);
    return;
  }
  if (n == 0) {
    free(b->base);
    return;
  }
  chunk_t *c = malloc(sizeof *c + (size_t)n);
  if (!c) {
    free(b->base);
    pair_close(p, 1);
    return;
  }
  memcpy(c->data, b->base, (size_t)n);
  free(b->base);
  c->len = (size_t)n;
  c->next = NULL;
  uint64_t now = uv_now(G.loop);
  double due = (double)now + G.delay_ms + (2 * rnd() - 1) * G.jitter_ms;
  if (G.rate > 0) { /* the link is busy with the chunks ahead for their length / rate */
    double start = d->last_due > now ? (double)d->last_due : (double)now;
    double busy = start + 1000.0 * (double)n / G.rate;
    if (busy > due) due = busy;
  }
  c->due_ms = due > (double)d->last_due ? (uint64_t)due : d->last_due; /* order is kept */
  d->last_due = c->due_ms;
  if (d->tail) d->tail->next = c;
  else d->head = c;
  d->tail = c;
  d->queued += (size_t)n;
  if (d->queued > QUEUE_MAX) dir_read(d, 0);
  if (d->head == c) dir_pump(d);
}

static void on_up_connected(uv_connect_t *req, int status) {
  pair_t *p = req->data;
  if (p->closing) return;
  if (status < 0) {
    pair_close(p, 1);
    return;
  }
  p->up_connected = 1;
  for (int i = 0; i < 2; i++) {
    dir_read(&p->d[i], 1);
    dir_pump(&p->d[i]);
  }
}

static void pair_connect(pair_t *p) {
  p->connect.data = p;
  if (uv_tcp_connect(&p->connect, &p->up, (struct sockaddr *)&G.to, on_up_connected) != 0)
    pair_close(p, 1);
}

static void on_accept(uv_stream_t *server, int status) {
  if (status < 0) return;
  pair_t *p = calloc(1, sizeof *p);
  if (!p) return;
  uv_tcp_init(G.loop, &p->down);
  uv_tcp_init(G.loop, &p->up);
  p->down.data = p->up.data = p;
  p->open_handles = 4;
  for (int i = 0; i < 2; i++) {
    dir_t *d = &p->d[i];
    d->p = p;
    d->from = i == 0 ? &p->down : &p->up;
    d->to = i == 0 ? &p->up : &p->down;
    uv_timer_init(G.loop, &d->timer);
    d->timer.data = d;
  }
  if (uv_accept(server, (uv_stream_t *)&p->down) != 0) {
    pair_close(p, 0);
    return;
  }
  if (G.blackhole) return; /* accepted, never read, never answered */
  if (G.down) {
    if (G.nwaiting == G.capwaiting) {
      int cap = G.capwaiting ? 2 * G.capwaiting : 64;
      pair_t **w = realloc(G.waiting, (size_t)cap * sizeof *w);
      if (!w) {
        pair_close(p, 1);
        return;
      }
      G.waiting = w;
      G.capwaiting = cap;
    }
    G.waiting[G.nwaiting++] = p;
    return;
  }
  pair_connect(p);
}

static void link_up(uv_timer_t *t) {
  (void)t;
  G.down = 0;
  printf("nq-netem: link up\n");
  fflush(stdout);
  for (int i = 0; i < G.nwaiting; i++) pair_connect(G.waiting[i]);
  G.nwaiting = 0;
}

static void link_drop(void) {
  if (G.down || G.drop_for <= 0) return;
  G.down = 1;
  G.up_at_ms = uv_now(G.loop) + (uint64_t)G.drop_for * 1000;
  printf("nq-netem: link down for %d s\n", G.drop_for);
  fflush(stdout);
  uv_timer_start(&G.up_timer, link_up, (uint64_t)G.drop_for * 1000, 0);
}

static void on_drop_timer(uv_timer_t *t) {
  (void)t;
  link_drop();
}

static void on_signal(uv_signal_t *h, int sig) {
  (void)h;
  if (sig == SIGUSR1) link_drop();
  else exit(0);
}

static int addr_of(const char *spec, struct sockaddr_storage *ss) {
  char host[NQ_HOST_MAX];
  int port;
  if (nq_hostport_parse(spec, host, sizeof host, &port, 0) != 0) return -1;
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)ss) == 0) return 0;
  return uv_ip6_addr(host, port, (struct sockaddr_in6 *)ss) == 0 ? 0 : -1;
}

/* --listen and --to: checked addresses. */
typedef struct netem_args_s {
  struct sockaddr_storage lis;
  int64_t seed;
} netem_args_t;

static int set_listen(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  if (addr_of(v, &((netem_args_t *)base)->lis) != 0)
    return nq_errorf(err, len, NQ_EINVAL, "expected ADDR:PORT, got '%s'", v);
  return 0;
}

static int set_to(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  if (addr_of(v, &((netem_t *)base)->to) != 0)
    return nq_errorf(err, len, NQ_EINVAL, "expected ADDR:PORT, got '%s'", v);
  return 0;
}

#define N_DBL(nm, field, a, h, hlp)                                                              \
  {NQ_OPT_DOUBLE, nm, .off = offsetof(netem_t, field), .arg = a, .dlo = 0, .dhi = h, .def = "0", \
   .help = hlp}
#define N_INT(nm, field, a, hlp)                                                                 \
  {NQ_OPT_INT, nm, .off = offsetof(netem_t, field), .arg = a, .lo = 0, .hi = 86400, .def = "0",  \
   .help = hlp}

static const nq_opt_t args_table[] = {
    {NQ_OPT_STRING, "listen", .arg = "ADDR:PORT", .set = set_listen,
     .help = "where the proxy listens"},
    {NQ_OPT_INT64, "seed", .off = offsetof(netem_args_t, seed), .arg = "X", .lo = 0,
     .hi = 4294967295LL, .help = "the random draws' seed (default: from the clock)"},
    {NQ_OPT_END}};

static const nq_opt_t netem_table[] = {
    {NQ_OPT_STRING, "to", .arg = "ADDR:PORT", .set = set_to, .help = "where it forwards"},
    N_DBL("delay", delay_ms, "MS", 3600000, "each chunk is held this long"),
    N_DBL("jitter", jitter_ms, "MS", 3600000, "plus or minus up to this (at most --delay)"),
    N_DBL("rate", rate, "BYTES_PER_S", 1e12, "bandwidth of each direction, 0 = unlimited"),
    N_DBL("reset-prob", reset_prob, "P", 1, "chance that a chunk resets its connection"),
    {NQ_OPT_FLAG, "blackhole", .off = offsetof(netem_t, blackhole),
     .help = "accept, then forward nothing"},
    N_INT("drop-every", drop_every, "S", "the link goes down every S seconds (with --drop-for)"),
    N_INT("drop-for", drop_for, "D", "for D seconds: new connections refused, open ones cut"),
    {NQ_OPT_END}};

int main(int argc, char **argv) {
  netem_args_t args;
  memset(&args, 0, sizeof args);
  nq_opts_t opts = {
      .prog = "nq-netem",
      .summary = "fault-injecting TCP proxy for tests",
      .usage = "nq-netem --listen ADDR:PORT --to ADDR:PORT [--delay MS] [--jitter MS]\n"
               "                [--rate BYTES_PER_S] [--reset-prob P] [--blackhole]\n"
               "                [--drop-every S --drop-for D] [--seed X]",
      .about = "A fault-injecting TCP proxy for tests (loopback); see tools/netem_main.c.",
      .group = {{args_table, &args}, {netem_table, &G}}};
  int rc = nq_opts_main(&opts, argc, argv, 2);
  if (rc >= 0) return rc;
  G.rng = nq_opts_given(&opts, "seed") ? (unsigned)args.seed : (unsigned)uv_hrtime();
  if (!nq_opts_given(&opts, "listen") || !nq_opts_given(&opts, "to") || opts.optind < argc ||
      G.jitter_ms > G.delay_ms || (G.drop_every > 0 && G.drop_for == 0)) {
    nq_opts_help(&opts, stderr);
    return 2;
  }
  struct sockaddr_storage lis = args.lis;
  signal(SIGPIPE, SIG_IGN);
  G.loop = uv_default_loop();
  uv_tcp_t server;
  uv_tcp_init(G.loop, &server);
  int r = uv_tcp_bind(&server, (struct sockaddr *)&lis, 0);
  if (r == 0) r = uv_listen((uv_stream_t *)&server, 511, on_accept);
  if (r != 0) {
    fprintf(stderr, "nq-netem: listen: %s\n", uv_strerror(r));
    return 1;
  }
  uv_timer_init(G.loop, &G.drop_timer);
  uv_timer_init(G.loop, &G.up_timer);
  if (G.drop_every > 0)
    uv_timer_start(&G.drop_timer, on_drop_timer, (uint64_t)G.drop_every * 1000,
                   (uint64_t)G.drop_every * 1000);
  uv_signal_t s1, s2, s3;
  uv_signal_init(G.loop, &s1);
  uv_signal_init(G.loop, &s2);
  uv_signal_init(G.loop, &s3);
  uv_signal_start(&s1, on_signal, SIGUSR1);
  uv_signal_start(&s2, on_signal, SIGINT);
  uv_signal_start(&s3, on_signal, SIGTERM);
  char name[96];
  struct sockaddr_storage b;
  int blen = sizeof b;
  uv_tcp_getsockname(&server, (struct sockaddr *)&b, &blen);
  uv_ip_name((struct sockaddr *)&b, name, sizeof name);
  int port = b.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&b)->sin6_port)
                                     : ntohs(((struct sockaddr_in *)&b)->sin_port);
  printf("nq-netem: listening on %s:%d\n", name, port);
  fflush(stdout);
  return uv_run(G.loop, UV_RUN_DEFAULT);
}
