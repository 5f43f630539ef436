/* Hostile peers against a real nq-server (issue 6, promises 4 and 5).
 *
 * One nq-server runs on 127.0.0.1 with its own free port and data directory. Against it, over
 * plain sockets and over TLS (the project's client context, nq_tls_ctx_client_new, on blocking
 * sockets so each step is a plain read/write with a timeout):
 *   - plaintext and garbage on the TLS port, slowloris connections (TCP that never starts the
 *     handshake, a handshake stopped after one byte, TLS up but no hello) held for the whole run;
 *   - frame headers of 0xFFFFFFFF, 65537 and 0, a truncated frame then close;
 *   - invalid UTF-8, invalid JSON, 1000-deep nesting, a top-level array, duplicate keys;
 *   - frames before hello, wrong types/ranges for each hello field, wrong tokens/keys;
 *   - after hello: a second hello, unknown types, ill-typed requests;
 *   - results for another client's assignment, an unknown id, impossible numbers, a wrong unit,
 *     then the true result (accepted) and the same again (duplicate);
 *   - 10,000 hellos with wrong tokens, from 4 processes at once.
 * Each offender gets the documented error frame and is closed (or, for non-fatal refusals, keeps
 * its connection). After every attack an honest client connects, gets a unit, solves it and has
 * its result accepted. At the end the slowloris connections must have been closed by the server,
 * and the server's VmRSS must stay bounded. Figures are printed as "hostile: ..." lines. */
#include "nq/certs.h"
#include "nq/frame.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/tls.h"
#include "nq/unit.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void *memmem(const void *hay, size_t hlen, const void *needle, size_t nlen); /* GNU; not in POSIX mode */

#define TEST_N 12
#define TEST_DEPTH 3
#define IO_TIMEOUT_MS 8000
#define HOLD_TCP 20      /* TCP connections that never send a byte */
#define HOLD_PARTIAL 5   /* one byte of a ClientHello, then nothing */
#define HOLD_NOHELLO 5   /* TLS up, never a frame */
#define FLOOD_MAX 10000     /* wrong-token hellos */
#define FLOOD_WORKERS 4     /* processes sending them at once */
#define FLOOD_SECONDS 120.0 /* give-up bound (sanitizer builds are slower); ~10 s here */

static pid_t g_srv = -1;
static int g_port;
static char *g_dir;
static char g_ca[700];
static char g_enrol[256];
static nq_tls_ctx_t *g_tls;
static char g_honest_token[256];
static int g_honest_ok;   /* honest results accepted */
static int g_bad_inputs;  /* hostile inputs tried (excluding the token flood) */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int read_file_line(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  if (!fgets(buf, (int)len, f)) {
    fclose(f);
    return -1;
  }
  fclose(f);
  buf[strcspn(buf, "\r\n")] = '\0';
  return buf[0] ? 0 : -1;
}

/* ---- the server process ------------------------------------------------------------------ */

static int tcp_connect(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)g_port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static int srv_alive(void) {
  if (g_srv <= 0) return 0;
  int status;
  return waitpid(g_srv, &status, WNOHANG) == 0;
}

static int srv_try_start(void) {
  g_port = tu_free_port();
  if (g_port <= 0) return -1;
  char bin[600], listen[64], log[600];
  snprintf(bin, sizeof bin, "%s/nq-server", tu_bin_dir());
  snprintf(listen, sizeof listen, "127.0.0.1:%d", g_port);
  snprintf(log, sizeof log, "%s/server.log", g_dir);
  char data[600];
  snprintf(data, sizeof data, "%s/data", g_dir);
  mkdir(data, 0700);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test process */
    if (getppid() != parent) _exit(127);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    char n[8], d[8];
    snprintf(n, sizeof n, "%d", TEST_N);
    snprintf(d, sizeof d, "%d", TEST_DEPTH);
    execl(bin, bin, "--n", n, "--depth", d, "--quorum", "2", "--quorum-distinct", "client",
          "--listen", listen, "--data", data,
          "--lease-seconds", "300", "--max-conns", "256", "--idle-timeout", "60",
          (char *)NULL);
    _exit(127);
  }
  g_srv = pid;
  snprintf(g_ca, sizeof g_ca, "%s/ca.pem", data);
  char keypath[700];
  snprintf(keypath, sizeof keypath, "%s/enrol.key", data);
  double deadline = now_s() + 60;
  while (now_s() < deadline) {
    if (!srv_alive()) {
      g_srv = -1;
      return -1;
    }
    if (access(g_ca, R_OK) == 0 && read_file_line(keypath, g_enrol, sizeof g_enrol) == 0) {
      int fd = tcp_connect();
      if (fd >= 0) {
        close(fd);
        return 0;
      }
    }
    sleep_ms(50);
  }
  return -1;
}

/* SIGTERM the server; returns its wait status (-1 if it had to be killed). */
static int srv_stop(void) {
  if (g_srv <= 0) return -1;
  kill(g_srv, SIGTERM);
  for (int i = 0; i < 200; i++) {
    int status;
    if (waitpid(g_srv, &status, WNOHANG) == g_srv) {
      g_srv = -1;
      return status;
    }
    sleep_ms(50);
  }
  kill(g_srv, SIGKILL);
  waitpid(g_srv, NULL, 0);
  g_srv = -1;
  return -1;
}

/* 1 if the server log holds a sanitizer report. */
static int log_has_sanitizer_report(void) {
  char cmd[700];
  snprintf(cmd, sizeof cmd,
           "grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' '%s/server.log'", g_dir);
  return system(cmd) == 0;
}

static void show_server_log(void) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "tail -n 30 '%s/server.log' 1>&2", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "(no server log)\n");
}

static long srv_rss_kib(void) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)g_srv);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) kib = strtol(line + 6, NULL, 10);
  fclose(f);
  return kib;
}

