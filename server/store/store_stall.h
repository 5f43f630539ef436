/* nq-server: stalled units (issue 36) -- units of a running job that cannot make progress as the
 * fleet stands, counted by reason, so that a job that cannot finish says so instead of looking
 * like a slow one (docs/operations.md "Stalled units").
 *
 * A key is what makes two votes independent (--quorum-distinct: a client, an owner or a
 * network). A key can vote when it has a client that is neither banned nor suspect and, in owner
 * mode, its owner is not banned; it is online when such a client was seen within the window.
 * A unit that is not verified is stalled when:
 *   owners   the job has fewer keys that can vote than its quorum: no unit can be verified
 *            (every unverified unit is counted, leased ones too);
 *   voted    it needs more votes than there are keys that can vote and have not given it a
 *            result (or hold its lease) already;
 *   offline  it holds no live lease and the keys that could give it its next votes are not
 *            online (pending units: fewer keys online than the quorum);
 *   contested  (issue 30) its results disagree and it waits for a trusted owner's result, and
 *            no client of a trusted owner is online;
 *   blocked  it holds no live lease and needs no replica: disputed at its cap on results
 *            (nq-admin unit retry).
 *   spot     (a job with a trusted owner, every unit verified: the job waits for its spot checks)
 *            a spot check wanted that no client online may take (a key that never had the unit;
 *            a trusted owner's client while one is active); the scheduler drops it
 *            SRV_SPOT_WAIT_S after its unit was verified (srv_sched_drop_spots).
 * A unit short only of kernels (schema 018) is not stalled while a client that voted on it and
 * has not given kernel evidence yet is online; with such clients all offline it is `offline`.
 * One reason per unit, the first that applies in this order.
 *
 * Cost: the keys are two aggregates over the clients; the units are one grouped query over the
 * awaiting and disputed units with no live lease (the partial index units_active), which is the
 * in-flight part of a healthy job; with fewer keys than the quorum no unit is read at all. The
 * result is cached in the store for SRV_STALL_CACHE_S seconds (srv_stalls_get), so a busy status
 * page does not repeat it per request; a running server counts on a worker thread instead
 * (srv_stall.h), since a million awaiting units take seconds (scripts/bench-stall.sh). */
#ifndef SRV_STORE_STALL_H
#define SRV_STORE_STALL_H

#include "nq/states.h"
#include "store.h"
#include "store_work.h"

/* The reasons: enum name, JSON/metrics name, one line for people (nq/states.h). */
#define SRV_STALL_REASONS NQ_STALL_REASON_MAP

typedef enum {
#define SRV_STALL_ENUM(e, name, text) SRV_STALL_##e,
  SRV_STALL_REASONS(SRV_STALL_ENUM)
#undef SRV_STALL_ENUM
  SRV_STALL_NREASONS
} srv_stall_reason_t;

const char *srv_stall_reason_name(srv_stall_reason_t r);
const char *srv_stall_reason_text(srv_stall_reason_t r);

#define SRV_STALL_CACHE_S 10

/* The meta row where a running server records its --quorum-distinct, so that nq-admin's local
 * mode counts the stalls by the same keys. */
#define SRV_META_QUORUM_DISTINCT "quorum_distinct"

typedef struct srv_stalls_s {
  int64_t job_id;       /* what it was computed for ... */
  srv_distinct_t distinct;
  int64_t at;           /* ... and when (0: never) */
  int quorum;
  int64_t keys;         /* keys that can vote */
  int64_t keys_online;  /* ... with a client seen within the window */
  int64_t trusted_online; /* clients that can vote, of a trusted owner, seen within the window */
  int64_t trusted_keys_online; /* ... their keys */
  int64_t units;        /* stalled units, every reason */
  int64_t by[SRV_STALL_NREASONS];
  double seconds;       /* how long the count took (set by the server's worker; 0 otherwise) */
} srv_stalls_t;

/* Compute the stalls of the job now (clients seen since now - window are online). A job that is
 * not running has none. NQ_ENOTFOUND, NQ_EIO. */
int srv_stalls_compute(srv_store_t *st, int64_t job_id, srv_distinct_t d, int64_t now,
                       int window, srv_stalls_t *out);

/* The same, from the store's cache when it was computed for this job and mode less than
 * SRV_STALL_CACHE_S seconds before now. */
int srv_stalls_get(srv_store_t *st, int64_t job_id, srv_distinct_t d, int64_t now, int window,
                   srv_stalls_t *out);

/* Drop the cache: the next srv_stalls_get computes (after an operator's change). No effect in
 * the asynchronous mode (the next count comes on time). */
void srv_stalls_forget(srv_store_t *st);

/* The asynchronous mode (a running server, srv_stall.h): srv_stalls_get never computes; it gives
 * the last count put (any age: `at` says when), or none (at = 0, nothing stalled) before the
 * first; srv_stalls_put stores a count made elsewhere. */
void srv_stalls_set_async(srv_store_t *st, int on);
void srv_stalls_put(srv_store_t *st, const srv_stalls_t *x);

/* The job's verified units that want a spot check (units.spot = 1), verified at or before
 * verified_before, that no client may take now: none that can vote, seen since `since` (of a
 * trusted owner only, when trusted_only), is of a key that never had the unit. A malloc'ed array
 * of ids (NULL when *n = 0). */
int srv_spot_unreachable(srv_store_t *st, int64_t job_id, srv_distinct_t d, int64_t since,
                         int trusted_only, int64_t verified_before, int64_t **ids, int *n);
/* Drop those spot checks (units.spot 1 -> 0) and add their number to jobs.spot_dropped (schema
 * 019), in the caller's transaction. */
int srv_spot_drop(srv_store_t *st, int64_t job_id, const int64_t *ids, int n);
/* Drop every spot check the job still wants or has out (the operator moved past the job: its
 * leases were released), counted in jobs.spot_dropped; *n gets how many. */
int srv_spot_drop_all(srv_store_t *st, int64_t job_id, int64_t *n);
/* jobs.spot_dropped (0 before schema 019). */
int srv_job_spot_dropped(srv_store_t *st, int64_t job_id, int64_t *n);

/* Up to `limit` contested units of a job (units.contest = 1: results that disagree, waiting for
 * a trusted result or an audit), by id, as a malloc'ed array (NULL when *n = 0). */
int srv_units_contested(srv_store_t *st, int64_t job_id, int limit, int64_t **ids, int *n);

/* The awaiting units of a job with a result of client_id (nq-admin unit retry --client: the
 * units a liar's spot checks re-opened), as a malloc'ed array of ids (NULL when *n = 0). */
int srv_units_awaiting_of(srv_store_t *st, int64_t job_id, int64_t client_id, int64_t **ids,
                          int *n);

#endif
