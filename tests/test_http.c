/* The HTTP server of the status page (server/http.c).
 *
 * The session alone (no sockets): pipelining, every limit and refusal, HEAD, HTTP/1.0, split
 * input. Then hostile peers against a real nq-server (its own ports on 127.0.0.1, its own data
 * directory), each attack held open while an honest nq-client solves units over the TLS port:
 * 1,000 idle connections (the connection limit answers 503, the idle ones are closed), slowloris
 * (a request that never ends is cut at the request timeout), huge headers, 10,000 pipelined
 * requests on one connection, a peer that pipelines and never reads, every other method, path
 * traversal attempts. At the end the page
 * still answers and the server stops cleanly. */
#include "http.h"
#include "nq/nq.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the session ---- */

typedef struct {
  char *out;
  size_t len, cap;
  int responses;
} sink_t;

static int sink_out(void *arg, char *buf, size_t len) {
  sink_t *k = arg;
  if (k->len + len + 1 > k->cap) {
    k->cap = (k->len + len + 1) * 2;
    k->out = realloc(k->out, k->cap);
    ck_assert_ptr_nonnull(k->out);
  }
  memcpy(k->out + k->len, buf, len);
  k->len += len;
  k->out[k->len] = '\0';
  k->responses++;
  free(buf);
  return 0;
}

static void echo(void *arg, const srv_http_req_t *req, srv_http_resp_t *r) {
  (void)arg;
  r->status = strcmp(req->path, "/") ? 404 : 200;
  char body[1200];
  snprintf(body, sizeof body, "path=%s query=%s", req->path, req->query);
  r->body = strdup(body);
  r->len = strlen(body);
}

/* Feed text in chunks of `chunk` bytes; returns 1 if the session asked to close. */
static int feed(sink_t *k, const char *text, size_t len, size_t chunk) {
  srv_http_session_t s;
  srv_http_session_init(&s, NULL, echo, NULL, sink_out, k);
  int closed = 0;
  for (size_t off = 0; off < len && !closed; off += chunk) {
    size_t n = len - off < chunk ? len - off : chunk, used;
    closed = srv_http_session_feed(&s, text + off, n, &used, NULL, NULL);
    ck_assert(closed || used == n);
  }
  return closed;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
  return n;
}

START_TEST(session_pipelined) {
  const char req[] = "GET /?x=1 HTTP/1.1\r\nHost: a\r\n\r\n";
  size_t one = sizeof req - 1, len = one * 10000;
  char *text = malloc(len);
  for (int i = 0; i < 10000; i++) memcpy(text + one * i, req, one);
  sink_t k = {0};
  ck_assert_int_eq(feed(&k, text, len, 65536), 0);
  ck_assert_int_eq(k.responses, 10000);
  ck_assert_int_eq(count(k.out, "HTTP/1.1 200 OK\r\n"), 10000);
  ck_assert_int_eq(count(k.out, "path=/ query=x=1"), 10000);
  /* Byte by byte gives the same bytes. */
  sink_t b = {0};
  ck_assert_int_eq(feed(&b, text, one * 20, 1), 0);
  ck_assert_int_eq(b.responses, 20);
  ck_assert_int_eq(memcmp(b.out, k.out, b.len), 0);
  free(b.out);
  free(k.out);
  free(text);
}
END_TEST

/* One request, one refusal with `status`, and the session closes. */
static void refused(const char *text, int status) {
  sink_t k = {0};
  ck_assert_msg(feed(&k, text, strlen(text), 4096) == 1, "not closed: %.60s", text);
  char want[32];
  snprintf(want, sizeof want, "HTTP/1.1 %d ", status);
  ck_assert_msg(k.out && strncmp(k.out, want, strlen(want)) == 0, "%.60s: got %.40s", text,
                k.out ? k.out : "(nothing)");
  ck_assert_int_eq(k.responses, 1);
  ck_assert_ptr_nonnull(strstr(k.out, "Connection: close\r\n"));
  free(k.out);
}

