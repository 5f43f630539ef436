/* tests/test_cli.c: the client's connection state machine (client/cli.c) against an in-process
 * server on the same loop -- the real srv_t (server/srv.c) with its store and scheduler, or a
 * stand-in TLS peer that answers hello with a chosen frame. Every test records the client's state
 * transitions through its observer and checks the path and the exit reason:
 *   - enrol, run a whole job, leave with JOB_DONE (exit 0), token stored, journal empty;
 *   - --max-units: LIMIT after its results were acknowledged;
 *   - a wrong token: AUTH (exit 5) straight from HELLO;
 *   - no server yet: IDLE/CONNECTING with backoff, then a server appears; it stops mid-session
 *     (READY -> IDLE) and a second one on the same data resumes; the job still finishes;
 *   - a stop request: STOPPED (exit 0); a ban mid-session: BANNED (exit 5);
 *   - a peer speaking another protocol version, a malformed welcome, a frame before welcome;
 *   - checkpoints: a stop saves the running unit and the next run resumes it (exact result);
 *     a checkpointed unit the server has decided meanwhile is dropped; one whose lease was
 *     reissued while it is undecided is finished anyway and its result taken.
 * The loop ends when the client is DONE and every handle has closed; a deadline guards it. */
#include "cli.h"
#include "journal.h"
#include "srv.h"
#include "testutil.h"

#include "nq/certs.h"
#include "nq/checkpoint.h"
#include "nq/conn.h"
#include "nq/files.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/tls.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#define DEADLINE_MS 60000
#define MAX_STEPS 256

typedef struct env_s env_t;

struct env_s {
  uv_loop_t loop;
  uv_timer_t tick, guard;
  char *tmp;
  char data[600], state[600], ca[700], enrol[128];
  int port;
  int depth;          /* of the job's units (3 unless a test says otherwise) */
  int keep_tmp;       /* env_free leaves the directories for the next run of a test */
  srv_t srv[2];       /* a second one for the restart test (the first's handles may still close) */
  int srv_up[2];
  cli_config_t cfg;
  cli_t *cli;
  cli_state_t path[MAX_STEPS]; /* every state the client entered, in order */
  int npath;
  int timed_out;
  void (*script)(env_t *e); /* runs on every tick: the test's own moves */
  int phase;
  /* The stand-in peer. */
  uv_tcp_t listener;
  int fake;
  nq_tls_ctx_t *fake_tls;
  const char *fake_reply;
  int fake_hellos;
};

/* ---- the server ---- */

static void server_start(env_t *e, int i, int n) {
  srv_config_t c;
  srv_config_default(&c);
  c.job.n = n;
  c.job.depth = e->depth ? e->depth : 3;
  c.job.quorum = 1;
  c.job.max_results = 1;
  c.data_dir = e->data;
  c.handle_signals = 0;
  c.sched.lease_seconds = 600;
  snprintf(c.listen_host, sizeof c.listen_host, "127.0.0.1");
  c.listen_port = e->port;
  char err[256] = "";
  int rc = srv_init(&e->srv[i], &e->loop, &c, err, sizeof err);
  ck_assert_msg(rc == 0, "server: %s", err);
  e->srv_up[i] = 1;
  if (!e->enrol[0]) {
    char p[700];
    ck_assert_int_eq(nq_path_join(p, sizeof p, e->data, "enrol.key"), 0);
    ck_assert_int_eq(nq_file_read_line(p, e->enrol, sizeof e->enrol), 0);
  }
}

static void server_stop(env_t *e, int i) {
  if (e->srv_up[i] == 1) srv_stop(&e->srv[i], 0);
  if (e->srv_up[i]) e->srv_up[i] = 2;
}

/* ---- the stand-in peer: TLS, hello in, one chosen frame out ---- */

static void fake_frame(nq_conn_t *c, json_t *msg) {
  env_t *e = nq_conn_data(c);
  if (nq_msg_type(msg, NULL) != NQ_MSG_HELLO) return;
  e->fake_hellos++;
  json_error_t je;
  json_t *reply = json_loads(e->fake_reply, 0, &je);
  ck_assert_ptr_nonnull(reply);
  ck_assert_int_eq(nq_conn_send_new(c, reply), 0);
}

