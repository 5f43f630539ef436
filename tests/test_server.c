/* Tests of nq-server as a black box: each test starts the real binary (from NQ_BIN_DIR) with its
 * own data directory and port, talks to it over TLS with the nq_conn layer on a private loop, and
 * stops it. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "nq/conn.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/tls.h"
#include "nq/unit.h"
#include "store_api.h"
#include "store_kernels.h"
#include "testutil.h"

/* ---- the server process ---- */

typedef struct tsrv_s {
  pid_t pid;
  char *tmp;
  char data[600], log[600], ca[700];
  int port;
  char enrol[128], admin[128];
} tsrv_t;

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Whether the file at path, from byte `from` on, has a line containing needle. */
static int file_has_from(const char *path, long from, const char *needle) {
  FILE *f = fopen(path, "r");
  char line[1024];
  int found = 0;
  if (f && fseek(f, from, SEEK_SET) == 0)
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, needle) != NULL;
  if (f) fclose(f);
  return found;
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

static void read_secret(const char *dir, const char *name, char *buf, size_t len) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  ck_assert(fgets(buf, (int)len, f) != NULL);
  fclose(f);
  buf[strcspn(buf, "\r\n")] = '\0';
}

/* Start nq-server --n N with extra arguments (NULL-terminated) and wait for its port. */
static void tsrv_spawn(tsrv_t *t, int n, const char *const *extra) {
  char bin[600], ns[16], listen[64];
  snprintf(bin, sizeof bin, "%s/nq-server", tu_bin_dir());
  snprintf(ns, sizeof ns, "%d", n);
  snprintf(listen, sizeof listen, "127.0.0.1:%d", t->port);
  const char *argv[32] = {bin, "--n", ns, "--listen", listen, "--data", t->data};
  int argc = 7;
  for (int i = 0; extra && extra[i] && argc < 30; i++) argv[argc++] = extra[i];
  argv[argc] = NULL;
  long from = file_size(t->log); /* a restart appends to the log */
  fflush(NULL);
  t->pid = fork();
  ck_assert(t->pid >= 0);
  if (t->pid == 0) {
    FILE *f = freopen(t->log, "a", stdout);
    (void)f;
    dup2(fileno(stdout), 2);
    execv(bin, (char *const *)argv);
    _exit(127);
  }
  /* Ready when its banner is out: it prints (and flushes) the banner, ending with the admin
   * token's path, after its socket listens. Not a probe connection: that would count against
   * --max-conns until the server had seen it close, and under load a test's first connection
   * could still be told busy. */
  for (int i = 0; i < 2000; i++) {
    if (file_has_from(t->log, from, "admin token: ")) break;
    int st;
    ck_assert_msg(waitpid(t->pid, &st, WNOHANG) == 0, "nq-server exited at start (see %s)",
                  t->log);
    sleep_ms(10);
  }
  ck_assert_msg(file_has_from(t->log, from, "admin token: "),
                "nq-server did not start listening on %d (see %s)", t->port, t->log);
  read_secret(t->data, "enrol.key", t->enrol, sizeof t->enrol);
  read_secret(t->data, "admin.token", t->admin, sizeof t->admin);
}

static void tsrv_start(tsrv_t *t, int n, const char *const *extra) {
  memset(t, 0, sizeof *t);
  t->tmp = tu_tmpdir("server");
  ck_assert(t->tmp != NULL);
  snprintf(t->data, sizeof t->data, "%s/data", t->tmp);
  snprintf(t->log, sizeof t->log, "%s/server.log", t->tmp);
  snprintf(t->ca, sizeof t->ca, "%s/ca.pem", t->data);
  t->port = tu_free_port();
  tsrv_spawn(t, n, extra);
}

/* Wait up to ms for the server to exit; returns its wait status, or -1 on timeout. */
static int tsrv_wait(tsrv_t *t, int ms) {
  for (int i = 0; i <= ms / 10; i++) {
    int st;
    pid_t p = waitpid(t->pid, &st, WNOHANG);
    if (p == t->pid) {
      t->pid = 0;
      return st;
    }
    sleep_ms(10);
  }
  return -1;
}

static void tsrv_dump_log(const tsrv_t *t) {
  FILE *f = fopen(t->log, "r");
  char line[1024];
  while (f && fgets(line, sizeof line, f)) fprintf(stderr, "  | %s", line);
  if (f) fclose(f);
}

static int tsrv_log_has(const tsrv_t *t, const char *needle) {
  return file_has_from(t->log, 0, needle);
}

/* Stop the server (if still running) with SIGTERM and check it exits 0 -- under ASan that also
 * means no leak and no memory error -- then remove the directory. */
static void tsrv_stop(tsrv_t *t) {
  if (t->pid > 0) {
    kill(t->pid, SIGTERM);
    int st = tsrv_wait(t, 10000);
    if (st == -1) {
      kill(t->pid, SIGKILL);
      waitpid(t->pid, NULL, 0);
      t->pid = 0;
    }
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      tsrv_dump_log(t);
      ck_abort_msg("nq-server did not exit 0 on SIGTERM (status %d)", st);
    }
  }
  tu_rmtree(t->tmp);
  free(t->tmp);
  t->tmp = NULL;
}

/* ---- a test client on its own loop ---- */

