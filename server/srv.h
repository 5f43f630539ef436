/* nq-server: the server context -- one libuv loop, the TLS listener, the connections, the store and
 * the scheduler, and the group commit that ties requests to transactions (docs/server.md).
 *
 * Request flow. Every frame a connection delivers is queued in the current batch (srv_batch_*);
 * a uv_check handle runs once per loop iteration, after the poll phase has read everything that
 * arrived, and handles the whole batch inside ONE store transaction (srv_proto_handle per request).
 * Replies are collected and sent only after the commit succeeded; if it fails every reply of the
 * batch becomes a fatal `internal` error. Hence an acknowledged result is always durable, and the
 * replies to one connection go out in the order of its requests.
 *
 * Nothing here is thread-safe: everything runs on the loop thread.
 */
#ifndef SRV_SRV_H
#define SRV_SRV_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "datadir.h"
#include "http.h"
#include "metrics.h"
#include "nq/conn.h"
#include "peers.h"
#include "srv_backup.h"
#include "srv_stall.h"
#include "srv_outage.h"
#include "srv_root.h"
#include "nq/proto.h"
#include "nq/tls.h"
#include "nq/job_opts.h"
#include "sched.h"
#include "store_api.h"

#define SRV_MAX_HOSTNAMES 16
/* Per-connection memory (docs/server.md, "Memory per connection"). Output queued in user space
 * past the high-water mark stops the connection's input until half of it has drained; past the
 * hard limit the connection is dropped. A connection has at most SRV_CONN_MAX_PENDING requests
 * read but not answered; then its input waits for the batch that answers them. */
#define SRV_CONN_HIGH_WATER (32u << 10)
#define SRV_CONN_HARD_LIMIT (1u << 20)
#define SRV_CONN_MAX_PENDING 16
/* Kernel socket buffers per connection (each way; Linux doubles it): fixed, so that a peer that
 * does not read pins at most this much kernel memory, and its output reaches the high-water mark
 * after a few replies rather than megabytes. Frames are at most 64 KiB. */
#define SRV_CONN_SOCK_BUF (64 << 10)
/* Requests per batch (one transaction) before connections are held: replies are built in full
 * before the commit, so this bounds their memory (a 64-assignment work reply is about 20 KiB as
 * a JSON tree). */
#define SRV_BATCH_MAX 512
/* Successful logins logged one by one per --log-summary interval; the rest are summarised. */
#define SRV_LOGIN_LINES_MAX 20
/* The same bounds weighed by what the replies may hold (at --max-outstanding 256 a
 * `work` answer re-sends up to 256 assignments, four times the 64 these counts were sized for).
 * A get_work weighs min(want, max_outstanding) assignments, any other request 1. A connection
 * is held once its unanswered requests weigh SRV_CONN_PENDING_WEIGHT, every connection that
 * delivers a frame once the batch weighs SRV_BATCH_WEIGHT. */
#define SRV_CONN_PENDING_WEIGHT 256
/* The memory bound the tests hold the server to (docs/server.md, "Memory per connection"):
 * 64 MiB + this many KiB per connection, which grows with what --max-outstanding lets one
 * answer hold (a `work` re-sending 256 assignments is 28 KiB on the wire). */
#define SRV_CONN_MEM_KIB(max_outstanding) (128L + (long)(max_outstanding) / 2)
#define SRV_BATCH_WEIGHT (SRV_BATCH_MAX * 64)

