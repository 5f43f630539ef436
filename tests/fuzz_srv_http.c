/* libFuzzer target: the HTTP request handling of the status page (server/http.c's session over
 * libhttp-parser, and server/web.c's routing), without sockets.
 *
 * Input layout: byte 0 selects the chunk size (1..64) the rest is fed in, so every split of the
 * stream is explored; byte 1 selects whether the caller pauses after each response (the
 * backpressure path) or not.
 * Properties checked for every input:
 *   - no crash, out-of-bounds access or leak (ASan/UBSan);
 *   - every response starts with "HTTP/1.1 " and a status this server sends, and its
 *     Content-Length matches the bytes after the headers (HEAD: none);
 *   - nothing is answered after a response that said Connection: close;
 *   - requests longer than the limits are refused (4xx), never passed to the handler;
 *   - the handler only ever sees an origin-form path starting with '/', without the query.
 * Built with clang and -DNQ_FUZZ=ON (scripts/fuzz.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "web.h"

#define FUZZ_ASSERT(cond)                                                                    \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "fuzz_srv_http: assertion failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                                               \
    }                                                                                        \
  } while (0)

typedef struct {
  int closed;      /* a response said Connection: close */
  int responses;
  int handled;
  int pause_every;
} fz_t;

static void handler(void *arg, const srv_http_req_t *req, srv_http_resp_t *r) {
  fz_t *f = arg;
  f->handled++;
  FUZZ_ASSERT(req->path[0] == '/');
  FUZZ_ASSERT(strchr(req->path, '?') == NULL);
  FUZZ_ASSERT(strlen(req->path) <= SRV_HTTP_URL_MAX);
  srv_web_route_t route = srv_web_route(req->path);
  r->status = route == SRV_WEB_NOT_FOUND ? 404 : 200;
  r->len = strlen(req->path);
  r->body = malloc(r->len + 1);
  FUZZ_ASSERT(r->body);
  memcpy(r->body, req->path, r->len + 1);
}

/* The first occurrence of needle in buf[0..len) (the responses are not NUL-terminated). */
static const char *find(const char *buf, size_t len, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= len; i++)
    if (!memcmp(buf + i, needle, n)) return buf + i;
  return NULL;
}

static int out(void *arg, char *buf, size_t len) {
  fz_t *f = arg;
  FUZZ_ASSERT(!f->closed);
  FUZZ_ASSERT(len > 12 && memcmp(buf, "HTTP/1.1 ", 9) == 0);
  int status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
  FUZZ_ASSERT(status == 200 || status == 400 || status == 404 || status == 405 ||
              status == 414 || status == 431 || status == 505);
  const char *end = find(buf, len, "\r\n\r\n");
  FUZZ_ASSERT(end);
  end += 4;
  size_t hlen = (size_t)(end - buf);
  const char *cl = find(buf, hlen, "Content-Length: ");
  FUZZ_ASSERT(cl);
  size_t n = 0;
  for (const char *p = cl + 16; *p >= '0' && *p <= '9'; p++) n = n * 10 + (size_t)(*p - '0');
  size_t body = len - hlen;
  FUZZ_ASSERT(body == n || body == 0); /* 0: a HEAD request */
  if (find(buf, hlen, "Connection: close")) f->closed = 1;
  f->responses++;
  free(buf);
  return 0;
}

static int pause_after(void *arg) {
  fz_t *f = arg;
  return f->pause_every;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  size_t chunk = (size_t)(data[0] % 64) + 1;
  fz_t f = {0, 0, 0, data[1] & 1};
  data += 2;
  size -= 2;
  srv_http_session_t s;
  srv_http_limits_t lim = {512, 8};
  srv_http_session_init(&s, &lim, handler, &f, out, &f);
  size_t off = 0;
  int closed = 0;
  while (off < size && !closed) {
    size_t n = size - off < chunk ? size - off : chunk;
    size_t pos = 0;
    /* Paused: feed the rest of the chunk again, as the connection does once it drained. */
    while (pos < n && !closed) {
      size_t used = 0;
      closed = srv_http_session_feed(&s, (const char *)data + off + pos, n - pos, &used,
                                     pause_after, &f);
      FUZZ_ASSERT(used <= n - pos);
      if (!closed && used == 0) break;
      pos += used;
    }
    off += n;
  }
  FUZZ_ASSERT(f.handled <= f.responses);
  return 0;
}
