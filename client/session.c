/* nq-client: the session room (session.h): the connection and its messages -- hello, sign-up
 * and enrolment, welcome, work, no_work, acks, leases, errors, news, the reconnect backoff and the
 * credentials. Messages are built and read only through nq/proto.h; what the server sends is
 * dispatched by the table of cli_session_frame. It calls the lanes and the reporting rooms and
 * the context's verbs; what the conductor does next it is told by return values. */
#include "session.h"
#include "fault.h"
#include "lanes.h"
#include "receipts.h"
#include "report.h"

#include "nq/files.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/sys.h"
#include "nq/unit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROGRESS_INTERVAL_MAX 86400 /* a longer one from the server is clamped to a day */
#define WAIT_MAX_S 120 /* between jobs, the poll's backoff stops here (under the server's idle
                          timeout, 300 s by default, so the session stays open) */

/* ---- reach ---- */

/* A connection attempt failed: the first failure of an outage is logged at INFO, the next ones
 * at DEBUG (the backoff makes them up to one a minute), and an outage longer than
 * unreachable_warn_seconds once at WARN. Returns the level for the caller's own line. */
int cli_session_out_of_reach(cli_t *cli, const char *why) {
  double now = nq_now_mono();
  int first = cli->down_since == 0;
  if (first) {
    cli->down_since = now;
    cli->st.down_since = (int64_t)time(NULL);
  }
  cli_outcome(cli, "%s", why);
  if (!cli->down_warned && now - cli->down_since >= cli->cfg->unreachable_warn_seconds) {
    cli->down_warned = 1;
    nq_log(NQ_LOG_WARN, "server %s:%d out of reach for %.0f s (%s); solving goes on, results "
           "wait in the journal", cli->cfg->host, cli->cfg->port, now - cli->down_since, why);
  }
  return first ? NQ_LOG_INFO : NQ_LOG_DEBUG;
}

/* The server answered (welcome): the end of an outage. */
static void in_reach(cli_t *cli) {
  if (cli->down_warned)
    nq_log(NQ_LOG_INFO, "server %s:%d reachable again after %.0f s", cli->cfg->host,
           cli->cfg->port, nq_now_mono() - cli->down_since);
  cli->down_since = 0;
  cli->down_warned = 0;
  cli->st.down_since = 0;
}

static double jitter(cli_t *cli) {
  return 0.75 + 0.5 * ((double)rand_r(&cli->rng) / RAND_MAX); /* +-25% */
}
/* ---- the connection ---- */

/* The enrolment name: --name, else the host name made valid ([A-Za-z0-9._-], 64 at most). */
static const char *enrol_name(const cli_config_t *cfg, char name[NQ_PROTO_NAME_MAX + 1]) {
  if (cfg->name) return cfg->name;
  char host[256];
  if (gethostname(host, sizeof host) != 0) strcpy(host, "client");
  host[sizeof host - 1] = '\0';
  size_t k = 0;
  for (const char *p = host; *p && k < NQ_PROTO_NAME_MAX; p++) {
    char one[2] = {*p, '\0'};
    name[k++] = nq_proto_name_valid(one) ? *p : '-';
  }
  name[k] = '\0';
  return k ? name : "client";
}

/* The kernel this client runs when none is named, for hello: its CPU kernel. A client with GPUs
 * says none: its results' GPU backend tells the server its kind (docs/protocol.md, hello). */
static const char *own_kernel(const cli_t *cli) {
  return cli->ngpus > 0 ? NULL : nq_fast_kernel_in_use();
}

void cli_session_open(cli_t *cli, nq_conn_t *c) {
  const cli_config_t *cfg = cli->cfg;
  char name[NQ_PROTO_NAME_MAX + 1];
  /* hello.threads is 1..1024: a client of devices alone says 1 (its one worker). */
  /* wait: told `waiting` rather than `done` between jobs, unless --exit-when-done. */
  nq_hello_t h = {NQ_PROTO_VERSION, NQ_ROLE_CLIENT, NULL, NULL, NULL, NQ_SOLVER_VERSION,
                  cfg->threads > 0 ? cfg->threads : 1, "nq-client " NQ_VERSION_STRING,
                  cfg->public_name, 0, 0, 0, !cfg->exit_when_done, own_kernel(cli)};
  cli_set_state(cli, CLI_STATE_HELLO);
  if (cli->joining) {
    nq_signup_t su = {NQ_PROTO_VERSION, enrol_name(cfg, name), cfg->public_name, cfg->team,
                      "nq-client " NQ_VERSION_STRING, cli->ticket[0] ? cli->ticket : NULL};
    nq_log(NQ_LOG_DEBUG, "connected to %s (%s), signup sent", nq_conn_peer(c),
           nq_conn_tls_version(c));
    if (cli_send(cli, nq_signup_pack(&su)) != 0) nq_conn_close(c, NULL, NULL);
    return;
  }
  if (cli->enrolling) {
    h.enrol = cfg->enrol;
    h.name = enrol_name(cfg, name);
  } else {
    h.token = cli->token;
  }
  nq_log(NQ_LOG_DEBUG, "connected to %s (%s), hello sent", nq_conn_peer(c),
         nq_conn_tls_version(c));
  if (cli_send(cli, nq_hello_pack(&h)) != 0) nq_conn_close(c, NULL, NULL);
}

