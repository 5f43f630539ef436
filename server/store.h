/* nq-server: the SQLite store -- the server's only state (docs/store.md).
 *
 * One srv_store_t is one SQLite connection in WAL mode with foreign_keys=ON and synchronous=FULL,
 * so a transaction that srv_store_commit() reported as committed survives kill -9 and power loss.
 * The schema is the numbered files schema/NNN_*.sql, applied in order at open, each in its own
 * transaction, and recorded in the table `schema_version`.
 *
 * The store owns the schema: every SQL statement of the server is in store.c and store_work.c
 * (store_int.h is their shared inside), and every other module asks through the typed functions
 * here -- the scheduler's rules (sched.c) included, through the "scheduler's queries" below.
 *
 * Transactions and group commit. The network layer may group the work of several requests into ONE
 * transaction: srv_store_begin(), any number of srv_sched_*()/srv_* mutations, srv_store_commit(),
 * and only then send the acks. Every mutating function in this header and in sched.h is atomic on
 * its own -- it runs inside a SAVEPOINT, so a call that fails leaves nothing behind and the group
 * can go on with the next request -- except the scheduler's queries, which are the building blocks
 * of the srv_sched_* calls and run inside their savepoint. Functions here that mutate work both
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

/* Open (creating if needed) the database at `path` and bring its schema up to date.
 * schema_dir: directory of NNN_*.sql files; NULL means $NQ_SCHEMA_DIR if set, else
 * NQ_SOURCE_DIR "/schema". Returns 0, NQ_EIO (cannot open / migration failed), NQ_ESCHEMA (the
 * database has a schema version newer than the files know) or NQ_ENOMEM. On failure *out is NULL
 * and, if errbuf is given, it holds a one-line reason. */
int srv_store_open(srv_store_t **out, const char *path, const char *schema_dir, char *errbuf,
                   size_t errlen);

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

/* ---- meta: small key/value settings (e.g. "admin_token_hash", "enrol_key_hash") -------------- */

/* Copy the value into buf (truncated to len-1). NQ_ENOTFOUND if the key is absent. */
int srv_meta_get(srv_store_t *st, const char *key, char *buf, size_t len);
/* Insert or replace. */
int srv_meta_set(srv_store_t *st, const char *key, const char *value);

/* ---- jobs --------------------------------------------------------------------------------- */

typedef enum { SRV_JOB_RUNNING = 0, SRV_JOB_DONE = 1 } srv_job_state_t;

typedef struct srv_job_s {
  int64_t id;
  int n;
  int depth;        /* the effective depth: nq_unit_effective_depth(n, requested) */
  int quorum;       /* agreeing results from distinct clients needed to verify a unit */
  int max_results;  /* results without a quorum after which a unit is disputed */
  srv_job_state_t state;
  int64_t created, finished; /* finished = 0 while running */
  int64_t units;    /* number of units of the job */
  nq_totals_t totals; /* final totals (c2, c4, c8, nodes); zero while running */
} srv_job_t;

/* Create the job for N, or resume the existing one.
 * New job: inserts the job and every unit of nq_units_generate(n, depth) in one transaction.
 * Existing job for N: fills *job from the store; its stored quorum and max_results stay in force
 * (they are reported in *job; changing them on a running job would change what "verified" means).
 * Returns 0; NQ_EEXIST if the job exists with a different effective depth (the message in
 * srv_store_errmsg names both); NQ_ERANGE for N outside NQ_UNIT_MIN_N..NQ_MAX_N, depth < 2,
 * quorum < 1 or max_results < quorum; NQ_EIO on store failure. */
int srv_job_ensure(srv_store_t *st, int n, int depth, int quorum, int max_results, int64_t now,
                   srv_job_t *job);
/* Look up a job by id or by N; NQ_ENOTFOUND if absent. */
int srv_job_get(srv_store_t *st, int64_t job_id, srv_job_t *job);
int srv_job_find_n(srv_store_t *st, int n, srv_job_t *job);
/* Every job, oldest first; a non-zero return of cb stops the walk and is returned. */
typedef int (*srv_job_cb)(const srv_job_t *job, void *arg);
int srv_job_list(srv_store_t *st, srv_job_cb cb, void *arg);

/* ---- units -------------------------------------------------------------------------------- */

typedef enum {
  SRV_UNIT_PENDING = 0, /* no live lease, no result */
  SRV_UNIT_LEASED,      /* live lease(s), no result yet */
  SRV_UNIT_AWAITING,    /* at least one result, no quorum yet */
  SRV_UNIT_VERIFIED,    /* `quorum` agreeing results from distinct clients */
  SRV_UNIT_DISPUTED,    /* max_results (+ extra) results without a quorum; needs the operator */
  SRV_UNIT_NSTATES
} srv_unit_state_t;

