/* nq-server: write a finished job's evidence file (nq/evidence.h, docs/evidence.md) from the
 * store: header, units, totals, checksum, streamed from one read snapshot in bounded memory.
 */
#ifndef SRV_EXPORT_H
#define SRV_EXPORT_H

#include <stdio.h>

#include "nq/admin_db.h"
#include "store_api.h"

/* Write the evidence of job_id to out. distinct: the rule the server verified by (its
 * --quorum-distinct), recorded in the header. names: 1 writes the clients' and owners' names,
 * 0 a pseudonym for each (a keyed hash per name and job: distinct names stay distinct; see
 * docs/evidence.md, "Names"). Returns 0 with *info filled; NQ_ESTATE (the job
 * is not done), NQ_ENOTFOUND, NQ_ERANGE (a unit with too many results), NQ_EIO (store or
 * stream), NQ_ENOMEM; err gets a one-line reason. */
int srv_export_write(srv_store_t *st, int64_t job_id, nq_ev_distinct_t distinct, int names,
                     int64_t now, FILE *out, nq_admin_export_t *info, char *err, size_t errlen);

#endif