void cli_session_error(cli_t *cli, nq_conn_t *c, int status) {
  const char *e = nq_conn_errstr(c);
  if (strstr(e, "hostname mismatch") || strstr(e, "IP address mismatch")) {
    nq_log(NQ_LOG_ERROR, "refusing server %s:%d: its certificate is not made out to the name "
           "'%s' (%s); dial one of the names it lists, or have the operator add this one "
           "(nq-server --hostname %s, then a restart re-issues the certificate)", cli->cfg->host,
           cli->cfg->port, cli->cfg->host, e, cli->cfg->host);
    cli_leave_why(cli, CLI_REASON_CERT, "the server certificate is not made out to %s",
                  cli->cfg->host);
    return;
  }
  if (strstr(e, "certificate verify failed")) {
    nq_log(NQ_LOG_ERROR, "refusing server %s:%d: %s (%s%s)%s", cli->cfg->host, cli->cfg->port, e,
           cli->cfg->ca ? "CA " : "the system's trust store",
           cli->cfg->ca ? cli->cfg->ca : "",
           cli->cfg->ca ? "" : "; a server with a certificate of its own private CA needs "
                               "--ca with the ca.pem its operator hands out");
    cli_leave_why(cli, CLI_REASON_CERT, "the server certificate was refused: %s", e);
    return;
  }
  if (strncmp(e, "resolve ", 8) == 0) {
    /* A name that does not resolve is a typo or a DNS outage: say it loudly; the reconnect
     * backoff (up to backoff_max) keeps the retries, and these lines, rare. */
    cli_session_out_of_reach(cli, e);
    nq_log(NQ_LOG_ERROR, "cannot resolve the server name '%s' (%s); check --server; retrying "
           "with backoff", cli->cfg->host, e);
    return;
  }
  const char *why = e[0] ? e : nq_strerror(status);
  int level = cli->state == CLI_STATE_READY ? NQ_LOG_WARN : cli_session_out_of_reach(cli, why);
  nq_log(level, "connection to %s:%d: %s", cli->cfg->host, cli->cfg->port, why);
}

int cli_session_closed(cli_t *cli) {
  int was_ready = cli->state == CLI_STATE_READY;
  cli_report_persist(cli); /* from here on the journal and assigned/ hold everything again */
  cli_set_state(cli, CLI_STATE_IDLE);
  cli->nsent = 0; /* unanswered results stay in the journal and go out again */
  cli->getwork_inflight = 0;
  cli->nowork_wait = 0;
  for (int i = 0; i < cli->nlanes; i++) uv_timer_stop(&cli->lanes[i].progress_timer);
  /* Closing, a reason that closes at once, a stop or the end of the job: leave now (the journal
   * keeps what was not acknowledged). Only a reached limit reconnects, to deliver its results. */
  if (cli->life == LIFE_CLOSING ||
      (cli->reason != CLI_REASON_NONE && cli->reason != CLI_REASON_LIMIT))
    return 1;
  if (was_ready) {
    nq_log(NQ_LOG_WARN, "disconnected from %s:%d", cli->cfg->host, cli->cfg->port);
    cli_outcome(cli, "disconnected");
  }
  cli_session_reconnect(cli);
  return 0;
}

/* Jittered exponential backoff: backoff_min doubling up to backoff_max, +-25%. A server that
 * answered `busy` with retry_after R is given R to 1.5 R instead, when that is longer: the spread
 * keeps a full server's refused clients from coming back together. */
void cli_session_reconnect(cli_t *cli) {
  const cli_config_t *cfg = cli->cfg;
  double d = cfg->backoff_min;
  for (int i = 0; i < cli->attempt && d < cfg->backoff_max; i++) d *= 2;
  if (d > cfg->backoff_max) d = cfg->backoff_max;
  d *= jitter(cli);
  double asked = (double)cli->retry_after * (jitter(cli) + 0.25); /* R .. 1.5 R */
  cli->retry_after = 0;
  if (asked > d) {
    d = asked;
    nq_log(NQ_LOG_INFO, "%sreconnecting in %.1f s, as it asked", cli->retry_busy ?
           "the server is full; " : "the server asked for a wait; ", d);
  }
  cli->retry_busy = 0;
  cli->attempt++;
  nq_log(NQ_LOG_DEBUG, "reconnecting in %.1f s (attempt %d)", d, cli->attempt);
  cli_retry_in(cli, (uint64_t)(d * 1000));
}