START_TEST(session_refusals) {
  static const char *const methods[] = {"POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE"};
  char buf[20000];
  for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
    snprintf(buf, sizeof buf, "%s / HTTP/1.1\r\nHost: a\r\n\r\n", methods[i]);
    refused(buf, 405);
  }
  refused("CONNECT a:443 HTTP/1.1\r\nHost: t\r\n\r\n", 405);
  refused("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello", 400);
  refused("GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400);
  refused("GET http://evil/ HTTP/1.1\r\nHost: t\r\n\r\n", 400);
  refused("GET * HTTP/1.1\r\nHost: t\r\n\r\n", 400);
  refused("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400); /* a TLS ClientHello */
  refused("GET / HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", 400);
  /* Only HTTP/1.0 and 1.1, CRLF line ends, and Host in 1.1. */
  refused("GET / HTTP/9.9\r\nHost: t\r\n\r\n", 505);
  refused("GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505);
  refused("GET / HTTP/1.1\r\n\r\n", 400);
  refused("GET / HTTP/1.1\r\nHostile: t\r\n\r\n", 400);
  refused("GET / HTTP/1.1\nHost: t\n\n", 400);
  refused("GET / HTTP/1.1\r\nHost: t\n\r\n", 400);
  refused("\nGET / HTTP/1.0\r\n\r\n", 400);
  /* Too many headers, too many header bytes, a too long URL. */
  int n = snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nHost: t\r\n");
  for (int i = 0; i < 40; i++) n += snprintf(buf + n, sizeof buf - (size_t)n, "X-%d: y\r\n", i);
  snprintf(buf + n, sizeof buf - (size_t)n, "\r\n");
  refused(buf, 431);
  n = snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nHost: t\r\nX-Big: ");
  memset(buf + n, 'a', 12000);
  snprintf(buf + n + 12000, sizeof buf - (size_t)n - 12000, "\r\n\r\n");
  refused(buf, 431);
  n = snprintf(buf, sizeof buf, "GET /");
  memset(buf + n, 'a', 2000);
  snprintf(buf + n + 2000, sizeof buf - (size_t)n - 2000, " HTTP/1.1\r\nHost: t\r\n\r\n");
  refused(buf, 414);
}
END_TEST

START_TEST(session_head_and_close) {
  sink_t k = {0};
  const char *t = "HEAD / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n";
  ck_assert_int_eq(feed(&k, t, strlen(t), 7), 0);
  ck_assert_int_eq(k.responses, 2);
  /* The HEAD response has the GET's length and no body: the GET's status line follows at once. */
  char *second = strstr(k.out + 1, "HTTP/1.1 200");
  ck_assert_ptr_nonnull(second);
  ck_assert(!strncmp(second - 4, "\r\n\r\n", 4));
  free(k.out);
  /* HTTP/1.0 without keep-alive, and Connection: close, end the connection after the answer;
   * what follows is not answered. */
  static const char *const closers[] = {
      "GET / HTTP/1.0\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n"};
  for (int i = 0; i < 2; i++) {
    sink_t c = {0};
    ck_assert_int_eq(feed(&c, closers[i], strlen(closers[i]), 4096), 1);
    ck_assert_int_eq(c.responses, 1);
    ck_assert_ptr_nonnull(strstr(c.out, "Connection: close"));
    free(c.out);
  }
}
END_TEST

/* ---- a streamed response (srv_http_resp_t.stream) on a real loop ---- */

#define STREAM_BYTES (64u << 20) /* the body: 64 MiB of a counting pattern */

typedef struct {
  int fd;                 /* the pipe's write end */
  volatile size_t written; /* bytes the producer got into the pipe */
} producer_t;

static producer_t g_prod;

static void *producer_main(void *arg) {
  producer_t *p = arg;
  static unsigned char buf[65536];
  size_t off = 0;
  while (off < STREAM_BYTES) {
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)((off + i) * 7 + 3);
    ssize_t n = write(p->fd, buf, sizeof buf);
    if (n <= 0) break;
    off += (size_t)n;
    __atomic_store_n(&p->written, off, __ATOMIC_RELAXED);
  }
  close(p->fd);
  return NULL;
}

static void stream_handler(void *arg, const srv_http_req_t *req, srv_http_resp_t *r) {
  (void)arg;
  (void)req;
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  g_prod.fd = p[1];
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, producer_main, &g_prod), 0);
  pthread_detach(t);
  r->status = 200;
  r->type = "application/octet-stream";
  r->stream = 1;
  r->stream_fd = p[0];
}

