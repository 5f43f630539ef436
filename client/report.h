/* nq-client: the reporting room -- results sent, held, journalled; the status file (see ctx.h for
 * the rooms, docs/client.md for the journal and the status file). Loop thread only. */
#ifndef CLI_REPORT_H
#define CLI_REPORT_H

#include "ctx.h"

/* Results sent on this connection and not answered yet: the slot of id, or NULL. */
int64_t *cli_sent_find(cli_t *cli, int64_t id);
/* Send r as a `result` and count it as sent: 0, or the send's error. */
int cli_report_send(cli_t *cli, const nq_result_t *r);

/* Whether a unit that solves in `seconds` leaves its files out (lazy records): only while
 * connected. */
int cli_lazy(const cli_t *cli, double seconds);
/* The held result (memory only) of id, or NULL; hold one (0 or NQ_ENOMEM: journal it then). */
cli_held_t *cli_held_find(cli_t *cli, int64_t id);
int cli_held_add(cli_t *cli, const nq_result_t *r);
/* Write r to the journal (a failure is logged; the result is sent anyway). */
void cli_report_journal(cli_t *cli, const nq_result_t *r);
/* Write what only memory holds: the results, and the assignments of units still ours (a
 * disconnect, a stop). */
void cli_report_persist(cli_t *cli);
/* After welcome: everything in the journal goes out before any other request. */
void cli_report_send_journal(cli_t *cli);
/* The server answered result id (ack or refusal): its journal entry, or held copy, has done its
 * job. */
void cli_report_answered(cli_t *cli, int64_t id);

/* STATE/status.json for `nq-client status` (status.h), stopped: written as the daemon leaves; a
 * failure is said once. */
void cli_report_status(cli_t *cli, int stopped);
/* The INFO summary of the units solved, once every summary_seconds; nothing solved, nothing
 * said. */
void cli_report_summary(cli_t *cli);

#endif