/* A message from the server that its parser refused: the server speaks another protocol version
 * or broke this one. Either way waiting and reconnecting would not help. */
static void server_broke_protocol(cli_t *cli, const char *what, const nq_proto_err_t *err) {
  if (err->code == NQ_ERR_VERSION)
    nq_log(NQ_LOG_ERROR, "protocol version mismatch: %s", err->message);
  else
    nq_log(NQ_LOG_ERROR, "protocol error: the server sent a malformed %s: %s", what,
           err->message);
  cli_leave_why(cli, err->code == NQ_ERR_VERSION ? CLI_REASON_VERSION : CLI_REASON_PROTOCOL,
                "the server sent a malformed %s: %s", what, err->message);
  nq_conn_close(cli->conn, nq_errcode_name(err->code), err->message);
}

/* ---- messages from the server ---- */

/* The reason a fatal error from the server gives us to leave; NONE: try again later (shutdown,
 * timeout, busy, internal, or a code we do not know). */
static cli_reason_t fatal_code_reason(nq_errcode_t code) {
  switch (code) {
  case NQ_ERR_AUTH:
  case NQ_ERR_SIGNUP_CLOSED:
  case NQ_ERR_SIGNUP_REJECTED:
  case NQ_ERR_EXISTS:    /* a sign-up's public name is taken */
  case NQ_ERR_NOT_FOUND: /* a sign-up's team does not exist */
  case NQ_ERR_ENROL_CLOSED: return CLI_REASON_AUTH; /* rate_limited: retried after the backoff */
  case NQ_ERR_BANNED: return CLI_REASON_BANNED;
  case NQ_ERR_VERSION:
  case NQ_ERR_UPGRADE_REQUIRED: return CLI_REASON_VERSION;
  case NQ_ERR_BAD_MESSAGE:
  case NQ_ERR_NOT_HELLO:
  case NQ_ERR_UNKNOWN_TYPE:
  case NQ_ERR_BAD_JSON:
  case NQ_ERR_BAD_FRAME:
  case NQ_ERR_FRAME_TOO_BIG: return CLI_REASON_PROTOCOL;
  default: return CLI_REASON_NONE;
  }
}

static void join_forget_ticket(cli_t *cli);

static int handle_error(cli_t *cli, const json_t *msg) {
  nq_error_msg_t e;
  nq_proto_err_t err;
  if (nq_error_parse(msg, &e, &err) != 0) {
    server_broke_protocol(cli, "error", &err);
    return 0;
  }
  if (e.fatal) {
    cli_reason_t why = fatal_code_reason(e.code);
    if (why != CLI_REASON_NONE) {
      const char *what = why == CLI_REASON_AUTH    ? (cli->joining     ? "sign-up refused"
                                                      : cli->enrolling ? "enrolment refused"
                                                                       : "authentication refused")
                         : why == CLI_REASON_BANNED  ? "this client is banned"
                         : why == CLI_REASON_VERSION ? "protocol version mismatch"
                                                     : "protocol error";
      if (e.code == NQ_ERR_UPGRADE_REQUIRED)
        nq_log(NQ_LOG_ERROR, "upgrade required: this nq-client %s speaks protocol %d..%d and the "
               "server needs %lld or newer; install a newer nq-client (server says: %s)",
               NQ_VERSION_STRING, NQ_PROTO_VERSION_MIN, NQ_PROTO_VERSION_MAX,
               (long long)e.min_version, e.message);
      else
        nq_log(NQ_LOG_ERROR, "%s: server says %s: %s", what, e.name, e.message);
      if (e.code == NQ_ERR_AUTH && cli->token_stored)
        nq_log(NQ_LOG_ERROR, "the token stored in %s/token was refused; remove that file to "
               "enrol again with --enrol", cli->j.dir);
      if (e.code == NQ_ERR_SIGNUP_REJECTED) join_forget_ticket(cli);
      cli_leave_why(cli, why, "%s: server says %s: %s", what, e.name, e.message);
    } else if (e.code == NQ_ERR_RATE_LIMITED && cli->joining) {
      /* The sign-up limits say when to come back: the message names the time. */
      nq_log(NQ_LOG_ERROR, "sign-up refused for now: %s", e.message);
      cli->retry_after = e.retry_after;
    } else {
      nq_log(NQ_LOG_WARN, "server closed the session: %s: %s", e.name, e.message);
      if (e.code == NQ_ERR_BUSY) cli->retry_after = e.retry_after, cli->retry_busy = 1;
    }
    nq_conn_close(cli->conn, NULL, NULL);
    return 0;
  }
  if (e.id > 0 && cli_sent_find(cli, e.id)) {
    /* A refused result will never be accepted: keeping it would only re-send it forever. */
    nq_log(NQ_LOG_WARN, "result %" PRId64 " refused: %s (%s); dropped from the journal", e.id,
           e.name, e.message);
    cli_report_answered(cli, e.id);
    return 1;
  }
  cli_lane_t *ln = e.id > 0 ? cli_lane_of(cli, e.id) : NULL;
  if (ln) {
    if (e.code == NQ_ERR_UNKNOWN_ASSIGNMENT) {
      /* Decided, or not ours any more: its result could only be late. Stop and forget it. */
      nq_log(NQ_LOG_WARN, "assignment %" PRId64 " is no longer needed (%s: %s): unit %s dropped",
             e.id, e.name, e.message, ln->cur.unit);
      ln->cur_drop = 1;
      cli_worker_cancel(&ln->worker, e.id);
    } else {
      /* lease_expired: another client has the unit too, but ours is still taken until it is
       * decided, so it is worth finishing (a resumed unit is often most of the way). */
      nq_log(NQ_LOG_INFO, "lease of assignment %" PRId64 " not extended (%s: %s); finishing "
             "unit %s anyway", e.id, e.name, e.message, ln->cur.unit);
      ln->cur.unconfirmed = 0;
    }
    return 0;
  }
  nq_log(NQ_LOG_WARN, "server error %s: %s", e.name, e.message);
  return 0;
}

