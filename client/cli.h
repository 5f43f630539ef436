/* nq-client: the volunteer daemon -- configuration, context and connection loop.
 *
 * One libuv loop on the main thread owns the TLS connection (conn.h), the timers, the signal
 * handlers and the journal; the solver runs on the worker thread (worker.h). docs/client.md
 * describes the states, the journal, the backoff, the signals and the exit codes.
 */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stddef.h>

#include "nq/addr.h"

/* Exit codes of nq-client (docs/client.md). */
enum {
  CLI_EXIT_OK = 0,    /* stopped by a signal, --once/--max-units reached, or the job is done */
  CLI_EXIT_FAIL = 1,  /* an unexpected local failure */
  CLI_EXIT_USAGE = 2, /* bad command line */
  CLI_EXIT_SETUP = 3, /* unreadable CA file, unusable state directory, no credentials */
  CLI_EXIT_TLS = 4,   /* the server certificate was refused (CA or host name) */
  CLI_EXIT_AUTH = 5,  /* unknown token, wrong enrolment key, or banned */
  CLI_EXIT_PROTO = 6  /* protocol version mismatch or another protocol error from the server */
};

typedef struct cli_config_s {
  char host[NQ_HOST_MAX]; /* from --server HOST:PORT; also the name the certificate must match */
  int port;
  const char *ca;     /* --ca: PEM file of the CA that signed the server certificate */
  const char *token;  /* --token, or NULL */
  const char *enrol;  /* --enrol, or NULL */
  const char *name;   /* --name, or NULL (host name) */
  int threads;        /* --threads, >= 1 */
  const char *state;  /* --state directory */
  long max_units;     /* --max-units (--once is 1); 0 = no limit */
  int fault_lie;      /* NQ_CLIENT_FAULT=lie: test-only, report c8 + 1 */
  double backoff_min; /* seconds; first reconnect delay (0.5) */
  double backoff_max; /* seconds; the cap (60) */
  int prefetch;       /* assignments held beyond the running one (1) */
} cli_config_t;

/* Fill defaults: threads = online CPUs, state = $HOME/.nq-client, backoff 0.5 .. 60 s,
 * prefetch 1. */
void cli_config_default(cli_config_t *cfg);

/* Split "HOST:PORT" or "[IPv6]:PORT" into cfg->host / cfg->port. Returns 0 or NQ_EINVAL. */
int cli_parse_server(const char *s, cli_config_t *cfg);

/* Run the daemon until it stops; returns the process exit code (CLI_EXIT_*). */
int cli_run(const cli_config_t *cfg);

#endif
