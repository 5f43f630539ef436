/* nq-server: the read-only HTTP server (see http.h). */
#include "http.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "nq/addr.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "peers.h"

/* ---- the session: parsing and response framing ---- */

const char *srv_http_reason(int status) {
  switch (status) {
  case 200: return "OK";
  case 400: return "Bad Request";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 414: return "URI Too Long";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 429: return "Too Many Requests";
  case 503: return "Service Unavailable";
  case 505: return "HTTP Version Not Supported";
  default: return "Error";
  }
}

static srv_http_session_t *sess_of(http_parser *p) {
  return p->data;
}

/* Count a piece of the request line or headers against the request's size limit. */
static int account(srv_http_session_t *s, size_t len) {
  s->bytes += len;
  if (s->bytes > s->lim.max_request) {
    s->reject = 431;
    return -1;
  }
  return 0;
}

static int on_message_begin(http_parser *p) {
  srv_http_session_t *s = sess_of(p);
  s->url_len = 0;
  s->bytes = 0;
  s->headers = 0;
  s->in_value = 1; /* the first field callback starts a new header line */
  s->reject = 0;
  s->in_message = 1;
  s->has_host = 0;
  return 0;
}

static int on_url(http_parser *p, const char *at, size_t len) {
  srv_http_session_t *s = sess_of(p);
  if (account(s, len) != 0) return -1;
  if (s->url_len + len > SRV_HTTP_URL_MAX) {
    s->reject = 414;
    return -1;
  }
  memcpy(s->url + s->url_len, at, len);
  s->url_len += len;
  s->url[s->url_len] = '\0';
  return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len) {
  srv_http_session_t *s = sess_of(p);
  if (s->in_value && ++s->headers > s->lim.max_headers) {
    s->reject = 431;
    return -1;
  }
  if (s->in_value) s->name_len = 0;
  /* The name may come in pieces: keep its start, enough to tell "Host". */
  for (size_t i = 0; i < len; i++, s->name_len++)
    if (s->name_len < sizeof s->name) s->name[s->name_len] = at[i];
  s->in_value = 0;
  return account(s, len);
}

static int on_header_value(http_parser *p, const char *at, size_t len) {
  srv_http_session_t *s = sess_of(p);
  if (!s->in_value && s->name_len == 4 && strncasecmp(s->name, "host", 4) == 0) s->has_host = 1;
  s->in_value = 1;
  return account(s, len);
}

/* Only GET and HEAD, never a body or an upgrade: refused before anything more is read. */
static int on_headers_complete(http_parser *p) {
  srv_http_session_t *s = sess_of(p);
  if (p->method != HTTP_GET && p->method != HTTP_HEAD) {
    s->reject = 405;
    return -1;
  }
  /* HTTP/1.0 and 1.1 only; 1.1 requires Host (RFC 9112, 3.2). */
  if (p->http_major != 1 || p->http_minor > 1) {
    s->reject = 505;
    return -1;
  }
  if (p->http_minor == 1 && !s->has_host) {
    s->reject = 400;
    return -1;
  }
  /* No body, and no protocol switch (the parser would stop parsing HTTP after it). */
  if ((p->flags & F_CHUNKED) || (p->content_length > 0 && p->content_length != ULLONG_MAX) ||
      p->upgrade) {
    s->reject = 400;
    return -1;
  }
  return 0;
}

/* Frame a response (status line, headers, body unless HEAD) into one buffer and pass it on. */
static int respond(srv_http_session_t *s, const srv_http_resp_t *r, int head, int close) {
  const char *type = r->type ? r->type : "text/plain; charset=utf-8";
  char hdr[512], clen[48] = "";
  /* A streamed body ends with the connection: no length. */
  if (!r->stream) snprintf(clen, sizeof clen, "Content-Length: %zu\r\n", r->len);
  int n = snprintf(hdr, sizeof hdr,
                   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n%s"
                   "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
                   "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'\r\n"
                   "%sConnection: %s\r\n\r\n",
                   r->status, srv_http_reason(r->status), type, clen,
                   r->status == 405 ? "Allow: GET, HEAD\r\n" : "",
                   close || r->stream ? "close" : "keep-alive");
  assert(n > 0 && (size_t)n < sizeof hdr);
  size_t blen = head ? 0 : r->len;
  char *buf = malloc((size_t)n + blen);
  if (!buf) return NQ_ENOMEM;
  memcpy(buf, hdr, (size_t)n);
  if (blen) memcpy(buf + n, r->body, blen);
  s->requests++;
  return s->out(s->out_arg, buf, (size_t)n + blen);
}