static int srv_is_sanitized(void) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%d/maps", (int)g_srv);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int yes = 0;
  while (!yes && fgets(line, sizeof line, f))
    if (strstr(line, "libasan") || strstr(line, "libtsan")) yes = 1;
  fclose(f);
  if (!yes) {
    /* Statically linked sanitizer runtimes (clang) leave no library name: look for the symbol. */
    char exe[64], buf[8192];
    snprintf(exe, sizeof exe, "/proc/%d/exe", (int)g_srv);
    FILE *e = fopen(exe, "rb");
    if (e) {
      size_t r;
      while (!yes && (r = fread(buf, 1, sizeof buf, e)) > 0)
        if (memmem(buf, r, "__asan_init", 11)) yes = 1;
      fclose(e);
    }
  }
  return yes;
}

/* ---- blocking TLS connections ------------------------------------------------------------ */

typedef struct {
  int fd;
  SSL *ssl;
} tc_t;

static void set_timeout(int fd, int ms) {
  if (ms < 1) ms = 1;
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static int tls_open(tc_t *c) {
  c->ssl = NULL;
  c->fd = tcp_connect();
  if (c->fd < 0) return -1;
  set_timeout(c->fd, IO_TIMEOUT_MS);
  c->ssl = SSL_new(nq_tls_ctx_ssl(g_tls));
  if (!c->ssl) goto fail;
  SSL_set_fd(c->ssl, c->fd);
  X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), "127.0.0.1");
  SSL_set_verify(c->ssl, SSL_VERIFY_PEER, NULL);
  if (SSL_connect(c->ssl) != 1) goto fail;
  if (SSL_get_verify_result(c->ssl) != X509_V_OK) goto fail;
  return 0;
fail:
  ERR_clear_error();
  if (c->ssl) SSL_free(c->ssl);
  c->ssl = NULL;
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  return -1;
}

static void tls_close(tc_t *c) {
  if (c->ssl) {
    SSL_set_shutdown(c->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN); /* no blocking here */
    SSL_free(c->ssl);
  }
  if (c->fd >= 0) close(c->fd);
  c->ssl = NULL;
  c->fd = -1;
  ERR_clear_error();
}

static int tls_write(tc_t *c, const void *data, size_t len) {
  const uint8_t *p = data;
  while (len > 0) {
    int w = SSL_write(c->ssl, p, (int)(len > 16384 ? 16384 : len));
    if (w <= 0) {
      ERR_clear_error();
      return -1;
    }
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

/* Read exactly len bytes before `deadline`. 1: done; 0: the peer closed (close_notify, EOF or
 * reset); -1: timed out; -2: other TLS failure. */
static int tls_read_full(tc_t *c, void *buf, size_t len, double deadline) {
  uint8_t *p = buf;
  while (len > 0) {
    double left = deadline - now_s();
    if (left <= 0) return -1;
    set_timeout(c->fd, (int)(left * 1000) + 1);
    errno = 0;
    int r = SSL_read(c->ssl, p, (int)len);
    if (r > 0) {
      p += r;
      len -= (size_t)r;
      continue;
    }
    int e = SSL_get_error(c->ssl, r);
    int en = errno;
    ERR_clear_error();
    if (e == SSL_ERROR_ZERO_RETURN) return 0;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      if (en == EAGAIN || en == EWOULDBLOCK || en == EINTR || en == 0) {
        if (now_s() >= deadline) return -1;
        continue;
      }
    }
    if (e == SSL_ERROR_SYSCALL) {
      if (en == EAGAIN || en == EWOULDBLOCK) return -1;
      if (en == 0 || en == ECONNRESET || en == EPIPE) return 0;
    }
    if (e == SSL_ERROR_SSL) return 0; /* e.g. unexpected EOF reported as a protocol error */
    return -2;
  }
  return 1;
}

/* 1: a frame in *out; 0: closed; -1: timeout; -2: error or undecodable frame. */
static int recv_frame(tc_t *c, json_t **out, int timeout_ms) {
  *out = NULL;
  double deadline = now_s() + timeout_ms / 1000.0;
  uint8_t hdr[4];
  int r = tls_read_full(c, hdr, 4, deadline);
  if (r != 1) return r;
  uint32_t len = ((uint32_t)hdr[0] << 24) | ((uint32_t)hdr[1] << 16) | ((uint32_t)hdr[2] << 8) | hdr[3];
  if (len == 0 || len > NQ_FRAME_MAX) return -2;
  uint8_t *buf = malloc(len);
  if (!buf) return -2;
  r = tls_read_full(c, buf, len, deadline);
  if (r != 1) {
    free(buf);
    return r == 0 ? -2 : r;
  }
  r = nq_frame_decode(buf, len, out);
  free(buf);
  return r == 0 ? 1 : -2;
}

static int send_payload(tc_t *c, const void *payload, size_t len) {
  uint8_t hdr[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
  uint8_t *buf = malloc(len + 4);
  if (!buf) return -1;
  memcpy(buf, hdr, 4);
  memcpy(buf + 4, payload, len);
  int r = tls_write(c, buf, len + 4);
  free(buf);
  return r;
}

static int send_msg(tc_t *c, json_t *msg) { /* steals msg */
  uint8_t *buf = NULL;
  size_t len = 0;
  int r = nq_frame_encode(msg, &buf, &len);
  json_decref(msg);
  if (r != 0) return -1;
  r = tls_write(c, buf, len);
  free(buf);
  return r;
}

static const char *msg_type(const json_t *m) {
  const char *t = NULL;
  return m && nq_msg_get_str(m, "type", &t) == 0 ? t : "";
}

static const char *msg_code(const json_t *m) {
  const char *t = NULL;
  return m && nq_msg_get_str(m, "code", &t) == 0 ? t : "";
}

/* The next frame must be an error whose code is one of the '|'-separated `codes`, with the given
 * fatality; a fatal one must be followed by the server closing the connection. */
static void expect_error(tc_t *c, const char *codes, int fatal, const char *what) {
  json_t *m = NULL;
  int r = recv_frame(c, &m, IO_TIMEOUT_MS);
  ck_assert_msg(r == 1, "%s: expected an error frame (%s), got %s", what, codes,
                r == 0 ? "a close" : r == -1 ? "a timeout" : "a broken frame");
  char *dump = json_dumps(m, JSON_COMPACT);
  ck_assert_msg(strcmp(msg_type(m), "error") == 0, "%s: expected error, got %s", what, dump);
  const char *code = msg_code(m);
  char want[200];
  snprintf(want, sizeof want, "|%s|", codes);
  char got[80];
  snprintf(got, sizeof got, "|%s|", code);
  ck_assert_msg(code[0] && strstr(want, got), "%s: expected code %s, got %s", what, codes, dump);
  json_t *f = json_object_get(m, "fatal");
  ck_assert_msg(json_is_boolean(f) && (json_is_true(f) ? 1 : 0) == fatal,
                "%s: expected fatal=%d in %s", what, fatal, dump);
  free(dump);
  json_decref(m);
  if (fatal) {
    r = recv_frame(c, &m, IO_TIMEOUT_MS);
    ck_assert_msg(r == 0, "%s: the server did not close after a fatal error (%d)", what, r);
  }
}

/* The connection must be closed by the server within timeout_ms; any frames before the close are
 * allowed only if they are errors. */
static void expect_closed(tc_t *c, int timeout_ms, const char *what) {
  json_t *m = NULL;
  for (;;) {
    int r = recv_frame(c, &m, timeout_ms);
    if (r == 1) {
      ck_assert_msg(strcmp(msg_type(m), "error") == 0, "%s: unexpected frame", what);
      json_decref(m);
      continue;
    }
    ck_assert_msg(r == 0 || r == -2, "%s: not closed within %d ms", what, timeout_ms);
    return;
  }
}

static json_t *hello(const char *token) {
  return json_pack("{s:s, s:i, s:s, s:s, s:s, s:i, s:s}", "type", "hello", "v", 1, "role",
                   "client", "token", token, "solver", NQ_SOLVER_VERSION, "threads", 1,
                   "software", "test_hostile");
}

/* Open TLS and say hello with a token; returns 0 once welcomed. */
static int login(tc_t *c, const char *token) {
  if (tls_open(c) != 0) return -1;
  if (send_msg(c, hello(token)) != 0) return -1;
  json_t *m = NULL;
  int r = recv_frame(c, &m, IO_TIMEOUT_MS);
  int ok = r == 1 && strcmp(msg_type(m), "welcome") == 0;
  json_decref(m);
  return ok ? 0 : -1;
}

/* Enrol a new client; its token is copied to token. */
static void enrol(const char *name, char *token, size_t len) {
  tc_t c;
  ck_assert_msg(tls_open(&c) == 0, "enrol: TLS connection failed");
  json_t *h = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:i, s:s}", "type", "hello", "v", 1,
                        "role", "client", "enrol", g_enrol, "name", name, "solver",
                        NQ_SOLVER_VERSION, "threads", 1, "software", "test_hostile");
  ck_assert_int_eq(send_msg(&c, h), 0);
  json_t *m = NULL;
  ck_assert_int_eq(recv_frame(&c, &m, IO_TIMEOUT_MS), 1);
  const char *tok = NULL;
  ck_assert_msg(strcmp(msg_type(m), "welcome") == 0 && nq_msg_get_str(m, "token", &tok) == 0,
                "enrol %s: no welcome with a token", name);
  snprintf(token, len, "%s", tok);
  json_decref(m);
  tls_close(&c);
}