typedef struct {
  uv_loop_t loop;
  uv_async_t stop;
  srv_http_t *h;
  int port;
  volatile int ready;
} loop_ctx_t;

static void on_stop(uv_async_t *a) {
  loop_ctx_t *c = a->data;
  srv_http_stop(c->h);
  uv_close((uv_handle_t *)a, NULL);
}

static void *loop_main(void *arg) {
  loop_ctx_t *c = arg;
  uv_run(&c->loop, UV_RUN_DEFAULT);
  return NULL;
}

/* A reader that stops reading holds the producer back: it gets no further than the connection's
 * high-water mark plus the kernel's buffers (pipe, socket), far below the 64 MiB body; once the
 * reader reads again, every byte arrives in order, and the body ends with the connection. */
START_TEST(stream_bounded_by_reader) {
  signal(SIGPIPE, SIG_IGN);
  loop_ctx_t c;
  memset(&c, 0, sizeof c);
  ck_assert_int_eq(uv_loop_init(&c.loop), 0);
  srv_http_cfg_t cfg;
  srv_http_cfg_default(&cfg);
  snprintf(cfg.host, sizeof cfg.host, "127.0.0.1");
  cfg.port = 0;
  cfg.idle_ms = 60000;
  char err[200];
  ck_assert_int_eq(srv_http_start(&c.h, &c.loop, &cfg, stream_handler, NULL, err, sizeof err), 0);
  const char *bound = srv_http_bound(c.h);
  c.port = atoi(strrchr(bound, ':') + 1);
  c.stop.data = &c;
  ck_assert_int_eq(uv_async_init(&c.loop, &c.stop, on_stop), 0);
  pthread_t lt;
  ck_assert_int_eq(pthread_create(&lt, NULL, loop_main, &c), 0);

  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int small = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c.port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  const char *req = "GET /x HTTP/1.1\r\nHost: t\r\n\r\n";
  ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
  /* Read nothing for a while: the producer must stall. */
  size_t seen = 0, stalled = 0;
  for (int i = 0; i < 40; i++) {
    usleep(50000);
    size_t w = __atomic_load_n(&g_prod.written, __ATOMIC_RELAXED);
    if (w == seen && w > 0) stalled++;
    seen = w;
  }
  ck_assert_msg(seen < (16u << 20), "the producer wrote %zu bytes while nobody read", seen);
  ck_assert_msg(stalled > 0, "the producer never stalled (%zu bytes)", seen);
  /* Now read it all: headers without a length, then the body until the connection closes. */
  static char buf[1 << 16];
  size_t total = 0, hdr = 0, body = 0;
  char head[4096];
  int bad = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; i++) {
      if (hdr < 4 || (hdr >= 4 && memcmp(head + hdr - 4, "\r\n\r\n", 4) != 0)) {
        if (hdr < sizeof head) head[hdr++] = buf[i];
        continue;
      }
      if ((unsigned char)buf[i] != (unsigned char)(body * 7 + 3)) bad++;
      body++;
    }
    total += (size_t)n;
  }
  close(fd);
  head[hdr < sizeof head ? hdr : sizeof head - 1] = '\0';
  ck_assert_ptr_nonnull(strstr(head, "HTTP/1.1 200 OK\r\n"));
  ck_assert_ptr_null(strstr(head, "Content-Length"));
  ck_assert_ptr_nonnull(strstr(head, "Connection: close\r\n"));
  ck_assert_uint_eq(body, STREAM_BYTES);
  ck_assert_int_eq(bad, 0);
  uv_async_send(&c.stop);
  pthread_join(lt, NULL);
  ck_assert_int_eq(uv_loop_close(&c.loop), 0);
}
END_TEST

