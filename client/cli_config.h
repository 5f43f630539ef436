/* nq-client: its values -- the exit codes, the connection's states, the reasons to leave and the
 * configuration the options fill. Apart from the daemon (cli.h) so that the option tables
 * (cli_opts.c) and the status reader (status.c) need nothing of it: the daemon uses them, they
 * do not use the daemon. The state machine these enums describe is in cli.h's opening comment.
 */
#ifndef CLI_CONFIG_H
#define CLI_CONFIG_H

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

/* The names of the values (defined with the daemon's context, client/ctx.c). */
const char *cli_state_name(cli_state_t s);   /* "idle", "connecting", ... */
const char *cli_reason_name(cli_reason_t r); /* "none", "limit", "job_done", ... */
/* The process exit code for a reason (CLI_EXIT_*). */
int cli_reason_exit(cli_reason_t r);

/* The daemon (cli.h; its context: ctx.h). */
typedef struct cli_s cli_t;

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
                       * `wait`), as clients did before the job queue; else wait for the next job */
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

#endif
