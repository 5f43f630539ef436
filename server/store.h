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

/* ---- jobs (store_jobs.c) ------------------------------------------------------------------- */

typedef enum {
  SRV_JOB_RUNNING = 0,
  SRV_JOB_DONE = 1,
  SRV_JOB_CREATING = 2, /* its units are still being inserted (or the insertion was cut off) */
  SRV_JOB_ARCHIVED = 3, /* kept for the record; a new job for the same N may be created */
  SRV_JOB_NSTATES
} srv_job_state_t;

/* "running", "done", "creating", "archived". */
const char *srv_job_state_name(srv_job_state_t s);

typedef struct srv_job_s {
  int64_t id;
  int n;
  int depth;        /* the deepest unit's prefix length (a flat job: its one depth) */
  int min_depth;    /* the shallowest unit's (a flat job: the same) */
  double unit_seconds; /* the target its units were sized to (reference core-seconds, plan.h);
                        * 0 for a flat --depth job */
  uint64_t seed;    /* the plan's estimator seed */
  int quorum;       /* agreeing results from distinct clients needed to verify a unit */
  int max_results;  /* results without a quorum after which a unit is disputed */
  srv_job_state_t state;
  int64_t created, finished; /* finished = 0 while running */
  int64_t archived; /* when it was archived, else 0 */
  int64_t units;    /* number of units of the job (so far, while creating) */
  int64_t first_unit; /* unit ids are first_unit .. first_unit + units - 1, in plan order */
  int has_internal; /* internal is known (jobs made before schema 5 get it at the next open) */
  uint64_t internal; /* the plan's split nodes: nodes(units) + internal = nq-solve N's nodes */
  double est_nodes, est_se; /* the plan's estimate of the whole N and its standard error (0:
                             * unknown, a job made before schema 5) */
  nq_totals_t totals; /* final totals (c2, c4, c8, nodes: the sum over the units); zero while
                       * running */
} srv_job_t;

/* Progress of a job's creation, for a progress line. */
typedef struct srv_job_progress_s {
  uint64_t units;   /* inserted so far (committed) */
  double fraction;  /* share of the search tree covered so far (by estimates), 0..1 */
  double seconds;   /* since the creation began */
  int done;         /* the last call: every unit is in */
} srv_job_progress_t;
typedef void (*srv_job_progress_cb)(const srv_job_progress_t *p, void *arg);

#define SRV_JOB_BATCH 50000 /* units per transaction while a job is created */

/* What job to create (or to resume) for N. */
typedef struct srv_job_spec_s {
  int n;                /* NQ_UNIT_MIN_N..NQ_MAX_N */
  int depth;            /* > 0: a flat job, every unit at this depth (nq_unit_depth_check) */
  double unit_seconds;  /* depth 0: units sized to about this many reference core-seconds
                         * (nq_plan_seconds_to_nodes: 0 < S <= 1e9) */
  int max_depth;        /* with unit_seconds: the deepest a unit may be; 0 = N - 1 */
  int quorum, max_results; /* quorum >= 1, max_results >= quorum */
  int diverse_kernels;  /* a new job's diverse_kernels (store_kernels.h): 0..SRV_KERNELS_MAX */
  uint64_t seed;        /* the estimator's seed; 0 = NQ_EST_DEFAULT_SEED */
  uint64_t max_units;   /* refuse a plan of more units than this; 0 = no limit */
  int batch;            /* units per transaction; 0 = SRV_JOB_BATCH */
  srv_job_progress_cb progress; /* called after every committed batch and at the end; may be NULL */
  void *progress_arg;
} srv_job_spec_t;

