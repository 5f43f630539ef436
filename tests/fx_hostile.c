/* Fixture: a real nq-server and blocking TLS connections to it (see fx_hostile.h). */
#include "fx_hostile.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nq/frame.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "testutil.h"

void *memmem(const void *hay, size_t hlen, const void *needle, size_t nlen); /* GNU; not in POSIX mode */

fxh_t fxh = {.pid = -1};

double fxh_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void fxh_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int fxh_read_file_line(const char *path, char *buf, size_t len) {
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

int fxh_tcp_connect_from(const char *src) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a;
  if (src) {
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    if (inet_pton(AF_INET, src, &a.sin_addr) != 1 || bind(fd, (struct sockaddr *)&a, sizeof a)) {
      close(fd);
      return -1;
    }
  }
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)fxh.port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

int fxh_tcp_connect(void) {
  return fxh_tcp_connect_from(NULL);
}

int fxh_srv_alive(void) {
  if (fxh.pid <= 0) return 0;
  int status;
  return waitpid(fxh.pid, &status, WNOHANG) == 0;
}

int fxh_srv_try_start(int n, int depth, const char *const *extra) {
  fxh.port = tu_free_port();
  if (fxh.port <= 0) return -1;
  char bin[600], listen[64], log[600];
  snprintf(bin, sizeof bin, "%s/nq-server", tu_bin_dir());
  snprintf(listen, sizeof listen, "127.0.0.1:%d", fxh.port);
  snprintf(log, sizeof log, "%s/server.log", fxh.dir);
  char data[600];
  snprintf(data, sizeof data, "%s/data", fxh.dir);
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
    char ns[8], ds[8];
    snprintf(ns, sizeof ns, "%d", n);
    snprintf(ds, sizeof ds, "%d", depth);
    const char *argv[64] = {bin, "--n", ns, "--depth", ds, "--listen", listen, "--data", data};
    int k = 9;
    for (int i = 0; extra && extra[i] && k < 63; i++) argv[k++] = extra[i];
    argv[k] = NULL;
    execv(bin, (char *const *)argv);
    _exit(127);
  }
  fxh.pid = pid;
  snprintf(fxh.ca, sizeof fxh.ca, "%s/ca.pem", data);
  char keypath[700];
  snprintf(keypath, sizeof keypath, "%s/enrol.key", data);
  double deadline = fxh_now_s() + 60;
  while (fxh_now_s() < deadline) {
    if (!fxh_srv_alive()) {
      fxh.pid = -1;
      return -1;
    }
    if (access(fxh.ca, R_OK) == 0 && fxh_read_file_line(keypath, fxh.enrol, sizeof fxh.enrol) == 0) {
      int fd = fxh_tcp_connect();
      if (fd >= 0) {
        close(fd);
        return 0;
      }
    }
    fxh_sleep_ms(50);
  }
  return -1;
}

/* SIGTERM the server; returns its wait status (-1 if it had to be killed). */
int fxh_srv_stop(void) {
  if (fxh.pid <= 0) return -1;
  kill(fxh.pid, SIGTERM);
  for (int i = 0; i < 200; i++) {
    int status;
    if (waitpid(fxh.pid, &status, WNOHANG) == fxh.pid) {
      fxh.pid = -1;
      return status;
    }
    fxh_sleep_ms(50);
  }
  kill(fxh.pid, SIGKILL);
  waitpid(fxh.pid, NULL, 0);
  fxh.pid = -1;
  return -1;
}

void fxh_cleanup(void) {
  if (fxh.pid > 0) {
    kill(fxh.pid, SIGKILL);
    waitpid(fxh.pid, NULL, 0);
    fxh.pid = -1;
  }
  nq_tls_ctx_free(fxh.tls);
  fxh.tls = NULL;
  if (fxh.dir) {
    tu_rmtree(fxh.dir);
    free(fxh.dir);
    fxh.dir = NULL;
  }
}

/* 1 if the server log holds a sanitizer report. */
int fxh_log_has_sanitizer_report(void) {
  char cmd[700];
  snprintf(cmd, sizeof cmd,
           "grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' '%s/server.log'", fxh.dir);
  return system(cmd) == 0;
}

void fxh_show_server_log(void) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "tail -n 30 '%s/server.log' 1>&2", fxh.dir);
  if (system(cmd) != 0) fprintf(stderr, "(no server log)\n");
}

long fxh_srv_rss_kib(void) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)fxh.pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) kib = strtol(line + 6, NULL, 10);
  fclose(f);
  return kib;
}