typedef struct tc_s {
  uv_loop_t loop;
  uv_timer_t timer;
  int timed_out;
  nq_tls_ctx_t *ctx;
  nq_conn_t *c;
  json_t *frames; /* received, not yet taken */
  int open, closed, error;
} tc_t;

static void tc_on_open(nq_conn_t *c) {
  ((tc_t *)nq_conn_data(c))->open = 1;
}
static void tc_on_frame(nq_conn_t *c, json_t *msg) {
  json_array_append(((tc_t *)nq_conn_data(c))->frames, msg);
}
static void tc_on_error(nq_conn_t *c, int status) {
  ((tc_t *)nq_conn_data(c))->error = status;
}
static void tc_on_close(nq_conn_t *c) {
  tc_t *t = nq_conn_data(c);
  t->closed = 1;
  t->c = NULL;
}
static void tc_on_timer(uv_timer_t *h) {
  ((tc_t *)h->data)->timed_out = 1;
}

static void tc_init(tc_t *t) {
  memset(t, 0, sizeof *t);
  ck_assert_int_eq(uv_loop_init(&t->loop), 0);
  uv_timer_init(&t->loop, &t->timer);
  t->timer.data = t;
  t->frames = json_array();
}

enum { UNTIL_OPEN, UNTIL_FRAME, UNTIL_CLOSED };

static int tc_done(const tc_t *t, int what) {
  switch (what) {
  case UNTIL_OPEN: return t->open || t->closed;
  case UNTIL_FRAME: return json_array_size(t->frames) > 0 || t->closed;
  default: return t->closed;
  }
}

/* Run the loop until the condition holds or ms pass; returns whether it holds. */
static int tc_run(tc_t *t, int what, int ms) {
  t->timed_out = 0;
  uv_timer_start(&t->timer, tc_on_timer, (uint64_t)ms, 0);
  while (!tc_done(t, what) && !t->timed_out) uv_run(&t->loop, UV_RUN_ONCE);
  uv_timer_stop(&t->timer);
  return tc_done(t, what);
}

static void tc_connect(tc_t *t, const tsrv_t *s) {
  tc_init(t);
  ck_assert_int_eq(nq_tls_ctx_client_new(s->ca, &t->ctx), 0);
  nq_conn_opts_t o;
  memset(&o, 0, sizeof o);
  o.on_open = tc_on_open;
  o.on_frame = tc_on_frame;
  o.on_error = tc_on_error;
  o.on_close = tc_on_close;
  o.data = t;
  o.tag = "test";
  ck_assert_int_eq(nq_conn_connect(&t->loop, "127.0.0.1", s->port, t->ctx, "127.0.0.1", &o, &t->c),
                   0);
  ck_assert(tc_run(t, UNTIL_OPEN, 5000));
  ck_assert_msg(t->open, "TLS connection failed: %d", t->error);
}

/* Close (if open), wait for the close, and check that the loop ends clean. */
static void tc_free(tc_t *t) {
  if (t->c) nq_conn_close(t->c, NULL, NULL);
  if (!t->closed) ck_assert(tc_run(t, UNTIL_CLOSED, 5000));
  uv_close((uv_handle_t *)&t->timer, NULL);
  uv_run(&t->loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(&t->loop), 0);
  nq_tls_ctx_free(t->ctx);
  json_decref(t->frames);
}

static void tc_send(tc_t *t, json_t *msg) {
  ck_assert(msg != NULL);
  ck_assert(t->c != NULL);
  ck_assert_int_eq(nq_conn_send_new(t->c, msg), 0);
}

/* The next frame (new reference), or NULL if the connection closed without one. */
static json_t *tc_recv(tc_t *t) {
  tc_run(t, UNTIL_FRAME, 5000);
  if (json_array_size(t->frames) == 0) return NULL;
  json_t *m = json_incref(json_array_get(t->frames, 0));
  json_array_remove(t->frames, 0);
  return m;
}

static json_t *tc_call(tc_t *t, json_t *msg) {
  tc_send(t, msg);
  json_t *r = tc_recv(t);
  ck_assert_msg(r != NULL, "no reply (connection closed)");
  return r;
}

static const char *jstr(const json_t *m, const char *k) {
  const char *s = json_string_value(json_object_get(m, k));
  return s ? s : "";
}

static json_int_t jint(const json_t *m, const char *k) {
  return json_integer_value(json_object_get(m, k));
}

/* Expect a fatal error frame with `code`, then the close. */
/* Expects a fatal error `code`, then the close; returns its retry_after (0 when absent). */
static json_int_t expect_fatal(tc_t *t, const char *code) {
  json_t *e = tc_recv(t);
  ck_assert_msg(e != NULL, "expected error %s, got a bare close", code);
  ck_assert_str_eq(jstr(e, "type"), "error");
  ck_assert_str_eq(jstr(e, "code"), code);
  ck_assert(json_is_true(json_object_get(e, "fatal")));
  json_int_t after = json_integer_value(json_object_get(e, "retry_after"));
  json_decref(e);
  ck_assert_msg(tc_run(t, UNTIL_CLOSED, 5000), "server did not close after fatal %s", code);
  return after;
}