/* "pending", "leased", ...; srv_unit_state_parse returns the state or NQ_EINVAL. */
const char *srv_unit_state_name(srv_unit_state_t s);
int srv_unit_state_parse(const char *name);

typedef struct srv_unit_info_s {
  int64_t id, job_id, idx;
  char text[NQ_UNIT_TEXT_MAX];
  srv_unit_state_t state;
  int live;          /* leased assignments not yet reported or expired */
  int results;       /* results received (all of them, late ones included) */
  nq_counts_t counts; /* the verified counts (zero unless verified) */
  int64_t verified_at;
  int extra_results; /* results allowed on top of the job's max_results (srv_unit_retry) */
  char part;         /* 'c' corner or 's' side part */
} srv_unit_info_t;

/* Units of a job in idx order; state < 0 means every state; limit <= 0 means no limit. */
typedef int (*srv_unit_cb)(const srv_unit_info_t *u, void *arg);
int srv_unit_list(srv_store_t *st, int64_t job_id, int state, int limit, srv_unit_cb cb,
                  void *arg);
int srv_unit_get(srv_store_t *st, int64_t unit_id, srv_unit_info_t *out);
/* The unit of job_id whose text is `text` (e.g. "8:s:3:3,0,5"); NQ_ENOTFOUND if none. */
int srv_unit_find_text(srv_store_t *st, int64_t job_id, const char *text, srv_unit_info_t *out);

/* Most results one srv_unit_retry call may add (the protocol's unit_retry `extra`). */
#define SRV_RETRY_EXTRA_MAX NQ_PROTO_RETRY_EXTRA_MAX

/* Re-open a disputed unit (the operator's answer to a dispute, docs/store.md): the unit may get
 * `extra` (1..SRV_RETRY_EXTRA_MAX) results more than it has now -- its extra_results becomes
 * results - max_results + extra, so the cap on its results is max_results + extra_results -- and
 * it goes back to `awaiting`, so the scheduler hands out new replicas to clients that never had
 * it, until `quorum` results agree (verified) or the new cap is reached without a quorum
 * (disputed again). The results it has keep their state: the `reported` ones still vote; `late`
 * ones (arrived while it was disputed) count toward the cap but do not vote. Trust counters and
 * bans are not touched. One atomic step (joins an open transaction, else commits by itself).
 * `now` is the operator's clock (kept for symmetry with the other mutations; nothing is stamped).
 * Returns 0 and *out (may be NULL) = the unit afterwards; NQ_ENOTFOUND (no such unit), NQ_ESTATE
 * (the unit is not disputed; the message says its state), NQ_EINVAL (extra out of range). */
int srv_unit_retry(srv_store_t *st, int64_t unit_id, int extra, int64_t now,
                   srv_unit_info_t *out);

/* ---- assignments (the scheduler's queries below write them) -------------------------------- */

typedef enum {
  SRV_ASG_LEASED = 0, /* handed out, deadline in the future (or not yet swept) */
  SRV_ASG_EXPIRED,    /* deadline passed, or released (ban, unit closed) without a result */
  SRV_ASG_REPORTED,   /* result in, unit not decided yet */
  SRV_ASG_VALID,      /* result agreed with the verified counts */
  SRV_ASG_INVALID,    /* result disagreed with the verified counts */
  SRV_ASG_LATE,       /* result arrived after the unit was disputed; kept for the record */
  SRV_ASG_NSTATES
} srv_asg_state_t;

const char *srv_asg_state_name(srv_asg_state_t s);

typedef struct srv_asg_info_s {
  int64_t id, unit_id, client_id;
  srv_asg_state_t state;
  int64_t issued, deadline, reported_at; /* reported_at = 0 without a result */
  int late;           /* the result came after the unit was decided */
  nq_counts_t counts; /* valid when reported_at != 0 */
  double seconds;
  char solver[SRV_SOLVER_MAX + 1];
  /* The last progress the client reported (schema 004); progress_at = 0 before the first. */
  double progress;         /* share of the unit done, 0..1; -1 when not reported */
  double progress_seconds; /* the client's solve time on the unit so far; -1 when not reported */
  uint64_t progress_nodes; /* nodes counted so far (0 when not reported) */
  int64_t progress_at;
} srv_asg_info_t;

