/* nq-server: JSON views of the store for operators -- the `data` objects of the protocol's
 * `admin_reply` (docs/protocol.md), built once here and shared by the server's admin handlers and
 * by nq-admin's local mode (which opens the database directly), so both print the same thing.
 *
 * Key names are a stable interface for scripts (docs/operations.md lists them): add keys, never
 * rename or drop one. Values above 64 bits (job totals) are decimal strings; per-unit counts are
 * JSON integers.
 *
 * Every builder returns a new reference the caller json_decref()s, or NULL on failure; then
 * srv_store_errmsg(st) says why (or the allocation failed). Nothing here changes the store except
 * srv_admin_client_add/_ban, srv_admin_unit_retry and srv_admin_reply for those three commands.
 */
#ifndef SRV_STATUS_H
#define SRV_STATUS_H

#include <jansson.h>
#include <stdint.h>

#include "store.h"

/* A client counts as active when seen within this many seconds; rates use this window. */
#define SRV_STATUS_ACTIVE_WINDOW 600
#define SRV_STATUS_RATE_WINDOW 300
/* Disputed units listed inside the status object (the `units` command lists all of them). */
#define SRV_STATUS_DISPUTED_MAX 100

/* The status object of one job at time `now`: job, unit counts per state, progress (percent
 * weighted by node counts, see docs/operations.md), verified partial counts, the final answer and
 * its check against the published table when done, rates and ETA, clients, disputed units. */
json_t *srv_status_json(srv_store_t *st, const srv_job_t *job, int64_t now);

/* {"clients": [...]}: every client by name with its trust counters and activity. */
json_t *srv_clients_json(srv_store_t *st, int64_t now);

/* {"jobs": [...]}: every job, oldest first, with final totals once done. */
json_t *srv_jobs_json(srv_store_t *st);

/* {"units": [...]}: units of a job in idx order; state < 0 means every state; limit <= 0 means no
 * limit. Disputed units carry their results ("replicas") so the operator can see the vote. */
json_t *srv_units_json(srv_store_t *st, int64_t job_id, int state, int limit);

/* One job as an object (used by jobs and status). */
json_t *srv_job_json(const srv_job_t *job);

/* Create a client NAME with a fresh random token. On success returns 0 and *out =
 * {"name": ..., "token": ...}; the token is shown only here, the store keeps its SHA-256 hex.
 * NQ_EEXIST (name taken), NQ_EINVAL (bad name), NQ_EIO, NQ_ETLS, NQ_ENOMEM. */
int srv_admin_client_add(srv_store_t *st, const char *name, int64_t now, json_t **out);

/* Ban client NAME (idempotent): 0 and *out = {"name": ..., "banned": true, "released": k}
 * where k is the number of leases given back; NQ_ENOTFOUND if there is no such client. */
int srv_admin_client_ban(srv_store_t *st, const char *name, int64_t now, json_t **out);

/* Re-open disputed unit `unit` of job `job` (srv_unit_retry): `unit` is a JSON integer (the unit
 * id) or string (the unit text); extra <= 0 means the job's quorum. On success returns 0 and
 * *out = the unit as in srv_units_json plus "extra_results" (its allowance now), "max_results"
 * (its cap: the job's max_results + extra_results) and "added" (extra). NQ_ENOTFOUND (no such unit
 * in this job), NQ_ESTATE (not disputed), NQ_EINVAL (bad unit value or extra), NQ_EIO. */
int srv_admin_unit_retry(srv_store_t *st, const srv_job_t *job, const json_t *unit, int extra,
                         int64_t now, json_t **out);

/* Answer one `admin` request `req` ({"type":"admin","cmd":...}) for the server's job `job`:
 * returns a new {"type":"admin_reply","cmd":...,"data":{...}} or a non-fatal
 * {"type":"error","code":"bad_message"|"not_found"|"exists"|"bad_state"|"internal",...} frame
 * object (bad_state: the command does not apply to the object's state); NULL only
 * if memory ran out. An `internal` error means the store failed (the caller may log it). */
json_t *srv_admin_reply(srv_store_t *st, const srv_job_t *job, const json_t *req, int64_t now);

#endif