static void fake_connection(uv_stream_t *server, int status) {
  env_t *e = server->data;
  if (status < 0) return;
  nq_conn_opts_t o = {.on_frame = fake_frame, .data = e, .tag = "fake"};
  nq_conn_accept(&e->loop, server, e->fake_tls, &o, NULL);
}

static void fake_start(env_t *e, const char *reply) {
  ck_assert_int_eq(nq_certs_ensure(e->data, NULL), 0);
  char cert[700], key[700];
  nq_path_join(cert, sizeof cert, e->data, NQ_CERTS_SERVER_CERT);
  nq_path_join(key, sizeof key, e->data, NQ_CERTS_SERVER_KEY);
  ck_assert_int_eq(nq_tls_ctx_server_new(cert, key, &e->fake_tls), 0);
  struct sockaddr_in a;
  uv_ip4_addr("127.0.0.1", e->port, &a);
  ck_assert_int_eq(uv_tcp_init(&e->loop, &e->listener), 0);
  e->listener.data = e;
  ck_assert_int_eq(uv_tcp_bind(&e->listener, (struct sockaddr *)&a, 0), 0);
  ck_assert_int_eq(uv_listen((uv_stream_t *)&e->listener, 16, fake_connection), 0);
  e->fake = 1;
  e->fake_reply = reply;
  snprintf(e->enrol, sizeof e->enrol, "any-key");
}

/* ---- the client and the loop ---- */

static void on_state(void *arg, cli_state_t from, cli_state_t to) {
  env_t *e = arg;
  ck_assert_int_eq(cli_state(e->cli), to);
  ck_assert_int_ne(from, to);
  if (e->npath < MAX_STEPS) e->path[e->npath++] = to;
  if (to != CLI_STATE_DONE) return;
  /* The client is gone: let the loop run dry. */
  server_stop(e, 0);
  server_stop(e, 1);
  if (e->fake == 1) {
    uv_close((uv_handle_t *)&e->listener, NULL);
    e->fake = 2;
  }
  uv_close((uv_handle_t *)&e->tick, NULL);
  uv_close((uv_handle_t *)&e->guard, NULL);
}

static void on_tick(uv_timer_t *t) {
  env_t *e = t->data;
  if (e->script && e->cli && cli_state(e->cli) != CLI_STATE_DONE) e->script(e);
}

static void on_guard(uv_timer_t *t) {
  env_t *e = t->data;
  e->timed_out = 1;
  if (e->cli) {
    cli_stop(e->cli);
    cli_stop(e->cli); /* the second request leaves at once */
  }
}

/* A new environment; in the directories of an earlier one when tmp is given (taken over). */
static void env_init_in(env_t *e, const char *tag, char *tmp) {
  memset(e, 0, sizeof *e);
  ck_assert_int_eq(uv_loop_init(&e->loop), 0);
  e->tmp = tmp ? tmp : tu_tmpdir(tag);
  ck_assert_ptr_nonnull(e->tmp);
  snprintf(e->data, sizeof e->data, "%s/data", e->tmp);
  snprintf(e->state, sizeof e->state, "%s/state", e->tmp);
  snprintf(e->ca, sizeof e->ca, "%s/ca.pem", e->data);
  ck_assert_int_eq(nq_mkdir_p(e->data, 0700), 0);
  e->port = tu_free_port();
  cli_config_default(&e->cfg);
  /* Normal priority: under SCHED_IDLE the suite would wait for whatever else the machine runs. */
  e->cfg.priority = NQ_PRIO_NORMAL;
  snprintf(e->cfg.host, sizeof e->cfg.host, "127.0.0.1");
  e->cfg.port = e->port;
  e->cfg.ca = e->ca;
  e->cfg.state = e->state;
  e->cfg.threads = 1;
  e->cfg.backoff_min = 0.05;
  e->cfg.backoff_max = 0.2;
  e->cfg.handle_signals = 0;
  /* These runs end with their one job (JOB_DONE), the contract before the job queue; waiting
   * between jobs is tests/e2e_queue.sh's. */
  e->cfg.exit_when_done = 1;
  e->cfg.on_state = on_state;
  e->cfg.observer = e;
  uv_timer_init(&e->loop, &e->tick);
  uv_timer_init(&e->loop, &e->guard);
  e->tick.data = e->guard.data = e;
}