int srv_asg_get(srv_store_t *st, int64_t asg_id, srv_asg_info_t *out);
/* Every assignment of one unit, by id (e.g. to show the operator a disputed unit's results). */
typedef int (*srv_asg_cb)(const srv_asg_info_t *a, void *arg);
int srv_asg_list_unit(srv_store_t *st, int64_t unit_id, srv_asg_cb cb, void *arg);

/* ---- clients ------------------------------------------------------------------------------ */

typedef struct srv_client_s {
  int64_t id;
  char name[SRV_NAME_MAX + 1];
  int64_t created, last_seen;
  int64_t valid, invalid; /* results judged against verified counts */
  int banned;
  int64_t outstanding;    /* leased assignments (filled by srv_client_list and _get* too) */
  char software[NQ_PROTO_SOFTWARE_MAX + 1]; /* from its last hello; "" if never said */
  int protocol;           /* the protocol version of its last session; 0 if none recorded */
} srv_client_t;

/* Create a client with exactly this name. token_hash: the hex SHA-256 of its token (never the
 * token). NQ_EEXIST if the name or the hash is taken; NQ_EINVAL for a bad name. */
int srv_client_create(srv_store_t *st, const char *name, const char *token_hash, int64_t now,
                      srv_client_t *out);
/* Enrolment: like create, but a taken name gets "-2", "-3", ... appended (the protocol's rule);
 * out->name is the name given. NQ_EEXIST only if the hash is taken. */
int srv_client_enrol(srv_store_t *st, const char *name, const char *token_hash, int64_t now,
                     srv_client_t *out);
/* Lookups; NQ_ENOTFOUND if absent. A banned client is found (check ->banned). */
int srv_client_find_token(srv_store_t *st, const char *token_hash, srv_client_t *out);
int srv_client_find_name(srv_store_t *st, const char *name, srv_client_t *out);
int srv_client_get(srv_store_t *st, int64_t client_id, srv_client_t *out);
/* Record activity (hello, requests). */
int srv_client_touch(srv_store_t *st, int64_t client_id, int64_t now);
/* A hello: activity, plus the software it runs (NULL or "": unchanged) and the protocol version
 * the session speaks (0: unchanged; srv_client_touch is this with neither). NQ_ENOTFOUND for an
 * unknown client, NQ_EINVAL for a software string over NQ_PROTO_SOFTWARE_MAX. */
int srv_client_hello(srv_store_t *st, int64_t client_id, int64_t now, const char *software,
                     int64_t protocol);
/* Ban: banned = 1 and every leased assignment of the client is released (state expired), so its
 * units go back to other clients at once. Its results already in keep counting. Idempotent. */
int srv_client_ban(srv_store_t *st, int64_t client_id, int64_t now);
/* Every client by name. */
typedef int (*srv_client_cb)(const srv_client_t *c, void *arg);
int srv_client_list(srv_store_t *st, srv_client_cb cb, void *arg);

/* ---- status ------------------------------------------------------------------------------- */

typedef struct srv_stats_s {
  srv_job_t job;
  int64_t units[SRV_UNIT_NSTATES]; /* units per state */
  nq_totals_t verified;            /* sum of the verified units' counts (nodes included) */
  int64_t results;                 /* results received for the job */
  int64_t clients_known, clients_active, clients_banned;
  int64_t leased;                  /* live leases of the job */
  double leased_progress;          /* the sum of their last reported progress (0..1 each) */
  int64_t recent_results;          /* results reported in the last rate_window seconds */
  nq_u128 recent_nodes;            /* their nodes, summed */
  int rate_window;
} srv_stats_t;

/* Status of one job. Active clients: not banned and seen within active_window seconds of now. */
int srv_store_stats(srv_store_t *st, int64_t job_id, int64_t now, int active_window,
                    int rate_window, srv_stats_t *out);

/* ---- the scheduler's queries (server/sched.c holds the rules; the SQL is here) --------------- */

/* One assignment handed to a client (the protocol's `work` entry). */
typedef struct srv_work_s {
  int64_t id;                  /* assignment id */
  int64_t unit_id;
  char unit[NQ_UNIT_TEXT_MAX]; /* unit text */
  int64_t deadline;
  int resent;                  /* 1: the client already held it; 0: newly leased */
} srv_work_t;

/* SAVEPOINT-based atomic section: savepoint() opens one; release(st, rc) releases it when rc is 0
 * and rolls it back otherwise, and returns rc (or NQ_EIO if the release itself failed). Outside a
 * transaction the pair behaves as BEGIN/COMMIT. The scheduler wraps each of its calls in one. */
