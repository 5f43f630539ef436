/* nq-client: its options, declared once (nq/opts.h): most go straight into cli_config_t, the
 * few that main() still weighs against each other into cli_args_t. */
#ifndef CLI_OPTS_H
#define CLI_OPTS_H

#include <stdint.h>

#include "cli_config.h"
#include "nq/opts.h"

/* What the command line says beyond cli_config_t. */
typedef struct cli_args_s {
  const char *token_file, *enrol_file; /* --token-file, --enrol-file */
  int once;                            /* --once */
  int64_t max_units;                   /* --max-units (0: not given) */
} cli_args_t;

extern const nq_opt_t cli_opts_table[];   /* into cli_config_t */
extern const nq_opt_t cli_args_table[];   /* into cli_args_t */
extern const nq_opt_t cli_status_table[]; /* nq-client status, into cli_status_args_t */

typedef struct cli_status_args_s {
  const char *state; /* --state */
  int json;          /* --json */
  const char *receipts; /* --receipts FILE: check the receipts against this evidence file */
  const char *root;     /* --root HEX: the root the server published */
} cli_status_args_t;

/* Split "HOST:PORT" or "[IPv6]:PORT" into cfg->host / cfg->port. Returns 0 or NQ_EINVAL. */
int cli_parse_server(const char *s, cli_config_t *cfg);

/* nq-client's command line into cfg (already cli_config_default'ed) and args (zeroed here). */
void cli_opts_init(nq_opts_t *o, cli_config_t *cfg, cli_args_t *args);
/* nq-client status's, into a (its state set to default_state here). */
void cli_status_opts_init(nq_opts_t *o, cli_status_args_t *a, const char *default_state);

#endif