/* Create the job for spec->n, or resume the existing one (the one for N that is not archived).
 * New job: the units come from nq_plan_run (nq/plan.h) -- a flat job is the plan with
 * start = max depth = depth and no target -- and are inserted as they stream out, one
 * transaction per `batch` units, with ids first_unit + idx; the job is `creating` until the last
 * batch made it `running`. Memory stays bounded whatever the number of units. Every unit passed
 * the plan's 64-bit guard. A job whose creation was cut off (a crash) is deleted and created
 * again. Existing job: fills *job; its stored quorum and max_results stay in force.
 * Must be called outside a transaction (NQ_ETXN). Returns 0; NQ_ERANGE (N, depth, S, quorum or
 * max_results out of range, more than max_units units) or NQ_EOVERFLOW (a unit could pass 2^63
 * nodes: the message names a deeper depth or a smaller S), with nothing left behind; NQ_EEXIST
 * if the job for N exists with other units (depth or S; the message names both and how to
 * archive it); NQ_EIO on store failure. srv_store_errmsg says why. */
int srv_job_open(srv_store_t *st, const srv_job_spec_t *spec, int64_t now, srv_job_t *job);
/* srv_job_open of a flat job at `depth` (the tests' and old callers' form). */
int srv_job_ensure(srv_store_t *st, int n, int depth, int quorum, int max_results, int64_t now,
                   srv_job_t *job);
/* 1 if every unit of the job was verified: state done, or archived after it was done (an archive
 * keeps the answer; issue 36). */
int srv_job_is_done(const srv_job_t *job);
/* Look up a job by id, or the job for N that is not archived; NQ_ENOTFOUND if absent. */
int srv_job_get(srv_store_t *st, int64_t job_id, srv_job_t *job);
int srv_job_find_n(srv_store_t *st, int n, srv_job_t *job);
/* Every job, oldest first; a non-zero return of cb stops the walk and is returned. */
typedef int (*srv_job_cb)(const srv_job_t *job, void *arg);
int srv_job_list(srv_store_t *st, srv_job_cb cb, void *arg);

/* Leased assignments of the job's units (clients computing them now). */
int srv_job_leases(srv_store_t *st, const srv_job_t *job, int64_t *leases);
/* Release every lease on the job's units (its holders learn from their next progress or result
 * that the work is gone); *n (may be NULL) = how many. The next job of the queue does this to the
 * finished one, whose leased spot checks would otherwise count against its clients' caps. */
int srv_job_release_leases(srv_store_t *st, const srv_job_t *job, int64_t *n);
/* Archive the job: state `archived` (units, results and totals kept for the record; N is free for
 * a new job). Delete it: the job, its units, assignments and counters are removed, in batches of
 * `batch` units (one transaction each, 0 = SRV_JOB_BATCH; outside a transaction only). Either
 * refuses with NQ_EBUSY while clients hold leases on its units, unless force (then the leases are
 * released first: their holders learn from progress or result that the work is gone). Returns 0,
 * NQ_EBUSY (the message says how many leases), NQ_ESTATE (archive: already archived), NQ_ETXN,
 * NQ_EIO. */
int srv_job_archive(srv_store_t *st, int64_t job_id, int force, int64_t now);
int srv_job_delete(srv_store_t *st, int64_t job_id, int force, int batch);

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
  int64_t est_nodes; /* the plan's estimate of its node count; -1 for a unit made before
                      * schema 5 */
  int best, others;  /* votes in its best agreeing group, and outside it (schema 006) */
  int spot;          /* spot check: 0 none, 1 wanted, 2 leased, 3 done (schema 006) */
  int contest;       /* schema 014: srv_contest_t */
} srv_unit_info_t;

/* Units of a job in idx order; state < 0 means every state; limit <= 0 means no limit. */
typedef int (*srv_unit_cb)(const srv_unit_info_t *u, void *arg);
int srv_unit_list(srv_store_t *st, int64_t job_id, int state, int limit, srv_unit_cb cb,
                  void *arg);
