/* nq-server: /api/export -- a finished job's evidence file (docs/evidence.md) over HTTP, streamed.
 *
 * A thread of its own writes the file (export.h: the same writer as nq-admin export, from one
 * read snapshot of its own connection to the database) into a pipe; the HTTP connection reads
 * the pipe only while its output queue is below SRV_HTTP_HIGH_WATER (http.h, a streamed
 * response), so the writer waits for a slow reader and the server holds at most about a
 * megabyte per download, whatever the number of units. A reader that goes away closes the pipe,
 * and the writer stops (EPIPE). At most SRV_EXPORT_STREAMS downloads run at once.
 */
#ifndef SRV_WEB_EXPORT_H
#define SRV_WEB_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "nq/evidence.h"

#define SRV_EXPORT_STREAMS 2

/* Start writing the evidence of job_id (which must be done) from the database at db_path, with
 * `exported` = now, the clients' and owners' names pseudonymised unless names (nq-server
 * --export-names; export.h): 0 and *fd, the read end (the caller owns it); NQ_EBUSY when
 * SRV_EXPORT_STREAMS run already; NQ_EIO / NQ_ENOMEM (pipe, thread) with a reason in err. */
int srv_web_export_start(const char *db_path, int64_t job_id, nq_ev_distinct_t distinct,
                         int names, int64_t now, int *fd, char *err, size_t errlen);

#endif