/* A refusal: a short text body naming the status, and the connection closes. */
static int respond_error(srv_http_session_t *s, int status) {
  char body[96];
  int n = snprintf(body, sizeof body, "%d %s\n", status, srv_http_reason(status));
  srv_http_resp_t r = {status, NULL, body, (size_t)n, 0, -1};
  s->closing = 1;
  return respond(s, &r, 0, 1);
}

static void close_fd(int fd) {
  if (fd >= 0) close(fd);
}

int srv_http_session_take(srv_http_session_t *s) {
  int fd = s->stream_fd;
  s->stream_fd = -1;
  return fd;
}

static int on_message_complete(http_parser *p) {
  srv_http_session_t *s = sess_of(p);
  struct http_parser_url u;
  char path[SRV_HTTP_URL_MAX + 1], query[SRV_HTTP_URL_MAX + 1] = "";
  http_parser_url_init(&u);
  /* Origin-form only ("/path?query"): an absolute URL, "*" or anything unparsable is a 400. */
  if (s->url_len == 0 || s->url[0] != '/' ||
      http_parser_parse_url(s->url, s->url_len, 0, &u) != 0 || !(u.field_set & (1 << UF_PATH))) {
    s->reject = 400;
    return -1;
  }
  memcpy(path, s->url + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
  path[u.field_data[UF_PATH].len] = '\0';
  if (u.field_set & (1 << UF_QUERY)) {
    memcpy(query, s->url + u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len);
    query[u.field_data[UF_QUERY].len] = '\0';
  }
  s->in_message = 0;
  srv_http_req_t req = {p->method == HTTP_HEAD, path, query};
  srv_http_resp_t r = {500, NULL, NULL, 0, 0, -1};
  s->handler(s->handler_arg, &req, &r);
  s->unavailable += r.status == 503;
  int close = !http_should_keep_alive(p) || r.stream;
  int rc = respond(s, &r, req.head, close);
  free(r.body);
  if (r.stream) {
    if (rc == 0 && !req.head) s->stream_fd = r.stream_fd;
    else close_fd(r.stream_fd);
  }
  if (close || rc != 0) {
    s->closing = 1;
    return -1;
  }
  /* Stop after each message, so the caller can hold the rest back while its output is full. */
  http_parser_pause(p, 1);
  return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

void srv_http_session_init(srv_http_session_t *s, const srv_http_limits_t *lim,
                           srv_http_handler_fn handler, void *handler_arg, srv_http_out_fn out,
                           void *out_arg) {
  memset(s, 0, sizeof *s);
  http_parser_init(&s->parser, HTTP_REQUEST);
  s->parser.data = s;
  s->lim.max_request = lim && lim->max_request ? lim->max_request : 8192;
  s->lim.max_headers = lim && lim->max_headers ? lim->max_headers : 32;
  s->handler = handler;
  s->handler_arg = handler_arg;
  s->out = out;
  s->out_arg = out_arg;
  s->stream_fd = -1;
}

int srv_http_session_midrequest(const srv_http_session_t *s) {
  return !s->closing && s->in_message;
}

/* The bytes of p before its first bare LF (one not after a CR; s->prev_cr: the byte before p
 * was one), n if there is none. */
static size_t bare_lf(const srv_http_session_t *s, const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] == '\n' && !(i ? p[i - 1] == '\r' : s->prev_cr)) return i;
  return n;
}