int srv_unit_get(srv_store_t *st, int64_t unit_id, srv_unit_info_t *out);
/* The unit of job_id whose text is `text` (e.g. "8:s:3:3,0,5"); NQ_ENOTFOUND if none. A binary
 * search over the job's units, which are stored in the generator's order (nq_unit_cmp). */
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
 * An awaiting unit (issue 36: one that waits for votes no key can give, e.g. re-opened by a spot
 * check whose liar was then banned) gets the same allowance and stays awaiting; the scheduler's
 * srv_sched_retry restores its voided votes first (srv_unit_restore_votes).
 * Returns 0 and *out (may be NULL) = the unit afterwards; NQ_ENOTFOUND (no such unit), NQ_ESTATE
 * (the unit is neither disputed nor awaiting; the message says its state), NQ_EINVAL (extra out
 * of range). */
int srv_unit_retry(srv_store_t *st, int64_t unit_id, int extra, int64_t now,
                   srv_unit_info_t *out);
/* The unit's voided results vote again where their client can vote and no voting result of the
 * unit disagrees with them (c2, c4, c8); *n gets how many. The votes are not counted here
 * (srv_sched_retry does). */
int srv_unit_restore_votes(srv_store_t *st, int64_t unit_id, int64_t *n);

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
  int64_t hold_until;     /* schema 011: the hold limit, kept across re-leases; 0 = issued + hold */
  int late;           /* the result came after the unit was decided */
  nq_counts_t counts; /* valid when reported_at != 0 */
  double seconds;
  char solver[SRV_SOLVER_MAX + 1];
  char backend[NQ_PROTO_BACKEND_MAX + 1]; /* what computed the result (schema 011); "" unknown */
  /* The last progress the client reported (schema 004); progress_at = 0 before the first. */
  double progress;         /* share of the unit done, 0..1; -1 when not reported */
  double progress_seconds; /* the client's solve time on the unit so far; -1 when not reported */
  uint64_t progress_nodes; /* nodes counted so far (0 when not reported) */
  int64_t progress_at;
  /* Schema 006: who voted from where, and whether the vote counts. */
  int64_t owner_id;        /* the owner of its client */
  char net[48];            /* the network it was leased / reported from ("" unknown) */
  int spot;                /* a spot-check replica of a verified unit */
  int voided;              /* the result no longer votes (re-opened against it) */
  int novote;              /* voided, or its client is banned or suspect */
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
  int64_t owner_id;       /* schema 006: its owner (1 = "default") */
  int suspect;            /* it agreed on an answer that lost; its results do not vote */
  char net[48];           /* the network it last authenticated from ("" unknown) */
  char software[NQ_PROTO_SOFTWARE_MAX + 1]; /* from its last hello; "" if never said */
  int protocol;           /* the protocol version of its last session; 0 if none recorded */
  int64_t lapses;         /* schema 011: leases expired without a result, less one per result */
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
/* How many clients exist (banned ones included: enrolment is capped on identities made). */
int srv_client_count(srv_store_t *st, int64_t *n);
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
  int64_t est_units;               /* units with an estimate (all of a job made since schema 5) */
  nq_u128 est_total;               /* the sum of the units' estimated nodes */
  nq_u128 est_verified;            /* ... of the verified units' */
  int64_t clients_known, clients_active, clients_banned;
  int64_t leased;                  /* live leases of the job */
  double leased_progress;          /* the sum of their last reported progress (0..1 each) */
  int64_t recent_results;          /* results reported in the rate window */
  nq_u128 recent_nodes;            /* their nodes, summed */
  int rate_window;                 /* its length in seconds: whole minutes back from now's
                                    * minute, at least rate_window as asked, at most 59 s more */
  int64_t blocked;                 /* disputed units at their cap: they wait for the operator */
  int64_t spot_pending;            /* verified units whose spot check is wanted or leased */
  int64_t clients_suspect;         /* clients that agreed on a losing answer */
  /* Schema 014, trusted resolution. */
  int64_t contested;               /* units whose results disagree, waiting for a trusted one */
  int64_t trusted_owners;          /* trusted owners not banned: 0 = the answer rests on votes */
  int64_t trusted_active;          /* their clients not banned and seen within active_window */
} srv_stats_t;

