/* nq-server: the store's whole API for the modules above it (layer 4, store.h): every family's
 * header, and the operations that span families (store_api.c).
 */
#ifndef SRV_STORE_API_H
#define SRV_STORE_API_H

#include <stdint.h>
#include "store.h"
#include "store_jobs.h"
#include "store_work.h"
#include "store_clients.h"
#include "store_owners.h"
#include "store_trusted.h"
#include "store_kernels.h"
#include "store_stall.h"
#include "store_queue.h"
#include "store_public.h"
#include "store_export.h"
#include "store_audit.h"
#include "store_outage.h"
#include "store_backup.h"
#include "store_signup.h"
#include "store_community.h"

/* Open (creating if needed) the database at `path` and bring its schema up to date.
 * schema_dir: directory of NNN_*.sql files; NULL means $NQ_SCHEMA_DIR if set, else
 * NQ_SOURCE_DIR "/schema". Returns 0, NQ_EIO (cannot open / migration failed), NQ_ESCHEMA (the
 * database has a schema version newer than the files know) or NQ_ENOMEM. On failure *out is NULL
 * and, if errbuf is given, it holds a one-line reason. */
int srv_store_open(srv_store_t **out, const char *path, const char *schema_dir, char *errbuf,
                   size_t errlen);

/* Archive the job: state `archived` (units, results and totals kept for the record; N is free for
 * a new job). Delete it: the job, its units, assignments and counters are removed, in batches of
 * `batch` units (one transaction each, 0 = SRV_JOB_BATCH; outside a transaction only). Either
 * refuses with NQ_EBUSY while clients hold leases on its units, unless force (then the leases are
 * released first: their holders learn from progress or result that the work is gone). Returns 0,
 * NQ_EBUSY (the message says how many leases), NQ_ESTATE (archive: already archived), NQ_ETXN,
 * NQ_EIO. */
int srv_job_archive(srv_store_t *st, int64_t job_id, int force, int64_t now);
int srv_job_delete(srv_store_t *st, int64_t job_id, int force, int batch);


/* Status of one job, from counters the store maintains with every change (job_stats, job_rate:
 * docs/store.md), never from a scan of the units: a few indexed reads whatever the job's size.
 * Active clients: not banned and seen within active_window seconds of now. The rate covers the
 * results reported in the whole minutes from (now - rate_window) to now. */
int srv_store_stats(srv_store_t *st, int64_t job_id, int64_t now, int active_window,
                    int rate_window, srv_stats_t *out);

#endif
