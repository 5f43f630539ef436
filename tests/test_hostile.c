/* Hostile peers against a real nq-server (promises 4 and 5).
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
#include "fx_hostile.h"
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


#define TEST_N 12
#define TEST_DEPTH 3
#define HOLD_TCP 20      /* TCP connections that never send a byte */
#define HOLD_PARTIAL 5   /* one byte of a ClientHello, then nothing */
#define HOLD_NOHELLO 5   /* TLS up, never a frame */
#define FLOOD_MAX 10000     /* wrong-token hellos */
#define FLOOD_WORKERS 4     /* processes sending them at once */
#define FLOOD_SECONDS 120.0 /* give-up bound (sanitizer builds are slower); ~10 s here */

static char g_honest_token[256];
static int g_honest_ok;   /* honest results accepted */
static int g_bad_inputs;  /* hostile inputs tried (excluding the token flood) */

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

static json_t *true_result(const fxh_asg_t *a) {
  nq_counts_t k;
  solve(a->unit, &k);
  return result_msg(a->id, a->unit, (json_int_t)k.c2, (json_int_t)k.c4, (json_int_t)k.c8,
                    (json_int_t)k.nodes);
}

static void expect_ack(fxh_conn_t *c, int64_t id, const char *status, const char *what) {
  json_t *m = NULL;
  int r = fxh_recv_frame(c, &m, FXH_IO_TIMEOUT_MS);
  ck_assert_msg(r == 1, "%s: no ack (%d)", what, r);
  char *dump = json_dumps(m, JSON_COMPACT);
  const char *st = NULL;
  int64_t aid = 0;
  ck_assert_msg(strcmp(fxh_msg_type(m), "ack") == 0 && nq_msg_get_str(m, "status", &st) == 0 &&
                    strcmp(st, status) == 0 && nq_msg_get_int(m, "id", 0, INT64_MAX, &aid) == 0 &&
                    aid == id,
                "%s: expected ack %s for %lld, got %s", what, status, (long long)id, dump);
  free(dump);
  json_decref(m);
}

/* An honest client: a fresh connection, one unit, solved and accepted. */
static void honest_round(const char *after) {
  fxh_conn_t c;
  ck_assert_msg(fxh_srv_alive(), "server died after: %s", after);
  ck_assert_msg(fxh_login(&c, g_honest_token) == 0, "honest client not welcomed after: %s", after);
  fxh_asg_t a;
  ck_assert_msg(fxh_get_work(&c, 1, &a, 1) == 1, "honest client got no work after: %s", after);
  ck_assert_int_eq(fxh_send_msg(&c, true_result(&a)), 0);
  expect_ack(&c, a.id, "accepted", after);
  ck_assert_int_eq(fxh_send_msg(&c, json_pack("{s:s}", "type", "bye")), 0);
  fxh_tls_close(&c);
  g_honest_ok++;
}

/* ---- attacks ----------------------------------------------------------------------------- */

/* A fresh TLS connection gets `payload` (a whole frame's payload) as its first frame. */
static void attack_payload(const void *payload, size_t len, const char *codes, const char *what) {
  fxh_conn_t c;
  ck_assert_msg(fxh_tls_open(&c) == 0, "%s: TLS failed", what);
  ck_assert_int_eq(fxh_send_payload(&c, payload, len), 0);
  fxh_expect_error(&c, codes, 1, what);
  fxh_tls_close(&c);
  g_bad_inputs++;
  honest_round(what);
}