/* Status of one job, from counters the store maintains with every change (job_stats, job_rate:
 * docs/store.md), never from a scan of the units: a few indexed reads whatever the job's size.
 * Active clients: not banned and seen within active_window seconds of now. The rate covers the
 * results reported in the whole minutes from (now - rate_window) to now. */
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
  int64_t est_nodes;           /* the unit's estimate, -1 unknown (picks only) */
  int64_t hold_until;          /* the replica's hold limit (schema 011; picks and leases) */
  char kernel[NQ_KERNEL_NAME_MAX]; /* the kernel the assignment names, "" none (schema 016) */
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
/* What makes two replicas of a unit independent (--quorum-distinct, schema 006): their clients,
 * their clients' owners, or the networks (/24 or /64) they came from. */
typedef enum {
  SRV_DISTINCT_CLIENT = 0,
  SRV_DISTINCT_OWNER,
  SRV_DISTINCT_NETWORK,
  SRV_DISTINCT_NMODES
} srv_distinct_t;

/* "client", "owner", "network"; srv_distinct_parse returns the mode or NQ_EINVAL. */
const char *srv_distinct_name(srv_distinct_t d);
int srv_distinct_parse(const char *name);

/* Who asks for units, and when (srv_unit_pick). */
typedef struct srv_pick_s {
  int64_t job_id, client_id;
  srv_distinct_t distinct;
  int64_t now;
  int64_t cooldown; /* s a replica past its key's hold limit waits for another key */
} srv_pick_t;

/* Up to `room` units of pk->job_id that need a replica (need > 0) and that no client of the same
 * `distinct` key as this client (itself; a client of its owner; a client on its network) holds a
 * live or reported assignment for, by id, appended to out (unit_id, unit, est_nodes, hold_until;
 * id and deadline 0): in_progress units (leased, awaiting or disputed) when in_progress is set,
 * else pending ones. An expired row of the key past its hold limit (schema 011) also keeps the
 * unit from the key until the lease ran out pk->cooldown s ago; hold_until is the hold a lease
 * inherits from an expired row of the key still inside its hold, 0 for a fresh one. */
int srv_unit_pick(srv_store_t *st, const srv_pick_t *pk, int in_progress, int room,
                  srv_work_t *out, int *n);
/* Up to `room` verified units of job_id that want a spot check (units.spot = 1) and that no
 * client of the same `distinct` key as this client ever had a live or reported assignment for
 * (hold_until 0). */
int srv_unit_pick_spot(srv_store_t *st, const srv_pick_t *pk, int room, srv_work_t *out,
                       int *n);
/* The client's last `history` reported solve times in job_id, newest first: *count of them and
 * their mean (negative times count as 0). */
int srv_client_recent_seconds(srv_store_t *st, int64_t client_id, int64_t job_id, int history,
                              int *count, double *mean);
/* Lease w->unit_id to client_id until w->deadline, with the hold limit w->hold_until: a new
 * assignment, or the client's own expired one for the unit leased again (same id). w->id gets
 * the id; the unit is refreshed. spot: a spot check of a verified unit (the assignment is marked
 * spot, and the unit's spot state becomes 2, leased). */
int srv_asg_lease_work(srv_store_t *st, srv_work_t *w, int64_t client_id, int64_t now, int spot);
/* The same for a plain replica whose hold limit is its deadline (tests, tools). */
int srv_asg_lease(srv_store_t *st, int64_t unit_id, int64_t client_id, int64_t now,
                  int64_t deadline, int64_t *asg_id);
/* Move a leased assignment's deadline. */
int srv_asg_set_deadline(srv_store_t *st, int64_t asg_id, int64_t deadline);
/* Remember the client's last progress report on the assignment (the fields it has; the others
 * become NULL) and when it came. */
int srv_asg_set_progress(srv_store_t *st, int64_t asg_id, const nq_progress_t *p, int64_t now);
/* Lease an expired assignment of unit_id again until deadline, if the unit is undecided (open or
 * disputed) and still needs a replica (nobody was given it in its place). NQ_ESTATE when the unit
 * is undecided but was given to another client in its place (a result is still taken),
 * NQ_ENOTFOUND when it is verified. */