static void env_init(env_t *e, const char *tag) {
  env_init_in(e, tag, NULL);
}

/* Start the client and run the loop until it is done and every handle has closed. */
static void env_run(env_t *e) {
  if (!e->cfg.token) e->cfg.enrol = e->enrol;
  ck_assert_int_eq(cli_start(&e->cfg, &e->loop, &e->cli), 0);
  ck_assert_ptr_nonnull(e->cli);
  uv_timer_start(&e->tick, on_tick, 20, 20);
  uv_timer_start(&e->guard, on_guard, DEADLINE_MS, 0);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  ck_assert_msg(!e->timed_out, "the client did not finish within %d ms", DEADLINE_MS);
  ck_assert_int_eq(cli_state(e->cli), CLI_STATE_DONE);
}

static void env_free(env_t *e) {
  cli_free(e->cli);
  for (int i = 0; i < 2; i++)
    if (e->srv_up[i]) srv_free(&e->srv[i]);
  nq_tls_ctx_free(e->fake_tls);
  ck_assert_int_eq(uv_loop_close(&e->loop), 0);
  if (e->keep_tmp) return; /* the next env_init_in takes e->tmp over */
  tu_rmtree(e->tmp);
  free(e->tmp);
}

/* The path must begin with `want` (a prefix of states) and end in DONE. */
static void expect_path(const env_t *e, const cli_state_t *want, int n) {
  char got[MAX_STEPS * 12] = "";
  for (int i = 0; i < e->npath; i++) {
    strcat(got, cli_state_name(e->path[i]));
    strcat(got, " ");
  }
  ck_assert_msg(e->npath >= n, "path too short: %s", got);
  for (int i = 0; i < n; i++)
    ck_assert_msg(e->path[i] == want[i], "step %d is %s, want %s (path: %s)", i,
                  cli_state_name(e->path[i]), cli_state_name(want[i]), got);
  ck_assert_msg(e->path[e->npath - 1] == CLI_STATE_DONE, "path does not end in done: %s", got);
}

static int count_state(const env_t *e, cli_state_t s) {
  int k = 0;
  for (int i = 0; i < e->npath; i++) k += e->path[i] == s;
  return k;
}

/* The journal's entries once the client is gone. While it is still there (done but not freed)
 * it owns the state directory: a second open is refused, as a second nq-client would be. */
static size_t journal_entries(env_t *e) {
  cli_journal_t j;
  nq_result_t *v = NULL;
  size_t n = 0;
  ck_assert_ptr_nonnull(e->cli);
  ck_assert_int_eq(cli_journal_open(e->state, &j), NQ_EBUSY);
  cli_free(e->cli);
  e->cli = NULL;
  ck_assert_int_eq(cli_journal_open(e->state, &j), 0);
  ck_assert_int_eq(cli_journal_list(&j, &v, &n, NULL), 0);
  free(v);
  cli_journal_close(&j);
  return n;
}

static const cli_state_t SESSION[] = {CLI_STATE_CONNECTING, CLI_STATE_HELLO, CLI_STATE_READY};

/* ---- tests ---- */