int srv_store_savepoint(srv_store_t *st);
int srv_store_release(srv_store_t *st, int rc);
/* Set the store's error message (printf-style); returns `err`. */
int srv_store_failf(srv_store_t *st, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Recompute units.live / results from the assignments (no counter drift), then the open unit's
 * state and need (docs/store.md). Verified and disputed units keep their state and need 0. */
int srv_store_unit_refresh(srv_store_t *st, int64_t unit_id);

/* Leases with deadline <= now become expired and their units are refreshed (they need a replica
 * again). *n_expired (may be NULL) gets how many. */
int srv_asg_expire_due(srv_store_t *st, int64_t now, int64_t *n_expired);
/* Earliest deadline of a leased assignment, 0 if there is none. */
int srv_asg_next_deadline(srv_store_t *st, int64_t *deadline);
/* The client's leased assignments, oldest first: appended to out (resent = 1) while *n < max;
 * *held gets how many it holds in all. */
int srv_asg_held(srv_store_t *st, int64_t client_id, srv_work_t *out, int max, int *n,
                 int *held);
/* Up to `room` units of job_id that need a replica (need > 0) and that this client holds no live
 * or reported assignment for, by idx, appended to out (unit_id and unit; id and deadline 0):
 * in_progress units (leased or awaiting) when in_progress is set, else pending ones. */
int srv_unit_pick(srv_store_t *st, int64_t job_id, int64_t client_id, int in_progress, int room,
                  srv_work_t *out, int *n);
/* The client's last `history` reported solve times in job_id, newest first: *count of them and
 * their mean (negative times count as 0). */
int srv_client_recent_seconds(srv_store_t *st, int64_t client_id, int64_t job_id, int history,
                              int *count, double *mean);
/* Lease unit_id to client_id until deadline: a new assignment, or the client's own expired one
 * for the unit leased again (same id). *asg_id gets the id; the unit is refreshed. */
int srv_asg_lease(srv_store_t *st, int64_t unit_id, int64_t client_id, int64_t now,
                  int64_t deadline, int64_t *asg_id);
/* Move a leased assignment's deadline. */
int srv_asg_set_deadline(srv_store_t *st, int64_t asg_id, int64_t deadline);
/* Remember the client's last progress report on the assignment (the fields it has; the others
 * become NULL) and when it came. */
int srv_asg_set_progress(srv_store_t *st, int64_t asg_id, const nq_progress_t *p, int64_t now);
/* Lease an expired assignment of unit_id again until deadline, if the unit is undecided and still
 * needs a replica (nobody was given it in its place). NQ_ESTATE when the unit is undecided but
 * was given to another client in its place (a result is still taken), NQ_ENOTFOUND when it is
 * decided. */
int srv_asg_revive(srv_store_t *st, int64_t asg_id, int64_t unit_id, int64_t deadline);
/* The assignment and its unit, in one read. NQ_ENOTFOUND if there is no such assignment. */
int srv_asg_get_unit(srv_store_t *st, int64_t asg_id, srv_asg_info_t *a, srv_unit_info_t *u);
/* Store a result on the assignment (counts, seconds, solver, reported_at = now) with `state` and
 * `late`. The caller has validated it. */
int srv_asg_set_result(srv_store_t *st, int64_t asg_id, const nq_counts_t *c, double seconds,
                       const char *solver, srv_asg_state_t state, int late, int64_t now);
/* Judge a result: the assignment becomes valid or invalid, and its client's counter of that
 * kind grows by one. */
int srv_asg_judge(srv_store_t *st, int64_t asg_id, int64_t client_id, int valid);
/* The undecided (reported) results of a unit, oldest first. */
int srv_asg_list_reported(srv_store_t *st, int64_t unit_id, srv_asg_cb cb, void *arg);
/* The size of the unit's largest agreeing group of undecided results; the unit is refreshed. */
int srv_unit_set_best(srv_store_t *st, int64_t unit_id, int best);
/* The unit is verified with counts c at now; its leases still out are released. */
int srv_unit_verify(srv_store_t *st, int64_t unit_id, const nq_counts_t *c, int64_t now);
/* The unit is disputed; its leases still out are released. */
int srv_unit_dispute(srv_store_t *st, int64_t unit_id);
/* *agrees: a result with counts c from `solver` agrees with the verified unit: the same counts,
 * and the same nodes as every valid result of the same solver version. */
int srv_unit_agrees(srv_store_t *st, int64_t unit_id, const nq_counts_t *c, const char *solver,
                    int *agrees);
/* When no unit of the job is open or disputed: the job becomes done, finished = now, with the
 * final totals (the 128-bit sums of the verified units), and *done = 1; else nothing, *done = 0. */
int srv_job_finish_if_complete(srv_store_t *st, int64_t job_id, int64_t now, int *done);

#endif
