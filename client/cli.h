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

#include "cli_config.h"


/* Fill defaults: threads = online CPUs, gpu "auto", state = $HOME/.nq-client, backoff 0.5 .. 60 s,
 * prefetch 1, checkpoints every 60 s, signals handled, solver at idle priority, no CPU limit,
 * no pause file. */
void cli_config_default(cli_config_t *cfg);


/* cli_t, and the names of the states and reasons: cli_config.h. */

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