/* No job runs on the server (welcome or no_work `waiting`): ask again later, the interval doubling
 * from the server's retry_after up to WAIT_MAX_S, with the session kept open. The next job's work
 * comes with the answer to a get_work, as any work does. */
static void job_waiting(cli_t *cli, int64_t retry_after) {
  int first = cli->wait_s == 0;
  int64_t s = first ? retry_after : 2 * (int64_t)cli->wait_s;
  cli->wait_s = (int)(s < 1 ? 1 : s > WAIT_MAX_S ? WAIT_MAX_S : s);
  nq_log(first ? NQ_LOG_INFO : NQ_LOG_DEBUG, "no job runs on the server now (%ld unit(s) solved "
         "here so far); waiting for the next one, asking again in %d s", cli->units_done,
         cli->wait_s);
  cli->nowork_wait = 1;
  cli_retry_in(cli, (uint64_t)cli->wait_s * 1000);
}

/* ---- joining (--join) ---- */

#define OWNER_KEY_FILE "owner.key"
#define TICKET_FILE "signup.ticket"

static void join_forget_ticket(cli_t *cli) {
  char path[4096];
  cli->ticket[0] = '\0';
  if (nq_path_join(path, sizeof path, cli->j.dir, TICKET_FILE) == 0) unlink(path);
}

/* A file of one secret line in the state folder, 0600. */
static int join_write(cli_t *cli, const char *name, const char *secret) {
  char line[256];
  int n = snprintf(line, sizeof line, "%s\n", secret);
  int rc = n > 0 && (size_t)n < sizeof line
               ? nq_file_replace(cli->j.dir, name, line, (size_t)n, 0600) : NQ_EINVAL;
  memset(line, 0, sizeof line);
  return rc;
}

/* Joined: the token is this machine's, the owner key is the volunteer's (printed once, kept in
 * the state folder); then hello with the token on this connection. */
