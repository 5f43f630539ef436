/* nq-server: the root of the running job's results, as the page and /api/status show it and the
 * history samples it (docs/evidence.md, "The root and the receipts"; docs/http.md).
 *
 * Taking it reads and hashes every result of the job (srv_export_root: O(results), the export's
 * own walk; seconds for a few hundred thousand results), so a worker thread takes it on a read-only
 * connection of its own, the first time SRV_ROOT_FIRST_S after the start and then every
 * SRV_ROOT_EVERY_S seconds, or SRV_ROOT_COST_X times as long as the last take lasted if that is
 * longer (at most about 1/SRV_ROOT_COST_X of one core); the loop thread keeps the last value in
 * srv_t (s->root), which status, the page and the history read without waiting.
 */
#ifndef SRV_ROOT_H
#define SRV_ROOT_H

#include <stddef.h>
#include <stdint.h>

#include "store_api.h"
#include "store_jobs.h"

#define SRV_ROOT_FIRST_S 1
#define SRV_ROOT_EVERY_S 5
#define SRV_ROOT_COST_X 20

typedef struct srv_s srv_t;
typedef struct srv_rooter_s srv_rooter_t;

/* The last root taken. */
typedef struct srv_root_s {
  int have;           /* hex, leaves and at hold a root of job */
  int64_t job;
  char hex[65];       /* the root: 64 lowercase hex digits */
  int64_t leaves;     /* over this many results */
  int64_t at;         /* Unix time it was taken */
  double seconds;     /* how long taking it lasted */
} srv_root_t;

/* Take the root of job now, on st (any thread that owns st). 0, or the store's error. */
int srv_root_take(srv_store_t *st, const srv_job_t *job, int64_t now, srv_root_t *r);

/* Start the periodic take into s->root. 0, or NQ_ENOMEM with errbuf saying so. */
int srv_root_start(srv_t *s, char *errbuf, size_t errlen);
/* Stop: a take still queued is cancelled, one that runs finishes (its result is dropped). */
void srv_root_stop(srv_t *s);

#endif