int srv_http_session_feed(srv_http_session_t *s, const char *data, size_t len, size_t *used,
                          int (*pause_after)(void *arg), void *pause_arg) {
  *used = 0;
  if (s->closing) {
    *used = len;
    return 1;
  }
  assert(!s->busy);
  s->busy = 1;
  size_t off = 0;
  int rc = 0;
  while (off < len) {
    uint64_t before = s->requests;
    /* Lines end in CRLF (RFC 9112, 2.2); the parser would take a bare LF, so the input is cut
     * before one and the request that holds it refused. */
    size_t lim = bare_lf(s, data + off, len - off);
    if (lim == 0) {
      respond_error(s, 400);
      rc = 1;
      off = len;
      break;
    }
    /* One request at a time when the caller may pause: execute stops after each message. */
    size_t n = http_parser_execute(&s->parser, &settings, data + off, lim);
    enum http_errno e = HTTP_PARSER_ERRNO(&s->parser);
    if (n > 0) s->prev_cr = data[off + n - 1] == '\r';
    off += n;
    if (s->closing) {
      rc = 1;
      off = len;
      break;
    }
    if (e == HPE_PAUSED) {
      http_parser_pause(&s->parser, 0);
    } else if (e != HPE_OK || s->parser.upgrade) {
      if (!s->reject) s->reject = 400;
      respond_error(s, s->reject);
      rc = 1;
      off = len;
      break;
    }
    if (s->requests != before && pause_after && pause_after(pause_arg)) break;
    if (n == 0) break;
  }
  s->busy = 0;
  *used = off;
  return rc;
}

/* ---- the server on the loop ---- */

typedef struct http_conn_s http_conn_t;

struct srv_http_s {
  uv_loop_t *loop;
  srv_http_cfg_t cfg;
  srv_http_handler_fn handler;
  void *arg;
  uv_tcp_t listener;
  uv_timer_t timer;
  uv_check_t check;   /* a new turn of accepts after each turn's reads (HTTP_ACCEPT_BURST) */
  int accepts_turn, accept_deferred;
  int timer_open;
  int pending_closes; /* handles whose close callback has not run yet */
  int stopping;
  http_conn_t *conns;
  int nconns;         /* on the list, closing ones included (until their close callback) */
  int nlive;          /* ... of which not closing: what max_conns bounds */
  uint64_t refused;
  char bound[96];
  srv_peers_t *peers; /* per-address counts and limits, or NULL */
};

struct http_conn_s {
  uv_tcp_t tcp;
  srv_http_t *h;
  srv_http_session_t sess;
  char in[SRV_HTTP_IN_BUF];
  size_t pos, npend;   /* unparsed input kept while paused: in[pos .. pos + npend) */
  size_t queued;       /* response bytes handed to uv_write and not yet written */
  uint64_t last_ms;    /* the last byte read or written */
  uint64_t req_ms;     /* when the request in progress began (0: none) */
  uint64_t rate_ms;    /* a stream: since when its output has been backed up (0: it is not) */
  size_t rate_bytes;   /* ... and the bytes written since */
  int reading, closing, close_after;
  srv_peer_t *peer;    /* its address's entry (counted in peer->http), or NULL */
  http_conn_t *prev, *next;
  /* A streamed response body (srv_http_resp_t.stream): read from `pipe` while the output queue
   * is below SRV_HTTP_HIGH_WATER; the connection closes once it ended and was written. */
  uv_pipe_t pipe;
  int streaming;       /* the pipe is open (its close callback has not run) */
  int stream_reading;  /* it is being read */
  int handles;         /* open handles (tcp, pipe): freed when the last one's close has run */
};

#define SRV_HTTP_STREAM_CHUNK 65536

typedef struct {
  uv_write_t w;
  http_conn_t *c;
  char *buf;
  size_t len;
} http_write_t;

static void h_maybe_free(srv_http_t *h) {
  if (h->stopping && h->pending_closes == 0) free(h);
}

/* The close callback of a connection's handles (its tcp, and its pipe while it streams): the
 * connection is freed once the last of them has closed (the tcp closes only in conn_close). */
static void on_conn_closed(uv_handle_t *hd) {
  http_conn_t *c = hd->data;
  srv_http_t *h = c->h;
  if (--c->handles > 0) return;
  assert(c->closing);
  if (c->prev) c->prev->next = c->next;
  else h->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  h->nconns--;
  h->pending_closes--;
  free(c);
  h_maybe_free(h);
}

/* Close the stream's pipe (the producer then sees EPIPE and stops). */
static void stream_close(http_conn_t *c) {
  if (!c->streaming) return;
  c->streaming = c->stream_reading = 0;
  uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
}