int srv_asg_revive(srv_store_t *st, int64_t asg_id, int64_t unit_id, int64_t deadline);
/* The assignment and its unit, in one read. NQ_ENOTFOUND if there is no such assignment. */
int srv_asg_get_unit(srv_store_t *st, int64_t asg_id, srv_asg_info_t *a, srv_unit_info_t *u);
/* Store a result on the assignment (counts, seconds, solver, reported_at = now) with `state` and
 * `late`. The caller has validated it. */
int srv_asg_set_result(srv_store_t *st, int64_t asg_id, const nq_counts_t *c, double seconds,
                       const char *solver, srv_asg_state_t state, int late, int64_t now);
/* Judge a result: the assignment becomes valid or invalid, and its client's counter of that
 * kind grows by one. */
/* The distinct backends of the client's newest SRV_BACKENDS_HISTORY results, sorted, separated by
 * spaces ("" when none said), cut to len. */
#define SRV_BACKENDS_HISTORY 1000
int srv_client_backends(srv_store_t *st, int64_t client_id, char *buf, size_t len);
/* The backend that computed the assignment's result (schema 011). */
int srv_asg_set_backend(srv_store_t *st, int64_t asg_id, const char *backend);
int srv_asg_judge(srv_store_t *st, int64_t asg_id, int64_t client_id, int valid);
/* How many of the client's last `window` judged results (valid or invalid, newest by id) are
 * invalid: the auto-ban looks at recent behaviour, not at a lifetime of valid results. */
int srv_client_recent_invalid(srv_store_t *st, int64_t client_id, int window, int *invalid);
/* The undecided (reported) results of a unit, oldest first. */
int srv_asg_list_reported(srv_store_t *st, int64_t unit_id, srv_asg_cb cb, void *arg);
/* The votes of the unit's largest agreeing group of undecided results, and the votes outside it;
 * the unit is refreshed (its need follows from them, docs/store.md). */
int srv_unit_set_votes(srv_store_t *st, int64_t unit_id, int best, int others);
/* A verified unit wants a spot check (spot = 1), or not (0). */
int srv_unit_set_spot(srv_store_t *st, int64_t unit_id, int spot);
/* The unit is verified with counts c at now; its leases still out are released. */
int srv_unit_verify(srv_store_t *st, int64_t unit_id, const nq_counts_t *c, int64_t now);
/* The unit is disputed: it keeps taking replicas (up to SRV_DISPUTE_FACTOR x max_results +
 * extra_results results) until one answer has a strict majority of at least `quorum` votes. */
#define SRV_DISPUTE_FACTOR 3
int srv_unit_dispute(srv_store_t *st, int64_t unit_id);
/* *agrees: a result with counts c from `solver` agrees with the verified unit: the same counts,
 * and the same nodes as every valid result of the same solver version. */
int srv_unit_agrees(srv_store_t *st, int64_t unit_id, const nq_counts_t *c, const char *solver,
                    int *agrees);
/* When no unit of the job is open or disputed: the job becomes done, finished = now, with the
 * final totals (the 128-bit sums of the verified units), and *done = 1; else nothing, *done = 0. */
int srv_job_finish_if_complete(srv_store_t *st, int64_t job_id, int64_t now, int *done);


/* ---- owners and re-opening (store_trust.c; schema 006) ------------------------------------- */

typedef struct srv_owner_s {
  int64_t id;
  char name[SRV_NAME_MAX + 1];
  int64_t created;
  int banned;
  int has_key;          /* it has an enrolment key of its own */
  int trusted;          /* schema 014: the operator trusts its results (nq-admin owner trust) */
  int64_t clients;      /* clients that belong to it (srv_owner_list, srv_owner_find_name) */
} srv_owner_t;

#define SRV_OWNER_DEFAULT 1 /* "default": the server's own enrolment key, `client add` */

/* Create an owner with exactly this name (nq_proto_name_valid) and the SHA-256 hex of its
 * enrolment key (NULL: none). NQ_EEXIST if the name or the key is taken, NQ_EINVAL. */
