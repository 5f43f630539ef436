/* nq-client: the daemon's context, shared by its rooms (docs/design.md, the client's map).
 *
 * The daemon (cli.c) is split by what each part looks after, each room below the ones that use it,
 * so that calls only run down (no circle among client/ files):
 *
 *   cli.c      the conductor: setup, the events of the loop (connection callbacks, the solver
 *              workers, timers, signals), the client's own scheduler (cli_pump) and leaving
 *   session.c  the connection and its messages: hello/sign-up, welcome, work, acks, errors, news
 *   lanes.c    the lanes: solver workers, the units they run, progress and checkpoints
 *   report.c   the reporting: results sent, held in memory, the journal; the status file
 *   ctx.c      this context's small verbs: state, reasons, the work queue, sending
 *
 * A room never calls a room above it: what it needs of the conductor afterwards it says by its
 * return value (cli_session_frame: "ask the scheduler"), and the retry timer's callback, which
 * is the conductor's, is stored here (retry_cb) for the rooms that arm it (cli_retry_in).
 */
#ifndef CLI_CTX_H
#define CLI_CTX_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "cli_config.h"
#include "journal.h"
#include "status.h"
#include "worker.h"

#include "nq/conn.h"
#include "nq/gpu.h"
#include "nq/proto.h"
#include "nq/throttle.h"
#include "nq/tls.h"

#define DEFAULT_RETRY_S 10
/* Lazy records: while connected, a unit that solves in under LAZY_S seconds leaves no
 * file behind unless something goes wrong. Its assignment is not written to assigned/ (after a
 * crash the server re-sends the lease at the first get_work), and its result stays in memory
 * until the ack; a result not acknowledged within LAZY_MS, or any held at a disconnect or a stop,
 * is written to the journal as before. A crash (SIGKILL, power loss) loses at most 1.25 x LAZY_MS
 * of sub-second results, which the server's leases bring back: solving one again costs less than
 * the files did (five system calls and an ext4 create and unlink a unit, docs/performance.md). */
#define LAZY_S 1.0
#define LAZY_MS 1000

/* How far leaving has got, once a reason is set. */
typedef enum {
  LIFE_RUNNING = 0, /* working, or draining (reason set, finishing the reports) */
  LIFE_CLOSING,     /* cli_finish ran: the connection closes, then the handles */
  LIFE_RELEASED     /* every handle is closing; the state is DONE */
} cli_life_t;

/* A lane: one solver worker and the unit it runs. The CPU threads are one lane and each GPU is
 * a lane of its own (docs/gpu.md): each takes its own units from the queue and reports them, so
 * a device's results are the device's alone and the CPU's the CPU's. */
typedef struct cli_lane_s cli_lane_t;
struct cli_lane_s {
  cli_t *cli;
  int index;
  cli_worker_t worker;
  uv_timer_t progress_timer, ckpt_timer;
  int running;             /* the worker holds cur */
  cli_assign_t cur;        /* the running assignment */
  uint64_t cur_nodes, cur_nodes_sent;
  double cur_fraction, cur_seconds; /* from the worker: share done, solve time (all runs) */
  int cur_progressed;      /* a progress was sent for cur */
  int cur_drop;            /* the server no longer needs cur: stop it and forget it */
  uint32_t cur_saved;      /* finished tasks in cur's last checkpoint file */
  int cur_ckpt;            /* cur may have a checkpoint file (resumed from one, or saved) */
  int has_next;            /* next is handed to the worker, to start when cur is done */
  cli_assign_t next;       /* (fresh from the server: no file, no checkpoint) */
};

/* A result not written to the journal (lazy records): sent, awaiting its ack. */
typedef struct cli_held_s {
  nq_result_t r;
  uint64_t at;             /* uv_now when it was solved */
} cli_held_t;

#define CLI_LANES_MAX (1 + CLI_GPUS_MAX)

