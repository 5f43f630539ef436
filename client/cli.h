/* nq-client: the volunteer daemon -- configuration, context and connection loop.
 *
 * One libuv loop owns the TLS connection (conn.h), the timers, the signal handlers and the journal;
 * the solver runs on the worker thread (worker.h). docs/client.md describes the states, the
 * journal, the backoff, the signals and the exit codes.
 *
 * The daemon is a state machine on a loop it is given (cli_start), so it can run beside other
 * things on one loop -- an in-process server, in tests/test_cli.c -- or alone (cli_run):
 *
 *   connection (cli_state_t)   IDLE -> CONNECTING -> HELLO -> READY -> IDLE (dropped) ... -> DONE
 *   leaving    (cli_reason_t)  NONE while it runs; the first reason to leave is kept, except
 *                              that a stronger one overrides a weaker (the order of the enum):
 *                              LIMIT / JOB_DONE / STOPPED drain first (finish reporting), the
 *                              others close at once. The reason decides the exit code.
 */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stddef.h>
#include <uv.h>

#include "nq/addr.h"
#include "nq/throttle.h"

/* Exit codes of nq-client (docs/client.md). */
enum {
  CLI_EXIT_OK = 0,    /* stopped by a signal, --once/--max-units reached, or the job is done */
  CLI_EXIT_FAIL = 1,  /* an unexpected local failure */
  CLI_EXIT_USAGE = 2, /* bad command line */
  CLI_EXIT_SETUP = 3, /* unreadable CA file, unusable state directory, no credentials */
  CLI_EXIT_TLS = 4,   /* the server certificate was refused (CA or host name) */
  CLI_EXIT_AUTH = 5,  /* unknown token, wrong enrolment key, or banned */
  CLI_EXIT_PROTO = 6, /* a protocol error from the server */
  CLI_EXIT_UPGRADE = 7 /* the server needs a newer protocol than this client speaks (or, the
                          other way round, speaks none this client knows): upgrade */
};

/* The connection state machine. */
typedef enum {
  CLI_STATE_IDLE = 0,   /* not connected; the retry timer runs the next attempt */
  CLI_STATE_CONNECTING, /* TCP connect and TLS handshake */
  CLI_STATE_HELLO,      /* hello sent, waiting for welcome */
  CLI_STATE_READY,      /* welcome received: journal sent first, then get_work/progress/result */
  CLI_STATE_DONE        /* left for good: every handle is closing; the exit reason is final */
} cli_state_t;

/* Why the daemon leaves, weakest first (see above). */
typedef enum {
  CLI_REASON_NONE = 0, /* still running */
  CLI_REASON_LIMIT,    /* --once / --max-units reached (drains: waits for every ack) */
  CLI_REASON_JOB_DONE, /* the server says the job is finished and none follows (drains): told
                          to --exit-when-done clients and by --exit-when-done servers */
  CLI_REASON_STOPPED,  /* a stop request: SIGINT/SIGTERM or cli_stop (drains while connected) */
  CLI_REASON_PROTOCOL, /* the server broke the protocol or refused ours (bad_message, ...) */
  CLI_REASON_VERSION,  /* protocol version mismatch: upgrade_required, or version */
  CLI_REASON_AUTH,     /* unknown token or wrong enrolment key */
  CLI_REASON_BANNED,   /* this client is banned */
  CLI_REASON_CERT,     /* the server certificate was refused (CA or host name) */
  CLI_REASON_SETUP,    /* the new token cannot be stored */
  CLI_REASON_FAILURE   /* an unexpected local failure (the solver thread cannot start) */
} cli_reason_t;

const char *cli_state_name(cli_state_t s);   /* "idle", "connecting", ... */
const char *cli_reason_name(cli_reason_t r); /* "none", "limit", "job_done", ... */
/* The process exit code for a reason (CLI_EXIT_*). */
int cli_reason_exit(cli_reason_t r);