static void joined(cli_t *cli, const nq_signup_reply_t *r) {
  const cli_config_t *cfg = cli->cfg;
  if (strlen(r->token) >= sizeof cli->token || cli_token_store(&cli->j, r->token) != 0 ||
      join_write(cli, OWNER_KEY_FILE, r->owner_key) != 0) {
    nq_log(NQ_LOG_ERROR, "joined as owner %s but cannot store the keys in %s", r->owner,
           cli->j.dir);
    cli_leave(cli, CLI_REASON_SETUP);
    nq_conn_close(cli->conn, NULL, NULL);
    return;
  }
  strcpy(cli->token, r->token);
  join_forget_ticket(cli);
  cli->joining = 0;
  nq_log(NQ_LOG_INFO, "joined %s:%d as owner %s%s%s, this machine as client %s; token stored "
         "in %s/token, owner key in %s/%s", cfg->host, cfg->port, r->owner,
         cfg->public_name ? ", shown as " : " (anonymous)", cfg->public_name ? cfg->public_name : "",
         r->client, cli->j.dir, cli->j.dir, OWNER_KEY_FILE);
  /* Printed once, to the terminal of whoever ran --join: the key enrols more machines. */
  printf("You joined %s:%d as owner %s. Your owner key (also in %s/%s, mode 0600; keep it "
         "private):\n  %s\nTo add a second machine under the same owner, copy that file to it "
         "and run:\n  nq-client --server %s:%d --enrol-file owner.key --name OTHER-NAME%s%s\n",
         cfg->host, cfg->port, r->owner, cli->j.dir, OWNER_KEY_FILE, r->owner_key, cfg->host,
         cfg->port, cfg->ca ? " --ca " : "", cfg->ca ? cfg->ca : "");
  fflush(stdout);
  nq_hello_t h = {NQ_PROTO_VERSION, NQ_ROLE_CLIENT, cli->token, NULL, NULL, NQ_SOLVER_VERSION,
                  cfg->threads > 0 ? cfg->threads : 1, "nq-client " NQ_VERSION_STRING,
                  cfg->public_name, 0, 0, 0, !cfg->exit_when_done, own_kernel(cli)};
  if (cli_send(cli, nq_hello_pack(&h)) != 0) nq_conn_close(cli->conn, NULL, NULL);
}

static int handle_signup_reply(cli_t *cli, const json_t *msg) {
  nq_signup_reply_t r;
  nq_proto_err_t err;
  if (!cli->joining) {
    nq_log(NQ_LOG_WARN, "unexpected signup_reply");
    nq_conn_close(cli->conn, nq_errcode_name(NQ_ERR_UNKNOWN_TYPE), "expected welcome");
    return 0;
  }
  if (nq_signup_reply_parse(msg, &r, &err) != 0) {
    server_broke_protocol(cli, "signup_reply", &err);
    return 0;
  }
  if (r.state == NQ_SIGNUP_JOINED) {
    joined(cli, &r);
    return 0;
  }
  if (r.ticket) {
    snprintf(cli->ticket, sizeof cli->ticket, "%s", r.ticket);
    if (join_write(cli, TICKET_FILE, r.ticket) != 0)
      nq_log(NQ_LOG_WARN, "cannot keep the sign-up ticket in %s: a restart asks anew",
             cli->j.dir);
  }
  nq_log(r.ticket ? NQ_LOG_INFO : NQ_LOG_DEBUG, "sign-up request %lld waits for the operator's "
         "approval (nq-admin owner approve %lld); asking again every %lld s",
         (long long)r.request, (long long)r.request, (long long)r.retry_after);
  cli_outcome(cli, "sign-up waiting for approval");
  cli->retry_after = r.retry_after;
  cli->attempt = 0;
  nq_conn_close(cli->conn, NULL, NULL);
  return 0;
}

/* ---- news ---- */

#define NEWS_FILE "news.seen"

/* Log each item not logged before, oldest first, once per state folder. */
static void news_log(cli_t *cli, const nq_news_t *n) {
  int64_t top = cli->news_seen;
  for (int i = n->n - 1; i >= 0; i--) {
    const nq_news_item_t *it = &n->items[i];
    if (it->id <= cli->news_seen) continue;
    char when[32];
    time_t t = (time_t)it->at;
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime_r(&t, &tm));
    nq_log(NQ_LOG_INFO, "news from the project (%s): %s", when, it->text);
    if (it->id > top) top = it->id;
  }
  if (top == cli->news_seen) return;
  cli->news_seen = top;
  char line[32];
  int len = snprintf(line, sizeof line, "%lld\n", (long long)top);
  if (nq_file_replace_volatile(cli->j.dir, NEWS_FILE, line, (size_t)len, 0644) != 0)
    nq_log(NQ_LOG_DEBUG, "cannot keep %s/%s: news may be logged again", cli->j.dir, NEWS_FILE);
}

void cli_session_news_load(cli_t *cli) {
  char path[4096], line[32];
  if (nq_path_join(path, sizeof path, cli->j.dir, NEWS_FILE) == 0 &&
      nq_file_read_line(path, line, sizeof line) == 0)
    cli->news_seen = strtoll(line, NULL, 10);
}

static int handle_news(cli_t *cli, const json_t *msg) {
  nq_news_t n;
  nq_proto_err_t err;
  if (nq_news_parse(msg, &n, &err) != 0) {
    server_broke_protocol(cli, "news", &err);
    return 0;
  }
  news_log(cli, &n);
  return 0;
}