static void expect_type(const json_t *m, const char *type) {
  ck_assert_msg(!strcmp(jstr(m, "type"), type), "expected %s, got %s (%s)", type,
                jstr(m, "type"), jstr(m, "code"));
}

/* hello with the enrolment key; returns the new token (malloc'd) and the welcome's name. */
static char *tc_enrol(tc_t *t, const tsrv_t *s, const char *name, char *got_name, size_t len) {
  json_t *w = tc_call(t, json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:i, s:s}", "type", "hello",
                                   "v", 1, "role", "client", "enrol", s->enrol, "name", name,
                                   "solver", NQ_SOLVER_VERSION, "threads", 2, "software",
                                   "test_server"));
  expect_type(w, "welcome");
  ck_assert_int_eq(jint(w, "v"), 1);
  const char *tok = jstr(w, "token");
  ck_assert_uint_eq(strlen(tok), 64);
  char *token = strdup(tok);
  if (got_name) snprintf(got_name, len, "%s", jstr(w, "client"));
  json_t *job = json_object_get(w, "job");
  ck_assert(jint(job, "n") >= 4);
  ck_assert(json_is_string(json_object_get(job, "state")));
  ck_assert(jint(w, "max_outstanding") >= 1);
  ck_assert(jint(w, "progress_interval") >= 1);
  json_decref(w);
  return token;
}

static void tc_hello_token(tc_t *t, const char *token) {
  json_t *w = tc_call(t, json_pack("{s:s, s:i, s:s, s:s}", "type", "hello", "v", 1, "role",
                                   "client", "token", token));
  expect_type(w, "welcome");
  ck_assert_ptr_null(json_object_get(w, "token"));
  json_decref(w);
}

static json_t *get_work(tc_t *t, int want) {
  return tc_call(t, json_pack("{s:s, s:i}", "type", "get_work", "want", want));
}

/* Solve the unit of an assignment and build the result message. */
static json_t *result_for(const json_t *asg) {
  const char *text = jstr(asg, "unit");
  nq_unit_t u;
  ck_assert_int_eq(nq_unit_parse(text, &u, NULL, 0), 0);
  nq_counts_t c;
  ck_assert_int_eq(nq_ref_solve_unit(&u, &c), 0);
  return json_pack("{s:s, s:I, s:s, s:I, s:I, s:I, s:I, s:f, s:s}", "type", "result", "id",
                   jint(asg, "id"), "unit", text, "c2", (json_int_t)c.c2, "c4", (json_int_t)c.c4,
                   "c8", (json_int_t)c.c8, "nodes", (json_int_t)c.nodes, "seconds", 0.001,
                   "solver", NQ_SOLVER_VERSION);
}

/* ---- tests ---- */

START_TEST(test_enrol_and_work) {
  tsrv_t s;
  tsrv_start(&s, 8, NULL);
  tc_t t;
  tc_connect(&t, &s);
  char name[80];
  char *token = tc_enrol(&t, &s, "alice", name, sizeof name);
  ck_assert_str_eq(name, "alice");

  json_t *w = get_work(&t, 4);
  expect_type(w, "work");
  json_t *a = json_object_get(w, "assignments");
  ck_assert_uint_eq(json_array_size(a), 4);
  int64_t ids[4];
  for (size_t i = 0; i < 4; i++) {
    json_t *x = json_array_get(a, i);
    nq_unit_t u;
    char err[128];
    ck_assert_msg(nq_unit_parse(jstr(x, "unit"), &u, err, sizeof err) == 0, "unit %s: %s",
                  jstr(x, "unit"), err);
    ck_assert_int_eq(u.n, 8);
    ck_assert(jint(x, "deadline") > (json_int_t)time(NULL));
    ids[i] = jint(x, "id");
  }
  json_decref(w);
  /* Asking again while holding them: the same assignments first. */
  w = get_work(&t, 4);
  expect_type(w, "work");
  a = json_object_get(w, "assignments");
  ck_assert_uint_eq(json_array_size(a), 4);
  for (size_t i = 0; i < 4; i++) ck_assert_int_eq(jint(json_array_get(a, i), "id"), ids[i]);
  json_decref(w);
  tc_free(&t);

  /* Reconnect with the token; a second enrolment under the same name gets a suffix. */
  tc_connect(&t, &s);
  tc_hello_token(&t, token);
  tc_free(&t);
  tc_connect(&t, &s);
  char *token2 = tc_enrol(&t, &s, "alice", name, sizeof name);
  ck_assert_str_eq(name, "alice-2");
  ck_assert_str_ne(token, token2);
  tc_free(&t);

  /* An admin can ask for the status. */
  tc_connect(&t, &s);
  w = tc_call(&t, json_pack("{s:s, s:i, s:s, s:s}", "type", "hello", "v", 1, "role", "admin",
                            "token", s.admin));
  expect_type(w, "welcome");
  json_decref(w);
  w = tc_call(&t, json_pack("{s:s, s:s}", "type", "admin", "cmd", "status"));
  expect_type(w, "admin_reply");
  ck_assert(json_is_object(json_object_get(w, "data")));
  json_decref(w);
  /* unit_retry refusals are non-fatal: unknown unit, and a unit that is not disputed. */
  w = tc_call(&t, json_pack("{s:s, s:s, s:s}", "type", "admin", "cmd", "unit_retry", "unit",
                            "8:c:9:9"));
  expect_type(w, "error");
  ck_assert_str_eq(json_string_value(json_object_get(w, "code")), "not_found");
  json_decref(w);
  w = tc_call(&t, json_pack("{s:s, s:s, s:I}", "type", "admin", "cmd", "unit_retry", "unit",
                            (json_int_t)1));
  expect_type(w, "error");
  ck_assert_str_eq(json_string_value(json_object_get(w, "code")), "bad_state");
  ck_assert(json_is_false(json_object_get(w, "fatal")));
  json_decref(w);
  w = tc_call(&t, json_pack("{s:s, s:s}", "type", "admin", "cmd", "jobs"));
  expect_type(w, "admin_reply");
  json_decref(w);
  tc_free(&t);
  /* nq-admin in remote mode: the same refusal, exit 1 with the code. */
  char cmd[2048], out[4096];
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' unit retry 1 --server 127.0.0.1:%d --data '%s' 2>&1",
           tu_bin_dir(), s.port, s.data);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit %d: %s", st, out);
  ck_assert_msg(strstr(out, "not disputed") && strstr(out, "bad_state"), "%s", out);
  free(token);
  free(token2);
  tsrv_stop(&s);
}
END_TEST

