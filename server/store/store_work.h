/* nq-server: the store's units, assignments and leases (layer 2, store.h) -- what the scheduler
 * reads and changes, as typed functions (the scheduler's queries; sched.c holds the rules) -- and
 * the job's unit counters. Only this file refreshes a unit (srv_store_unit_refresh): the families
 * above that change a unit call it.
 */
#ifndef SRV_STORE_WORK_H
#define SRV_STORE_WORK_H

#include <stdint.h>
#include "nq/evidence.h"
#include "nq/solver.h"
#include "nq/states.h"
#include "nq/unit.h"
#include "store.h"
#include "store_jobs.h"

/* ---- units -------------------------------------------------------------------------------- */

/* The unit states, from their one table (nq/states.h). */
typedef enum {
#define SRV_UNIT_ENUM(e, name, text) SRV_UNIT_##e,
  NQ_UNIT_STATE_MAP(SRV_UNIT_ENUM)
#undef SRV_UNIT_ENUM
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

/* The assignment states (assignments.state holds the name): X(ENUM, "name"). */
#define SRV_ASG_STATE_MAP(X)                                                                       \
  X(LEASED, "leased") /* handed out, deadline in the future (or not yet swept) */                  \
  X(EXPIRED, "expired") /* deadline passed, or released (ban, unit closed) without a result */     \
  X(REPORTED, "reported") /* result in, unit not decided yet */                                    \
  X(VALID, "valid") /* result agreed with the verified counts */                                   \
  X(INVALID, "invalid") /* result disagreed with the verified counts */                            \
  X(LATE, "late") /* result arrived after the unit was disputed; kept for the record */
typedef enum {
#define SRV_ASG_ENUM_ONE(e, name) SRV_ASG_##e,
  SRV_ASG_STATE_MAP(SRV_ASG_ENUM_ONE)
#undef SRV_ASG_ENUM_ONE
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
  int self_joined;         /* schema 022: its client's owner joined by itself */
} srv_asg_info_t;

int srv_asg_get(srv_store_t *st, int64_t asg_id, srv_asg_info_t *out);
/* Every assignment of one unit, by id (e.g. to show the operator a disputed unit's results). */
typedef int (*srv_asg_cb)(const srv_asg_info_t *a, void *arg);
int srv_asg_list_unit(srv_store_t *st, int64_t unit_id, srv_asg_cb cb, void *arg);

/* ---- the scheduler's queries (server/core/sched.c holds the rules; the SQL is here) --------------- */

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
  int evidence; /* 1: kernel evidence, a replica for a client that gave the unit a result already
                   (schema 018; picks and leases) */
} srv_work_t;


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
/* The evidence file's table of the same rule (nq/evidence.h): one list of names. */
typedef enum {
#define SRV_DISTINCT_ENUM_ONE(e, name) SRV_DISTINCT_##e,
  NQ_EV_DISTINCT_MAP(SRV_DISTINCT_ENUM_ONE)
#undef SRV_DISTINCT_ENUM_ONE
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
  int self_net;     /* with distinct owner: a self-joined owner's key is its owner and its
                       network (schema 022, --self-joined-distinct owner-and-network) */
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
/* Up to `room` units of job_id short only of kernels (units.kshort = 1: the votes are there, the
 * kernels its --diverse-kernels asks for are not) that still need a replica, on which this client
 * itself has a result that votes (not voided) and no kernel-evidence row that is not expired
 * (schema 018), appended to out with evidence = 1 (hold_until 0). The scheduler names the kernel
 * the unit lacks, and leases it only if there is one. */
int srv_unit_pick_evidence(srv_store_t *st, const srv_pick_t *pk, int room, srv_work_t *out,
                           int *n);
/* Tail reissue (BOINC's): up to `room` units of the job that need no replica only because one
 * is out -- state leased or awaiting, need 0, not contested, live > 0, below their cap on results
 * -- whose every live lease was issued at or before stale_before, and that no client of this
 * client's key holds or reported (PICK_MINE), oldest lease first; appended to out (hold_until 0).
 * The scheduler offers them to a client that found nothing else to do. */
int srv_unit_pick_tail(srv_store_t *st, const srv_pick_t *pk, int64_t stale_before, int room,
                       srv_work_t *out, int *n);
/* Mark that the client can add no kernel the unit lacks (evidence = 2: an expired row that was
 * never work), so that it is not picked for the unit's evidence again; nq-admin unit retry clears
 * the marks (srv_unit_retry). */
int srv_asg_evidence_none(srv_store_t *st, int64_t unit_id, int64_t client_id, int64_t now);
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
/* When no unit of the job is open or disputed: the job becomes done, finished = now, with the
 * final totals (the 128-bit sums of the verified units), and *done = 1; else nothing, *done = 0. */
int srv_job_finish_if_complete(srv_store_t *st, int64_t job_id, int64_t now, int *done);

/* Leased assignments of the job's units (clients computing them now). */
int srv_job_leases(srv_store_t *st, const srv_job_t *job, int64_t *leases);
/* Release every lease on the job's units (its holders learn from their next progress or result
 * that the work is gone); *n (may be NULL) = how many. The next job of the queue does this to the
 * finished one, whose leased spot checks would otherwise count against its clients' caps. */
int srv_job_release_leases(srv_store_t *st, const srv_job_t *job, int64_t *n);
/* Release the leased assignments of a client (a ban) and refresh their units; *n (may be NULL)
 * gets how many. */
int srv_client_release_leases(srv_store_t *st, int64_t client_id, int64_t *n);

/* ---- counters and the status view (srv_store_stats, store_api.h, fills the rest) ------------ */

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

/* The counters of one job (job_stats, kept by triggers on the units): units per state, results,
 * verified sums and estimates into the matching fields of *out (the rest untouched).
 * NQ_ENOTFOUND without a row. */
int srv_store_counters(srv_store_t *st, int64_t job_id, srv_stats_t *out);

#endif