START_TEST(enrol_and_finish_job) {
  env_t e;
  env_init(&e, "cli-job");
  server_start(&e, 0, 6);
  env_run(&e);
  expect_path(&e, SESSION, 3);
  ck_assert_int_eq(cli_reason(e.cli), CLI_REASON_JOB_DONE);
  ck_assert_int_eq(cli_reason_exit(cli_reason(e.cli)), CLI_EXIT_OK);
  ck_assert_int_eq(e.srv[0].job_done, 1);
  ck_assert_uint_eq(journal_entries(&e), 0);
  char tok[CLI_TOKEN_MAX], p[700];
  snprintf(p, sizeof p, "%s/token", e.state);
  ck_assert_int_eq(nq_file_read_line(p, tok, sizeof tok), 0);
  ck_assert_uint_eq(strlen(tok), 64);
  env_free(&e);
}
END_TEST

START_TEST(max_units_limit) {
  env_t e;
  env_init(&e, "cli-limit");
  server_start(&e, 0, 10);
  e.cfg.max_units = 2;
  env_run(&e);
  expect_path(&e, SESSION, 3);
  ck_assert_int_eq(cli_reason(e.cli), CLI_REASON_LIMIT);
  ck_assert_int_eq(cli_reason_exit(cli_reason(e.cli)), CLI_EXIT_OK);
  /* Both results were acknowledged (and so stored) before the client left. */
  ck_assert_uint_eq(journal_entries(&e), 0);
  srv_stats_t st;
  ck_assert_int_eq(srv_store_stats(e.srv[0].store, e.srv[0].sched.job.id, nq_now_wall(), 600, 600,
                                   &st), 0);
  ck_assert_int_eq(st.results, 2);
  ck_assert_int_eq(e.srv[0].job_done, 0);
  env_free(&e);
}
END_TEST

START_TEST(wrong_token_is_auth) {
  env_t e;
  env_init(&e, "cli-auth");
  server_start(&e, 0, 8);
  e.cfg.token = "0123456789abcdef";
  env_run(&e);
  static const cli_state_t want[] = {CLI_STATE_CONNECTING, CLI_STATE_HELLO, CLI_STATE_IDLE,
                                     CLI_STATE_DONE};
  expect_path(&e, want, 4);
  ck_assert_int_eq(e.npath, 4);
  ck_assert_int_eq(cli_reason(e.cli), CLI_REASON_AUTH);
  ck_assert_int_eq(cli_reason_exit(cli_reason(e.cli)), CLI_EXIT_AUTH);
  env_free(&e);
}
END_TEST

/* No server at first; one appears, stops mid-session, and a second takes over on the same data. */
static void restart_script(env_t *e) {
  cli_state_t st = cli_state(e->cli);
  switch (e->phase) {
  case 0: /* a few refused attempts with backoff */
    if (count_state(e, CLI_STATE_IDLE) >= 3) {
      server_start(e, 0, 10);
      e->phase = 1;
    }
    break;
  case 1:
    if (st == CLI_STATE_READY) {
      server_stop(e, 0);
      e->phase = 2;
    }
    break;
  case 2: /* dropped: the client tries again; a new server on the same port and data */
    if ((st == CLI_STATE_IDLE || st == CLI_STATE_CONNECTING) && !e->srv[0].conns &&
        !e->srv[0].handles_open) {
      /* The first server is gone: its store and its data directory lock are released, as when
       * a process exits, so the second may take the directory. */
      srv_free(&e->srv[0]);
      e->srv_up[0] = 0;
      server_start(e, 1, 10);
      e->phase = 3;
    }
    break;
  default:
    break;
  }
}

START_TEST(reconnects_across_server_restarts) {
  env_t e;
  env_init(&e, "cli-restart");
  /* The first server makes the data directory (its CA) only when it starts: give the client the
   * same CA up front, as an operator copies ca.pem once. */
  ck_assert_int_eq(nq_certs_ensure(e.data, NULL), 0);
  ck_assert_int_eq(nq_file_create(e.data, "enrol.key", "restart-key\n", 12, 0600), 0);
  snprintf(e.enrol, sizeof e.enrol, "restart-key");
  e.script = restart_script;
  env_run(&e);
  ck_assert_int_eq(e.phase, 3);
  static const cli_state_t want[] = {CLI_STATE_CONNECTING, CLI_STATE_IDLE,
                                     CLI_STATE_CONNECTING, CLI_STATE_IDLE};
  expect_path(&e, want, 4);
  ck_assert_int_ge(count_state(&e, CLI_STATE_READY), 2); /* one session per server */
  ck_assert_int_eq(cli_reason(e.cli), CLI_REASON_JOB_DONE);
  ck_assert_int_eq(e.srv[1].job_done, 1);
  ck_assert_uint_eq(journal_entries(&e), 0);
  env_free(&e);
}
END_TEST

