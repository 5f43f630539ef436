/* nq-server: a small read-only HTTP/1.1 server on the server's libuv loop (docs/http.md).
 *
 * Requests are parsed by Debian's libhttp-parser (nodejs/http-parser 2.9): no hand-written HTTP
 * parsing here. Two layers:
 *   - srv_http_session_t: one connection's request parsing, limits and response framing, with no
 *     I/O of its own (bytes in through srv_http_session_feed, responses out through a callback),
 *     so the libFuzzer target (tests/fuzz_http.c) and the unit tests drive it directly;
 *   - srv_http_t: the listener, the connections, backpressure and timeouts on the loop.
 *
 * What a peer gets: GET and HEAD only (anything else: 405 and close); a request line plus headers
 * of at most max_request bytes (431) and max_headers headers (431); no request body (400); a URL
 * of at most SRV_HTTP_URL_MAX bytes (414); a malformed request: 400 and close. Pipelined requests
 * are answered in order; while more than SRV_HTTP_HIGH_WATER bytes of responses wait to be
 * written, the connection is not read (the kernel's buffers then hold the peer back). A request
 * must arrive whole within request_ms of its first byte (slowloris), and a connection where nothing
 * moved for idle_ms (no byte read, no response written: idle between requests, or a peer that
 * does not read its responses) is closed. At most max_conns connections; one more is answered 503
 * and closed at once; with a table of addresses (srv_http_set_peers), an address holding
 * max_per_addr connections has further ones answered 429 and closed at once, and both refusals
 * are counted there for the log's summaries. Nothing here knows tokens.
 *
 * Everything runs on the loop thread.
 */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <http_parser.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define SRV_HTTP_URL_MAX 1024            /* request target, bytes */
#define SRV_HTTP_IN_BUF 16384            /* one read, per connection */
#define SRV_HTTP_HIGH_WATER (1u << 20)   /* queued response bytes before reading stops */

/* One parsed request, as a handler sees it. */
typedef struct srv_http_req_s {
  int head;          /* HEAD: the handler's body is measured, not sent */
  const char *path;  /* the URL's path, NUL-terminated, without the query; starts with '/' */
  const char *query; /* the query string without '?', or "" */
} srv_http_req_t;

/* A handler's answer. body is malloc'd (the session frees it) or NULL for an empty body.
 * A streamed answer (stream set, body NULL): the body is whatever can be read from stream_fd (the
 * read end of a pipe, say, whose writer is a thread producing it) until end of file, sent after
 * headers without Content-Length, and the connection closes after it (the body ends with the
 * connection). The session owns stream_fd from then on (a HEAD request's is closed at once).
 * On the loop, the connection reads from it only while its queued output is below
 * SRV_HTTP_HIGH_WATER, so a slow reader holds the writer back and memory stays bounded. */
typedef struct srv_http_resp_s {
  int status;          /* 200, 404, ... */
  const char *type;    /* Content-Type; NULL: text/plain; charset=utf-8 */
  char *body;
  size_t len;
  int stream;          /* 1: the body is streamed from stream_fd */
  int stream_fd;
} srv_http_resp_t;

typedef void (*srv_http_handler_fn)(void *arg, const srv_http_req_t *req, srv_http_resp_t *resp);
/* Take a complete response (buf, malloc'd; the callee owns it). Returns 0, or a negative code to
 * stop the session (it then closes). */
typedef int (*srv_http_out_fn)(void *arg, char *buf, size_t len);

typedef struct srv_http_limits_s {
  size_t max_request; /* request line + headers, bytes (default 8192) */
  int max_headers;    /* header lines (default 32) */
} srv_http_limits_t;

typedef struct srv_http_session_s {
  http_parser parser;
  srv_http_limits_t lim;
  srv_http_handler_fn handler;
  void *handler_arg;
  srv_http_out_fn out;
  void *out_arg;
  char url[SRV_HTTP_URL_MAX + 1];
  size_t url_len;
  size_t bytes;        /* of the current request's line and headers */
  int headers;         /* header lines of the current request */
  int in_value;        /* the last header callback was a value (the next field is a new line) */
  int in_message;      /* a request has begun and is not complete */
  int reject;          /* the status to answer the current request with instead (4xx), or 0 */
  int closing;         /* the last response said Connection: close; further input is ignored */
  int busy;            /* srv_http_session_feed is running (the handler may not feed again) */
  int prev_cr;         /* the last byte parsed was a CR (bare LF line ends are refused) */
  char name[4];        /* the start of the current header name ... */
  size_t name_len;     /* ... and its whole length */
  int has_host;        /* the current request has a Host header */
  uint64_t requests;   /* answered so far */
  uint64_t unavailable; /* ... of which the handler answered 503 (exports busy): counted per
                           address by the connection, for the log's summaries */
  int stream_fd;       /* >= 0: the last response's body is to be streamed from this fd (the
                          session is closing; the connection takes it: srv_http_session_take) */
} srv_http_session_t;