typedef struct srv_config_s {
  /* The job's settings (nq/job_opts.h: n, depth, unit_seconds, max_depth, quorum, max_results,
   * diverse_kernels). With neither depth nor unit_seconds an existing job is resumed as it is and
   * a new one gets units of NQ_PLAN_DEFAULT_UNIT_SECONDS; a new job's diverse_kernels -1 (the
   * default) is 2 for an N with no published count, 0 otherwise (nq_jobopts_kernels_default). An
   * existing job keeps its own. */
  nq_jobopts_t job;
  char listen_host[64];
  int listen_port;
  const char *data_dir;
  /* The scheduler's settings (--lease-seconds, --quorum-distinct, ...), handed to it whole. */
  srv_sched_config_t sched;
  int max_conns, idle_timeout;
  const char *hostnames[SRV_MAX_HOSTNAMES + 1]; /* NULL-terminated */
  int exit_when_done;
  int export_names;     /* /api/export writes the clients' and owners' names, not pseudonyms */
  int handle_signals;   /* install SIGINT/SIGTERM handlers (the program does; tests may not) */
  int sweep_ms;         /* lease expiry sweep period; default 5000 */
  int exit_grace_ms;    /* --exit-when-done: time between "done" and shutdown; default 2000 */
  /* The read-only HTTP status page and /metrics (docs/http.md): http.host/port, its limits.
   * http_off: none at all. http_required: a failure to listen stops the start (the address was
   * given with --http); otherwise it is logged and the server runs without the page. */
  srv_http_cfg_t http;
  int http_off, http_required;
  /* The public page's address told to clients in welcome (--page-url); NULL: http://ADDR:PORT/
   * of the page when it listens on a named address, nothing when on a wildcard one. */
  const char *page_url;
  int hello_timeout;    /* s from accept to a hello (TLS handshake included); default 10 */
  int max_preauth_per_addr; /* pre-auth connections per address (peers.h); default 16, 0 = any */
  int max_preauth;      /* pre-auth connections in all: past it (or past max_conns) the oldest
                           one is closed to admit a new one; default 0 = max_conns / 2 */
  int enrol_per_addr;   /* enrolments per address: burst and per hour; default 20, 0 = any */
  int max_clients;      /* enrolled clients at most; default 100000, 0 = no cap */
  int new_ca;             /* --new-ca: make a new CA even for a database with enrolled clients */
  int keep_default_enrol; /* enrolment with the server's own key (owner `default`)
                             stays open after owners exist (--keep-default-enrol); default 0 */
  int auth_fail_limit;  /* failed logins per address and minute before they are slowed;
                           default 20, 0 = never */
  int auth_fail_delay;  /* s a slowed refusal waits; default 5 */
  int summary_seconds;  /* interval of the refusal summaries in the log; default 10 */
  /* Scheduled backups (srv_backup.h): none while backup_dir is NULL. */
  const char *backup_dir;
  int backup_every;     /* s between backups; default 3600 */
  int backup_keep;      /* good backups kept; default 24 */
  int outage_max;       /* most seconds a lease is extended by after an outage (srv_outage.h);
                           default 7 days, 0 = never */
  /* The server certificate (srv_cert.h): a chain and its key from elsewhere (--cert, --key: a
   * public CA's, e.g. from an ACME client); NULL: the data directory's, from its private CA. */
  const char *cert_file, *key_file;
  int cert_check;       /* s between looks at the certificate files for a change; default 60 */
  int cert_warn_days;   /* a certificate expiring within this many days is a WARN; default 14 */
  /* Sign-ups (srv_signup.h): volunteers joining without the operator (nq-client --join). */
  int signup;           /* SRV_SIGNUP_OFF (default), _OPEN, _APPROVE */
  int signup_per_addr;  /* admitted per address (IPv4; IPv6 /64) and hour; default 3 */
  int signup_per_net;   /* admitted per network (IPv4 /24; IPv6 /48) and hour; default 10 */
  int signup_per_day;   /* admitted in all per day; default 200 */
  int signup_pending;   /* requests waiting for the operator at most (approve); default 100 */
  int signup_poll;      /* s a pending request is told to wait before asking again; default 60 */
} srv_config_t;

/* --signup: who may join by themselves. */
enum { SRV_SIGNUP_OFF = 0, SRV_SIGNUP_OPEN, SRV_SIGNUP_APPROVE };

/* Defaults for every option (n = 0: must be set): the option tables' (srv_opts.c). */
void srv_config_default(srv_config_t *cfg);
/* Parse "host:port", "[v6]:port" or ":port" into cfg->listen_host / listen_port. NQ_EINVAL. */
int srv_config_set_listen(srv_config_t *cfg, const char *spec);

typedef struct srv_s srv_t;

/* The connection state machine (docs/server.md). */
typedef enum {
  SRV_CONN_AWAIT_HELLO = 0, /* TLS up (or coming), no hello yet */
  SRV_CONN_CLIENT,          /* authenticated volunteer */
  SRV_CONN_ADMIN,           /* authenticated operator */
  SRV_CONN_DEAD             /* a fatal error was sent or the transport closed; ignore frames */
} srv_conn_state_t;