int srv_owner_create(srv_store_t *st, const char *name, const char *enrol_hash, int64_t now,
                     srv_owner_t *out);
/* Lookups; NQ_ENOTFOUND if absent. */
int srv_owner_find_name(srv_store_t *st, const char *name, srv_owner_t *out);
int srv_owner_find_key(srv_store_t *st, const char *enrol_hash, srv_owner_t *out);
int srv_owner_get(srv_store_t *st, int64_t owner_id, srv_owner_t *out);
/* Every owner by name. */
typedef int (*srv_owner_cb)(const srv_owner_t *o, void *arg);
int srv_owner_list(srv_store_t *st, srv_owner_cb cb, void *arg);
/* Mark the owner banned (its key enrols nobody); its clients are banned by the scheduler. */
int srv_owner_set_banned(srv_store_t *st, int64_t owner_id, int banned);
/* Replace the owner's enrolment key hash (owner_rekey): the old key enrols nobody from now on.
 * NQ_ENOTFOUND for no such owner, NQ_EINVAL for a bad hash. */
int srv_owner_set_key(srv_store_t *st, int64_t owner_id, const char *enrol_hash);
/* The clients of an owner, by id. */
int srv_owner_clients(srv_store_t *st, int64_t owner_id, int64_t **ids, int *n);
/* Move a client to an owner (enrolment with an owner's key). */
int srv_client_set_owner(srv_store_t *st, int64_t client_id, int64_t owner_id);
/* The network a client authenticated from ("" or NULL: unknown). */
int srv_client_set_net(srv_store_t *st, int64_t client_id, const char *net);
/* Mark a client suspect (1) or clear it (0). */
int srv_client_set_suspect(srv_store_t *st, int64_t client_id, int suspect);
/* Lift a ban (and the suspicion): banned = 0, suspect = 0. NQ_ENOTFOUND. */
int srv_client_unban(srv_store_t *st, int64_t client_id);
/* The units a client holds a result of in `state` (valid: the units it helped verify; reported:
 * undecided ones), as a malloc'ed array of ids (*ids NULL when *n = 0). */
int srv_client_units(srv_store_t *st, int64_t client_id, srv_asg_state_t state, int64_t **ids,
                     int *n);
/* The disputed units of a job, optionally only those with a result of client_id (> 0). */
int srv_units_disputed(srv_store_t *st, int64_t job_id, int64_t client_id, int64_t **ids, int *n);
/* The result no longer votes (it is still judged against the unit's final answer). */
int srv_asg_void(srv_store_t *st, int64_t asg_id);
/* Re-open a unit: a verified one loses its counts (the job's verified totals and counters follow,
 * by trigger), its judged results go back to reported (their clients' valid / invalid counts
 * undone) and it may take `extra` results beyond those it has; a disputed one is re-opened the
 * same way; an open one only gets the allowance. A done job becomes running again (*job_reopened
 * = 1, may be NULL). The caller then recounts the votes (the scheduler's quorum check). */
int srv_unit_reopen(srv_store_t *st, int64_t unit_id, int extra, int *job_reopened);
/* Verified units of the job whose spot check is wanted or leased (units_spot). */
int srv_job_spot_pending(srv_store_t *st, int64_t job_id, int64_t *n);

/* ---- trusted resolution (store_trusted.c, schema 014, issue 30) ------------------------------ */

/* units.contest: why a unit is (or was) contested, and what settled it. */
typedef enum {
  SRV_CONTEST_NONE = 0,    /* never contested, or decided by votes (no trusted owner) */
  SRV_CONTEST_OPEN = 1,    /* its results disagree: not verified, waits for a trusted result */
  SRV_CONTEST_TRUSTED = 2, /* verified by a trusted owner's result */
  SRV_CONTEST_AUDIT = 3    /* verified by an authoritative count (srv_sched_settle) */
} srv_contest_t;

