/* nq-server: the root of the running job's results, as the page and /api/status show it and the
 * history samples it (docs/evidence.md, "The root and the receipts"; docs/http.md).
 *
 * Computing it reads every result of the job (srv_export_root: O(results)), so it is kept here
 * and taken again only when it is older than SRV_ROOT_MIN_MS and than SRV_ROOT_COST_X times what
 * the last computation took: a job of millions of results spends at most about 1/SRV_ROOT_COST_X
 * of the loop on it, a small one shows a root a few seconds old.
 */
#ifndef SRV_ROOT_H
#define SRV_ROOT_H

#include <stdint.h>

#include "store_api.h"
#include "store_jobs.h"

#define SRV_ROOT_MIN_MS 5000
#define SRV_ROOT_COST_X 20

typedef struct srv_root_s {
  int have;           /* hex, leaves and at hold a root of job */
  int64_t job;
  char hex[65];       /* the root: 64 lowercase hex digits */
  int64_t leaves;     /* over this many results */
  int64_t at;         /* Unix time it was taken */
  uint64_t ms;        /* monotonic ms it was taken (uv_hrtime) */
  uint64_t cost_ms;   /* how long it took */
} srv_root_t;

/* Take the root of job again if the one in *r is stale (another job, or older than the bounds
 * above). 0 (r holds a root), or the store's error (r unchanged). */
int srv_root_refresh(srv_store_t *st, const srv_job_t *job, srv_root_t *r, int64_t now);

#endif