START_TEST(test_hello_errors) {
  tsrv_t s;
  tsrv_start(&s, 8, NULL);
  tc_t t;
  /* Unknown token. */
  tc_connect(&t, &s);
  tc_send(&t, json_pack("{s:s, s:i, s:s, s:s}", "type", "hello", "v", 1, "role", "client",
                        "token", "0123456789abcdef"));
  expect_fatal(&t, "auth");
  tc_free(&t);
  /* Wrong enrolment key, wrong admin token. */
  tc_connect(&t, &s);
  tc_send(&t, json_pack("{s:s, s:i, s:s, s:s, s:s}", "type", "hello", "v", 1, "role", "client",
                        "enrol", "nope", "name", "bob"));
  expect_fatal(&t, "auth");
  tc_free(&t);
  tc_connect(&t, &s);
  tc_send(&t, json_pack("{s:s, s:i, s:s, s:s}", "type", "hello", "v", 1, "role", "admin",
                        "token", s.enrol));
  expect_fatal(&t, "auth");
  tc_free(&t);
  /* Wrong version. */
  tc_connect(&t, &s);
  tc_send(&t, json_pack("{s:s, s:i, s:s, s:s}", "type", "hello", "v", 2, "role", "client",
                        "token", "x"));
  expect_fatal(&t, "version");
  tc_free(&t);
  /* A client whose whole range is too old: upgrade_required naming the minimum, then close. */
  tc_connect(&t, &s);
  tc_send(&t, json_pack("{s:s, s:i, s:i, s:i, s:s, s:s}", "type", "hello", "v", 0, "v_min", 0,
                        "v_max", 0, "role", "client", "token", "x"));
  json_t *e = tc_recv(&t);
  ck_assert_ptr_nonnull(e);
  ck_assert_str_eq(jstr(e, "code"), "upgrade_required");
  ck_assert(json_is_true(json_object_get(e, "fatal")));
  ck_assert_int_eq(jint(e, "min_version"), NQ_PROTO_VERSION_MIN);
  ck_assert_msg(strstr(jstr(e, "message"), "or newer"), "%s", jstr(e, "message"));
  json_decref(e);
  ck_assert_msg(tc_run(&t, UNTIL_CLOSED, 5000), "server did not close after upgrade_required");
  tc_free(&t);
  /* A range that reaches this server's: welcomed in the highest common version, and the
   * software and protocol recorded for nq-admin clients. */
  tc_connect(&t, &s);
  json_t *w = tc_call(&t, json_pack("{s:s, s:i, s:i, s:i, s:s, s:s, s:s, s:s}", "type",
                                    "hello", "v", 1, "v_min", 0, "v_max", 1, "role", "client",
                                    "enrol", s.enrol, "name", "vera", "software",
                                    "nq-client 9.9.9"));
  expect_type(w, "welcome");
  ck_assert_int_eq(jint(w, "v"), NQ_PROTO_VERSION_MAX);
  json_decref(w);
  tc_free(&t);
  tc_connect(&t, &s);
  w = tc_call(&t, json_pack("{s:s, s:i, s:s, s:s}", "type", "hello", "v", 1, "role", "admin",
                            "token", s.admin));
  expect_type(w, "welcome");
  json_decref(w);
  w = tc_call(&t, json_pack("{s:s, s:s}", "type", "admin", "cmd", "clients"));
  expect_type(w, "admin_reply");
  const json_t *list = json_object_get(json_object_get(w, "data"), "clients");
  ck_assert_uint_eq(json_array_size(list), 1);
  ck_assert_str_eq(jstr(json_array_get(list, 0), "software"), "nq-client 9.9.9");
  ck_assert_int_eq(jint(json_array_get(list, 0), "protocol"), NQ_PROTO_VERSION_MAX);
  json_decref(w);
  tc_free(&t);
  /* Ill-typed fields. */
  tc_connect(&t, &s);
  tc_send(&t, json_pack("{s:s, s:s, s:s, s:s}", "type", "hello", "v", "1", "role", "client",
                        "token", "x"));
  expect_fatal(&t, "bad_message");
  tc_free(&t);
  tc_connect(&t, &s);
  tc_send(&t, json_pack("{s:s, s:i, s:s, s:s, s:i}", "type", "hello", "v", 1, "role", "client",
                        "enrol", s.enrol, "name", 7));
  expect_fatal(&t, "bad_message");
  tc_free(&t);
  tc_connect(&t, &s);
  tc_send(&t, json_pack("{s:s, s:i, s:s, s:s, s:s}", "type", "hello", "v", 1, "role", "client",
                        "enrol", s.enrol, "name", "bad name!"));
  expect_fatal(&t, "bad_message");
  tc_free(&t);
  tsrv_stop(&s);
}
END_TEST