/* ---- a real server ---- */

#define IO_MS 10000
#define IDLE_CONNS 1000
#define MAX_CONNS 50
#define TIMEOUT_S 2 /* --http-timeout: a request within 2 s, idle 6 s */

static pid_t g_srv = -1;
static int g_port, g_http;
static char *g_dir;
static int g_units; /* units solved by the honest client */

/* Read whatever arrives within ms (until EOF); returns bytes read, *eof = 1 on EOF/reset. */
static size_t read_some(int fd, char *buf, size_t cap, int ms, int *eof) {
  size_t len = 0;
  *eof = 0;
  double end = tu_now_s() + ms / 1000.0;
  while (len + 1 < cap) {
    int left = (int)((end - tu_now_s()) * 1000);
    if (left <= 0) break;
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, left) <= 0) break;
    ssize_t r = read(fd, buf + len, cap - 1 - len);
    if (r <= 0) {
      *eof = 1;
      break;
    }
    len += (size_t)r;
  }
  buf[len] = '\0';
  return len;
}

/* One request on a fresh connection (Connection: close); the response in buf. */
static int request(const char *raw, char *buf, size_t cap) {
  int fd = tu_tcp_connect(g_http);
  if (fd < 0) return -1;
  if (write(fd, raw, strlen(raw)) < 0) {
    close(fd);
    return -1;
  }
  int eof;
  read_some(fd, buf, cap, IO_MS, &eof);
  close(fd);
  return strncmp(buf, "HTTP/1.1 ", 9) == 0 ? atoi(buf + 9) : -1;
}

static int srv_start(void) {
  g_port = tu_free_port();
  g_http = tu_free_port();
  if (g_port <= 0 || g_http <= 0 || g_port == g_http) return -1;
  char bin[600], listen[64], http[64], log[600], data[600], maxc[16], to[16];
  snprintf(bin, sizeof bin, "%s/nq-server", tu_bin_dir());
  snprintf(listen, sizeof listen, "127.0.0.1:%d", g_port);
  snprintf(http, sizeof http, "127.0.0.1:%d", g_http);
  snprintf(log, sizeof log, "%s/server.log", g_dir);
  snprintf(data, sizeof data, "%s/data", g_dir);
  snprintf(maxc, sizeof maxc, "%d", MAX_CONNS);
  snprintf(to, sizeof to, "%d", TIMEOUT_S);
  char *argv[] = {bin, "--n", "13", "--depth", "4", "--quorum", "1", "--listen", listen,
                  "--data", data, "--http", http, "--http-max-conns", maxc, "--http-timeout", to,
                  "--log-summary", "1", NULL};
  g_srv = tu_spawn(argv, log);
  if (g_srv < 0) return -1;
  double deadline = tu_now_s() + 60;
  char buf[4096];
  while (tu_now_s() < deadline) {
    if (waitpid(g_srv, NULL, WNOHANG) != 0) return -1;
    if (request("GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", buf,
                sizeof buf) == 200)
      return 0;
    tu_sleep_ms(100);
  }
  return -1;
}

