/* nq-client: the session room -- the connection to the server and its messages (see ctx.h for
 * the rooms, docs/protocol.md for the messages). Loop thread only; the connection's callbacks are
 * the conductor's (cli.c), which hands each event here. */
#ifndef CLI_SESSION_H
#define CLI_SESSION_H

#include <jansson.h>

#include "ctx.h"

/* The connection c (cli->conn) is open: hello (or the sign-up) goes out; the state becomes HELLO. */
void cli_session_open(cli_t *cli, nq_conn_t *c);
/* The connection c failed (status, and the connection's own words): a refused certificate is a
 * reason to leave; the rest is an outage, logged as such. */
void cli_session_error(cli_t *cli, nq_conn_t *c, int status);
/* The connection is gone (cli->conn already NULL): what only memory held goes to disk, the state
 * is IDLE. 1: the daemon leaves now (closing, or a reason that does not reconnect); 0: a
 * reconnect is scheduled. */
int cli_session_closed(cli_t *cli);
/* One message from the server, by the table of what may come in which state. 1 when the
 * conductor's scheduler should look at the client's work (cli_pump). */
int cli_session_frame(cli_t *cli, const json_t *msg);

/* The next connection attempt after a jittered exponential backoff (or the wait a `busy` or a
 * sign-up asked for). */
void cli_session_reconnect(cli_t *cli);
/* A connection attempt failed for `why`: the log level of the caller's line (INFO for the first
 * failure of an outage, DEBUG after; one WARN once the outage is long). */
int cli_session_out_of_reach(cli_t *cli, const char *why);

/* Pick the credentials: --token, else the stored token, else enrol with --enrol, or --join.
 * 0, or an error (logged). */
int cli_session_credentials(cli_t *cli);
/* The newest news item already logged (STATE/news.seen). */
void cli_session_news_load(cli_t *cli);

#endif