/* "none", "contested", "trusted", "audit". */
const char *srv_contest_name(int contest);

/* Mark an owner trusted (1) or not (0). NQ_ENOTFOUND. */
int srv_owner_set_trusted(srv_store_t *st, int64_t owner_id, int trusted);
/* Owners other than `default` (id 1): any of them closes enrolment with the server's own key
 * unless the operator keeps it open (nq-server --keep-default-enrol). */
int srv_owner_count_named(srv_store_t *st, int64_t *n);
/* The trusted owners that are not banned, and their clients that are not banned and were seen
 * at or after active_since (either may be NULL). */
int srv_trust_counts(srv_store_t *st, int64_t active_since, int64_t *owners, int64_t *active);
/* Whether the client's owner is trusted and not banned. NQ_ENOTFOUND for no such client. */
int srv_client_trusted(srv_store_t *st, int64_t client_id, int *trusted);
/* Contest a unit that is not verified: state 'disputed', contest 1, its live leases released
 * (it takes no untrusted replica: need 0). */
int srv_unit_contest(srv_store_t *st, int64_t unit_id);
/* A contested unit whose results agree again (the dissenter was banned): contest 0, back to
 * 'awaiting', need derived as usual. */
int srv_unit_uncontest(srv_store_t *st, int64_t unit_id);
/* Record what settled a verified unit (SRV_CONTEST_TRUSTED or SRV_CONTEST_AUDIT). */
int srv_unit_set_contest(srv_store_t *st, int64_t unit_id, srv_contest_t c);
/* Contested units of the job (through units_contested). */
int srv_job_contested(srv_store_t *st, int64_t job_id, int64_t *n);
/* Up to `room` contested units of pk->job_id for a trusted client: none with a live lease (one
 * trusted replica at a time), none its owner reported (unit id, text, est_nodes; hold 0). */
int srv_unit_pick_contested(srv_store_t *st, const srv_pick_t *pk, int room, srv_work_t *out,
                            int *n);

/* ---- the public view (store_public.c, schema 009) -------------------------------------------- */

#define SRV_PUBLIC_NAME_MAX NQ_PROTO_NAME_MAX
#define SRV_DISPLAY_MAX (SRV_PUBLIC_NAME_MAX + 24)

/* A volunteer's credit: the verified node counts of the units its results agreed on (a trigger
 * keeps it, docs/store.md). display is its public name, or "anonymous-" and six hex digits of a
 * hash of its token hash when it chose none: stable, and telling nothing about the client. */
typedef struct srv_credit_s {
  int64_t client_id;
  nq_u128 credit;
  int64_t valid;       /* results that earned it */
  int banned;
  int named;           /* it chose a public name */
  char display[SRV_DISPLAY_MAX + 1];
} srv_credit_t;

/* One client's credit. NQ_ENOTFOUND if there is no such client. */
int srv_credit_get(srv_store_t *st, int64_t client_id, srv_credit_t *out);
/* An owner's credit (schema 006): the sum of its clients'. */
int srv_owner_credit(srv_store_t *st, int64_t owner_id, nq_u128 *out);
/* The `limit` (1..1000) clients with the most credit that are not banned, most first (credit 0
 * included, so a new volunteer sees its name). A non-zero return of cb stops the walk. */
typedef int (*srv_credit_cb)(const srv_credit_t *c, int rank, void *arg);
int srv_credit_top(srv_store_t *st, int limit, srv_credit_cb cb, void *arg);
/* Set (name) or clear (NULL: anonymous) the client's public name; NQ_EINVAL for a name that is
 * not nq_proto_name_valid. */
int srv_client_set_public_name(srv_store_t *st, int64_t client_id, const char *name);

/* One sample of a job's history (job_history). */
typedef struct srv_history_s {
  int64_t t;           /* Unix time of the sample's minute */
  int64_t verified;    /* verified units then */
  int64_t results;     /* results received then */
  nq_u128 nodes;       /* verified nodes then */
  double share;        /* verified share of the job, 0..1 */
} srv_history_t;