static void conn_close(http_conn_t *c) {
  if (c->closing) return;
  c->closing = 1;
  c->h->nlive--;
  if (c->peer) { /* now, not in the close callback: the table may be freed before that runs */
    assert(c->peer->http > 0);
    c->peer->http--;
    c->peer = NULL;
  }
  c->h->pending_closes++;
  stream_close(c);
  uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

/* ---- a streamed body ---- */

static int conn_out(void *arg, char *buf, size_t len);

static void on_stream_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf) {
  (void)hd;
  (void)suggested;
  char *p = malloc(SRV_HTTP_STREAM_CHUNK);
  *buf = uv_buf_init(p, p ? SRV_HTTP_STREAM_CHUNK : 0);
}

static void stream_pause(http_conn_t *c) {
  if (!c->stream_reading) return;
  uv_read_stop((uv_stream_t *)&c->pipe);
  c->stream_reading = 0;
}

static void on_stream_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  http_conn_t *c = st->data;
  if (nread > 0) {
    /* conn_out owns the chunk from here; a full queue stops the producer (on_written resumes). */
    if (conn_out(c, buf->base, (size_t)nread) != 0) {
      conn_close(c);
      return;
    }
    c->last_ms = uv_now(c->h->loop);
    if (c->queued >= SRV_HTTP_HIGH_WATER) stream_pause(c);
    return;
  }
  free(buf->base);
  if (nread == 0) return;
  /* End of the body (EOF), or the producer failed: what was sent is all there is. */
  if (nread != UV_EOF) nq_log(NQ_LOG_WARN, "http: streamed response: %s", uv_strerror((int)nread));
  stream_close(c);
  if (c->queued == 0) conn_close(c);
}

static void stream_resume(http_conn_t *c) {
  if (!c->streaming || c->stream_reading || c->closing) return;
  if (uv_read_start((uv_stream_t *)&c->pipe, on_stream_alloc, on_stream_read) == 0)
    c->stream_reading = 1;
  else
    conn_close(c);
}

/* Take the session's streamed body: read it from its fd from now on. */
static void stream_start(http_conn_t *c, int fd) {
  if (uv_pipe_init(c->h->loop, &c->pipe, 0) != 0) {
    close(fd);
    conn_close(c);
    return;
  }
  c->pipe.data = c;
  c->handles++;
  c->streaming = 1;
  c->rate_ms = 0;
  c->rate_bytes = 0;
  if (uv_pipe_open(&c->pipe, fd) != 0) {
    close(fd);
    conn_close(c);
    return;
  }
  if (c->queued < SRV_HTTP_HIGH_WATER) stream_resume(c);
}

static void conn_read_start(http_conn_t *c);
static void conn_feed(http_conn_t *c);

static void on_written(uv_write_t *w, int status) {
  http_write_t *hw = (http_write_t *)w;
  http_conn_t *c = hw->c;
  c->queued -= hw->len;
  c->rate_bytes += hw->len;
  free(hw->buf);
  free(hw);
  if (c->closing) return;
  c->last_ms = uv_now(c->h->loop);
  if (status != 0) {
    conn_close(c);
    return;
  }
  if (c->close_after) {
    if (c->streaming && c->queued < SRV_HTTP_HIGH_WATER / 2) stream_resume(c);
    else if (!c->streaming && c->queued == 0) conn_close(c);
    return;
  }
  /* Drained below the mark: parse what was held back, then read again. */
  if (c->queued < SRV_HTTP_HIGH_WATER / 2) {
    if (c->npend) conn_feed(c);
    if (!c->closing && !c->close_after && c->npend == 0) conn_read_start(c);
  }
}

static int conn_out(void *arg, char *buf, size_t len) {
  http_conn_t *c = arg;
  http_write_t *hw = malloc(sizeof *hw);
  if (!hw) {
    free(buf);
    return NQ_ENOMEM;
  }
  hw->c = c;
  hw->buf = buf;
  hw->len = len;
  uv_buf_t b = uv_buf_init(buf, (unsigned)len);
  int r = uv_write(&hw->w, (uv_stream_t *)&c->tcp, &b, 1, on_written);
  if (r != 0) {
    free(buf);
    free(hw);
    return NQ_EIO;
  }
  c->queued += len;
  return 0;
}

static int conn_full(void *arg) {
  http_conn_t *c = arg;
  return c->queued >= SRV_HTTP_HIGH_WATER;
}

static void conn_read_stop(http_conn_t *c) {
  if (!c->reading) return;
  uv_read_stop((uv_stream_t *)&c->tcp);
  c->reading = 0;
}