/* The server said this client's credit (welcome, ack): the volunteer's status shows it. */
static void credit_heard(cli_t *cli, const char *credit) {
  snprintf(cli->st.credit, sizeof cli->st.credit, "%s", credit);
  cli->st.has_credit = 1;
  cli->st.credit_at = (int64_t)time(NULL);
}

static int handle_welcome(cli_t *cli, const json_t *msg) {
  nq_welcome_t w;
  nq_proto_err_t err;
  if (nq_welcome_parse(msg, &w, &err) != 0) {
    server_broke_protocol(cli, "welcome", &err);
    return 0;
  }
  const char *client = w.client ? w.client : "?";
  if (cli->enrolling) {
    if (!w.token || !*w.token || strlen(w.token) >= sizeof cli->token) {
      nq_log(NQ_LOG_ERROR, "enrolment: the server sent no usable token");
      cli_leave(cli, CLI_REASON_PROTOCOL);
      nq_conn_close(cli->conn, NULL, NULL);
      return 0;
    }
    strcpy(cli->token, w.token);
    if (cli_token_store(&cli->j, w.token) != 0) {
      nq_log(NQ_LOG_ERROR, "enrolled as %s but cannot store the token in %s", client,
             cli->j.dir);
      cli_leave(cli, CLI_REASON_SETUP);
      nq_conn_close(cli->conn, NULL, NULL);
      return 0;
    }
    cli->enrolling = 0;
    nq_log(NQ_LOG_INFO, "enrolled as %s; token stored in %s/token", client, cli->j.dir);
  }
  int pi = w.progress_interval > PROGRESS_INTERVAL_MAX ? PROGRESS_INTERVAL_MAX
                                                       : w.progress_interval;
  cli_set_state(cli, CLI_STATE_READY);
  cli->attempt = 0;
  cli->progress_interval = pi;
  cli->paused_told = 0; /* a new session: a pause is told again (tell_pause) */
  cli->paused_told_at = 0;
  cli->max_outstanding = w.max_outstanding;
  nq_log(NQ_LOG_INFO, "session open as %s: job N=%d %s, progress every %d s", client, w.job_n,
         w.job_state == NQ_JOB_DONE ? "done" : w.job_state == NQ_JOB_WAITING ? "done (waiting "
         "for the next job)" : "running", pi);
  in_reach(cli);
  cli_outcome(cli, "session open");
  snprintf(cli->st.client, sizeof cli->st.client, "%s", client);
  cli->st.job_n = w.job_n;
  /* What the volunteer is told: the public name, the page, the credit (optional fields). */
  if (w.shown_as) snprintf(cli->st.shown_as, sizeof cli->st.shown_as, "%s", w.shown_as);
  if (w.page) snprintf(cli->st.page, sizeof cli->st.page, "%s", w.page);
  if (w.credit) credit_heard(cli, w.credit);
  if (w.evidence_key)
    nq_log(NQ_LOG_INFO, "the server signs its evidence with key %s (nq-verify FILE --key %s)",
           w.evidence_key, w.evidence_key);
  news_log(cli, &w.news);
  if (w.shown_as || w.credit)
    nq_log(NQ_LOG_INFO, "credited as %s%s%s, credit %s nodes", w.shown_as ? w.shown_as : "?",
           w.page ? " on " : "", w.page ? w.page : "", w.credit ? w.credit : "?");
  uint64_t idle = (uint64_t)(pi * 3 > 180 ? pi * 3 : 180) * 1000;
  nq_conn_set_idle_timeout(cli->conn, idle);
  cli_lanes_pace(cli, pi); /* units that ran on while we were away report at the new pace */
  cli_report_send_journal(cli);
  for (int i = 0; i < cli->nlanes; i++) /* do we still hold them? */
    if (cli->lanes[i].running && cli->lanes[i].cur.unconfirmed) cli_lane_progress(&cli->lanes[i]);
  if (w.job_state == NQ_JOB_DONE) {
    nq_log(NQ_LOG_INFO, "the job is done; nothing to do");
    cli_job_finished(cli);
  } else if (w.job_state == NQ_JOB_WAITING) {
    job_waiting(cli, DEFAULT_RETRY_S);
  }
  return 1;
}

/* The server named a kernel this machine cannot run (kernel-diverse verification): say so, and
 * the server leases the unit elsewhere; nothing of it is kept here. */