/* An honest volunteer solves k units over TLS; returns nq-client's exit status. */
static int honest(int k) {
  char bin[600], server[64], ca[700], key[700], state[700], units[16], keytext[256] = "";
  snprintf(bin, sizeof bin, "%s/nq-client", tu_bin_dir());
  snprintf(server, sizeof server, "127.0.0.1:%d", g_port);
  snprintf(ca, sizeof ca, "%s/data/ca.pem", g_dir);
  snprintf(key, sizeof key, "%s/data/enrol.key", g_dir);
  snprintf(state, sizeof state, "%s/client", g_dir);
  snprintf(units, sizeof units, "%d", k);
  FILE *f = fopen(key, "r");
  if (!f || !fgets(keytext, sizeof keytext, f)) return -1;
  fclose(f);
  keytext[strcspn(keytext, "\r\n")] = '\0';
  char *argv[] = {bin, "--server", server, "--ca", ca, "--enrol", keytext, "--name", "honest",
                  "--public-name", "Honest.Volunteer", "--state", state, "--threads", "1",
                  "--priority", "normal",
                  "--max-units", units, NULL};
  pid_t pid = tu_spawn(argv, NULL);
  if (pid < 0) return -1;
  int st;
  double deadline = tu_now_s() + 120;
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (tu_now_s() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    tu_sleep_ms(20);
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) g_units += k;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void assert_honest(const char *during) {
  int rc = honest(2);
  ck_assert_msg(rc == 0, "the honest client failed (status %d) during %s", rc, during);
}

/* 1,000 idle connections: at most MAX_CONNS are held, the rest are answered 503 at once; the
 * held ones are closed after the idle time. */
static void attack_idle(void) {
  static int fds[IDLE_CONNS];
  int opened = 0, busy = 0, closed = 0;
  for (int i = 0; i < IDLE_CONNS; i++) {
    fds[i] = tu_tcp_connect(g_http);
    if (fds[i] >= 0) opened++;
  }
  ck_assert_int_ge(opened, IDLE_CONNS * 9 / 10);
  assert_honest("1,000 idle HTTP connections");
  /* Each one ends: at once with a 503 (over the limit), or after the idle time (3 * TIMEOUT_S)
   * without a byte; some slack for a busy machine. */
  char buf[512];
  int eof = 0;
  double deadline = tu_now_s() + 3 * TIMEOUT_S + 60;
  for (int i = 0; i < IDLE_CONNS; i++) {
    if (fds[i] < 0) continue;
    int got503 = 0;
    while (tu_now_s() < deadline) {
      read_some(fds[i], buf, sizeof buf, 200, &eof);
      if (strstr(buf, " 503 ") || strstr(buf, " 429 ")) got503 = 1;
      if (eof) break;
    }
    busy += got503;
    if (eof) closed++;
    close(fds[i]);
  }
  ck_assert_int_ge(busy, opened - MAX_CONNS);
  ck_assert_int_eq(closed, opened);
  printf("http: %d idle connections: %d answered 503 or 429, all closed\n", opened, busy);
}

/* A TCP connection to the HTTP port from source address src; -1 on error. */
static int connect_from(const char *src) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  if (fd < 0 || inet_pton(AF_INET, src, &a.sin_addr) != 1 ||
      bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
    goto fail;
  a.sin_port = htons((uint16_t)g_http);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
fail:
  if (fd >= 0) close(fd);
  return -1;
}

/* 2,000 idle connections from one address (127.0.0.1) took every slot, and the page
 * answered 503 to everyone. Now that address holds --http-max-per-addr (8) and the rest get 429
 * at once, while another address (127.0.0.2) gets the page every time; the refusals are
 * summarised in the log. */
#define ONE_ADDR_CONNS 2000
static void attack_one_address(void) {
  static int fds[ONE_ADDR_CONNS];
  int opened = 0;
  for (int i = 0; i < ONE_ADDR_CONNS; i++) {
    fds[i] = tu_tcp_connect(g_http);
    if (fds[i] >= 0) opened++;
  }
  ck_assert_int_ge(opened, ONE_ADDR_CONNS * 9 / 10);
  int ok = 0;
  char buf[65536];
  for (int k = 0; k < 30; k++) {
    int fd = connect_from("127.0.0.2"), eof;
    ck_assert_int_ge(fd, 0);
    const char req[] = "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    ck_assert_int_eq(write(fd, req, sizeof req - 1), (ssize_t)(sizeof req - 1));
    read_some(fd, buf, sizeof buf, IO_MS, &eof);
    close(fd);
    ok += strncmp(buf, "HTTP/1.1 200 ", 13) == 0;
  }
  int r429 = 0;
  for (int i = 0; i < ONE_ADDR_CONNS; i++) {
    if (fds[i] < 0) continue;
    ssize_t n = recv(fds[i], buf, 511, MSG_DONTWAIT); /* answered long ago, if refused */
    buf[n > 0 ? n : 0] = '\0';
    r429 += strstr(buf, " 429 ") != NULL;
    close(fds[i]);
  }
  printf("http: %d idle connections from 127.0.0.1: %d answered 429; the page from 127.0.0.2: "
         "%d of 30 served\n", opened, r429, ok);
  ck_assert_int_eq(ok, 30);
  ck_assert_int_ge(r429, opened - 8 - 50);
}

/* The refusal summaries of the server log that contain `what`: the sum of their counts. */
static long log_summaries(const char *what, int *lines) {
  char path[700], line[1024];
  snprintf(path, sizeof path, "%s/server.log", g_dir);
  FILE *f = fopen(path, "r");
  long sum = 0;
  *lines = 0;
  while (f && fgets(line, sizeof line, f)) {
    const char *p = strstr(line, "last ");
    if (!p || !strstr(line, what) || !(p = strstr(p, " s: "))) continue;
    sum += strtol(p + 4, NULL, 10);
    (*lines)++;
  }
  if (f) fclose(f);
  return sum;
}

/* Slowloris: a header line every 500 ms, never the end; cut at the request timeout. */
static void attack_slowloris(void) {
  int fds[5];
  for (int i = 0; i < 5; i++) {
    fds[i] = tu_tcp_connect(g_http);
    ck_assert_int_ge(fds[i], 0);
    ck_assert_int_gt(write(fds[i], "GET / HTTP/1.1\r\n", 16), 0);
  }
  double start = tu_now_s();
  int open = 5;
  while (open > 0 && tu_now_s() - start < 60) {
    open = 0;
    for (int i = 0; i < 5; i++) {
      if (fds[i] < 0) continue;
      if (write(fds[i], "X-a: b\r\n", 8) < 0) {
        close(fds[i]);
        fds[i] = -1;
        continue;
      }
      char buf[256];
      int eof;
      read_some(fds[i], buf, sizeof buf, 100, &eof);
      ck_assert_ptr_null(strstr(buf, "200 OK"));
      if (eof) {
        close(fds[i]);
        fds[i] = -1;
      } else {
        open++;
      }
    }
    tu_sleep_ms(400);
  }
  ck_assert_msg(open == 0, "slowloris connections still open after 60 s");
  printf("http: slowloris cut after %.1f s\n", tu_now_s() - start);
}

/* Huge headers: refused (431, or the connection reset after it), never answered 200. */
static void attack_huge_headers(void) {
  size_t big = 200000;
  char *req = malloc(big + 64);
  int n = snprintf(req, 64, "GET / HTTP/1.1\r\nHost: t\r\nX-Huge: ");
  memset(req + n, 'h', big);
  memcpy(req + n + big, "\r\n\r\n", 4);
  int fd = tu_tcp_connect(g_http);
  ck_assert_int_ge(fd, 0);
  signal(SIGPIPE, SIG_IGN);
  size_t off = 0, len = (size_t)n + big + 4;
  while (off < len) {
    ssize_t w = write(fd, req + off, len - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  char buf[1024];
  int eof;
  read_some(fd, buf, sizeof buf, IO_MS, &eof);
  ck_assert(eof);
  ck_assert_ptr_null(strstr(buf, "200 OK"));
  ck_assert(buf[0] == '\0' || strstr(buf, "431"));
  close(fd);
  free(req);
}

/* Take the complete responses at the front of buf (status line, headers, Content-Length body):
 * counts those with status 200 into *ok and the others into *other; returns the bytes used. */
static size_t take_responses(const char *buf, size_t len, int *ok, int *other) {
  size_t used = 0;
  for (;;) {
    const char *p = buf + used;
    size_t left = len - used;
    const char *end = NULL;
    for (size_t i = 0; i + 3 < left; i++)
      if (!memcmp(p + i, "\r\n\r\n", 4)) {
        end = p + i + 4;
        break;
      }
    if (!end) return used;
    ck_assert_msg(!strncmp(p, "HTTP/1.1 ", 9), "not a status line: %.40s", p);
    const char *cl = strstr(p, "Content-Length: ");
    ck_assert(cl && cl < end);
    size_t body = strtoul(cl + 16, NULL, 10);
    if ((size_t)(end - p) + body > left) return used;
    if (atoi(p + 9) == 200) (*ok)++;
    else (*other)++;
    used += (size_t)(end - p) + body;
  }
}

/* 10,000 pipelined requests on one connection, written while the answers are read: all
 * answered, in order, each framed by its Content-Length. */
static void attack_pipelined(void) {
  static const char *const paths[] = {"/", "/metrics", "/api/status", "/api/history"};
  const int total = 10000;
  int fd = tu_tcp_connect(g_http);
  ck_assert_int_ge(fd, 0);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  char *out = malloc(64 * (size_t)total);
  size_t olen = 0;
  for (int i = 0; i < total; i++)
    olen += (size_t)sprintf(out + olen, "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n", paths[i % 4],
                            i == total - 1 ? "Connection: close\r\n" : "");
  size_t off = 0, have = 0, cap = 1 << 20;
  char *in = malloc(cap + 1);
  int ok = 0, other = 0, eof = 0;
  double deadline = tu_now_s() + 300;
  while (!eof && tu_now_s() < deadline) {
    struct pollfd p = {fd, POLLIN | (off < olen ? POLLOUT : 0), 0};
    if (poll(&p, 1, 1000) < 0) break;
    if ((p.revents & POLLOUT) && off < olen) {
      ssize_t w = write(fd, out + off, olen - off);
      if (w > 0) off += (size_t)w;
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t r = read(fd, in + have, cap - have);
      if (r <= 0) {
        eof = 1;
        break;
      }
      have += (size_t)r;
      in[have] = '\0';
      size_t used = take_responses(in, have, &ok, &other);
      memmove(in, in + used, have - used);
      have -= used;
      ck_assert(have < cap);
    }
  }
  ck_assert_msg(eof, "the pipelined connection was not closed after its last request");
  ck_assert_int_eq(off, olen);
  ck_assert_int_eq(have, 0);
  ck_assert_int_eq(other, 0);
  ck_assert_int_eq(ok, total);
  close(fd);
  free(in);
  free(out);
  printf("http: %d pipelined requests answered\n", total);
}

/* A peer that pipelines 20,000 page requests and never reads: the server stops reading it at the
 * high-water mark and closes it once nothing moved for the idle time (should the machine be so
 * slow that our late reads keep it moving, it ends after the last answer and the idle time). */
static void attack_no_read(void) {
  const int total = 20000;
  int fd = tu_tcp_connect(g_http);
  ck_assert_int_ge(fd, 0);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < total; i++)
    if (write(fd, req, sizeof req - 1) < 0) break; /* the buffers may fill first: fine */
  /* Let the idle time (3 * TIMEOUT_S) pass without reading, then read to the end. */
  tu_sleep_ms(3 * TIMEOUT_S * 1000 + 2000);
  char buf[65536];
  int eof = 0;
  size_t got = 0;
  double deadline = tu_now_s() + 60;
  while (!eof && tu_now_s() < deadline) got += read_some(fd, buf, sizeof buf, 500, &eof);
  ck_assert_msg(eof, "a peer that never reads was not closed");
  close(fd);
  printf("http: a peer that never reads closed after %zu bytes\n", got);
}

static void attack_methods_and_paths(void) {
  static const char *const methods[] = {"POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE",
                                        "PROPFIND", "BREW"};
  char buf[8192], req[512];
  for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
    snprintf(req, sizeof req, "%s / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n", methods[i]);
    int st = request(req, buf, sizeof buf);
    ck_assert_msg(st == 405 || st == 400, "%s: status %d", methods[i], st);
  }
  static const char *const paths[] = {"/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
                                      "/..%2f..%2f..%2fetc%2fpasswd", "//etc/passwd",
                                      "/index.html/../../../etc/passwd", "/api/../../etc/shadow",
                                      "/.%00./etc/passwd", "/\\..\\..\\windows\\win.ini",
                                      "/data/admin.token", "/admin.token"};
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", paths[i]);
    int st = request(req, buf, sizeof buf);
    ck_assert_msg(st == 404 || st == 400, "%s: status %d", paths[i], st);
    ck_assert_ptr_null(strstr(buf, "root:"));
  }
}