typedef struct {
  int64_t id;
  char unit[NQ_UNIT_TEXT_MAX];
} asg_t;

/* get_work on an open session; fills up to max assignments, returns how many (0: no_work). */
static int get_work(tc_t *c, int want, asg_t *out, int max) {
  ck_assert_int_eq(send_msg(c, json_pack("{s:s, s:i}", "type", "get_work", "want", want)), 0);
  json_t *m = NULL;
  ck_assert_int_eq(recv_frame(c, &m, IO_TIMEOUT_MS), 1);
  int n = 0;
  if (strcmp(msg_type(m), "work") == 0) {
    json_t *arr = json_object_get(m, "assignments");
    ck_assert(json_is_array(arr));
    size_t i;
    json_t *a;
    json_array_foreach(arr, i, a) {
      if (n >= max) break;
      const char *u = NULL;
      ck_assert_int_eq(nq_msg_get_int(a, "id", 1, INT64_MAX, &out[n].id), 0);
      ck_assert_int_eq(nq_msg_get_str(a, "unit", &u), 0);
      snprintf(out[n].unit, sizeof out[n].unit, "%s", u);
      n++;
    }
  } else {
    ck_assert_msg(strcmp(msg_type(m), "no_work") == 0, "get_work: unexpected %s", msg_type(m));
  }
  json_decref(m);
  return n;
}

static void solve(const char *unit, nq_counts_t *out) {
  nq_unit_t u;
  char err[160];
  ck_assert_msg(nq_unit_parse(unit, &u, err, sizeof err) == 0, "server sent bad unit %s", unit);
  ck_assert_int_eq(nq_fast_solve_unit(&u, out), 0);
}

static json_t *result_msg(int64_t id, const char *unit, json_int_t c2, json_int_t c4,
                          json_int_t c8, json_int_t nodes) {
  return json_pack("{s:s, s:I, s:s, s:I, s:I, s:I, s:I, s:f, s:s}", "type", "result", "id",
                   (json_int_t)id, "unit", unit, "c2", c2, "c4", c4, "c8", c8, "nodes", nodes,
                   "seconds", 0.001, "solver", NQ_SOLVER_VERSION);
}