typedef struct srv_conn_s {
  srv_t *srv;
  nq_conn_t *conn;          /* NULL once the transport has closed (on_close ran) */
  srv_conn_state_t state;
  int busy;                 /* over --max-conns: send `busy` once TLS is up, then close */
  int refused;              /* dropped at accept (pre-auth limit) or evicted to admit a newer
                               connection: no longer counted in nconns */
  srv_peer_t *peer;         /* its address's entry (peers.h), NULL if untracked */
  int preauth;              /* counted in peer->preauth and on srv_t's pre-auth list (until
                               hello succeeds or it closes) */
  struct srv_conn_s *pa_prev, *pa_next; /* the pre-auth list, oldest first */
  int held;                 /* input held (SRV_CONN_MAX_PENDING): on srv_t.held, one ref */
  int pending_w;            /* weight of its requests in the current batch */
  struct srv_conn_s *held_next;
  uint64_t close_at_ms;     /* a delayed refusal (slowed address): close then, with ... */
  nq_errcode_t close_code;  /* ... this error frame */
  char close_msg[160];
  int64_t client_id;        /* role client */
  char name[SRV_NAME_MAX + 1];
  uint64_t opened_ms;       /* uv_now at accept (hello deadline) */
  uint64_t last_frame_ms;   /* uv_now at the last frame (idle timeout) */
  int waits;                /* role client: its hello said `wait` (it waits between jobs) */
  int signed_up;            /* it sent a signup (srv_signup.h): only a hello may follow */
  int refs;                 /* batch entries pointing here; freed when 0 and conn == NULL */
  struct srv_conn_s *prev, *next;
} srv_conn_t;

/* One queued request and, once handled, its reply. */
typedef struct srv_req_s {
  srv_conn_t *sc;
  json_t *msg;          /* the request (owned reference) */
  json_t *reply;        /* the reply to send after commit, or NULL */
  int close;            /* instead of a reply: close the connection ... */
  nq_errcode_t err_code; /* ... after this fatal error frame (NQ_ERR_NONE: without one) */
  char err_msg[160];
  int handled;          /* srv_proto_handle ran for it (its reply depends on the commit) */
  int weight;           /* what its reply may hold (SRV_BATCH_WEIGHT) */
} srv_req_t;

struct srv_s {
  uv_loop_t *loop;
  srv_config_t cfg;
  srv_datadir_t dd;
  srv_store_t *store;
  srv_sched_t sched;
  nq_tls_ctx_t *tls;
  int job_done;        /* the job is finished (totals logged) */
  int done_pending;    /* a request of the current batch finished the job; log after commit */
  int reopen_pending;  /* ... or re-opened the finished job (a spot check, a ban) */
  int ban_pending;     /* a request of the current batch banned a client; close it after commit */
  int queue_pending;   /* a request of the current batch queued a job; start it if none runs */
  int next_pending;    /* ... or asked for the next job now (1; 2: setting the running one aside) */
  int stopping;        /* shutdown has begun */
  int exit_code;
  double create_logged; /* job creation: seconds at the last progress line */
  char bound[96];      /* the address actually listened on */
  char evkey_fpr[65];  /* the evidence signing key's fingerprint (evkey.h) */
  srv_root_t root;     /* the job's results' root, as the page shows it (srv_root.h) */

  uv_tcp_t listener;
  uv_check_t batch_check;
  uv_timer_t sweep_timer; /* lease expiry */
  uv_timer_t conn_timer;  /* hello / idle timeouts, once a second */
  uv_timer_t exit_timer;  /* --exit-when-done grace */
  uv_timer_t summary_timer; /* refusal summaries (peers.h) */
  uv_idle_t idle;         /* keeps the loop from blocking while a batch is waiting */
  uv_signal_t sigint, sigterm;
  int handles_open;       /* which handles exist (bit per handle), for an orderly close */

  srv_conn_t *conns;      /* every live connection */
  int nconns;
  srv_conn_t *held;       /* connections whose input waits for the current batch */
  srv_conn_t *pa_head, *pa_tail; /* connections that have not logged in, oldest first */
  int npreauth, preauth_cap;
  int accepts_turn;       /* connections accepted in this loop turn (ACCEPT_BURST) */
  int accept_deferred;    /* one is left pending in libuv, to be taken in the check phase */
  srv_peers_t peers;      /* per-address limits and refusal counts */
  int login_lines;        /* login INFO lines in this summary interval (SRV_LOGIN_LINES_MAX) */

