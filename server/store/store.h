/* nq-server: the SQLite store -- the server's only state (docs/store.md) -- and its bottom layer.
 *
 * One srv_store_t is one SQLite connection in WAL mode with foreign_keys=ON and synchronous=FULL,
 * so a transaction that srv_store_commit() reported as committed survives kill -9 and power loss.
 * The schema is the numbered files schema/NNN_*.sql, applied in order at open, each in its own
 * transaction, and recorded in the table `schema_version`.
 *
 * The store owns the schema: every SQL statement of the server is in server/store/store*.c, and every
 * other module asks through their typed functions -- the scheduler's rules (sched.c) included,
 * through the scheduler's queries of store_work.h. Modules above the store include store_api.h
 * (every family's header); store files include only what their layer may use.
 *
 * The layers (docs/store.md, "Layers"; scripts/check-layers.py checks them on the objects, as the
 * ctest check_layers). A file may use the layers below its own, never its own layer's other files
 * nor one above:
 *   0  store.c (this header; store_int.h its inside): the connection, the statement cache,
 *      savepoints and transactions, migrations, meta. It knows no table family.
 *   1  store_jobs.c: jobs (creation from a plan, lookups, the job's diverse_kernels).
 *   2  store_work.c: units, assignments, leases, the job's unit counters (job_stats) and the
 *      scheduler's queries; the only place a unit is refreshed.
 *   3  the families on top of work, each its own header, none calling another:
 *      store_clients.c (clients), store_owners.c (owners, re-opening), store_trusted.c (trusted
 *      resolution), store_kernels.c, store_stall.c, store_queue.c, store_public.c,
 *      store_export.c, store_audit.c, store_outage.c, store_backup.c.
 *   4  store_api.c: what spans families -- the full open (migrations, then the jobs' fill-in),
 *      the status view, archiving and deleting a job with its leases.
 * Above the store (sched.c, srv*.c, admin_cmd.c, ...) any store function may be used.
 *
 * Transactions and group commit. The network layer may group the work of several requests into ONE
 * transaction: srv_store_begin(), any number of srv_sched_*()/srv_* mutations, srv_store_commit(),
 * and only then send the acks. Every mutating function of the store and of sched.h is atomic on
 * its own -- it runs inside a SAVEPOINT, so a call that fails leaves nothing behind and the group
 * can go on with the next request -- except the scheduler's queries, which are the building blocks
 * of the srv_sched_* calls and run inside their savepoint. Store functions that mutate work both
 * inside and outside an open transaction (outside, they commit themselves). The srv_sched_*
 * mutations require an open transaction (see sched.h).
 *
 * Times are Unix seconds passed in by the caller (`now`), so tests can drive the clock.
 * List callbacks (srv_*_list) may call the lookup functions, but not the same list function again
 * (a cached statement is in use while the walk runs).
 * Nothing here is thread-safe: one store belongs to the loop thread.
 */
#ifndef SRV_STORE_H
#define SRV_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/solver.h"
#include "nq/unit.h"

typedef struct srv_store_s srv_store_t;

#define SRV_NAME_MAX NQ_PROTO_NAME_MAX     /* client names (nq_proto_name_valid) */
#define SRV_SOLVER_MAX NQ_PROTO_SOLVER_MAX /* solver version strings */
#define SRV_HASH_MAX 128     /* token hashes (hex text) */

/* ---- open / close / transactions ---------------------------------------------------------- */

/* Opening a store is srv_store_open (store_api.h): the migrations here, then what the families
 * fill in after them. */

/* Close the connection. An open transaction is rolled back (uncommitted work is lost, exactly as
 * after a crash). NULL is ignored. */
void srv_store_close(srv_store_t *st);

/* The detail of the last failure on this store (SQLite's message or ours); never NULL. */
const char *srv_store_errmsg(const srv_store_t *st);

/* BEGIN IMMEDIATE: takes the write lock now, so the commit cannot fail for lock reasons.
 * NQ_ETXN if a transaction is already open. */
int srv_store_begin(srv_store_t *st);
/* COMMIT; durable when it returns 0. NQ_ETXN if none is open. On NQ_EIO the transaction has been
 * rolled back: nothing of the group was stored, so no ack may be sent. */
int srv_store_commit(srv_store_t *st);
/* ROLLBACK; NQ_ETXN if none is open. */
int srv_store_rollback(srv_store_t *st);
/* 1 if a transaction is open on this store. */
int srv_store_in_tx(const srv_store_t *st);

/* The highest applied schema version. */
int srv_store_schema_version(srv_store_t *st, int *version);
/* 1 when the database's schema is at `version` or newer (a database opened with an older schema
 * directory, in the tests of migrations, may not be), else 0. */
int srv_store_schema_has(srv_store_t *st, int version);

/* ---- meta: small key/value settings (e.g. "admin_token_hash", "enrol_key_hash") -------------- */

/* Copy the value into buf (truncated to len-1). NQ_ENOTFOUND if the key is absent. */
int srv_meta_get(srv_store_t *st, const char *key, char *buf, size_t len);
/* Insert or replace. */
int srv_meta_set(srv_store_t *st, const char *key, const char *value);

/* ---- atomic sections and errors ----------------------------------------------------------- */

/* SAVEPOINT-based atomic section: savepoint() opens one; release(st, rc) releases it when rc is 0
 * and rolls it back otherwise, and returns rc (or NQ_EIO if the release itself failed). Outside a
 * transaction the pair behaves as BEGIN/COMMIT. The scheduler wraps each of its calls in one. */
int srv_store_savepoint(srv_store_t *st);
int srv_store_release(srv_store_t *st, int rc);
/* Set the store's error message (printf-style); returns `err`. */
int srv_store_failf(srv_store_t *st, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