static json_t *true_result(const asg_t *a) {
  nq_counts_t k;
  solve(a->unit, &k);
  return result_msg(a->id, a->unit, (json_int_t)k.c2, (json_int_t)k.c4, (json_int_t)k.c8,
                    (json_int_t)k.nodes);
}

static void expect_ack(tc_t *c, int64_t id, const char *status, const char *what) {
  json_t *m = NULL;
  int r = recv_frame(c, &m, IO_TIMEOUT_MS);
  ck_assert_msg(r == 1, "%s: no ack (%d)", what, r);
  char *dump = json_dumps(m, JSON_COMPACT);
  const char *st = NULL;
  int64_t aid = 0;
  ck_assert_msg(strcmp(msg_type(m), "ack") == 0 && nq_msg_get_str(m, "status", &st) == 0 &&
                    strcmp(st, status) == 0 && nq_msg_get_int(m, "id", 0, INT64_MAX, &aid) == 0 &&
                    aid == id,
                "%s: expected ack %s for %lld, got %s", what, status, (long long)id, dump);
  free(dump);
  json_decref(m);
}

/* An honest client: a fresh connection, one unit, solved and accepted. */
static void honest_round(const char *after) {
  tc_t c;
  ck_assert_msg(srv_alive(), "server died after: %s", after);
  ck_assert_msg(login(&c, g_honest_token) == 0, "honest client not welcomed after: %s", after);
  asg_t a;
  ck_assert_msg(get_work(&c, 1, &a, 1) == 1, "honest client got no work after: %s", after);
  ck_assert_int_eq(send_msg(&c, true_result(&a)), 0);
  expect_ack(&c, a.id, "accepted", after);
  ck_assert_int_eq(send_msg(&c, json_pack("{s:s}", "type", "bye")), 0);
  tls_close(&c);
  g_honest_ok++;
}

/* ---- attacks ----------------------------------------------------------------------------- */

/* A fresh TLS connection gets `payload` (a whole frame's payload) as its first frame. */
static void attack_payload(const void *payload, size_t len, const char *codes, const char *what) {
  tc_t c;
  ck_assert_msg(tls_open(&c) == 0, "%s: TLS failed", what);
  ck_assert_int_eq(send_payload(&c, payload, len), 0);
  expect_error(&c, codes, 1, what);
  tls_close(&c);
  g_bad_inputs++;
  honest_round(what);
}