/* Parse the held input; what a full output queue leaves unparsed stays held, unread. */
static void conn_feed(http_conn_t *c) {
  size_t used = 0;
  uint64_t unavailable = c->sess.unavailable;
  int rc = srv_http_session_feed(&c->sess, c->in + c->pos, c->npend, &used, conn_full, c);
  /* 503s of the handler (exports busy) go into the log's summaries, not one line each. */
  for (uint64_t k = unavailable; k < c->sess.unavailable && c->h->peers; k++)
    srv_peers_count(c->h->peers, c->peer, SRV_PEER_HTTP_UNAVAILABLE);
  c->pos += used;
  c->npend -= used;
  if (c->npend == 0) c->pos = 0;
  c->req_ms = srv_http_session_midrequest(&c->sess) ? (c->req_ms ? c->req_ms : c->last_ms) : 0;
  int fd = srv_http_session_take(&c->sess);
  if (rc != 0) {
    c->close_after = 1;
    conn_read_stop(c);
    if (fd >= 0) stream_start(c, fd);
    else if (c->queued == 0) conn_close(c);
  } else if (c->npend > 0) {
    conn_read_stop(c); /* resumed by on_written */
  }
}

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf) {
  http_conn_t *c = hd->data;
  (void)suggested;
  /* Reading only runs with nothing held, so the whole buffer is free. */
  assert(c->npend == 0);
  *buf = uv_buf_init(c->in, sizeof c->in);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  http_conn_t *c = st->data;
  (void)buf;
  if (nread == 0 || c->closing) return;
  if (nread < 0) {
    /* The peer is done sending (or gone): what it asked for is still answered, then closed. */
    conn_read_stop(c);
    c->close_after = 1;
    if (nread != UV_EOF || c->queued == 0) conn_close(c);
    return;
  }
  c->last_ms = uv_now(c->h->loop);
  c->pos = 0;
  c->npend = (size_t)nread;
  conn_feed(c);
}

static void conn_read_start(http_conn_t *c) {
  if (c->reading || c->closing) return;
  if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0) c->reading = 1;
  else conn_close(c);
}

/* Over max_conns (503) or its address's limit (429): answer with what the socket takes at once,
 * and close. */
static void refuse(srv_http_t *h, http_conn_t *c, srv_peer_t *pe, int status) {
  char msg[160];
  int n = snprintf(msg, sizeof msg, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\nRetry-After: 5\r\n"
                   "Connection: close\r\n\r\n", status, srv_http_reason(status));
  uv_buf_t b = uv_buf_init(msg, (unsigned)n);
  uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
  h->refused++;
  if (h->peers)
    srv_peers_count(h->peers, pe, status == 429 ? SRV_PEER_HTTP_PER_ADDR : SRV_PEER_HTTP_BUSY);
  conn_close(c);
}

/* The table entry of a new connection's address (NULL: no table, untracked, unknown). */
static srv_peer_t *peer_of(srv_http_t *h, http_conn_t *c) {
  struct sockaddr_storage ss;
  int len = sizeof ss;
  srv_addr_key_t k;
  if (!h->peers || uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0 ||
      srv_addr_key(&ss, &k) != 0)
    return NULL;
  return srv_peers_get(h->peers, &k, uv_now(h->loop));
}

/* The server is full: close the idle connection (nothing in progress: no request begun, no
 * response queued or streaming) of the address with the most HTTP connections, the one idle the
 * longest among them, to admit `fresh`. A flood of idle connections from many addresses then
 * evicts itself, the busiest first, and a visitor's connection -- one of its address, and the
 * newest -- is the last to go. 1 when one was closed. */
static int evict_idle(srv_http_t *h, const http_conn_t *fresh) {
  http_conn_t *victim = NULL;
  int vbusy = -1;
  for (http_conn_t *c = h->conns; c; c = c->next) {
    if (c == fresh || c->closing || c->req_ms || c->queued || c->streaming || c->npend) continue;
    int busy = c->peer ? c->peer->http : 1;
    if (busy > vbusy || (busy == vbusy && c->last_ms < victim->last_ms)) {
      victim = c;
      vbusy = busy;
    }
  }
  if (!victim) return 0;
  if (h->peers) srv_peers_count(h->peers, victim->peer, SRV_PEER_HTTP_EVICTED);
  conn_close(victim);
  return 1;
}