int fxh_srv_is_sanitized(void) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%d/maps", (int)fxh.pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int yes = 0;
  while (!yes && fgets(line, sizeof line, f))
    if (strstr(line, "libasan") || strstr(line, "libtsan")) yes = 1;
  fclose(f);
  if (!yes) {
    /* Statically linked sanitizer runtimes (clang) leave no library name: look for the symbol. */
    char exe[64], buf[8192];
    snprintf(exe, sizeof exe, "/proc/%d/exe", (int)fxh.pid);
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


void fxh_set_timeout(int fd, int ms) {
  if (ms < 1) ms = 1;
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

int fxh_tls_open(fxh_conn_t *c) {
  return fxh_tls_open_from(c, NULL);
}

int fxh_tls_open_from(fxh_conn_t *c, const char *src) {
  c->ssl = NULL;
  c->fd = fxh_tcp_connect_from(src);
  if (c->fd < 0) return -1;
  fxh_set_timeout(c->fd, FXH_IO_TIMEOUT_MS);
  c->ssl = SSL_new(nq_tls_ctx_ssl(fxh.tls));
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

void fxh_tls_close(fxh_conn_t *c) {
  if (c->ssl) {
    SSL_set_shutdown(c->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN); /* no blocking here */
    SSL_free(c->ssl);
  }
  if (c->fd >= 0) close(c->fd);
  c->ssl = NULL;
  c->fd = -1;
  ERR_clear_error();
}

int fxh_tls_write(fxh_conn_t *c, const void *data, size_t len) {
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
int fxh_tls_read_full(fxh_conn_t *c, void *buf, size_t len, double deadline) {
  uint8_t *p = buf;
  while (len > 0) {
    double left = deadline - fxh_now_s();
    if (left <= 0) return -1;
    fxh_set_timeout(c->fd, (int)(left * 1000) + 1);
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
        if (fxh_now_s() >= deadline) return -1;
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
int fxh_recv_frame(fxh_conn_t *c, json_t **out, int timeout_ms) {
  *out = NULL;
  double deadline = fxh_now_s() + timeout_ms / 1000.0;
  uint8_t hdr[4];
  int r = fxh_tls_read_full(c, hdr, 4, deadline);
  if (r != 1) return r;
  uint32_t len = ((uint32_t)hdr[0] << 24) | ((uint32_t)hdr[1] << 16) | ((uint32_t)hdr[2] << 8) | hdr[3];
  if (len == 0 || len > NQ_FRAME_MAX) return -2;
  uint8_t *buf = malloc(len);
  if (!buf) return -2;
  r = fxh_tls_read_full(c, buf, len, deadline);
  if (r != 1) {
    free(buf);
    return r == 0 ? -2 : r;
  }
  r = nq_frame_decode(buf, len, out);
  free(buf);
  return r == 0 ? 1 : -2;
}

int fxh_send_payload(fxh_conn_t *c, const void *payload, size_t len) {
  uint8_t hdr[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
  uint8_t *buf = malloc(len + 4);
  if (!buf) return -1;
  memcpy(buf, hdr, 4);
  memcpy(buf + 4, payload, len);
  int r = fxh_tls_write(c, buf, len + 4);
  free(buf);
  return r;
}

int fxh_send_msg(fxh_conn_t *c, json_t *msg) { /* steals msg */
  uint8_t *buf = NULL;
  size_t len = 0;
  int r = nq_frame_encode(msg, &buf, &len);
  json_decref(msg);
  if (r != 0) return -1;
  r = fxh_tls_write(c, buf, len);
  free(buf);
  return r;
}

const char *fxh_msg_type(const json_t *m) {
  const char *t = NULL;
  return m && nq_msg_get_str(m, "type", &t) == 0 ? t : "";
}

const char *fxh_msg_code(const json_t *m) {
  const char *t = NULL;
  return m && nq_msg_get_str(m, "code", &t) == 0 ? t : "";
}

/* The next frame must be an error whose code is one of the '|'-separated `codes`, with the given
 * fatality; a fatal one must be followed by the server closing the connection. */
void fxh_expect_error(fxh_conn_t *c, const char *codes, int fatal, const char *what) {
  json_t *m = NULL;
  int r = fxh_recv_frame(c, &m, FXH_IO_TIMEOUT_MS);
  ck_assert_msg(r == 1, "%s: expected an error frame (%s), got %s", what, codes,
                r == 0 ? "a close" : r == -1 ? "a timeout" : "a broken frame");
  char *dump = json_dumps(m, JSON_COMPACT);
  ck_assert_msg(strcmp(fxh_msg_type(m), "error") == 0, "%s: expected error, got %s", what, dump);
  const char *code = fxh_msg_code(m);
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
    r = fxh_recv_frame(c, &m, FXH_IO_TIMEOUT_MS);
    ck_assert_msg(r == 0, "%s: the server did not close after a fatal error (%d)", what, r);
  }
}

/* The connection must be closed by the server within timeout_ms; any frames before the close are
 * allowed only if they are errors. */
void fxh_expect_closed(fxh_conn_t *c, int timeout_ms, const char *what) {
  json_t *m = NULL;
  for (;;) {
    int r = fxh_recv_frame(c, &m, timeout_ms);
    if (r == 1) {
      ck_assert_msg(strcmp(fxh_msg_type(m), "error") == 0, "%s: unexpected frame", what);
      json_decref(m);
      continue;
    }
    ck_assert_msg(r == 0 || r == -2, "%s: not closed within %d ms", what, timeout_ms);
    return;
  }
}

json_t *fxh_hello(const char *token) {
  return json_pack("{s:s, s:i, s:s, s:s, s:s, s:i, s:s}", "type", "hello", "v", 1, "role",
                   "client", "token", token, "solver", NQ_SOLVER_VERSION, "threads", 1,
                   "software", "test_hostile");
}

/* Open TLS and say hello with a token; returns 0 once welcomed. */
int fxh_login(fxh_conn_t *c, const char *token) {
  if (fxh_tls_open(c) != 0) return -1;
  if (fxh_send_msg(c, fxh_hello(token)) != 0) return -1;
  json_t *m = NULL;
  int r = fxh_recv_frame(c, &m, FXH_IO_TIMEOUT_MS);
  int ok = r == 1 && strcmp(fxh_msg_type(m), "welcome") == 0;
  json_decref(m);
  return ok ? 0 : -1;
}

json_t *fxh_enrol_hello(const char *name) {
  return json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:i, s:s}", "type", "hello", "v", 1, "role",
                   "client", "enrol", fxh.enrol, "name", name, "solver", NQ_SOLVER_VERSION,
                   "threads", 1, "software", "nq-tests");
}

/* Enrol a new client; its token is copied to token. */
void fxh_enrol(const char *name, char *token, size_t len) {
  fxh_conn_t c;
  ck_assert_msg(fxh_tls_open(&c) == 0, "enrol: TLS connection failed");
  ck_assert_int_eq(fxh_send_msg(&c, fxh_enrol_hello(name)), 0);
  json_t *m = NULL;
  ck_assert_int_eq(fxh_recv_frame(&c, &m, FXH_IO_TIMEOUT_MS), 1);
  const char *tok = NULL;
  ck_assert_msg(strcmp(fxh_msg_type(m), "welcome") == 0 && nq_msg_get_str(m, "token", &tok) == 0,
                "enrol %s: no welcome with a token", name);
  snprintf(token, len, "%s", tok);
  json_decref(m);
  fxh_tls_close(&c);
}


/* get_work on an open session; fills up to max assignments, returns how many (0: no_work). */
int fxh_get_work(fxh_conn_t *c, int want, fxh_asg_t *out, int max) {
  ck_assert_int_eq(fxh_send_msg(c, json_pack("{s:s, s:i}", "type", "get_work", "want", want)), 0);
  json_t *m = NULL;
  ck_assert_int_eq(fxh_recv_frame(c, &m, FXH_IO_TIMEOUT_MS), 1);
  int n = 0;
  if (strcmp(fxh_msg_type(m), "work") == 0) {
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
    ck_assert_msg(strcmp(fxh_msg_type(m), "no_work") == 0, "get_work: unexpected %s", fxh_msg_type(m));
  }
  json_decref(m);
  return n;
}

/* Sum of the counts in the server log's summary lines that contain `what`, and how many such
 * lines there are. */
long fxh_log_summaries(const char *what, int *lines) {
  char path[700], line[1024];
  snprintf(path, sizeof path, "%s/server.log", fxh.dir);
  FILE *f = fopen(path, "r");
  *lines = 0;
  if (!f) return -1;
  long sum = 0;
  while (fgets(line, sizeof line, f)) {
    const char *p = strstr(line, "last ");
    if (!p || !strstr(line, what)) continue;
    p = strstr(p, " s: ");
    if (!p) continue;
    sum += strtol(p + 4, NULL, 10);
    (*lines)++;
  }
  fclose(f);
  return sum;
}