static void stop_script(env_t *e) {
  if (e->phase == 0 && cli_state(e->cli) == CLI_STATE_READY) {
    cli_stop(e->cli);
    e->phase = 1;
  }
}

START_TEST(stop_request_drains) {
  env_t e;
  env_init(&e, "cli-stop");
  server_start(&e, 0, 12);
  e.script = stop_script;
  env_run(&e);
  expect_path(&e, SESSION, 3);
  ck_assert_int_eq(cli_reason(e.cli), CLI_REASON_STOPPED);
  ck_assert_int_eq(cli_reason_exit(cli_reason(e.cli)), CLI_EXIT_OK);
  ck_assert_int_eq(e.srv[0].job_done, 0);
  env_free(&e);
}
END_TEST

/* Banned through the admin API while the client works: its next request is refused. */
static void ban_script(env_t *e) {
  if (e->phase == 0 && cli_state(e->cli) == CLI_STATE_READY) {
    srv_client_t c;
    ck_assert_int_eq(srv_client_find_name(e->srv[0].store, "banme", &c), 0);
    ck_assert_int_eq(srv_client_ban(e->srv[0].store, c.id, nq_now_wall()), 0);
    e->phase = 1;
  }
}

START_TEST(ban_mid_session) {
  env_t e;
  env_init(&e, "cli-ban");
  server_start(&e, 0, 12);
  e.cfg.name = "banme";
  e.script = ban_script;
  env_run(&e);
  expect_path(&e, SESSION, 3);
  ck_assert_int_eq(cli_reason(e.cli), CLI_REASON_BANNED);
  ck_assert_int_eq(cli_reason_exit(cli_reason(e.cli)), CLI_EXIT_AUTH);
  env_free(&e);
}
END_TEST

/* A peer that answers hello with `reply`; the client must leave for `why` from HELLO. */
static void against_fake(const char *reply, cli_reason_t why, int exit_code) {
  env_t e;
  env_init(&e, "cli-fake");
  fake_start(&e, reply);
  env_run(&e);
  static const cli_state_t want[] = {CLI_STATE_CONNECTING, CLI_STATE_HELLO, CLI_STATE_IDLE,
                                     CLI_STATE_DONE};
  expect_path(&e, want, 4);
  ck_assert_int_eq(e.fake_hellos, 1);
  ck_assert_int_eq(cli_reason(e.cli), why);
  ck_assert_int_eq(cli_reason_exit(why), exit_code);
  env_free(&e);
}

START_TEST(peer_other_version) {
  against_fake("{\"type\":\"welcome\",\"v\":2,\"job\":{\"n\":10,\"depth\":3,\"state\":\"running\"}}",
               CLI_REASON_VERSION, CLI_EXIT_UPGRADE);
  against_fake("{\"type\":\"error\",\"code\":\"version\",\"message\":\"server speaks 2\","
               "\"fatal\":true}",
               CLI_REASON_VERSION, CLI_EXIT_UPGRADE);
  /* A server that has retired every protocol this client speaks: not retried, exit 7. */
  against_fake("{\"type\":\"error\",\"code\":\"upgrade_required\",\"message\":\"this server "
               "needs protocol version 2 or newer\",\"fatal\":true,\"min_version\":2}",
               CLI_REASON_VERSION, CLI_EXIT_UPGRADE);
}
END_TEST