static void attack_header(uint32_t len, const char *codes, const char *what) {
  fxh_conn_t c;
  ck_assert_msg(fxh_tls_open(&c) == 0, "%s: TLS failed", what);
  uint8_t hdr[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
  ck_assert_int_eq(fxh_tls_write(&c, hdr, 4), 0);
  fxh_expect_error(&c, codes, 1, what);
  fxh_tls_close(&c);
  g_bad_inputs++;
  honest_round(what);
}

/* Same, but after a welcome: the frame arrives on an authenticated session. */
static void attack_session(const char *token, const char *payload, const char *codes,
                           const char *what) {
  fxh_conn_t c;
  ck_assert_msg(fxh_login(&c, token) == 0, "%s: login failed", what);
  ck_assert_int_eq(fxh_send_payload(&c, payload, strlen(payload)), 0);
  fxh_expect_error(&c, codes, 1, what);
  fxh_tls_close(&c);
  g_bad_inputs++;
  honest_round(what);
}

static void plain_garbage(const void *data, size_t len, const char *what) {
  int fd = fxh_tcp_connect();
  ck_assert_msg(fd >= 0, "%s: connect failed", what);
  fxh_set_timeout(fd, FXH_IO_TIMEOUT_MS);
  ck_assert_int_eq(send(fd, data, len, MSG_NOSIGNAL) >= 0 || errno == ECONNRESET, 1);
  /* The server answers with at most a TLS alert, then closes. */
  char buf[4096];
  double deadline = fxh_now_s() + FXH_IO_TIMEOUT_MS / 1000.0;
  int closed = 0;
  while (fxh_now_s() < deadline) {
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
    if (i >= FLOOD_MAX || fxh_now_s() - t0 > FLOOD_SECONDS) _exit(0);
    fxh_conn_t c;
    char tok[65];
    json_t *m = NULL;
    int r = -3;
    if (fxh_tls_open(&c) == 0 && nq_random_token(tok, 32) == 0 && fxh_send_msg(&c, fxh_hello(tok)) == 0)
      r = fxh_recv_frame(&c, &m, FXH_IO_TIMEOUT_MS);
    int ok = r == 1 && strcmp(fxh_msg_type(m), "error") == 0 && strcmp(fxh_msg_code(m), "auth") == 0;
    json_decref(m);
    fxh_tls_close(&c);
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
  double t0 = fxh_now_s();
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
    if (left > 0) fxh_sleep_ms(rounds < 40 ? 500 : 50);
  }
  flood_result_t out = {atomic_load(&f->done), atomic_load(&f->failed), fxh_now_s() - t0, ""};
  snprintf(out.err, sizeof out.err, "%s", f->err);
  munmap(f, sizeof *f);
  return out;
}

START_TEST(hostile_peers_do_not_hurt_honest_clients) {
  signal(SIGPIPE, SIG_IGN);
  fxh.dir = tu_tmpdir("hostile");
  ck_assert_ptr_nonnull(fxh.dir);
  atexit(fxh_cleanup);
  int started = -1;
  /* Every attack comes from 127.0.0.1: the per-address limits are raised so that this test
   * measures what it did before them (the 30 slowloris connections are held at once, and the
   * 10,000 wrong tokens are refused at full speed); tests/test_peers.c tests the limits. The
   * refusal summaries come every second so that the flood's can be counted. */
  static const char *const args[] = {"--quorum", "2", "--quorum-distinct", "client",
                                      "--lease-seconds", "300", "--max-conns",
                                      "256", "--idle-timeout", "60", "--max-preauth-per-addr",
                                      "64", "--auth-fail-limit", "0", "--log-summary", "1", NULL};
  for (int i = 0; i < 3 && started != 0; i++) started = fxh_srv_try_start(TEST_N, TEST_DEPTH, args);
  if (started != 0) fxh_show_server_log();
  ck_assert_msg(started == 0, "nq-server did not start (see log above)");
  ck_assert_int_eq(nq_tls_ctx_client_new(fxh.ca, &fxh.tls), 0);
  long rss0 = fxh_srv_rss_kib();
  double t_start = fxh_now_s();

  char mallory[256];
  fxh_enrol("honest", g_honest_token, sizeof g_honest_token);
  fxh_enrol("mallory", mallory, sizeof mallory);
  honest_round("start");

  /* Slowloris connections, held while everything else runs. */
  int held_tcp[HOLD_TCP], held_partial[HOLD_PARTIAL];
  fxh_conn_t held_tls[HOLD_NOHELLO];
  double t_hold = fxh_now_s();
  for (int i = 0; i < HOLD_TCP; i++) {
    held_tcp[i] = fxh_tcp_connect();
    ck_assert_msg(held_tcp[i] >= 0, "slowloris connect %d failed", i);
  }
  for (int i = 0; i < HOLD_PARTIAL; i++) {
    held_partial[i] = fxh_tcp_connect();
    ck_assert(held_partial[i] >= 0);
    ck_assert_int_eq(send(held_partial[i], "\x16", 1, MSG_NOSIGNAL), 1); /* handshake record... */
  }
  for (int i = 0; i < HOLD_NOHELLO; i++)
    ck_assert_msg(fxh_tls_open(&held_tls[i]) == 0, "TLS without hello %d failed", i);
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
    fxh_conn_t c;
    ck_assert(fxh_tls_open(&c) == 0);
    const char part[] = "\x00\x00\x00\x64{\"type\":\"hel";
    ck_assert_int_eq(fxh_tls_write(&c, part, sizeof part - 1), 0);
    SSL_shutdown(c.ssl);
    shutdown(c.fd, SHUT_WR);
    fxh_expect_closed(&c, FXH_IO_TIMEOUT_MS, "truncated frame then close");
    fxh_tls_close(&c);
    g_bad_inputs++;
    honest_round("truncated frame then close");
    /* ... and a truncated frame with the TCP connection simply dropped. */
    ck_assert(fxh_tls_open(&c) == 0);
    ck_assert_int_eq(fxh_tls_write(&c, part, sizeof part - 1), 0);
    fxh_tls_close(&c);
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
                     "\"c8\":1,\"nodes\":5,\"seconds\":0.1,\"solver\":\"nq-solver-3\"}");
    attack_payload(buf, (size_t)l, "not_hello", "result before hello");
  }
  attack_payload("{\"type\":\"admin\",\"cmd\":\"status\"}", 31, "not_hello", "admin before hello");
  attack_payload("{\"type\":\"bogus\"}", 16, "unknown_type|not_hello", "unknown type first");
  attack_payload("{\"v\":1}", 7, "unknown_type|not_hello", "no type first");
  attack_payload("{\"type\":7}", 10, "unknown_type|not_hello|bad_message", "numeric type first");

  /* hello fields of the wrong type or range (%s is the valid token). */
  {
#define REST "\"solver\":\"nq-solver-3\",\"threads\":1,\"software\":\"t\""
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
        {"\"v\":1,\"role\":\"client\"," TOK ",\"solver\":\"nq-solver-3\",\"threads\":\"4\",\"software\":\"t\"",
         "bad_message", "hello threads as a string"},
        {"\"v\":1,\"role\":\"client\"," TOK ",\"solver\":\"nq-solver-3\",\"threads\":0,\"software\":\"t\"",
         "bad_message", "hello threads = 0"},
        {"\"v\":1,\"role\":\"client\"," TOK ",\"solver\":\"nq-solver-3\",\"threads\":5000,\"software\":\"t\"",
         "bad_message", "hello threads = 5000"},
        {"\"v\":1,\"role\":\"client\"," TOK ",\"solver\":\"nq-solver-3\",\"threads\":1,\"software\":{}",
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
               fxh.enrol, names[i], rest);
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
             "\"nq-solver-3\",\"threads\":1,\"software\":\"t\"}",
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
    fxh_conn_t c;
    ck_assert(fxh_login(&c, mallory) == 0);
    uint8_t big[4] = {0xff, 0xff, 0xff, 0xff};
    ck_assert_int_eq(fxh_tls_write(&c, big, 4), 0);
    fxh_expect_error(&c, "frame_too_big", 1, "4 GiB frame after hello");
    fxh_tls_close(&c);
    g_bad_inputs++;
    honest_round("4 GiB frame after hello");
  }

  /* Forged and impossible results (non-fatal refusals: the session goes on). */
  {
    fxh_conn_t m, h;
    ck_assert(fxh_login(&m, mallory) == 0);
    ck_assert(fxh_login(&h, g_honest_token) == 0);
    fxh_asg_t ma[4], ha[1];
    int nm = fxh_get_work(&m, 4, ma, 4);
    ck_assert_int_ge(nm, 1);
    ck_assert_int_eq(fxh_get_work(&h, 1, ha, 1), 1);

    /* The honest client's assignment, reported by mallory. */
    ck_assert_int_eq(fxh_send_msg(&m, true_result(&ha[0])), 0);
    fxh_expect_error(&m, "not_yours", 0, "result for another client's assignment");
    /* An id that does not exist. */
    ck_assert_int_eq(fxh_send_msg(&m, result_msg(987654321, ma[0].unit, 0, 0, 1, 10)), 0);
    fxh_expect_error(&m, "unknown_assignment", 0, "result for an unknown assignment");
    ck_assert_int_eq(fxh_send_msg(&m, json_pack("{s:s,s:I,s:I}", "type", "progress", "id",
                                            (json_int_t)987654321, "nodes", (json_int_t)1)), 0);
    fxh_expect_error(&m, "unknown_assignment", 0, "progress for an unknown assignment");
    ck_assert_int_eq(fxh_send_msg(&m, json_pack("{s:s,s:I,s:I}", "type", "progress", "id",
                                            (json_int_t)ha[0].id, "nodes", (json_int_t)1)), 0);
    fxh_expect_error(&m, "unknown_assignment|not_yours", 0, "progress for another client's assignment");
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
      ck_assert_int_eq(fxh_send_msg(&m, bad[i].msg), 0);
      fxh_expect_error(&m, "bad_result", 0, bad[i].what);
      g_bad_inputs++;
    }
    /* A corner unit reported with c2 > 0 (units come corner part first, so one is at hand). */
    int corner = -1;
    for (int i = 0; i < nm; i++)
      if (strstr(ma[i].unit, ":c:")) corner = i;
    if (corner >= 0) {
      nq_counts_t kc;
      solve(ma[corner].unit, &kc);
      ck_assert_int_eq(fxh_send_msg(&m, result_msg(ma[corner].id, ma[corner].unit, 1, 0,
                                               (json_int_t)kc.c8, (json_int_t)kc.nodes + 1)), 0);
      fxh_expect_error(&m, "bad_result", 0, "corner unit with c2 = 1");
      ck_assert_int_eq(fxh_send_msg(&m, result_msg(ma[corner].id, ma[corner].unit, 0, 1,
                                               (json_int_t)kc.c8, (json_int_t)kc.nodes + 1)), 0);
      fxh_expect_error(&m, "bad_result", 0, "corner unit with c4 = 1");
      g_bad_inputs += 2;
    }
    /* After all that the true result is accepted, once; the repeat is a duplicate. */
    for (int i = 0; i < nm; i++) {
      ck_assert_int_eq(fxh_send_msg(&m, true_result(&ma[i])), 0);
      expect_ack(&m, ma[i].id, "accepted", "mallory's true result");
    }
    ck_assert_int_eq(fxh_send_msg(&m, true_result(&ma[0])), 0);
    expect_ack(&m, ma[0].id, "duplicate", "duplicate result");
    ck_assert_int_eq(fxh_send_msg(&m, true_result(&ma[0])), 0);
    expect_ack(&m, ma[0].id, "duplicate", "duplicate result, third time");
    g_bad_inputs += 2;
    /* The honest client's result was not disturbed by the forgery. */
    ck_assert_int_eq(fxh_send_msg(&h, true_result(&ha[0])), 0);
    expect_ack(&h, ha[0].id, "accepted", "honest result after a forgery");
    /* Mallory's session is still usable. */
    fxh_asg_t more[1];
    (void)fxh_get_work(&m, 1, more, 1);
    fxh_tls_close(&m);
    fxh_tls_close(&h);
    honest_round("forged and impossible results");
  }


  /* The slowloris connections: still served others; now they must be closed by the server's
   * handshake timeout (10 s; allow 25 s for slow sanitizer builds). */
  double worst = 0;
  for (int i = 0; i < HOLD_TCP + HOLD_PARTIAL; i++) {
    int fd = i < HOLD_TCP ? held_tcp[i] : held_partial[i - HOLD_TCP];
    int closed = 0;
    for (;;) {
      double left = t_hold + 25.0 - fxh_now_s();
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
    if (fxh_now_s() - t_hold > worst) worst = fxh_now_s() - t_hold;
    close(fd);
  }
  for (int i = 0; i < HOLD_NOHELLO; i++) {
    double left = t_hold + 25.0 - fxh_now_s();
    fxh_expect_closed(&held_tls[i], left > 0 ? (int)(left * 1000) + 1 : 1, "TLS connection without hello");
    if (fxh_now_s() - t_hold > worst) worst = fxh_now_s() - t_hold;
    fxh_tls_close(&held_tls[i]);
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
  /* The failures are in the log as one summary a second (--log-summary 1), not one line each
   * and not silence: wait for the last one, then they must add up. */
  int sum_lines = 0;
  long logged = 0;
  for (double until = fxh_now_s() + 10; fxh_now_s() < until; fxh_sleep_ms(200))
    if ((logged = fxh_log_summaries("failed login(s), from", &sum_lines)) >= FLOOD_MAX) break;
  ck_assert_msg(logged >= FLOOD_MAX, "only %ld failed logins in the log's summaries", logged);
  ck_assert_msg(sum_lines <= (int)(fxh_now_s() - t_start) + 2,
                "%d summary lines for %ld failed logins", sum_lines, logged);

  long rss1 = fxh_srv_rss_kib();
  int san = fxh_srv_is_sanitized();
  long limit = san ? 1024 * 1024 : 64 * 1024; /* ASan: quarantine + shadow; sanity only */
  printf("hostile: bad inputs tried %d (each answered and closed or refused; server alive)\n",
         g_bad_inputs);
  printf("hostile: slowloris connections held %d, all closed by the server within %.1f s\n", held,
         worst);
  printf("hostile: wrong-token hellos %d in %.1f s (%.0f/s), each refused with auth\n", flood,
         flood_s, flood / flood_s);
  printf("hostile: failed logins in the log: %ld in %d summary lines\n", logged, sum_lines);
  printf("hostile: honest results accepted %d (one after every attack, one every 0.5 s during the flood, up to 40)\n", g_honest_ok);
  printf("hostile: server VmRSS %ld KiB at start, %ld KiB after (limit %ld KiB%s); run %.1f s\n",
         rss0, rss1, limit, san ? ", sanitizer build" : "", fxh_now_s() - t_start);
  fflush(stdout);
  ck_assert_msg(rss1 > 0 && rss1 < limit, "server VmRSS %ld KiB over %ld KiB", rss1, limit);
  ck_assert_msg(fxh_srv_alive(), "server died");

  nq_tls_ctx_free(fxh.tls);
  fxh.tls = NULL;
  int st = fxh_srv_stop();
  if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || fxh_log_has_sanitizer_report())
    fxh_show_server_log();
  ck_assert_msg(st != -1, "nq-server did not stop within 10 s of SIGTERM");
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "nq-server exit status %d on SIGTERM", st);
  ck_assert_msg(!fxh_log_has_sanitizer_report(), "sanitizer report in the server log");
  fxh_cleanup();
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