typedef struct cli_config_s {
  char host[NQ_HOST_MAX]; /* from --server HOST:PORT; also the name the certificate must match */
  int port;
  const char *ca;     /* --ca: PEM file of the CA that signed the server certificate */
  const char *token;  /* --token, or NULL */
  const char *enrol;  /* --enrol, or NULL */
  const char *name;   /* --name, or NULL (host name) */
  int threads;        /* --threads: CPU threads, >= 0 (0: the devices alone) */
  const char *gpu;    /* --gpu auto|off|all|LIST: the OpenCL devices that solve too (auto) */
  const char *public_name; /* --public-name: shown on the server's public page; NULL: anonymous */
  int join;           /* --join: no credentials; sign up with the server (it makes an owner and
                         this client; the owner key goes to STATE/owner.key) */
  const char *team;   /* --team: with --join, the team to join */
  const char *state;  /* --state directory */
  long max_units;     /* --max-units (--once is 1); 0 = no limit */
  int exit_when_done; /* --exit-when-done: leave when the server runs no job (hello without
                       * `wait`), as clients did before issue 36; else wait for the next job */
  double checkpoint_seconds; /* --checkpoint-seconds: the running unit is saved this often (60) */
  nq_priority_t priority; /* --priority of the solver threads (idle) */
  int cpu_limit;      /* --cpu-limit: 1..100 percent of the solver threads' time (100) */
  const char *pause_file; /* --pause-file: the solver waits while it exists, or NULL */
  int pause_on_battery;   /* --pause-on-battery: the solver waits while on battery */
  const char *power_dir;  /* where the batteries are (NULL: /sys/class/power_supply; tests) */
  int pause_window;       /* --pause-between FROM-TO: the solver waits in that daily window */
  int pause_from, pause_to; /* its minutes after midnight */
  double summary_seconds; /* --log-summary: the INFO summary of the units solved, this often (60) */
  double unreachable_warn_seconds; /* a server out of reach this long is a WARN (180) */
  int fault_lie;      /* NQ_CLIENT_FAULT=lie in nq-client-test only (fault.h): report c8 + 1 */
  double backoff_min; /* seconds; first reconnect delay (0.5) */
  double backoff_max; /* seconds; the cap (60) */
  int prefetch;       /* assignments held beyond the running one (1) */
  int handle_signals; /* SIGINT/SIGTERM stop the daemon (the program sets it; tests may not) */
  /* Observer (optional): called on the loop thread after every change of state, DONE last. */
  void (*on_state)(void *arg, cli_state_t from, cli_state_t to);
  void *observer;
} cli_config_t;

/* Fill defaults: threads = online CPUs, gpu "auto", state = $HOME/.nq-client, backoff 0.5 .. 60 s,
 * prefetch 1, checkpoints every 60 s, signals handled, solver at idle priority, no CPU limit,
 * no pause file. */
void cli_config_default(cli_config_t *cfg);

/* Split "HOST:PORT" or "[IPv6]:PORT" into cfg->host / cfg->port. Returns 0 or NQ_EINVAL. */
int cli_parse_server(const char *s, cli_config_t *cfg);

typedef struct cli_s cli_t;

/* Set up on `loop` (cfg is borrowed and must outlive the daemon): the CA, the state directory and
 * journal, the credentials, the timers, the solver thread; then resume journalled assignments
 * and start connecting. Returns 0 and *out; or, when nothing was started, a process exit code
 * (CLI_EXIT_SETUP, CLI_EXIT_FAIL) with *out NULL. A later failure ends the daemon with a reason
 * instead. Run the loop until the state is DONE and its handles have closed, then cli_free. */
int cli_start(const cli_config_t *cfg, uv_loop_t *loop, cli_t **out);
/* Ask the daemon to leave as SIGTERM does: the running unit is checkpointed at once and stops
 * taking tasks (what it finishes before it stops is checkpointed again); no new work; the results
 * already sent get up to 1.5 s for their answers; bye. A second call leaves at once. */
void cli_stop(cli_t *cli);
cli_state_t cli_state(const cli_t *cli);
/* Units this process solved that it resumed from a checkpoint (only their unfinished tasks). */
long cli_units_resumed(const cli_t *cli);
cli_reason_t cli_reason(const cli_t *cli);
/* Release the daemon once the loop has run its close callbacks (uv_run returned). */
void cli_free(cli_t *cli);

/* The whole daemon on its own loop until it stops; returns the process exit code (CLI_EXIT_*). */
int cli_run(const cli_config_t *cfg);

#endif