static void refuse_kernel(cli_t *cli, const cli_assign_t *a) {
  char msg[96];
  snprintf(msg, sizeof msg, "this machine cannot run kernel %s", a->kernel);
  nq_error_msg_t e = {.code = NQ_ERR_NO_KERNEL, .message = msg, .id = a->id};
  nq_log(NQ_LOG_INFO, "assignment %" PRId64 " (%s) names kernel %s, which this machine lacks: "
         "refused", a->id, a->unit, a->kernel);
  cli_send(cli, nq_error_pack(&e));
}

static int handle_work(cli_t *cli, const json_t *msg) {
  nq_work_t w;
  nq_proto_err_t err;
  if (nq_work_parse(msg, &w, &err) != 0) {
    server_broke_protocol(cli, "work", &err);
    return 0;
  }
  cli->getwork_inflight = 0;
  size_t fresh = 0;
  int64_t now = (int64_t)time(NULL);
  for (int i = 0; i < w.n; i++) {
    cli_assign_t as;
    memset(&as, 0, sizeof as);
    as.id = w.a[i].id;
    snprintf(as.unit, sizeof as.unit, "%s", w.a[i].unit);
    snprintf(as.kernel, sizeof as.kernel, "%s", w.a[i].kernel ? w.a[i].kernel : "");
    /* On our clock: the lease counts from receipt, so clock skew does not matter. */
    as.deadline = now + w.a[i].lease;
    /* The server re-sends what we hold (so we still hold it); never run one twice. */
    cli_lane_t *held = cli_lane_of(cli, as.id);
    if (held) held->cur.unconfirmed = 0;
    if (held || cli_lane_next_of(cli, as.id) || cli_queue_confirm(cli, as.id) ||
        cli_sent_find(cli, as.id) || cli_held_find(cli, as.id) ||
        (cli->journal_n != 0 && cli_journal_has(&cli->j, as.id)))
      continue;
    if (cli->reason != CLI_REASON_NONE) continue;
    if (as.kernel[0] && !cli_kernel_can_run(as.kernel)) {
      refuse_kernel(cli, &as);
      continue;
    }
    /* Recorded unless the units are short (lazy records): the server re-sends what we hold. */
    if (cli_lazy(cli, cli->last_seconds))
      ;
    else if (cli_assigned_put(&cli->j, &as) != 0)
      nq_log(NQ_LOG_WARN, "cannot record assignment %" PRId64 " on disk", as.id);
    else
      as.on_disk = 1;
    if (cli_queue_push(cli, &as) != 0) continue;
    fresh++;
    nq_log(NQ_LOG_DEBUG, "assignment %" PRId64 ": %s", as.id, as.unit);
    cli->st.job_n = atoi(as.unit); /* a unit's text begins with its N: the job may have changed */
  }
  if (fresh && cli->wait_s) {
    nq_log(NQ_LOG_INFO, "work again: job N=%d", cli->st.job_n);
    cli->wait_s = 0;
  }
  if (!fresh) {
    /* Only re-sent assignments: there is nothing new now, so do not ask again at once. */
    cli->nowork_wait = 1;
    cli_retry_in(cli, DEFAULT_RETRY_S * 1000);
  }
  return 1;
}

static int handle_no_work(cli_t *cli, const json_t *msg) {
  nq_no_work_t nw;
  nq_proto_err_t err;
  if (nq_no_work_parse(msg, &nw, &err) != 0) {
    server_broke_protocol(cli, "no_work", &err);
    return 0;
  }
  cli->getwork_inflight = 0;
  if (nw.reason == NQ_NOWORK_DONE) {
    nq_log(NQ_LOG_INFO, "the job is done (%ld unit(s) solved here)", cli->units_done);
    cli_job_finished(cli);
    return 1;
  }
  if (nw.reason == NQ_NOWORK_WAITING) {
    job_waiting(cli, nw.retry_after);
    return 1;
  }
  int64_t after = nw.retry_after < 1 ? 1 : nw.retry_after > 60 ? 60 : nw.retry_after;
  nq_log(NQ_LOG_DEBUG, "no work (%s), asking again in %" PRId64 " s",
         nq_nowork_reason_name(nw.reason), after);
  cli->nowork_wait = 1;
  cli_retry_in(cli, (uint64_t)after * 1000);
  return 1;
}

static int handle_ack(cli_t *cli, const json_t *msg) {
  nq_ack_t a;
  nq_proto_err_t err;
  if (nq_ack_parse(msg, &a, &err) != 0) {
    server_broke_protocol(cli, "ack", &err);
    return 0;
  }
  nq_log(a.status == NQ_ACK_ACCEPTED ? NQ_LOG_DEBUG : NQ_LOG_INFO, "ack %" PRId64 ": %s", a.id,
         nq_ack_status_name(a.status));
  if (a.credit) credit_heard(cli, a.credit); /* fresh with every answer, not only at welcome */
  /* Its receipt, kept for the check after the job (receipts.h). */
  int krc = cli_receipt_keep(cli->cfg->state, &a);
  if (krc) nq_log(NQ_LOG_DEBUG, "receipt of %" PRId64 " not kept: %s", a.id, nq_strerror(krc));
  cli_report_answered(cli, a.id);
  return 1;
}