/* Most samples kept per job: every minute of the last SRV_HISTORY_FINE_S seconds, one an hour
 * before, and never more than SRV_HISTORY_MAX rows (the oldest are dropped). */
#define SRV_HISTORY_MAX 2000
#define SRV_HISTORY_FINE_S 86400

/* Record the sample of minute h->t / 60 (replacing one of the same minute) and prune the job's
 * history to the bounds above. Atomic on its own. */
int srv_history_add(srv_store_t *st, int64_t job_id, const srv_history_t *h);
/* The job's samples, oldest first. */
typedef int (*srv_history_cb)(const srv_history_t *h, void *arg);
int srv_history_list(srv_store_t *st, int64_t job_id, srv_history_cb cb, void *arg);
/* How many samples the job has. */
int srv_history_count(srv_store_t *st, int64_t job_id, int64_t *n);

/* ---- outages (store_outage.c; srv_outage.h) ------------------------------------------------ */

#define SRV_META_ALIVE "alive_at" /* the last moment the server was known alive (Unix seconds) */

/* Give every lease that was live at `alive_at` (state leased, deadline > alive_at) `by` more
 * seconds: deadline and issued both move, so the hold limit moves with the lease. by <= 0 changes
 * nothing. *n (may be NULL) gets how many leases moved. Atomic on its own. */
int srv_asg_shift_leases(srv_store_t *st, int64_t alive_at, int64_t by, int64_t *n);

/* ---- backups and checks (store_backup.c) ---------------------------------------------------- */

#define SRV_META_BACKUP_TAKEN "backup_taken" /* in a backup: when it was taken (Unix seconds) */
/* In the live database (srv_backup.c): "<unix time> <path>" of the newest good scheduled backup,
 * and "<unix time> <reason>" of the last failure (status shows it while it is the newer). */
#define SRV_META_BACKUP_OK "backup_last_good"
#define SRV_META_BACKUP_ERROR "backup_last_error"
#define SRV_CHECK_MIN_SCHEMA 9 /* srv_store_check knows the counters from this version on */

/* Open an existing database read-only, as it is (no migration, nothing written): a backup being
 * checked. Returns 0, NQ_EIO (no such file, not a database), NQ_ENOMEM; errbuf says why. */
int srv_store_open_ro(srv_store_t **out, const char *path, char *errbuf, size_t errlen);

/* What srv_store_check found. */
typedef struct srv_check_s {
  int schema;                /* the database's schema version */
  int64_t problems;          /* broken invariants; 0: the database holds a consistent job */
  char first[256];           /* the first of them, in words */
  int64_t jobs, units, assignments, results, clients; /* rows */
  int64_t taken;             /* a backup: when it was taken (0 when not a backup) */
} srv_check_t;

/* Check a database: PRAGMA integrity_check and foreign_key_check, then every counter the
 * store keeps recounted from the tables it stands for (job_stats against the units, the units'
 * live leases and results against their assignments, the rate buckets against the results,
 * the credit against the valid results, each job's unit count). Reads only; may take minutes on
 * a record job (it reads every page). Returns 0 with out->problems (0: consistent), NQ_ESCHEMA
 * (older than SRV_CHECK_MIN_SCHEMA), NQ_EIO. */
int srv_store_check(srv_store_t *st, srv_check_t *out);

/* Copy the database at `src` into a new file `dst` (replaced if present) with SQLite's online
 * backup API, on a read-only connection of its own: one snapshot in one read transaction, so a
 * server writing `src` meanwhile is never blocked (WAL) and the copy is consistent. The copy is a
 * self-contained file (journal_mode DELETE), holds meta SRV_META_BACKUP_TAKEN = now (when now > 0;
 * 0 keeps the source's: a restore), and is fsync'ed. Any thread (it shares nothing with an open store). Returns 0 or NQ_EIO (errbuf says
 * why; nothing is left at dst). */
int srv_store_backup_copy(const char *src, const char *dst, int64_t now, char *errbuf,
                          size_t errlen);

#endif