static void attack_header(uint32_t len, const char *codes, const char *what) {
  tc_t c;
  ck_assert_msg(tls_open(&c) == 0, "%s: TLS failed", what);
  uint8_t hdr[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
  ck_assert_int_eq(tls_write(&c, hdr, 4), 0);
  expect_error(&c, codes, 1, what);
  tls_close(&c);
  g_bad_inputs++;
  honest_round(what);
}

/* Same, but after a welcome: the frame arrives on an authenticated session. */
static void attack_session(const char *token, const char *payload, const char *codes,
                           const char *what) {
  tc_t c;
  ck_assert_msg(login(&c, token) == 0, "%s: login failed", what);
  ck_assert_int_eq(send_payload(&c, payload, strlen(payload)), 0);
  expect_error(&c, codes, 1, what);
  tls_close(&c);
  g_bad_inputs++;
  honest_round(what);
}

static void plain_garbage(const void *data, size_t len, const char *what) {
  int fd = tcp_connect();
  ck_assert_msg(fd >= 0, "%s: connect failed", what);
  set_timeout(fd, IO_TIMEOUT_MS);
  ck_assert_int_eq(send(fd, data, len, MSG_NOSIGNAL) >= 0 || errno == ECONNRESET, 1);
  /* The server answers with at most a TLS alert, then closes. */
  char buf[4096];
  double deadline = now_s() + IO_TIMEOUT_MS / 1000.0;
  int closed = 0;
  while (now_s() < deadline) {
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      closed = 1;
      break;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
  }
  close(fd);
  ck_assert_msg(closed, "%s: the server did not close the connection", what);
  g_bad_inputs++;
  honest_round(what);
}

/* The wrong-token flood. Workers are forked processes (check's assertions belong to the test
 * process, so a worker reports a failure through the shared block and its exit status); they take
 * attempt numbers from one shared counter until FLOOD_MAX are claimed or time runs out. */
typedef struct {
  atomic_int next;   /* attempt numbers claimed */
  atomic_int done;   /* hellos answered with error/auth and closed */
  atomic_int failed;
  char err[256];
} flood_t;

typedef struct {
  int done, failed;
  double seconds;
  char err[256];
} flood_result_t;

static void flood_worker(flood_t *f, double t0) {
  for (;;) {
    int i = atomic_fetch_add(&f->next, 1);
    if (i >= FLOOD_MAX || now_s() - t0 > FLOOD_SECONDS) _exit(0);
    tc_t c;
    char tok[65];
    json_t *m = NULL;
    int r = -3;
    if (tls_open(&c) == 0 && nq_random_token(tok, 32) == 0 && send_msg(&c, hello(tok)) == 0)
      r = recv_frame(&c, &m, IO_TIMEOUT_MS);
    int ok = r == 1 && strcmp(msg_type(m), "error") == 0 && strcmp(msg_code(m), "auth") == 0;
    json_decref(m);
    tls_close(&c);
    if (!ok) {
      if (atomic_fetch_add(&f->failed, 1) == 0)
        snprintf(f->err, sizeof f->err, "hello %d with a wrong token: %s", i,
                 r == -3 ? "TLS connection failed" : r == 1 ? "answered, but not error/auth"
                 : r == 0 ? "closed without an error frame" : "no answer");
      _exit(1);
    }
    atomic_fetch_add(&f->done, 1);
  }
}

static flood_result_t run_flood(void) {
  flood_t *f = mmap(NULL, sizeof *f, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(f, MAP_FAILED);
  memset(f, 0, sizeof *f);
  double t0 = now_s();
  pid_t kids[FLOOD_WORKERS];
  for (int w = 0; w < FLOOD_WORKERS; w++) {
    fflush(NULL);
    kids[w] = fork();
    ck_assert_int_ge(kids[w], 0);
    if (kids[w] == 0) flood_worker(f, t0);
  }
  /* While they flood, the honest client keeps getting and reporting work (every 0.5 s, at most
   * 40 times: the job has 268 units and each honest round takes one). */
  int rounds = 0;
  for (int left = FLOOD_WORKERS; left > 0;) {
    for (int w = 0; w < FLOOD_WORKERS; w++) {
      int st = 0;
      if (kids[w] <= 0 || waitpid(kids[w], &st, WNOHANG) != kids[w]) continue;
      kids[w] = 0;
      left--;
      if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && atomic_load(&f->failed) == 0) {
        atomic_fetch_add(&f->failed, 1);
        snprintf(f->err, sizeof f->err, "flood worker %d ended with status %d", w, st);
      }
    }
    if (left > 0 && rounds < 40) {
      honest_round("wrong-token hellos from other connections");
      rounds++;
    }
    if (left > 0) sleep_ms(rounds < 40 ? 500 : 50);
  }
  flood_result_t out = {atomic_load(&f->done), atomic_load(&f->failed), now_s() - t0, ""};
  snprintf(out.err, sizeof out.err, "%s", f->err);
  munmap(f, sizeof *f);
  return out;
}

/* A failed check exits the forked test process: stop the server and remove the directory then too
 * (the server also has PR_SET_PDEATHSIG). */
static void hostile_cleanup(void) {
  if (g_srv > 0) {
    kill(g_srv, SIGKILL);
    waitpid(g_srv, NULL, 0);
    g_srv = -1;
  }
  if (g_dir) {
    tu_rmtree(g_dir);
    free(g_dir);
    g_dir = NULL;
  }
}

START_TEST(hostile_peers_do_not_hurt_honest_clients) {
  signal(SIGPIPE, SIG_IGN);
  g_dir = tu_tmpdir("hostile");
  ck_assert_ptr_nonnull(g_dir);
  atexit(hostile_cleanup);
  int started = -1;
  for (int i = 0; i < 3 && started != 0; i++) started = srv_try_start();
  if (started != 0) show_server_log();
  ck_assert_msg(started == 0, "nq-server did not start (see log above)");
  ck_assert_int_eq(nq_tls_ctx_client_new(g_ca, &g_tls), 0);
  long rss0 = srv_rss_kib();
  double t_start = now_s();

  char mallory[256];
  enrol("honest", g_honest_token, sizeof g_honest_token);
  enrol("mallory", mallory, sizeof mallory);
  honest_round("start");

  /* Slowloris connections, held while everything else runs. */
  int held_tcp[HOLD_TCP], held_partial[HOLD_PARTIAL];
  tc_t held_tls[HOLD_NOHELLO];
  double t_hold = now_s();
  for (int i = 0; i < HOLD_TCP; i++) {
    held_tcp[i] = tcp_connect();
    ck_assert_msg(held_tcp[i] >= 0, "slowloris connect %d failed", i);
  }
  for (int i = 0; i < HOLD_PARTIAL; i++) {
    held_partial[i] = tcp_connect();
    ck_assert(held_partial[i] >= 0);
    ck_assert_int_eq(send(held_partial[i], "\x16", 1, MSG_NOSIGNAL), 1); /* handshake record... */
  }
  for (int i = 0; i < HOLD_NOHELLO; i++)
    ck_assert_msg(tls_open(&held_tls[i]) == 0, "TLS without hello %d failed", i);
  int held = HOLD_TCP + HOLD_PARTIAL + HOLD_NOHELLO;
  honest_round("slowloris connections opened");

  /* Plaintext and garbage on the TLS port. */
  const char http[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  plain_garbage(http, sizeof http - 1, "plaintext HTTP on the TLS port");
  const char frame_plain[] = "\x00\x00\x00\x10{\"type\":\"hello\"}";
  plain_garbage(frame_plain, sizeof frame_plain - 1, "a plaintext frame on the TLS port");
  {
    uint8_t junk[65536];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
      x = x * 1103515245u + 12345u;
      junk[i] = (uint8_t)(x >> 16);
    }
    plain_garbage(junk, sizeof junk, "64 KiB of random bytes on the TLS port");
  }

  /* Frame headers. */
  attack_header(0xFFFFFFFFu, "frame_too_big", "frame length 0xFFFFFFFF (4 GiB)");
  attack_header(65537u, "frame_too_big", "frame length 65537");
  attack_header(0x80000000u, "frame_too_big", "frame length 2^31");
  attack_header(0u, "bad_frame", "frame length 0");

  /* A truncated frame, then close: the server must just drop it. */
  {
    tc_t c;
    ck_assert(tls_open(&c) == 0);
    const char part[] = "\x00\x00\x00\x64{\"type\":\"hel";
    ck_assert_int_eq(tls_write(&c, part, sizeof part - 1), 0);
    SSL_shutdown(c.ssl);
    shutdown(c.fd, SHUT_WR);
    expect_closed(&c, IO_TIMEOUT_MS, "truncated frame then close");
    tls_close(&c);
    g_bad_inputs++;
    honest_round("truncated frame then close");
    /* ... and a truncated frame with the TCP connection simply dropped. */
    ck_assert(tls_open(&c) == 0);
    ck_assert_int_eq(tls_write(&c, part, sizeof part - 1), 0);
    tls_close(&c);
    g_bad_inputs++;
    honest_round("truncated frame then TCP close");
  }

  /* Payloads that are not one valid JSON object. */
  {
    const char bad_utf8[] = "{\"type\":\"hello\",\"name\":\"\xff\xfe\"}";
    attack_payload(bad_utf8, sizeof bad_utf8 - 1, "bad_json", "invalid UTF-8");
    const char overlong[] = "{\"type\":\"hel\xc1\xac\x6f\"}";
    attack_payload(overlong, sizeof overlong - 1, "bad_json", "overlong UTF-8");
    const char surrogate[] = "{\"type\":\"\xed\xa0\x80\"}";
    attack_payload(surrogate, sizeof surrogate - 1, "bad_json", "UTF-8 surrogate");
    const char nul[] = "{\"type\":\"hello\"}\0";
    attack_payload(nul, sizeof nul - 1, "bad_json", "NUL after the object");
    attack_payload("{type: hello", 12, "bad_json", "invalid JSON");
    attack_payload("{\"type\":\"hello\"} {}", 19, "bad_json", "two objects in one frame");
    attack_payload("[1,2,3]", 7, "bad_json", "top-level array");
    attack_payload("\"hello\"", 7, "bad_json", "top-level string");
    attack_payload("{\"type\":\"hello\",\"type\":\"hello\"}", 31, "bad_json", "duplicate keys");
    static char deep[8192];
    size_t k = 0;
    k += (size_t)sprintf(deep, "{\"type\":\"hello\",\"x\":");
    for (int i = 0; i < 1000; i++) deep[k++] = '[';
    for (int i = 0; i < 1000; i++) deep[k++] = ']';
    deep[k++] = '}';
    attack_payload(deep, k, "bad_json", "1000-deep nesting");
    k = 0;
    for (int i = 0; i < 1000; i++) {
      memcpy(deep + k, "{\"a\":", 5);
      k += 5;
    }
    attack_payload(deep, k, "bad_json", "1000-deep objects, unterminated");
  }

  /* Frames before hello. */
  attack_payload("{\"type\":\"get_work\",\"want\":1}", 28, "not_hello", "get_work before hello");
  {
    char buf[256];
    int l = snprintf(buf, sizeof buf,
                     "{\"type\":\"result\",\"id\":1,\"unit\":\"12:c:2:0,2,4\",\"c2\":0,\"c4\":0,"
                     "\"c8\":1,\"nodes\":5,\"seconds\":0.1,\"solver\":\"nq-solver-1\"}");
    attack_payload(buf, (size_t)l, "not_hello", "result before hello");
  }
  attack_payload("{\"type\":\"admin\",\"cmd\":\"status\"}", 31, "not_hello", "admin before hello");
  attack_payload("{\"type\":\"bogus\"}", 16, "unknown_type|not_hello", "unknown type first");
  attack_payload("{\"v\":1}", 7, "unknown_type|not_hello", "no type first");
  attack_payload("{\"type\":7}", 10, "unknown_type|not_hello|bad_message", "numeric type first");

  /* hello fields of the wrong type or range (%s is the valid token). */
  {
#define REST "\"solver\":\"nq-solver-1\",\"threads\":1,\"software\":\"t\""
#define TOK "\"token\":\"%s\""
    const char *rest = REST;
    struct {
      const char *fields;
      const char *codes;
      const char *what;
    } cases[] = {
        {"\"v\":\"1\",\"role\":\"client\"," TOK "," REST, "bad_message|version", "hello v as a string"},
        {"\"v\":1.0,\"role\":\"client\"," TOK "," REST, "bad_message|version", "hello v as a real"},
        {"\"v\":true,\"role\":\"client\"," TOK "," REST, "bad_message|version", "hello v as a bool"},
        {"\"v\":2,\"role\":\"client\"," TOK "," REST, "version", "hello v = 2"},
        {"\"v\":-1,\"role\":\"client\"," TOK "," REST, "version|bad_message", "hello v = -1"},
        {"\"role\":\"client\"," TOK "," REST, "bad_message|version", "hello without v"},
        {"\"v\":1,\"role\":5," TOK "," REST, "bad_message", "hello role as a number"},
        {"\"v\":1,\"role\":\"root\"," TOK "," REST, "bad_message", "hello role unknown"},
        {"\"v\":1," TOK "," REST, "bad_message", "hello without role"},
        {"\"v\":1,\"role\":\"client\",\"token\":123," REST, "bad_message", "hello token as a number"},
        {"\"v\":1,\"role\":\"client\",\"token\":[\"x\"]," REST, "bad_message", "hello token as an array"},
        {"\"v\":1,\"role\":\"client\"," REST, "bad_message|auth", "hello without token or enrol"},
        {"\"v\":1,\"role\":\"client\",\"enrol\":{}," REST, "bad_message", "hello enrol as an object"},
        {"\"v\":1,\"role\":\"client\"," TOK ",\"solver\":1,\"threads\":1,\"software\":\"t\"",
         "bad_message", "hello solver as a number"},
        {"\"v\":1,\"role\":\"client\"," TOK ",\"solver\":\"nq-solver-1\",\"threads\":\"4\",\"software\":\"t\"",
         "bad_message", "hello threads as a string"},
        {"\"v\":1,\"role\":\"client\"," TOK ",\"solver\":\"nq-solver-1\",\"threads\":0,\"software\":\"t\"",
         "bad_message", "hello threads = 0"},
        {"\"v\":1,\"role\":\"client\"," TOK ",\"solver\":\"nq-solver-1\",\"threads\":5000,\"software\":\"t\"",
         "bad_message", "hello threads = 5000"},
        {"\"v\":1,\"role\":\"client\"," TOK ",\"solver\":\"nq-solver-1\",\"threads\":1,\"software\":{}",
         "bad_message", "hello software as an object"},
        {"\"v\":1,\"role\":\"client\",\"token\":\"0000deadbeef\"," REST, "auth", "hello wrong token"},
        {"\"v\":1,\"role\":\"client\",\"token\":\"\"," REST, "auth|bad_message", "hello empty token"},
        {"\"v\":1,\"role\":\"admin\"," TOK "," REST, "auth", "hello admin role with a client token"},
    };
#undef TOK
#undef REST
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      char fields[1200], msg[1400];
      if (strstr(cases[i].fields, "%s"))
        snprintf(fields, sizeof fields, cases[i].fields, g_honest_token);
      else
        snprintf(fields, sizeof fields, "%s", cases[i].fields);
      snprintf(msg, sizeof msg, "{\"type\":\"hello\",%s}", fields);
      attack_payload(msg, strlen(msg), cases[i].codes, cases[i].what);
    }
    /* Enrolment with a wrong key and with bad names. */
    char msg[1400];
    snprintf(msg, sizeof msg,
             "{\"type\":\"hello\",\"v\":1,\"role\":\"client\",\"enrol\":\"not-the-key\",\"name\":"
             "\"x\",%s}", rest);
    attack_payload(msg, strlen(msg), "auth", "enrol with a wrong key");
    const char *names[] = {"\"bad name!\"", "\"\"", "7",
                           "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\""};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      snprintf(msg, sizeof msg,
               "{\"type\":\"hello\",\"v\":1,\"role\":\"client\",\"enrol\":\"%s\",\"name\":%s,%s}",
               g_enrol, names[i], rest);
      char what[160];
      snprintf(what, sizeof what, "enrol with name %.40s", names[i]);
      attack_payload(msg, strlen(msg), "bad_message", what);
    }
  }

  /* After a welcome: protocol violations on an authenticated session. */
  {
    char h[600];
    snprintf(h, sizeof h,
             "{\"type\":\"hello\",\"v\":1,\"role\":\"client\",\"token\":\"%s\",\"solver\":"
             "\"nq-solver-1\",\"threads\":1,\"software\":\"t\"}",
             mallory);
    attack_session(mallory, h, "not_hello", "second hello");
    attack_session(mallory, "{\"type\":\"bogus\"}", "unknown_type", "unknown type after hello");
    attack_session(mallory, "{\"type\":\"get_work\",\"want\":0}", "bad_message", "get_work want 0");
    attack_session(mallory, "{\"type\":\"get_work\",\"want\":257}", "bad_message",
                   "get_work want 257");
    attack_session(mallory, "{\"type\":\"get_work\",\"want\":\"1\"}", "bad_message",
                   "get_work want as a string");
    attack_session(mallory, "{\"type\":\"progress\"}", "bad_message", "progress without id");
    attack_session(mallory, "{\"type\":\"result\",\"id\":\"x\"}", "bad_message",
                   "result with a string id");
    attack_session(mallory, "{\"type\":\"admin\",\"cmd\":\"clients\"}",
                   "bad_message|not_hello|unknown_type|auth", "admin request from a client");
    attack_session(mallory, "[]", "bad_json", "top-level array after hello");
    tc_t c;
    ck_assert(login(&c, mallory) == 0);
    uint8_t big[4] = {0xff, 0xff, 0xff, 0xff};
    ck_assert_int_eq(tls_write(&c, big, 4), 0);
    expect_error(&c, "frame_too_big", 1, "4 GiB frame after hello");
    tls_close(&c);
    g_bad_inputs++;
    honest_round("4 GiB frame after hello");
  }

  /* Forged and impossible results (non-fatal refusals: the session goes on). */
  {
    tc_t m, h;
    ck_assert(login(&m, mallory) == 0);
    ck_assert(login(&h, g_honest_token) == 0);
    asg_t ma[4], ha[1];
    int nm = get_work(&m, 4, ma, 4);
    ck_assert_int_ge(nm, 1);
    ck_assert_int_eq(get_work(&h, 1, ha, 1), 1);

    /* The honest client's assignment, reported by mallory. */
    ck_assert_int_eq(send_msg(&m, true_result(&ha[0])), 0);
    expect_error(&m, "not_yours", 0, "result for another client's assignment");
    /* An id that does not exist. */
    ck_assert_int_eq(send_msg(&m, result_msg(987654321, ma[0].unit, 0, 0, 1, 10)), 0);
    expect_error(&m, "unknown_assignment", 0, "result for an unknown assignment");
    ck_assert_int_eq(send_msg(&m, json_pack("{s:s,s:I,s:I}", "type", "progress", "id",
                                            (json_int_t)987654321, "nodes", (json_int_t)1)), 0);
    expect_error(&m, "unknown_assignment", 0, "progress for an unknown assignment");
    ck_assert_int_eq(send_msg(&m, json_pack("{s:s,s:I,s:I}", "type", "progress", "id",
                                            (json_int_t)ha[0].id, "nodes", (json_int_t)1)), 0);
    expect_error(&m, "unknown_assignment|not_yours", 0, "progress for another client's assignment");
    g_bad_inputs += 4;

    nq_counts_t k;
    solve(ma[0].unit, &k);
    json_int_t c2 = (json_int_t)k.c2, c4 = (json_int_t)k.c4, c8 = (json_int_t)k.c8,
               nodes = (json_int_t)k.nodes;
    struct {
      json_t *msg;
      const char *what;
    } bad[] = {
        {result_msg(ma[0].id, ma[0].unit, c2, c4, -1, nodes), "negative c8"},
        {result_msg(ma[0].id, ma[0].unit, -5, c4, c8, nodes), "negative c2"},
        {result_msg(ma[0].id, ma[0].unit, c2, c4, c8, -1), "negative nodes"},
        {result_msg(ma[0].id, ma[0].unit, c2, c4, nodes + 1, nodes), "c2+c4+c8 > nodes"},
        {result_msg(ma[0].id, ma[0].unit, 0, 0, 0, 0), "zero nodes"},
        {result_msg(ma[0].id, "12:c:2:0,2,5", c2, c4, c8, nodes), "a wrong unit text"},
        {result_msg(ma[0].id, "garbage", c2, c4, c8, nodes), "a malformed unit text"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      /* a wrong unit that happens to be the right one is not wrong */
      if (strstr(bad[i].what, "wrong unit") && strcmp(ma[0].unit, "12:c:2:0,2,5") == 0) {
        json_decref(bad[i].msg);
        continue;
      }
      ck_assert_int_eq(send_msg(&m, bad[i].msg), 0);
      expect_error(&m, "bad_result", 0, bad[i].what);
      g_bad_inputs++;
    }
    /* A corner unit reported with c2 > 0 (units come corner part first, so one is at hand). */
    int corner = -1;
    for (int i = 0; i < nm; i++)
      if (strstr(ma[i].unit, ":c:")) corner = i;
    if (corner >= 0) {
      nq_counts_t kc;
      solve(ma[corner].unit, &kc);
      ck_assert_int_eq(send_msg(&m, result_msg(ma[corner].id, ma[corner].unit, 1, 0,
                                               (json_int_t)kc.c8, (json_int_t)kc.nodes + 1)), 0);
      expect_error(&m, "bad_result", 0, "corner unit with c2 = 1");
      ck_assert_int_eq(send_msg(&m, result_msg(ma[corner].id, ma[corner].unit, 0, 1,
                                               (json_int_t)kc.c8, (json_int_t)kc.nodes + 1)), 0);
      expect_error(&m, "bad_result", 0, "corner unit with c4 = 1");
      g_bad_inputs += 2;
    }
    /* After all that the true result is accepted, once; the repeat is a duplicate. */
    for (int i = 0; i < nm; i++) {
      ck_assert_int_eq(send_msg(&m, true_result(&ma[i])), 0);
      expect_ack(&m, ma[i].id, "accepted", "mallory's true result");
    }
    ck_assert_int_eq(send_msg(&m, true_result(&ma[0])), 0);
    expect_ack(&m, ma[0].id, "duplicate", "duplicate result");
    ck_assert_int_eq(send_msg(&m, true_result(&ma[0])), 0);
    expect_ack(&m, ma[0].id, "duplicate", "duplicate result, third time");
    g_bad_inputs += 2;
    /* The honest client's result was not disturbed by the forgery. */
    ck_assert_int_eq(send_msg(&h, true_result(&ha[0])), 0);
    expect_ack(&h, ha[0].id, "accepted", "honest result after a forgery");
    /* Mallory's session is still usable. */
    asg_t more[1];
    (void)get_work(&m, 1, more, 1);
    tls_close(&m);
    tls_close(&h);
    honest_round("forged and impossible results");
  }


  /* The slowloris connections: still served others; now they must be closed by the server's
   * handshake timeout (10 s; allow 25 s for slow sanitizer builds). */
  double worst = 0;
  for (int i = 0; i < HOLD_TCP + HOLD_PARTIAL; i++) {
    int fd = i < HOLD_TCP ? held_tcp[i] : held_partial[i - HOLD_TCP];
    int closed = 0;
    for (;;) {
      double left = t_hold + 25.0 - now_s();
      if (left <= 0) break;
      struct pollfd p = {fd, POLLIN, 0};
      if (poll(&p, 1, (int)(left * 1000) + 1) <= 0) continue;
      char buf[512];
      ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        closed = 1;
        break;
      }
    }
    ck_assert_msg(closed, "slowloris connection %d was not closed within 25 s", i);
    if (now_s() - t_hold > worst) worst = now_s() - t_hold;
    close(fd);
  }
  for (int i = 0; i < HOLD_NOHELLO; i++) {
    double left = t_hold + 25.0 - now_s();
    expect_closed(&held_tls[i], left > 0 ? (int)(left * 1000) + 1 : 1, "TLS connection without hello");
    if (now_s() - t_hold > worst) worst = now_s() - t_hold;
    tls_close(&held_tls[i]);
  }
  g_bad_inputs += held;
  honest_round("slowloris connections closed");

  /* Wrong tokens: FLOOD_MAX hellos with fresh random tokens from FLOOD_WORKERS processes at once. */
  flood_result_t fl = run_flood();
  ck_assert_msg(fl.failed == 0, "wrong-token flood: %s", fl.err);
  ck_assert_msg(fl.done == FLOOD_MAX, "wrong-token flood: only %d of %d hellos in %.0f s", fl.done,
                FLOOD_MAX, FLOOD_SECONDS);
  int flood = fl.done;
  double flood_s = fl.seconds;
  honest_round("wrong-token flood");

  long rss1 = srv_rss_kib();
  int san = srv_is_sanitized();
  long limit = san ? 1024 * 1024 : 64 * 1024; /* ASan: quarantine + shadow; sanity only */
  printf("hostile: bad inputs tried %d (each answered and closed or refused; server alive)\n",
         g_bad_inputs);
  printf("hostile: slowloris connections held %d, all closed by the server within %.1f s\n", held,
         worst);
  printf("hostile: wrong-token hellos %d in %.1f s (%.0f/s), each refused with auth\n", flood,
         flood_s, flood / flood_s);
  printf("hostile: honest results accepted %d (one after every attack, one every 0.5 s during the flood, up to 40)\n", g_honest_ok);
  printf("hostile: server VmRSS %ld KiB at start, %ld KiB after (limit %ld KiB%s); run %.1f s\n",
         rss0, rss1, limit, san ? ", sanitizer build" : "", now_s() - t_start);
  fflush(stdout);
  ck_assert_msg(rss1 > 0 && rss1 < limit, "server VmRSS %ld KiB over %ld KiB", rss1, limit);
  ck_assert_msg(srv_alive(), "server died");

  nq_tls_ctx_free(g_tls);
  int st = srv_stop();
  if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || log_has_sanitizer_report())
    show_server_log();
  ck_assert_msg(st != -1, "nq-server did not stop within 10 s of SIGTERM");
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "nq-server exit status %d on SIGTERM", st);
  ck_assert_msg(!log_has_sanitizer_report(), "sanitizer report in the server log");
  hostile_cleanup();
}
END_TEST

int main(void) {
  Suite *s = suite_create("hostile");
  TCase *tc = tcase_create("hostile");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, hostile_peers_do_not_hurt_honest_clients);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