START_TEST(peer_malformed_welcome) {
  against_fake("{\"type\":\"welcome\",\"v\":1,\"max_outstanding\":16,\"progress_interval\":60}",
               CLI_REASON_PROTOCOL, CLI_EXIT_PROTO);
  against_fake("{\"type\":\"error\",\"code\":\"banned\",\"message\":\"no\",\"fatal\":true}",
               CLI_REASON_BANNED, CLI_EXIT_AUTH);
}
END_TEST

/* A frame other than welcome or error first: the client closes and tries again (it is not about
 * us); a stop request then ends it. */
static void fake_retry_script(env_t *e) {
  if (e->phase == 0 && e->fake_hellos >= 2) {
    cli_stop(e->cli);
    e->phase = 1;
  }
}

START_TEST(peer_frame_before_welcome) {
  env_t e;
  env_init(&e, "cli-fake");
  fake_start(&e, "{\"type\":\"no_work\",\"retry_after\":1,\"reason\":\"cap\"}");
  e.script = fake_retry_script;
  env_run(&e);
  static const cli_state_t want[] = {CLI_STATE_CONNECTING, CLI_STATE_HELLO, CLI_STATE_IDLE,
                                     CLI_STATE_CONNECTING, CLI_STATE_HELLO};
  expect_path(&e, want, 5);
  ck_assert_int_ge(e.fake_hellos, 2);
  ck_assert_int_eq(cli_reason(e.cli), CLI_REASON_STOPPED);
  env_free(&e);
}
END_TEST

/* ---- checkpoints ---- */

/* The ids of the checkpoint files in the client's state directory (read without opening the
 * journal, which would sweep the client's temporary files). */
static size_t ckpt_ids(const env_t *e, int64_t *ids, size_t max) {
  char dir[700];
  snprintf(dir, sizeof dir, "%s/checkpoint", e->state);
  DIR *d = opendir(dir);
  size_t n = 0;
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    long long id;
    char tail[8];
    if (sscanf(de->d_name, "%lld.%7s", &id, tail) == 2 && !strcmp(tail, "ckpt") && n < max)
      ids[n++] = id;
  }
  if (d) closedir(d);
  return n;
}

static int state_file_exists(const env_t *e, const char *sub, int64_t id, const char *ext) {
  char p[800];
  snprintf(p, sizeof p, "%s/%s/%lld%s", e->state, sub, (long long)id, ext);
  return access(p, F_OK) == 0;
}

static void stop_at_checkpoint_script(env_t *e) {
  int64_t id;
  if (e->phase == 0 && ckpt_ids(e, &id, 1) > 0) {
    cli_stop(e->cli);
    e->phase = 1;
  }
}

/* Run 1 of a checkpoint test: a job of N at depth 2 (units of a good fraction of a second and
 * more), stopped as soon as the running unit has a valid checkpoint with some of its tasks done.
 * Returns the assignment id; the directories stay for run 2 (*tmp), and *st (when given) is the
 * job's store, open between the runs, with *a the assignment. */