START_TEST(hostile_http_with_clients_served) {
  struct rlimit rl;
  /* 1,000 connections need more descriptors than a default soft limit of 1024 leaves. */
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096) {
    rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  g_dir = tu_tmpdir("http");
  int started = -1;
  for (int i = 0; i < 3 && started != 0; i++) {
    started = srv_start();
    if (started != 0 && g_srv > 0) {
      kill(g_srv, SIGKILL);
      waitpid(g_srv, NULL, 0);
      g_srv = -1;
    }
  }
  ck_assert_msg(started == 0, "nq-server did not start");
  assert_honest("the start");
  attack_idle();
  attack_one_address();
  attack_slowloris();
  assert_honest("slowloris");
  attack_huge_headers();
  attack_pipelined();
  assert_honest("pipelining");
  attack_no_read();
  attack_methods_and_paths();
  assert_honest("the method and path attacks");
  char buf[65536];
  /* A peer that half-closes after its requests still gets both answers. */
  int fd = tu_tcp_connect(g_http), eof;
  ck_assert_int_ge(fd, 0);
  const char two[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n";
  ck_assert_int_eq(write(fd, two, sizeof two - 1), (ssize_t)(sizeof two - 1));
  shutdown(fd, SHUT_WR);
  read_some(fd, buf, sizeof buf, IO_MS, &eof);
  ck_assert(eof);
  ck_assert_int_eq(count(buf, "HTTP/1.1 200 OK"), 2);
  close(fd);
  ck_assert_int_eq(request("GET /api/status HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", buf,
                           sizeof buf), 200);
  ck_assert_ptr_nonnull(strstr(buf, "\"Honest.Volunteer\""));
  ck_assert_ptr_null(strstr(buf, "\"honest\"")); /* the client's own name stays private */
  ck_assert_int_eq(request("GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", buf,
                           sizeof buf), 200);
  char want[64];
  snprintf(want, sizeof want, "nq_results_total{outcome=\"accepted\"} %d\n", g_units);
  ck_assert_msg(strstr(buf, want), "want %s in\n%s", want, buf);
  /* Every refusal of the HTTP port was summarised (the summaries come every second, and the
   * shutdown writes the last one). */
  kill(g_srv, SIGTERM);
  int st = -1;
  double deadline = tu_now_s() + 30;
  while (tu_now_s() < deadline && waitpid(g_srv, &st, WNOHANG) == 0) tu_sleep_ms(50);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "nq-server exit status %d", st);
  g_srv = -1;
  int lines = 0;
  long per_addr = log_summaries("HTTP connection(s) refused over --http-max-per-addr", &lines);
  printf("http: log: %ld refusals over --http-max-per-addr in %d summary lines\n", per_addr,
         lines);
  ck_assert_int_ge(per_addr, ONE_ADDR_CONNS * 9 / 10 - 8);
  ck_assert_int_ge(lines, 1);
  tu_rmtree(g_dir);
  free(g_dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("http");
  TCase *tc = tcase_create("session");
  tcase_add_test(tc, session_pipelined);
  tcase_add_test(tc, session_refusals);
  tcase_add_test(tc, session_head_and_close);
  suite_add_tcase(s, tc);
  TCase *st = tcase_create("stream");
  tcase_set_timeout(st, 120);
  tcase_add_test(st, stream_bounded_by_reader);
  suite_add_tcase(s, st);
  TCase *h = tcase_create("hostile");
  tcase_set_timeout(h, 500);
  tcase_add_test(h, hostile_http_with_clients_served);
  suite_add_tcase(s, h);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