START_TEST(test_sequence_errors) {
  tsrv_t s;
  tsrv_start(&s, 8, NULL);
  tc_t t;
  /* A frame before hello. */
  tc_connect(&t, &s);
  tc_send(&t, json_pack("{s:s, s:i}", "type", "get_work", "want", 1));
  expect_fatal(&t, "not_hello");
  tc_free(&t);
  /* An unknown type, and a message without a type. */
  tc_connect(&t, &s);
  char *token = tc_enrol(&t, &s, "carol", NULL, 0);
  tc_send(&t, json_pack("{s:s}", "type", "frobnicate"));
  expect_fatal(&t, "unknown_type");
  tc_free(&t);
  tc_connect(&t, &s);
  tc_send(&t, json_pack("{s:i}", "want", 1));
  expect_fatal(&t, "unknown_type");
  tc_free(&t);
  /* A second hello; an ill-typed get_work. */
  tc_connect(&t, &s);
  tc_hello_token(&t, token);
  tc_send(&t, json_pack("{s:s, s:i, s:s, s:s}", "type", "hello", "v", 1, "role", "client",
                        "token", token));
  expect_fatal(&t, "not_hello");
  tc_free(&t);
  tc_connect(&t, &s);
  tc_hello_token(&t, token);
  tc_send(&t, json_pack("{s:s, s:s}", "type", "get_work", "want", "4"));
  expect_fatal(&t, "bad_message");
  tc_free(&t);
  /* A message of the other role. */
  tc_connect(&t, &s);
  json_t *w = tc_call(&t, json_pack("{s:s, s:i, s:s, s:s}", "type", "hello", "v", 1, "role",
                                    "admin", "token", s.admin));
  expect_type(w, "welcome");
  json_decref(w);
  tc_send(&t, json_pack("{s:s, s:i}", "type", "get_work", "want", 1));
  expect_fatal(&t, "unknown_type");
  tc_free(&t);
  free(token);
  tsrv_stop(&s);
}
END_TEST

/* kill -9 right after acks, restart on the same data: nothing acknowledged is lost, the client
 * gets its unreported assignments back and its re-sent results are duplicates. */
START_TEST(test_kill9) {
  tsrv_t s;
  tsrv_start(&s, 8, NULL);
  tc_t t;
  tc_connect(&t, &s);
  char *token = tc_enrol(&t, &s, "olga", NULL, 0);
  json_t *w = get_work(&t, 4);
  expect_type(w, "work");
  json_t *a = json_object_get(w, "assignments");
  ck_assert_uint_eq(json_array_size(a), 4);
  for (size_t i = 0; i < 2; i++) {
    json_t *r = tc_call(&t, result_for(json_array_get(a, i)));
    expect_type(r, "ack");
    ck_assert_str_eq(jstr(r, "status"), "accepted");
    json_decref(r);
  }
  kill(s.pid, SIGKILL);
  waitpid(s.pid, NULL, 0);
  s.pid = 0;
  ck_assert(tc_run(&t, UNTIL_CLOSED, 5000));
  tc_free(&t);

  tsrv_spawn(&s, 8, NULL);
  tc_connect(&t, &s);
  tc_hello_token(&t, token);
  json_t *w2 = get_work(&t, 2);
  expect_type(w2, "work");
  json_t *a2 = json_object_get(w2, "assignments");
  ck_assert_uint_eq(json_array_size(a2), 2);
  for (size_t i = 0; i < 2; i++)
    ck_assert_int_eq(jint(json_array_get(a2, i), "id"), jint(json_array_get(a, i + 2), "id"));
  json_decref(w2);
  for (size_t i = 0; i < 4; i++) {
    json_t *r = tc_call(&t, result_for(json_array_get(a, i)));
    expect_type(r, "ack");
    ck_assert_str_eq(jstr(r, "status"), i < 2 ? "duplicate" : "accepted");
    json_decref(r);
  }
  json_decref(w);
  tc_free(&t);
  free(token);
  tsrv_stop(&s);
}
END_TEST