static int handle_lease(cli_t *cli, const json_t *msg) {
  nq_lease_t l;
  nq_proto_err_t err;
  if (nq_lease_parse(msg, &l, &err) != 0) {
    server_broke_protocol(cli, "lease", &err);
    return 0;
  }
  nq_log(NQ_LOG_DEBUG, "lease of %" PRId64 " extended", l.id);
  return 0;
}

static int handle_bye(cli_t *cli, const json_t *msg) {
  (void)msg;
  nq_log(NQ_LOG_INFO, "server said bye");
  nq_conn_close(cli->conn, NULL, NULL);
  return 0;
}

/* What the server may send a client session, and in which state: before welcome (HELLO) only
 * welcome or an error; then (READY) the answers to our requests, bye and errors. */
enum { IN_HELLO = 1, IN_READY = 2 };
static const struct {
  int when;
  int (*fn)(cli_t *cli, const json_t *msg); /* 1: the scheduler should look (cli_pump) */
} handlers[NQ_MSG_COUNT] = {
    [NQ_MSG_ERROR] = {IN_HELLO | IN_READY, handle_error},
    [NQ_MSG_WELCOME] = {IN_HELLO, handle_welcome},
    [NQ_MSG_SIGNUP_REPLY] = {IN_HELLO, handle_signup_reply},
    [NQ_MSG_NEWS] = {IN_READY, handle_news},
    [NQ_MSG_WORK] = {IN_READY, handle_work},
    [NQ_MSG_NO_WORK] = {IN_READY, handle_no_work},
    [NQ_MSG_ACK] = {IN_READY, handle_ack},
    [NQ_MSG_LEASE] = {IN_READY, handle_lease},
    [NQ_MSG_BYE] = {IN_READY, handle_bye},
};

int cli_session_frame(cli_t *cli, const json_t *msg) {
  const char *name;
  nq_msg_type_t t = nq_msg_type(msg, &name);
  cli->st.last_contact = (int64_t)time(NULL);
  int when = cli->state == CLI_STATE_HELLO ? IN_HELLO : IN_READY;
  if (handlers[t].fn && (handlers[t].when & when)) return handlers[t].fn(cli, msg);
  if (when == IN_HELLO) {
    nq_log(NQ_LOG_WARN, "unexpected %s before welcome", name ? name : "message");
    nq_conn_close(cli->conn, nq_errcode_name(NQ_ERR_UNKNOWN_TYPE), "expected welcome");
  } else {
    /* Ignored: a newer server may send something informative we do not know yet. */
    nq_log(NQ_LOG_WARN, "unexpected message type '%s'", name ? name : "");
  }
  return 0;
}
/* Pick the credentials: --token, else the stored token, else enrol with --enrol. */
int cli_session_credentials(cli_t *cli) {
  const cli_config_t *cfg = cli->cfg;
  if (cfg->token) {
    if (strlen(cfg->token) >= sizeof cli->token) return NQ_EINVAL;
    strcpy(cli->token, cfg->token);
    return 0;
  }
  int rc = cli_token_load(&cli->j, cli->token, sizeof cli->token);
  if (rc == 0) {
    cli->token_stored = 1;
    if (cfg->enrol || cfg->join)
      nq_log(NQ_LOG_INFO, "already %s: using the token in %s", cfg->join ? "joined" : "enrolled",
             cli->j.dir);
    return 0;
  }
  if (rc != NQ_ENOTFOUND) {
    nq_log(NQ_LOG_ERROR, "cannot read %s/token: %s", cli->j.dir, nq_strerror(rc));
    return rc;
  }
  if (cfg->join) {
    char path[4096];
    cli->joining = 1;
    if (nq_path_join(path, sizeof path, cli->j.dir, TICKET_FILE) == 0 &&
        nq_file_read_line(path, cli->ticket, sizeof cli->ticket) == 0)
      nq_log(NQ_LOG_INFO, "asking about the sign-up request whose ticket is in %s", path);
    else
      cli->ticket[0] = '\0';
    return 0;
  }
  if (!cfg->enrol) {
    nq_log(NQ_LOG_ERROR, "no token: give --token, or --enrol KEY once, or --join (state dir %s)",
           cli->j.dir);
    return NQ_EAUTH;
  }
  cli->enrolling = 1;
  return 0;
}