/* Start a session. lim may be NULL (defaults). */
void srv_http_session_init(srv_http_session_t *s, const srv_http_limits_t *lim,
                           srv_http_handler_fn handler, void *handler_arg, srv_http_out_fn out,
                           void *out_arg);
/* Parse len bytes, answering each complete request through out, in order. *used gets how many
 * bytes were consumed: all of them, unless pause_after returned non-zero after a response (then
 * the caller feeds the rest later). Returns 0 while the connection may go on, 1 once it must be
 * closed after the responses already given to out (an error response, Connection: close, an out
 * failure). pause_after may be NULL. */
int srv_http_session_feed(srv_http_session_t *s, const char *data, size_t len, size_t *used,
                          int (*pause_after)(void *arg), void *pause_arg);
/* The fd of a streamed response waiting to be sent (the caller then owns it), or -1. */
int srv_http_session_take(srv_http_session_t *s);
/* 1 while a request has begun and is not complete (for the request deadline). */
int srv_http_session_midrequest(const srv_http_session_t *s);

/* The reason phrase of a status code this server sends ("OK", "Not Found", ...). */
const char *srv_http_reason(int status);

/* ---- the server ---- */

typedef struct srv_http_cfg_s {
  char host[64];        /* IP literal */
  int port;             /* 0: any free port (tests) */
  int max_conns;        /* default 64 */
  int max_per_addr;     /* connections per address (peers.h), more get 429; default 8, 0 = any */
  int idle_ms;          /* nothing read or written for this long; default 30000 */
  int request_ms;       /* from a request's first byte to its end; default 10000 */
  /* A streamed body (/api/export) must leave at this many bytes a second, measured over
   * stream_window_ms while its output is backed up (the reader, not the producer, is slow); a
   * reader below it loses the connection and its stream's slot. Default 16384 B/s over 10000 ms;
   * 0 = no minimum. */
  int stream_min_rate;
  int stream_window_ms;
  srv_http_limits_t lim;
} srv_http_cfg_t;

typedef struct srv_http_s srv_http_t;
struct srv_peers_s; /* peers.h */

/* Defaults for every field but host and port (127.0.0.1:7448). */
void srv_http_cfg_default(srv_http_cfg_t *cfg);
/* The listen-address rule of both listeners (--listen, --http): "host:port", "[v6]:port" or
 * ":port" (all IPv4 addresses); "localhost" means 127.0.0.1; the host must be an IP literal that
 * fits hostlen. NQ_EINVAL. */
int srv_listen_parse(const char *spec, char *host, size_t hostlen, int *port);
/* "ip:port" or "[ip6]:port" of a bound listener (port: what to show if it cannot be read). */
void srv_tcp_bound(const uv_tcp_t *t, int port, char *buf, size_t buflen);
/* Parse "ADDR:PORT" (the --http flag; "off" is the caller's). NQ_EINVAL. */
int srv_http_cfg_set_listen(srv_http_cfg_t *cfg, const char *spec);

/* Listen on cfg's address and answer requests with handler(arg, ...). Returns 0 and *out, or
 * NQ_EINVAL / NQ_EIO / NQ_ENOMEM with errbuf saying why; on failure the listener is closing (its
 * memory is freed by the loop's next iteration). */
int srv_http_start(srv_http_t **out, uv_loop_t *loop, const srv_http_cfg_t *cfg,
                   srv_http_handler_fn handler, void *arg, char *errbuf, size_t errlen);
/* Count connections per address in `peers` (the server's table, peers.h; it must outlive the
 * server or srv_http_stop): cfg.max_per_addr applies, and refusals go to its summaries. Without
 * it (NULL, the default) addresses are not looked at. */
void srv_http_set_peers(srv_http_t *h, struct srv_peers_s *peers);
/* Stop listening and close every connection; the memory is freed once the loop has run the close
 * callbacks. NULL is ignored. */
void srv_http_stop(srv_http_t *h);
/* The address listened on ("127.0.0.1:7448"). */
const char *srv_http_bound(const srv_http_t *h);
/* Open connections, and connections refused with 503 since the start. */
int srv_http_conns(const srv_http_t *h);
uint64_t srv_http_refused(const srv_http_t *h);

#endif