struct cli_s {
  const cli_config_t *cfg;
  uv_loop_t *loop;
  nq_tls_ctx_t *tls;
  cli_journal_t j;
  cli_lane_t lanes[CLI_LANES_MAX];
  int nlanes;              /* lanes started (their handles exist) */
  nq_throttle_t *throttle; /* the solver threads' priority, CPU limit and pause file */
  nq_gpu_t *gpus[CLI_GPUS_MAX]; /* the devices that passed their self-test (--gpu) */
  int ngpus;
  uv_timer_t retry_timer, stop_timer, status_timer;
  uv_signal_t sigint, sigterm;
  uv_async_t stop_async;   /* the system's stop events that are not signals (nq_sys_on_stop) */
  nq_conn_t *conn;
  cli_state_t state;
  cli_reason_t reason;
  char exit_why[CLI_STATUS_TEXT]; /* the reason in words, when its cause said more
                                     (cli_leave_why) */
  cli_life_t life;
  char token[CLI_TOKEN_MAX];
  int enrolling;           /* hello carries the enrolment key (no token yet) */
  int joining;             /* --join and no token yet: the first frame is a signup */
  char ticket[NQ_PROTO_TICKET_MAX + 1]; /* a pending sign-up's ticket (STATE/signup.ticket) */
  int64_t news_seen;       /* the newest news item logged (STATE/news.seen) */
  int token_stored;        /* cli->token came from STATE/token */
  unsigned rng;
  int attempt;             /* reconnect attempts since the last welcome */
  int64_t retry_after;     /* the server's `busy` (or a sign-up's refusal) asked for this wait
                              (s) before the next attempt; 0: none, the backoff decides */
  int retry_busy;          /* that wait came from `busy`: the server is full */
  int progress_interval;   /* seconds, from welcome */
  int paused_told;         /* the pause state the server was last told (tell_pause) */
  double paused_told_at;   /* ... when (monotonic s) */
  int max_outstanding;     /* from welcome */
  uv_timer_cb retry_cb;    /* the retry timer's callback (cli.c), for cli_retry_in */
  /* Work. */
  cli_assign_t *queue;     /* received, not started, in arrival order */
  size_t qlen, qcap;
  int64_t *sent;           /* result ids sent on this connection and not answered yet */
  size_t nsent, capsent;
  cli_held_t *held;        /* results kept in memory only (lazy records), oldest first */
  size_t nheld, capheld;
  uv_timer_t lazy_timer;   /* writes the held results LAZY_MS old to the journal */
  long journal_n;          /* result files in the journal as far as we know (-1: unknown) */
  int getwork_inflight;
  int nowork_wait;         /* after no_work (or nothing new): wait for the retry timer */
  int wait_s;              /* no job runs on the server: the poll interval now (0: a job runs) */
  long units_done;         /* units solved by this process */
  long units_resumed;      /* ... of which resumed from a checkpoint */
  double last_seconds;     /* solve time of the last unit; -1 before the first */
  /* What the volunteer is told (status.h, the INFO summary) */
  cli_status_t st;         /* kept between writes: the welcome's news, the last contact */
  int status_warned;       /* a failed write of it was logged */
  double down_since;       /* monotonic time the server went out of reach; 0: it is not */
  int down_warned;         /* the WARN for it was logged */
  uint64_t nodes_done;     /* of the units this process solved */
  double seconds_done;
  double summary_at;       /* monotonic time of the last summary */
  long sum_units;          /* since then */
  uint64_t sum_nodes;
  double sum_seconds;
};

/* ---- verbs (ctx.c) ---- */

/* A change of connection state; the observer (cli_config_t.on_state) hears of it. */
void cli_set_state(cli_t *cli, cli_state_t to);
/* A reason to leave: kept if it is stronger than the one we have (cli.h). _why: with its words
 * (the status file's exit_why; cli_reason_text's otherwise), which also replace those of a
 * reason as strong. */
void cli_leave(cli_t *cli, cli_reason_t why);
void cli_leave_why(cli_t *cli, cli_reason_t why, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A reason in words, for the volunteer ("banned by the server", ...). */
const char *cli_reason_text(cli_reason_t r);
/* What the last connection attempt or session came to (status.h: last_outcome). */
void cli_outcome(cli_t *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Send a packed message (consumed; NULL means packing failed): 0, NQ_ENOTOPEN, or the send's. */
int cli_send(cli_t *cli, json_t *msg);
/* Arm the retry timer (its callback is the conductor's: a connection attempt when idle, else a
 * turn of the scheduler) to fire in ms. */
void cli_retry_in(cli_t *cli, uint64_t ms);

/* The work queue: received, not started, in arrival order. find: NULL when absent. confirm: 1 if
 * queued (the server re-sent it, so it is still ours). push / push_front: 0 or NQ_ENOMEM. */
cli_assign_t *cli_queue_find(cli_t *cli, int64_t id);
int cli_queue_confirm(cli_t *cli, int64_t id);
int cli_queue_push(cli_t *cli, const cli_assign_t *a);
int cli_queue_push_front(cli_t *cli, const cli_assign_t *a);

/* The lane running assignment id, or NULL; the lane whose worker holds it as its next unit, or
 * NULL; how many units the lanes hold (running and next). */
cli_lane_t *cli_lane_of(cli_t *cli, int64_t id);
cli_lane_t *cli_lane_next_of(cli_t *cli, int64_t id);
int cli_lanes_running(const cli_t *cli);

#endif
