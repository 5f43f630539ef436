/* nq-client: the daemon context's small verbs (ctx.h): names, state, reasons, the work queue and
 * sending. The bottom room of the daemon: it calls none of the others. */
#include "ctx.h"

#include "nq/log.h"
#include "nq/nq.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lane running assignment id, or NULL. */
cli_lane_t *cli_lane_of(cli_t *cli, int64_t id) {
  for (int i = 0; i < cli->nlanes; i++)
    if (cli->lanes[i].running && cli->lanes[i].cur.id == id) return &cli->lanes[i];
  return NULL;
}

/* The lane whose worker holds assignment id as its next unit, or NULL. */
cli_lane_t *cli_lane_next_of(cli_t *cli, int64_t id) {
  for (int i = 0; i < cli->nlanes; i++)
    if (cli->lanes[i].has_next && cli->lanes[i].next.id == id) return &cli->lanes[i];
  return NULL;
}

/* How many lanes run a unit. */
int cli_lanes_running(const cli_t *cli) {
  int n = 0;
  for (int i = 0; i < cli->nlanes; i++) n += cli->lanes[i].running + cli->lanes[i].has_next;
  return n;
}
/* ---- names ---- */

const char *cli_state_name(cli_state_t s) {
  static const char *const names[] = {"idle", "connecting", "hello", "ready", "done"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

const char *cli_reason_name(cli_reason_t r) {
  static const char *const names[] = {"none",    "limit", "job_done", "stopped",
                                      "protocol", "version", "auth",   "banned",
                                      "cert",    "setup", "failure"};
  return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "?";
}

const char *cli_reason_text(cli_reason_t r) {
  static const char *const texts[] = {
      "still running",
      "the --once or --max-units limit was reached",
      "the job is done and no other follows",
      "stopped by a signal or a stop request",
      "the server refused the protocol, or broke it",
      "protocol version mismatch: install a newer nq-client",
      "refused: the token is unknown or the enrolment key is wrong",
      "this client is banned by the server's operator",
      "the server certificate was refused (CA or host name)",
      "the new token cannot be stored in the state directory",
      "an unexpected local failure (the solver thread cannot start)"};
  return (unsigned)r < sizeof texts / sizeof texts[0] ? texts[r] : "?";
}

int cli_reason_exit(cli_reason_t r) {
  switch (r) {
  case CLI_REASON_PROTOCOL: return CLI_EXIT_PROTO;
  case CLI_REASON_VERSION: return CLI_EXIT_UPGRADE;
  case CLI_REASON_AUTH:
  case CLI_REASON_BANNED: return CLI_EXIT_AUTH;
  case CLI_REASON_CERT: return CLI_EXIT_TLS;
  case CLI_REASON_SETUP: return CLI_EXIT_SETUP;
  case CLI_REASON_FAILURE: return CLI_EXIT_FAIL;
  default: return CLI_EXIT_OK;
  }
}
/* ---- state ---- */

void cli_set_state(cli_t *cli, cli_state_t to) {
  cli_state_t from = cli->state;
  if (from == to) return;
  assert(from != CLI_STATE_DONE); /* DONE is final */
  cli->state = to;
  if (cli->cfg->on_state) cli->cfg->on_state(cli->cfg->observer, from, to);
}

void cli_leave(cli_t *cli, cli_reason_t why) {
  if (why <= cli->reason) return;
  cli->reason = why;
  cli->exit_why[0] = '\0';
}

void cli_leave_why(cli_t *cli, cli_reason_t why, const char *fmt, ...) {
  if (why == CLI_REASON_NONE || why < cli->reason) return;
  cli->reason = why;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cli->exit_why, sizeof cli->exit_why, fmt, ap);
  va_end(ap);
}

void cli_outcome(cli_t *cli, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cli->st.last_outcome, sizeof cli->st.last_outcome, fmt, ap);
  va_end(ap);
}

/* ---- the work queue ---- */

cli_assign_t *cli_queue_find(cli_t *cli, int64_t id) {
  for (size_t i = 0; i < cli->qlen; i++)
    if (cli->queue[i].id == id) return &cli->queue[i];
  return NULL;
}

/* 1 if assignment id is queued; the server re-sent it, so it is confirmed as still ours. */
int cli_queue_confirm(cli_t *cli, int64_t id) {
  cli_assign_t *a = cli_queue_find(cli, id);
  if (a) a->unconfirmed = 0;
  return a != NULL;
}

int cli_queue_push(cli_t *cli, const cli_assign_t *a) {
  if (cli->qlen == cli->qcap) {
    size_t nc = cli->qcap ? cli->qcap * 2 : 8;
    cli_assign_t *v = realloc(cli->queue, nc * sizeof *v);
    if (!v) return NQ_ENOMEM;
    cli->queue = v;
    cli->qcap = nc;
  }
  cli->queue[cli->qlen++] = *a;
  return 0;
}

/* Put a back at the front of the queue (it was taken from there, or handed to a worker). */
int cli_queue_push_front(cli_t *cli, const cli_assign_t *a) {
  int rc = cli_queue_push(cli, a);
  if (rc) return rc;
  memmove(cli->queue + 1, cli->queue, (cli->qlen - 1) * sizeof *cli->queue);
  cli->queue[0] = *a;
  return 0;
}

int cli_send(cli_t *cli, json_t *msg) {
  if (!cli->conn || nq_conn_state(cli->conn) != NQ_CONN_OPEN) {
    json_decref(msg);
    return NQ_ENOTOPEN;
  }
  int rc = nq_conn_send_new(cli->conn, msg);
  if (rc) nq_log(NQ_LOG_WARN, "send failed: %s", nq_strerror(rc));
  return rc;
}

void cli_retry_in(cli_t *cli, uint64_t ms) {
  uv_timer_start(&cli->retry_timer, cli->retry_cb, ms, 0);
}
