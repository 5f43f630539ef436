/* nq-server: stalled units counted off the loop. The count (store_stall.h) reads every
 * awaiting unit without a lease, which on a job of a million units can take seconds: a worker
 * thread computes it on a read-only connection of its own every SRV_STALL_CACHE_S seconds (or
 * ten times as long as the last computation took, if that is longer), and the loop thread puts
 * the result into the store's cache, which status, the page and /metrics read without waiting
 * (the store is switched to that cache: srv_stalls_set_async). A change of the count is logged.
 */
#ifndef SRV_STALL_H
#define SRV_STALL_H

#include <stddef.h>

typedef struct srv_s srv_t;
typedef struct srv_stall_s srv_stall_t;

/* Start the periodic count (the first 5 s after the start). 0, or NQ_ENOMEM with errbuf saying
 * so. */
int srv_stall_start(srv_t *s, char *errbuf, size_t errlen);
/* Stop: a count still queued is cancelled, one that runs finishes (its result is dropped). */
void srv_stall_stop(srv_t *s);

#endif