static int64_t run_to_checkpoint(const char *tag, int n, char **tmp, srv_store_t **st,
                                 srv_asg_info_t *a) {
  env_t e;
  env_init(&e, tag);
  e.depth = 2;
  server_start(&e, 0, n);
  e.cfg.checkpoint_seconds = 0.05;
  e.script = stop_at_checkpoint_script;
  e.keep_tmp = 1;
  env_run(&e);
  ck_assert_int_eq(cli_reason(e.cli), CLI_REASON_STOPPED);
  int64_t id = 0;
  ck_assert_uint_eq(ckpt_ids(&e, &id, 1), 1);
  ck_assert(state_file_exists(&e, "assigned", id, ".json")); /* the assignment is kept */
  char p[800], err[NQ_CKPT_ERR_MAX] = "";
  nq_ckpt_t c;
  snprintf(p, sizeof p, "%s/checkpoint/%lld.ckpt", e.state, (long long)id);
  ck_assert_msg(nq_ckpt_load(p, &c, err, sizeof err) == 0, "checkpoint: %s", err);
  ck_assert_uint_gt(c.ndone, 0);
  ck_assert_uint_lt(c.ndone, c.ntasks);
  nq_ckpt_free(&c);
  *tmp = e.tmp;
  env_free(&e);
  if (st) {
    snprintf(p, sizeof p, "%s/data/nq.db", *tmp);
    ck_assert_msg(srv_store_open(st, p, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(srv_asg_get(*st, id, a), 0);
  }
  return id;
}

typedef struct watch_s {
  int64_t id;
} watch_t;
static watch_t watch;

/* Stop once assignment watch.id has a result on the server. */
static void stop_when_reported_script(env_t *e) {
  srv_asg_info_t a;
  if (e->phase == 0 && srv_asg_get(e->srv[0].store, watch.id, &a) == 0 && a.reported_at) {
    cli_stop(e->cli);
    e->phase = 1;
  }
}

/* Stop once the client has forgotten assignment watch.id (no checkpoint, no assignment entry). */
static void stop_when_forgotten_script(env_t *e) {
  if (e->phase == 0 && !state_file_exists(e, "checkpoint", watch.id, ".ckpt") &&
      !state_file_exists(e, "assigned", watch.id, ".json")) {
    cli_stop(e->cli);
    e->phase = 1;
  }
}

/* Run 2 in the same directories: the same job, the stored token, `script` decides when to stop. */
static void run_again(env_t *e, const char *tag, char *tmp, int n, void (*script)(env_t *)) {
  env_init_in(e, tag, tmp);
  e->depth = 2;
  server_start(e, 0, n);
  e->cfg.checkpoint_seconds = 0.05;
  e->script = script;
  env_run(e);
  ck_assert_int_eq(cli_reason(e->cli), CLI_REASON_STOPPED);
}

/* The assignment's result equals the uninterrupted solve of its unit. */
static void expect_exact_result(env_t *e, int64_t id) {
  srv_asg_info_t a;
  srv_unit_info_t u;
  ck_assert_int_eq(srv_asg_get_unit(e->srv[0].store, id, &a, &u), 0);
  ck_assert_int_ne(a.reported_at, 0);
  nq_unit_t unit;
  nq_counts_t ref;
  ck_assert_int_eq(nq_unit_parse(u.text, &unit, NULL, 0), 0);
  ck_assert_int_eq(nq_fast_solve_unit(&unit, &ref), 0);
  ck_assert_uint_eq(a.counts.c2, ref.c2);
  ck_assert_uint_eq(a.counts.c4, ref.c4);
  ck_assert_uint_eq(a.counts.c8, ref.c8);
  ck_assert_uint_eq(a.counts.nodes, ref.nodes);
}

/* A stop checkpoints the running unit; the next run resumes it (the server still holds it for
 * us) and its result is exact. */
START_TEST(stop_checkpoints_and_resume_is_exact) {
  char *tmp;
  watch.id = run_to_checkpoint("cli-ckpt", 19, &tmp, NULL, NULL);
  env_t e;
  run_again(&e, "cli-ckpt", tmp, 19, stop_when_reported_script);
  ck_assert_int_ge(cli_units_resumed(e.cli), 1);
  expect_exact_result(&e, watch.id);
  ck_assert(!state_file_exists(&e, "checkpoint", watch.id, ".ckpt"));
  env_free(&e);
}
END_TEST

/* The unit of a checkpoint was verified by someone else meanwhile: the server says
 * unknown_assignment and the client drops the unit and its checkpoint instead of finishing it. */
START_TEST(checkpoint_of_decided_unit_dropped) {
  char *tmp;
  srv_store_t *st;
  srv_asg_info_t a;
  watch.id = run_to_checkpoint("cli-ckpt-drop", 21, &tmp, &st, &a);
  nq_counts_t any = {0, 0, 1, 0, 10};
  ck_assert_int_eq(srv_unit_verify(st, a.unit_id, &any, nq_now_wall()), 0);
  srv_store_close(st);
  env_t e;
  run_again(&e, "cli-ckpt-drop", tmp, 21, stop_when_forgotten_script);
  ck_assert_int_eq(e.phase, 1);
  ck_assert_int_eq(srv_asg_get(e.srv[0].store, watch.id, &a), 0);
  ck_assert_int_eq(a.reported_at, 0); /* dropped, not finished */
  env_free(&e);
}
END_TEST

/* The lease of a checkpointed unit expired and the unit went to another client, but it is not
 * decided: the server says lease_expired, the client finishes the unit from its checkpoint and
 * its result is taken (it verifies the unit, quorum 1). */
START_TEST(checkpoint_of_reissued_unit_finished) {
  char *tmp;
  srv_store_t *st;
  srv_asg_info_t a;
  watch.id = run_to_checkpoint("cli-ckpt-late", 19, &tmp, &st, &a);
  int64_t now = nq_now_wall(), other_asg;
  srv_client_t other;
  ck_assert_int_eq(srv_asg_expire_due(st, now + 100000, NULL), 0);
  ck_assert_int_eq(srv_client_create(st, "other", "0123456789abcdef", now, &other), 0);
  ck_assert_int_eq(srv_asg_lease(st, a.unit_id, other.id, now, now + 3600, &other_asg), 0);
  srv_store_close(st);
  env_t e;
  run_again(&e, "cli-ckpt-late", tmp, 19, stop_when_reported_script);
  ck_assert_int_ge(cli_units_resumed(e.cli), 1);
  expect_exact_result(&e, watch.id);
  srv_unit_info_t u;
  ck_assert_int_eq(srv_unit_get(e.srv[0].store, a.unit_id, &u), 0);
  ck_assert_int_eq(u.state, SRV_UNIT_VERIFIED);
  env_free(&e);
}
END_TEST

START_TEST(names_and_exit_codes) {
  ck_assert_str_eq(cli_state_name(CLI_STATE_READY), "ready");
  ck_assert_str_eq(cli_reason_name(CLI_REASON_JOB_DONE), "job_done");
  ck_assert_int_eq(cli_reason_exit(CLI_REASON_NONE), CLI_EXIT_OK);
  ck_assert_int_eq(cli_reason_exit(CLI_REASON_STOPPED), CLI_EXIT_OK);
  ck_assert_int_eq(cli_reason_exit(CLI_REASON_CERT), CLI_EXIT_TLS);
  ck_assert_int_eq(cli_reason_exit(CLI_REASON_SETUP), CLI_EXIT_SETUP);
  ck_assert_int_eq(cli_reason_exit(CLI_REASON_FAILURE), CLI_EXIT_FAIL);
  /* Setup failures start nothing: the exit code comes back at once. */
  cli_config_t cfg;
  cli_config_default(&cfg);
  cfg.ca = "/proc/nq-no-such-ca.pem";
  cfg.token = "x";
  uv_loop_t loop;
  uv_loop_init(&loop);
  cli_t *cli = NULL;
  ck_assert_int_eq(cli_start(&cfg, &loop, &cli), CLI_EXIT_SETUP);
  ck_assert_ptr_null(cli);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cli");
  TCase *tc = tcase_create("cli");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, names_and_exit_codes);
  tcase_add_test(tc, enrol_and_finish_job);
  tcase_add_test(tc, max_units_limit);
  tcase_add_test(tc, wrong_token_is_auth);
  tcase_add_test(tc, reconnects_across_server_restarts);
  tcase_add_test(tc, stop_request_drains);
  tcase_add_test(tc, ban_mid_session);
  tcase_add_test(tc, peer_other_version);
  tcase_add_test(tc, peer_malformed_welcome);
  tcase_add_test(tc, peer_frame_before_welcome);
  suite_add_tcase(s, tc);
  TCase *ck = tcase_create("checkpoint");
  tcase_set_timeout(ck, 240);
  tcase_add_test(ck, stop_checkpoints_and_resume_is_exact);
  tcase_add_test(ck, checkpoint_of_decided_unit_dropped);
  tcase_add_test(ck, checkpoint_of_reissued_unit_finished);
  suite_add_tcase(s, ck);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