/* An admin ban ends the client's open connection and refuses its token afterwards. */
START_TEST(test_ban) {
  tsrv_t s;
  tsrv_start(&s, 8, NULL);
  tc_t tc, ta;
  tc_connect(&tc, &s);
  char *token = tc_enrol(&tc, &s, "mallory", NULL, 0);
  json_t *w = get_work(&tc, 2);
  expect_type(w, "work");
  json_decref(w);
  tc_connect(&ta, &s);
  w = tc_call(&ta, json_pack("{s:s, s:i, s:s, s:s}", "type", "hello", "v", 1, "role", "admin",
                             "token", s.admin));
  expect_type(w, "welcome");
  json_decref(w);
  w = tc_call(&ta, json_pack("{s:s, s:s, s:s}", "type", "admin", "cmd", "client_ban", "name",
                             "mallory"));
  expect_type(w, "admin_reply");
  json_decref(w);
  /* Admin errors are not fatal. */
  w = tc_call(&ta, json_pack("{s:s, s:s, s:s}", "type", "admin", "cmd", "client_ban", "name",
                             "nobody"));
  expect_type(w, "error");
  ck_assert(json_is_false(json_object_get(w, "fatal")));
  json_decref(w);
  tc_free(&ta);
  expect_fatal(&tc, "banned");
  tc_free(&tc);
  tc_connect(&tc, &s);
  tc_send(&tc, json_pack("{s:s, s:i, s:s, s:s}", "type", "hello", "v", 1, "role", "client",
                         "token", token));
  expect_fatal(&tc, "banned");
  tc_free(&tc);
  free(token);
  tsrv_stop(&s);
}
END_TEST

/* TLS up but no hello: closed with `timeout` after 10 s. */
START_TEST(test_hello_timeout) {
  tsrv_t s;
  tsrv_start(&s, 8, NULL);
  tc_t t;
  tc_connect(&t, &s);
  double t0 = nq_now_mono();
  json_t *e = NULL;
  while (!e && !t.closed && nq_now_mono() - t0 < 15) e = tc_recv(&t);
  ck_assert_msg(e != NULL, "no error frame before the close");
  ck_assert_str_eq(jstr(e, "code"), "timeout");
  json_decref(e);
  double dt = nq_now_mono() - t0;
  /* 10 s from the accept, checked once a second; t0 is after the TLS handshake, which a busy
   * machine (or the sanitizer build) may take a while over */
  ck_assert_msg(dt >= 8.0 && dt <= 14.0, "hello timeout after %.1f s", dt);
  ck_assert(tc_run(&t, UNTIL_CLOSED, 5000));
  tc_free(&t);
  tsrv_stop(&s);
}
END_TEST

START_TEST(test_bad_bytes) {
  tsrv_t s;
  tsrv_start(&s, 8, NULL);
  tc_t t;
  /* Malformed JSON in a well-formed frame: bad_json, fatal (docs/protocol.md). */
  tc_connect(&t, &s);
  static const char junk[] = "\x00\x00\x00\x09{not json";
  ck_assert_int_eq(nq_conn_send_raw(t.c, junk, sizeof junk - 1), 0);
  json_t *e = tc_recv(&t);
  ck_assert(e != NULL);
  ck_assert_str_eq(jstr(e, "type"), "error");
  ck_assert_str_eq(jstr(e, "code"), "bad_json");
  ck_assert(json_is_true(json_object_get(e, "fatal")));
  json_decref(e);
  ck_assert(tc_run(&t, UNTIL_CLOSED, 5000));
  tc_free(&t);
  /* A length header of 65537. */
  tc_connect(&t, &s);
  static const unsigned char big[] = {0x00, 0x01, 0x00, 0x01, '{'};
  ck_assert_int_eq(nq_conn_send_raw(t.c, big, sizeof big), 0);
  expect_fatal(&t, "frame_too_big");
  tc_free(&t);

  /* Plaintext on the TLS port: the server drops it... */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)s.port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ck_assert(write(fd, http, sizeof http - 1) == (ssize_t)(sizeof http - 1));
  int closed = 0;
  for (int i = 0; i < 50 && !closed; i++) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) closed = 1;
  }
  close(fd);
  ck_assert_msg(closed, "server kept a plaintext connection open");
  /* ... and an honest client still gets work. */
  tc_connect(&t, &s);
  char *token = tc_enrol(&t, &s, "dave", NULL, 0);
  json_t *w = get_work(&t, 2);
  expect_type(w, "work");
  ck_assert_uint_eq(json_array_size(json_object_get(w, "assignments")), 2);
  json_decref(w);
  tc_free(&t);
  free(token);
  tsrv_stop(&s);
}
END_TEST