/* Connections taken per loop turn. libuv accepts until the kernel's queue is empty, and a flood
 * that reconnects as fast as it is refused keeps that queue full: the loop, shared with the TLS
 * side, would stay in one accept callback (no reads, no timers). Past the share the connection
 * waits in libuv (which stops watching the listener) until the check phase (on_check). */
#define HTTP_ACCEPT_BURST 64

static void on_connection(uv_stream_t *server, int status) {
  srv_http_t *h = server->data;
  if (status != 0 || h->stopping) return;
  if (h->accepts_turn >= HTTP_ACCEPT_BURST) {
    h->accept_deferred = 1;
    return;
  }
  h->accepts_turn++;
  http_conn_t *c = calloc(1, sizeof *c);
  if (!c) return;
  c->h = h;
  c->handles = 1;
  uv_tcp_init(h->loop, &c->tcp);
  c->tcp.data = c;
  c->next = h->conns;
  if (h->conns) h->conns->prev = c;
  h->conns = c;
  h->nconns++;
  h->nlive++;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
    conn_close(c);
    return;
  }
  srv_peer_t *pe = peer_of(h, c);
  if (pe && h->cfg.max_per_addr > 0 && pe->http >= h->cfg.max_per_addr) {
    refuse(h, c, pe, 429);
    return;
  }
  /* Connections being closed (refusals among them) are freed by the loop's next iteration: a
   * burst of refusals must not make the next connection look over the limit. Full: an idle
   * connection makes room (evict_idle), else the new one is refused. */
  if (h->nlive > h->cfg.max_conns && !evict_idle(h, c)) {
    refuse(h, c, pe, 503);
    return;
  }
  if (pe) {
    c->peer = pe;
    pe->http++;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  c->last_ms = uv_now(h->loop);
  srv_http_session_init(&c->sess, &h->cfg.lim, h->handler, h->arg, conn_out, c);
  conn_read_start(c);
}

/* Once a second: close connections too slow to send a request, and those where nothing moved
 * for idle_ms: no byte read and no response written (a peer that does not read its responses
 * holds at most SRV_HTTP_HIGH_WATER bytes, and only for that long). */
static void on_timer(uv_timer_t *t) {
  srv_http_t *h = t->data;
  uint64_t now = uv_now(h->loop);
  for (http_conn_t *c = h->conns, *next; c; c = next) {
    next = c->next;
    if (c->closing) continue;
    int slow = c->req_ms && now - c->req_ms > (uint64_t)h->cfg.request_ms;
    int idle = now - c->last_ms > (uint64_t)h->cfg.idle_ms;
    if (slow || idle) {
      conn_close(c);
      continue;
    }
    /* A stream whose reader is slower than the minimum rate: measured from when its output
     * backed up (the reader, not the producer, is the slow side) over stream_window_ms. */
    if (!c->streaming || h->cfg.stream_min_rate <= 0) continue;
    if (c->queued < SRV_HTTP_HIGH_WATER / 2) {
      c->rate_ms = 0;
    } else if (!c->rate_ms) {
      c->rate_ms = now;
      c->rate_bytes = 0;
    } else if (now - c->rate_ms >= (uint64_t)h->cfg.stream_window_ms) {
      double want = (double)h->cfg.stream_min_rate * (double)(now - c->rate_ms) / 1000.0;
      if ((double)c->rate_bytes < want) {
        if (h->peers) srv_peers_count(h->peers, c->peer, SRV_PEER_HTTP_STALLED);
        conn_close(c);
        continue;
      }
      c->rate_ms = now;
      c->rate_bytes = 0;
    }
  }
}

void srv_http_cfg_default(srv_http_cfg_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  snprintf(cfg->host, sizeof cfg->host, "127.0.0.1");
  cfg->port = 7448;
  cfg->max_conns = 64;
  cfg->max_per_addr = 8;
  cfg->idle_ms = 30000;
  cfg->request_ms = 10000;
  cfg->stream_min_rate = 16384;
  cfg->stream_window_ms = 10000;
  cfg->lim.max_request = 8192;
  cfg->lim.max_headers = 32;
}

int srv_listen_parse(const char *spec, char *host, size_t hostlen, int *port) {
  char h[NQ_HOST_MAX];
  if (nq_hostport_parse(spec, h, sizeof h, port, NQ_HOSTPORT_LISTEN) != 0) return NQ_EINVAL;
  /* Addresses are IP literals (no resolver at start-up); the two common names are mapped. */
  const char *ip = !h[0] ? "0.0.0.0" : !strcmp(h, "localhost") ? "127.0.0.1" : h;
  size_t n = strlen(ip);
  if (n >= hostlen) return NQ_EINVAL;
  memcpy(host, ip, n + 1);
  return 0;
}

