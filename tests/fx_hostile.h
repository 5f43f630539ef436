/* Fixture: one real nq-server process per test, and blocking TLS connections to it that speak
 * the protocol by hand (tests/test_hostile.c, tests/test_peers.c). Loopback only.
 *
 * The server runs from NQ_BIN_DIR with its own free port and a data directory under fxh.dir
 * (the test makes it with tu_tmpdir); its output goes to fxh.dir/server.log. Connections use the
 * project's client TLS context (fxh.tls, made by the test from fxh.ca), on blocking sockets with
 * timeouts so each step is a plain read/write. Helpers that check use check's ck_assert. */
#ifndef NQ_FX_HOSTILE_H
#define NQ_FX_HOSTILE_H

#include <jansson.h>
#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nq/tls.h"
#include "nq/unit.h"

#define FXH_IO_TIMEOUT_MS 8000

typedef struct fxh_s {
  pid_t pid; /* the server, -1 when none */
  int port;
  char *dir;
  char ca[700];
  char enrol[256];
  nq_tls_ctx_t *tls;
} fxh_t;

extern fxh_t fxh; /* one server per test process (check forks each test) */

typedef struct {
  int fd;
  SSL *ssl;
} fxh_conn_t;

typedef struct {
  int64_t id;
  char unit[NQ_UNIT_TEXT_MAX];
} fxh_asg_t;

double fxh_now_s(void);
void fxh_sleep_ms(int ms);
int fxh_read_file_line(const char *path, char *buf, size_t len);

/* A TCP connection to the server (from 127.0.0.1, or bound to source address src). -1 on error. */
int fxh_tcp_connect(void);
int fxh_tcp_connect_from(const char *src);

/* Start nq-server --n n --depth depth --listen 127.0.0.1:PORT --data DIR/data plus `extra`
 * (NULL-terminated); wait until it accepts. 0, or -1 (try again: the port may have been taken). */
int fxh_srv_try_start(int n, int depth, const char *const *extra);
int fxh_srv_alive(void);
/* SIGTERM the server; returns its wait status (-1 if it had to be killed). */
int fxh_srv_stop(void);
/* For atexit: a failed check exits the forked test process, so stop the server (SIGKILL), free the
 * TLS context and remove the directory then too (the server also has PR_SET_PDEATHSIG). */
void fxh_cleanup(void);
int fxh_log_has_sanitizer_report(void);
void fxh_show_server_log(void);
long fxh_srv_rss_kib(void);
int fxh_srv_is_sanitized(void);

void fxh_set_timeout(int fd, int ms);
/* TLS to the server from 127.0.0.1, the server's certificate verified. 0 or -1. */
int fxh_tls_open(fxh_conn_t *c);
/* Same from source address src (NULL: 127.0.0.1). */
int fxh_tls_open_from(fxh_conn_t *c, const char *src);
void fxh_tls_close(fxh_conn_t *c);
int fxh_tls_write(fxh_conn_t *c, const void *data, size_t len);
/* 1: done; 0: the peer closed; -1: timed out; -2: other TLS failure. */
int fxh_tls_read_full(fxh_conn_t *c, void *buf, size_t len, double deadline);
/* 1: a frame in *out; 0: closed; -1: timeout; -2: error or undecodable frame. */
int fxh_recv_frame(fxh_conn_t *c, json_t **out, int timeout_ms);
int fxh_send_payload(fxh_conn_t *c, const void *payload, size_t len);
int fxh_send_msg(fxh_conn_t *c, json_t *msg); /* steals msg */
const char *fxh_msg_type(const json_t *m);
const char *fxh_msg_code(const json_t *m);
/* The next frame must be an error with one of the '|'-separated codes and this fatality; a fatal
 * one must be followed by the close. */
void fxh_expect_error(fxh_conn_t *c, const char *codes, int fatal, const char *what);
/* The server must close within timeout_ms (only error frames before). */
void fxh_expect_closed(fxh_conn_t *c, int timeout_ms, const char *what);
json_t *fxh_hello(const char *token);
/* TLS + hello with a token; 0 once welcomed. */
int fxh_login(fxh_conn_t *c, const char *token);
/* A hello enrolling `name` with fxh.enrol. */
json_t *fxh_enrol_hello(const char *name);
/* Enrol `name` with the enrolment key; the token is copied to token. */
void fxh_enrol(const char *name, char *token, size_t len);
/* get_work on an open session: up to max assignments into out; 0 for no_work. */
int fxh_get_work(fxh_conn_t *c, int want, fxh_asg_t *out, int max);

/* The refusal summaries in the server log (docs/server.md): the sum of the counts of the lines
 * that contain `what`, and in *lines how many there are. -1 without a log. */
long fxh_log_summaries(const char *what, int *lines);

#endif