START_TEST(test_results) {
  tsrv_t s;
  tsrv_start(&s, 8, NULL);
  tc_t ta, tb;
  tc_connect(&ta, &s);
  char *tok_a = tc_enrol(&ta, &s, "erin", NULL, 0);
  tc_connect(&tb, &s);
  char *tok_b = tc_enrol(&tb, &s, "frank", NULL, 0);

  json_t *w = get_work(&ta, 2);
  expect_type(w, "work");
  json_t *asg = json_array_get(json_object_get(w, "assignments"), 0);
  json_t *asg2 = json_array_get(json_object_get(w, "assignments"), 1);
  json_int_t id = jint(asg, "id");

  /* Another client's assignment: not_yours, not fatal. */
  json_t *r = tc_call(&tb, result_for(asg));
  expect_type(r, "error");
  ck_assert_str_eq(jstr(r, "code"), "not_yours");
  ck_assert_int_eq(jint(r, "id"), id);
  ck_assert(json_is_false(json_object_get(r, "fatal")));
  json_decref(r);
  json_t *wb = get_work(&tb, 1);
  expect_type(wb, "work");
  json_decref(wb);

  /* Progress extends the lease. */
  r = tc_call(&ta, json_pack("{s:s, s:I, s:i}", "type", "progress", "id", id, "nodes", 10));
  expect_type(r, "lease");
  ck_assert_int_eq(jint(r, "id"), id);
  json_decref(r);

  /* The owner's result is accepted, then a duplicate. */
  r = tc_call(&ta, result_for(asg));
  expect_type(r, "ack");
  ck_assert_int_eq(jint(r, "id"), id);
  ck_assert_str_eq(jstr(r, "status"), "accepted");
  json_decref(r);
  r = tc_call(&ta, result_for(asg));
  expect_type(r, "ack");
  ck_assert_str_eq(jstr(r, "status"), "duplicate");
  json_decref(r);

  /* Unknown assignment, impossible numbers, wrong unit text: non-fatal refusals. */
  r = tc_call(&ta, json_pack("{s:s, s:i, s:s, s:i, s:i, s:i, s:i, s:f, s:s}", "type", "result",
                             "id", 999999, "unit", jstr(asg, "unit"), "c2", 0, "c4", 0, "c8", 0,
                             "nodes", 1, "seconds", 0.0, "solver", NQ_SOLVER_VERSION));
  expect_type(r, "error");
  ck_assert_str_eq(jstr(r, "code"), "unknown_assignment");
  json_decref(r);
  json_t *bad = result_for(asg2);
  json_object_set_new(bad, "c8", json_integer(-1));
  r = tc_call(&ta, bad);
  expect_type(r, "error");
  ck_assert_str_eq(jstr(r, "code"), "bad_result");
  ck_assert_int_eq(jint(r, "id"), jint(asg2, "id"));
  json_decref(r);
  bad = result_for(asg2);
  json_object_set_new(bad, "unit", json_string(jstr(asg, "unit")));
  r = tc_call(&ta, bad);
  expect_type(r, "error");
  ck_assert_str_eq(jstr(r, "code"), "bad_result");
  json_decref(r);
  r = tc_call(&ta, json_pack("{s:s, s:I}", "type", "progress", "id", id));
  expect_type(r, "error");
  ck_assert_str_eq(jstr(r, "code"), "unknown_assignment");
  json_decref(r);

  /* Pipelined requests are answered in order (they share one transaction). */
  tc_send(&ta, json_pack("{s:s, s:I}", "type", "progress", "id", jint(asg2, "id")));
  tc_send(&ta, result_for(asg2));
  tc_send(&ta, json_pack("{s:s, s:i}", "type", "get_work", "want", 1));
  tc_send(&ta, result_for(asg2));
  const char *order[4] = {"lease", "ack", "work", "ack"};
  for (int i = 0; i < 4; i++) {
    r = tc_recv(&ta);
    ck_assert(r != NULL);
    expect_type(r, order[i]);
    if (i == 3) ck_assert_str_eq(jstr(r, "status"), "duplicate");
    json_decref(r);
  }
  json_decref(w);
  tc_free(&ta);
  tc_free(&tb);
  free(tok_a);
  free(tok_b);
  tsrv_stop(&s);
}
END_TEST

START_TEST(test_sigterm) {
  tsrv_t s;
  tsrv_start(&s, 8, NULL);
  tc_t t;
  tc_connect(&t, &s);
  char *token = tc_enrol(&t, &s, "gina", NULL, 0);
  json_t *w = get_work(&t, 1);
  expect_type(w, "work");
  json_decref(w);
  ck_assert_int_eq(kill(s.pid, SIGTERM), 0);
  expect_fatal(&t, "shutdown");
  tc_free(&t);
  int st = tsrv_wait(&s, 10000);
  if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) tsrv_dump_log(&s);
  ck_assert_msg(st != -1, "nq-server did not exit after SIGTERM");
  ck_assert(WIFEXITED(st));
  ck_assert_int_eq(WEXITSTATUS(st), 0);

  /* The database reopens and holds what was acknowledged. */
  char db[700], err[200];
  snprintf(db, sizeof db, "%s/nq.db", s.data);
  srv_store_t *store;
  ck_assert_msg(srv_store_open(&store, db, NULL, err, sizeof err) == 0, "%s", err);
  srv_job_t job;
  ck_assert_int_eq(srv_job_find_n(store, 8, &job), 0);
  ck_assert_int_eq(job.state, SRV_JOB_RUNNING);
  srv_client_t cl;
  ck_assert_int_eq(srv_client_find_name(store, "gina", &cl), 0);
  ck_assert_int_eq(cl.outstanding, 1);
  srv_store_close(store);
  free(token);
  tsrv_stop(&s);
}
END_TEST

/* hello's kernel is the client's kind from its login on: the kernel rule then names it the
 * kernels a unit lacks by its own ladder, before any result of its own choice (a client that is
 * only ever named kernels would otherwise stay of unknown kind, run as "what most CPUs run"). */