int srv_http_cfg_set_listen(srv_http_cfg_t *cfg, const char *spec) {
  return srv_listen_parse(spec, cfg->host, sizeof cfg->host, &cfg->port);
}

static void on_handle_closed(uv_handle_t *hd) {
  srv_http_t *h = hd->data;
  h->pending_closes--;
  h_maybe_free(h);
}

void srv_tcp_bound(const uv_tcp_t *t, int port, char *buf, size_t buflen) {
  struct sockaddr_storage ss;
  int len = sizeof ss;
  char ip[INET6_ADDRSTRLEN] = "?";
  ss.ss_family = AF_INET;
  if (uv_tcp_getsockname(t, (struct sockaddr *)&ss, &len) == 0) {
    if (ss.ss_family == AF_INET) {
      uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
      port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    } else {
      uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
      port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
  }
  snprintf(buf, buflen, ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", ip, port);
}

/* The check phase, after this turn's reads: a new share of accepts; the connection left waiting
 * when the last share ran out is taken now (uv_accept watches the listener again). */
static void on_check(uv_check_t *t) {
  srv_http_t *h = t->data;
  h->accepts_turn = 0;
  if (!h->accept_deferred || h->stopping) return;
  h->accept_deferred = 0;
  on_connection((uv_stream_t *)&h->listener, 0);
}

int srv_http_start(srv_http_t **out, uv_loop_t *loop, const srv_http_cfg_t *cfg,
                   srv_http_handler_fn handler, void *arg, char *errbuf, size_t errlen) {
  *out = NULL;
  struct sockaddr_storage ss;
  if (uv_ip4_addr(cfg->host, cfg->port, (struct sockaddr_in *)&ss) != 0 &&
      uv_ip6_addr(cfg->host, cfg->port, (struct sockaddr_in6 *)&ss) != 0)
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "--http: %s is not an IP address", cfg->host);
  srv_http_t *h = calloc(1, sizeof *h);
  if (!h) return nq_errorf(errbuf, errlen, NQ_ENOMEM, "out of memory");
  h->loop = loop;
  h->cfg = *cfg;
  h->handler = handler;
  h->arg = arg;
  uv_tcp_init(loop, &h->listener);
  h->listener.data = h;
  int r = uv_tcp_bind(&h->listener, (struct sockaddr *)&ss, 0);
  if (r == 0) r = uv_listen((uv_stream_t *)&h->listener, 511, on_connection);
  if (r != 0) {
    h->stopping = 1;
    h->pending_closes = 1;
    uv_close((uv_handle_t *)&h->listener, on_handle_closed);
    return nq_errorf(errbuf, errlen, NQ_EIO, "--http: listen on %s:%d: %s", cfg->host,
                     cfg->port, uv_strerror(r));
  }
  srv_tcp_bound(&h->listener, cfg->port, h->bound, sizeof h->bound);
  uv_check_init(loop, &h->check);
  h->check.data = h;
  uv_check_start(&h->check, on_check);
  uv_timer_init(loop, &h->timer);
  h->timer.data = h;
  h->timer_open = 1;
  uv_timer_start(&h->timer, on_timer, 1000, 1000);
  *out = h;
  return 0;
}

void srv_http_stop(srv_http_t *h) {
  if (!h || h->stopping) return;
  h->stopping = 1;
  h->pending_closes += 3;
  uv_close((uv_handle_t *)&h->listener, on_handle_closed);
  uv_close((uv_handle_t *)&h->check, on_handle_closed);
  uv_close((uv_handle_t *)&h->timer, on_handle_closed);
  for (http_conn_t *c = h->conns; c; c = c->next) conn_close(c);
}

void srv_http_set_peers(srv_http_t *h, srv_peers_t *peers) {
  h->peers = peers;
}

const char *srv_http_bound(const srv_http_t *h) {
  return h->bound;
}

int srv_http_conns(const srv_http_t *h) {
  return h->nconns;
}

uint64_t srv_http_refused(const srv_http_t *h) {
  return h->refused;
}