  srv_req_t *batch;       /* the requests of this loop iteration */
  size_t nbatch, capbatch;
  long batch_w;           /* the batch's weight (SRV_BATCH_WEIGHT) */
  uint64_t batches, batch_reqs, commits_failed; /* counters for logs / admin status */
  srv_metrics_t metrics;  /* for /metrics */
  struct srv_web_s *web;  /* the HTTP status page (web.h), NULL when off */
  srv_backup_t *backup;   /* scheduled backups (srv_backup.h), NULL when off */
  srv_stall_t *stall;     /* the stalled units' count (srv_stall.h) */
  srv_rooter_t *rooter;   /* the root's periodic take into `root` (srv_root.h) */
  srv_outage_t *outage;   /* the alive stamps (srv_outage.h) */
  struct srv_cert_s *cert; /* the certificate's reloads and expiry (srv_cert.h) */
  int64_t signup_pruned;  /* when old sign-up rows were last pruned (srv_signup.c) */
  int news_pending;       /* a request of the current batch added news: tell the clients */
};

/* The project's newest news as a welcome or news message carries it: the items' storage and the
 * message's view of them. */
typedef struct srv_news_buf_s {
  srv_news_t items[NQ_PROTO_NEWS_MAX];
  nq_news_t msg;
} srv_news_buf_t;


/* Open the data dir, the store and the job, build the TLS context and start listening.
 * On failure everything acquired is released (call nothing else) and errbuf says why. Returns 0,
 * NQ_EIO, NQ_EINVAL, NQ_EEXIST (job exists with another depth), NQ_ETLS, NQ_ENOMEM. */
int srv_init(srv_t *s, uv_loop_t *loop, const srv_config_t *cfg, char *errbuf, size_t errlen);

/* Begin an orderly shutdown: stop accepting, finish the current batch, send `shutdown` to every
 * connection and close all handles; uv_run then returns once they are closed. Idempotent. */
void srv_stop(srv_t *s, int exit_code);

/* Release what the loop does not own (store, TLS context). Call after uv_run returned. */
void srv_free(srv_t *s);

/* The job is finished (logs the answer; the next queued job, or `done` to the clients and
 * --exit-when-done). */
void srv_job_finished(srv_t *s);
/* The finished job was re-opened (a spot check or a ban): it is running again. */
void srv_job_reopened(srv_t *s);

/* ---- srv_next.c: the job queue ---- */

/* The warning that a quorum by owner cannot be reached with the owners that exist (at start, and
 * when a queued job starts). */
void srv_warn_one_owner(srv_t *s);
/* srv_job_progress_cb of a job's creation: its progress lines in the log (arg: the srv_t). */
void srv_job_create_progress(const srv_job_progress_t *p, void *arg);

/* The creation spec of a job with these settings: its diverse_kernels resolved for its N
 * (nq_jobopts_kernels_default), progress lines on the log. */
srv_job_spec_t srv_job_spec_for(srv_t *s, const nq_jobopts_t *o);

/* The job to serve when nq-server was given no --n: the newest running job, else the newest done
 * one (srv_init then starts the next queued job), else the next queued job, made now. 0 and *job;
 * NQ_ERANGE (nothing to serve: errbuf says to give --n or queue a job), NQ_EIO. */
int srv_next_pick(srv_t *s, int64_t now, srv_job_t *job, char *errbuf, size_t errlen);
/* The newest running job: 0 and *job, NQ_ENOTFOUND, NQ_EIO. */
int srv_next_running(srv_t *s, srv_job_t *job);
/* When the served job is done (or force: the operator's `job next --force`, which sets a running
 * job aside): start the oldest queued job (made now: a big plan holds the loop for its creation,
 * logged as it goes), release the old job's leases, switch the scheduler to the new one and wake
 * the connected clients. Outside a transaction only. 1 if a job was started, SRV_NEXT_DONE if the
 * job started is done already (the caller finishes it: srv_job_finished), 0 if none is queued (or
 * the job is not done), < 0 on a store failure (logged). Entries that cannot start are marked
 * failed. */
#define SRV_NEXT_DONE 2
int srv_next_start(srv_t *s, int64_t now, int force);

/* ---- srv_proto.c ---- */

/* Handle one request inside the open batch transaction: sets r->reply, or r->close (with
 * r->err_code, fatal), possibly changes r->sc->state. Never sends anything itself. Every request
 * but a peer's non-fatal error frame ends with one of the two. */
void srv_proto_handle(srv_t *s, srv_req_t *r, int64_t now);
/* Fill b with the newest news (none is fine), as a welcome or news message carries it. 0, or the
 * store's error (logged). */
int srv_proto_news(srv_t *s, srv_news_buf_t *b);

#endif