START_TEST(test_hello_kernel) {
  tsrv_t s;
  const char *extra[] = {"--diverse-kernels", "2", NULL};
  tsrv_start(&s, 8, extra);
  tc_t t;
  tc_connect(&t, &s);
  json_t *w = tc_call(&t, json_pack("{s:s, s:i, s:s, s:s, s:s, s:s}", "type", "hello", "v", 1,
                                    "role", "client", "enrol", s.enrol, "name", "ivan",
                                    "kernel", "avx512"));
  expect_type(w, "welcome");
  json_decref(w);
  tc_free(&t);
  tc_connect(&t, &s);
  char *token = tc_enrol(&t, &s, "jane", NULL, 0); /* says no kernel */
  free(token);
  tc_free(&t);
  ck_assert_int_eq(kill(s.pid, SIGTERM), 0);
  ck_assert_msg(tsrv_wait(&s, 10000) != -1, "nq-server did not exit after SIGTERM");
  char db[700], err[200], backends[256], native[64], refused[64];
  snprintf(db, sizeof db, "%s/nq.db", s.data);
  srv_store_t *store;
  ck_assert_msg(srv_store_open(&store, db, NULL, err, sizeof err) == 0, "%s", err);
  srv_client_t cl;
  ck_assert_int_eq(srv_client_find_name(store, "ivan", &cl), 0);
  ck_assert_int_eq(srv_client_kernels(store, cl.id, backends, sizeof backends, native,
                                      sizeof native, refused, sizeof refused), 0);
  ck_assert_str_eq(native, "avx512");
  ck_assert_int_eq(srv_client_find_name(store, "jane", &cl), 0);
  ck_assert_int_eq(srv_client_kernels(store, cl.id, backends, sizeof backends, native,
                                      sizeof native, refused, sizeof refused), 0);
  ck_assert_str_eq(native, "");
  srv_store_close(store);
  tsrv_stop(&s);
}
END_TEST

/* A whole (small) job through the server: N=6 with quorum 1, then --exit-when-done. */
START_TEST(test_job_done) {
  tsrv_t s;
  const char *extra[] = {"--quorum", "1", "--max-results", "1", "--exit-when-done", NULL};
  tsrv_start(&s, 6, extra);
  tc_t t;
  tc_connect(&t, &s);
  char *token = tc_enrol(&t, &s, "hank", NULL, 0);
  int done = 0, results = 0;
  for (int round = 0; round < 100 && !done; round++) {
    json_t *w = get_work(&t, 8);
    if (!strcmp(jstr(w, "type"), "no_work")) {
      ck_assert_str_eq(jstr(w, "reason"), "done");
      done = 1;
    } else {
      expect_type(w, "work");
      json_t *a = json_object_get(w, "assignments");
      for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *r = tc_call(&t, result_for(json_array_get(a, i)));
        expect_type(r, "ack");
        json_decref(r);
        results++;
      }
    }
    json_decref(w);
  }
  ck_assert(done);
  ck_assert(results > 0);
  /* The last ack was followed by an unsolicited no_work "done" (every client session is told
   * when the job finishes): the first no_work read above was that one, so the answer to the
   * get_work comes next. */
  json_t *again = tc_recv(&t);
  ck_assert_msg(again != NULL, "no answer to the get_work after the job finished");
  expect_type(again, "no_work");
  ck_assert_str_eq(jstr(again, "reason"), "done");
  json_decref(again);
  /* The server says shutdown after its grace period and exits 0. */
  expect_fatal(&t, "shutdown");
  tc_free(&t);
  int st = tsrv_wait(&s, 10000);
  ck_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  if (!tsrv_log_has(&s, "TOTAL=4 UNIQUE=1")) tsrv_dump_log(&s);
  ck_assert(tsrv_log_has(&s, "TOTAL=4 UNIQUE=1"));
  ck_assert(tsrv_log_has(&s, "MATCHES"));
  free(token);
  tsrv_stop(&s);
}
END_TEST

START_TEST(test_limits) {
  tsrv_t s;
  /* 3 s: the second connection must reach the server while the first is still open, even on
   * a busy machine */
  const char *extra[] = {"--max-conns", "1", "--idle-timeout", "3", "--retry-after", "7", NULL};
  tsrv_start(&s, 8, extra);
  tc_t t, t2;
  tc_connect(&t, &s);
  char *token = tc_enrol(&t, &s, "ivy", NULL, 0);
  /* A second connection beyond --max-conns is told busy, and when to come back. */
  tc_connect(&t2, &s);
  ck_assert_int_eq(expect_fatal(&t2, "busy"), 7);
  tc_free(&t2);
  /* Silence past --idle-timeout ends the first one. */
  expect_fatal(&t, "timeout");
  tc_free(&t);
  free(token);
  tsrv_stop(&s);
}
END_TEST

static Suite *server_suite(void) {
  Suite *s = suite_create("server");
  TCase *tc = tcase_create("server");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_enrol_and_work);
  tcase_add_test(tc, test_hello_errors);
  tcase_add_test(tc, test_sequence_errors);
  tcase_add_test(tc, test_bad_bytes);
  tcase_add_test(tc, test_results);
  tcase_add_test(tc, test_sigterm);
  tcase_add_test(tc, test_hello_kernel);
  tcase_add_test(tc, test_job_done);
  tcase_add_test(tc, test_limits);
  tcase_add_test(tc, test_kill9);
  tcase_add_test(tc, test_ban);
  tcase_add_test(tc, test_hello_timeout);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  return tu_run_suite(server_suite());
}
