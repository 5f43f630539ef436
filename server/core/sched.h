/* nq-server: the scheduler -- leases, reissue, quorum, trust. No network, no clock: the caller
 * passes `now` (Unix seconds). See docs/store.md for the states and rules. It holds the rules
 * only: what it reads and writes goes through the store's typed functions (store.h), which own
 * the SQL. (srv_work_t, one `work` entry, is defined there too.)
 *
 * Transaction contract. Every srv_sched_* function that changes state (get_work, progress, result,
 * expire) must be called inside a transaction the CALLER opened with srv_store_begin(); it returns
 * NQ_ETXN otherwise and never begins or commits itself. Each call is atomic within that
 * transaction (a SAVEPOINT): when it returns an error, nothing it did remains, and the caller may
 * go on with other calls in the same transaction. The caller sends its replies (work, lease, ack)
 * only after srv_store_commit() returned 0; if the commit fails, every reply of the group is void
 * (send `internal` errors; the clients retry).
 *
 * Error codes, mapped to the protocol's error frames by the network layer:
 *   NQ_ENOTFOUND -> unknown_assignment     NQ_EAUTH -> not_yours     NQ_EINVAL -> bad_result
 *   NQ_EBANNED   -> banned (the client is banned; close it)
 *   NQ_ETXN      -> internal (no transaction open: a bug in the caller)
 *   NQ_EIO       -> internal
 */
#ifndef SRV_SCHED_H
#define SRV_SCHED_H

#include <stdint.h>

#include "nq/fleet.h"
#include "nq/proto.h"
#include "nq/solver.h"
#include "nq/unit.h"
#include "store_api.h"

typedef struct srv_sched_config_s {
  int lease_seconds;   /* longest lease: from issue when the cost is unknown, and from each
                          progress; default 3600 */
  int lease_min;       /* shortest lease from issue (capped at lease_seconds); default 60 */
  int max_outstanding; /* per-client cap on leased assignments; default 16 */
  int ban_threshold;   /* auto-ban once invalid >= this and invalid > valid; default 3; 0 = never */
  int retry_after;     /* seconds suggested in no_work; default 30 */
  /* A hostile fleet. */
  srv_distinct_t quorum_distinct; /* what makes two agreeing results independent; default owner */
  int self_joined;     /* SRV_SELF_JOINED_*: under owner, what keeps a self-joined owner's result
                          from voting twice (schema 022); default owner-and-network */
  double spot_check;   /* percent of verified units re-issued to yet another owner; default 2 */
  int hold_factor;     /* a lease never runs past issue + hold_factor x max(lease_seconds, the
                          unit's estimated seconds on the reference core); default 8 */
  uint64_t seed;       /* the spot-check draw's seed; 0 = from the system's CSPRNG */
} srv_sched_config_t;

/* srv_sched_config_t.self_joined */
enum { SRV_SELF_JOINED_OWNER_AND_NET = 0, SRV_SELF_JOINED_OWNER = 1 };

/* The scheduler's options, declared once (sched_opts.c): nq-server's command line reads this
 * table into a srv_sched_config_t; srv_sched_config_default applies its defaults. */
extern const struct nq_opt_s srv_sched_opts_table[];
void srv_sched_config_default(srv_sched_config_t *cfg);

/* The scheduler context: plain data, embed it in the server struct. It does not own the store. */
typedef struct srv_sched_s {
  srv_store_t *store;
  srv_job_t job;           /* the job being scheduled (refreshed by srv_sched_init) */
  srv_sched_config_t cfg;
  uint64_t rng;            /* the spot-check draw's state */
} srv_sched_t;

/* Bind to a store and a job (from srv_job_ensure). cfg NULL = defaults. Reads only. */
int srv_sched_init(srv_sched_t *s, srv_store_t *st, int64_t job_id, const srv_sched_config_t *cfg);

/* Why get_work leased nothing NEW (resent assignments may still be in `out`). */
typedef enum {
  SRV_NOWORK_NONE = 0,     /* at least one new assignment was leased */
  SRV_NOWORK_PENDING,      /* protocol reason "none_pending": all leased / waiting on others */
  SRV_NOWORK_CAP,          /* "cap": the client holds max_outstanding assignments */
  SRV_NOWORK_DONE          /* "done": the job is finished */
} srv_nowork_t;

/* The no_work reason for why (not SRV_NOWORK_NONE): none_pending, cap or done. */
nq_nowork_reason_t srv_nowork_code(srv_nowork_t why);

/* get_work. `out` has room for `want` entries (1..256). First sweeps expired leases
 * (srv_sched_expire), then fills `out` with the client's still-leased unexpired assignments
 * (resent = 1, same id and deadline), then leases new ones, at most min(want - resent,
 * max_outstanding - held): units that need another replica and that no client of this client's
 * key (cfg.quorum_distinct: itself, its owner, its network) holds or reported (never two replicas
 * of one unit to one key), units already in progress (or disputed) first (to finish quorums),
 * then spot checks of verified units (srv_unit_pick_spot), then by id. A finished job hands out
 * spot checks only, and answers `done` when there is none for this client. A unit needs min(quorum - best agreeing group, max_results +
 * extra_results - results) - live replicas (extra_results: 0 unless the operator retried it,
 * srv_unit_retry). Each new lease gets deadline = now + lease, sized from the expected cost of the
 * work (srv_sched_lease_for): lease_seconds while the client has fewer than LEASE_HISTORY_MIN
 * reported results in this job, else lease_min + LEASE_SLACK * mean * (ahead + 1), capped at
 * lease_seconds, where mean is the mean `seconds` of its last LEASE_HISTORY results in the job and
 * ahead is how many of its assignments come before this one (those it holds, then the earlier
 * ones of this batch): a lease covers the wait in the client's queue as well as the solve.
 * Against hoarding by re-grab: a client's cap is max_outstanding divided by its lapse
 * factor (srv_sched_lapse_factor), and so is each lease (at least lease_min); no lease runs past
 * the replica's hold limit, which counts from the first lease of the unit to the client's key
 * and is kept when the unit comes back to that key after a lease expired; past it, the key gets
 * the unit again only once it has waited lease_seconds for another key (srv_unit_pick).
 * *why says why nothing new was leased (SRV_NOWORK_NONE if something was); the protocol answers
 * `work` when *n_out > 0 and `no_work` with srv_nowork_code(*why) otherwise. Returns 0,
 * NQ_EBANNED, NQ_ETXN, NQ_ENOTFOUND (no such client), NQ_EINVAL (want out of range), NQ_EIO. */
/* Tail reissue (BOINC's): a client that finds nothing else to do is given a unit whose only
 * replica out has been leased for SRV_TAIL_AFTER_S s or more (a slow or paused holder), as an
 * extra replica within the unit's cap on results, when no client of its key had the unit
 * (srv_unit_pick_tail): so one slow client never holds the end of a job. Whichever result comes
 * first counts; the other is judged late. */
#define SRV_TAIL_AFTER_S NQ_FLEET_TAIL_AFTER_S /* plans price the tail with it (nq/fleet.h) */
#define LEASE_HISTORY 16    /* recent results a client's expected solve time is taken from */
#define LEASE_HISTORY_MIN 3 /* fewer than this: the cost is unknown, the lease is lease_seconds */
#define LEASE_SLACK 4       /* lease = lease_min + LEASE_SLACK x the expected time, capped */

/* The lease in seconds for a client's assignment with `ahead` of its assignments before it, given
 * its expected seconds per unit (`mean`, < 0 when unknown). Pure: exposed for the tests. */
int64_t srv_sched_lease_for(const srv_sched_config_t *cfg, double mean, int ahead);

int srv_sched_get_work(srv_sched_t *s, int64_t client_id, int want, int64_t now, srv_work_t *out,
                       int *n_out, srv_nowork_t *why);

/* progress: extend the lease of the client's assignment p->id to now + lease_seconds, return it
 * in *deadline, and keep the report (fraction, seconds, nodes) as the assignment's last progress.
 * Hoarding is bounded: the lease is extended only when the report advances -- its
 * fraction, or its nodes, grew since the last report (the first report always counts) -- and
 * never past the hold limit (hold_until: the first lease of the unit to the client's key +
 * srv_sched_hold(), kept across re-leases; issued + srv_sched_hold() for older rows); a report
 * that does not advance keeps the
 * deadline it had. A unit held to the hold limit expires and is reissued like any other.
 * Works on the client's own leased assignment, and on its expired one as long as the unit is
 * still undecided and still needs a replica (it has not been reissued in its place); that lease is
 * revived. NQ_ESTATE for an expired one whose undecided unit was reissued (the protocol's
 * lease_expired: its result is still taken), NQ_ENOTFOUND for unknown, not this client's,
 * reported, or verified ones (unknown_assignment), NQ_EBANNED if banned. */
int srv_sched_progress(srv_sched_t *s, int64_t client_id, const nq_progress_t *p, int64_t now,
                       int64_t *deadline);
/* A progress with `paused` (the client's solver is paused: docs/protocol.md) also marks the
 * client paused and extends every lease it holds to now + lease_seconds, within each one's hold
 * limit (srv_client_pause): a paused volunteer's units are not re-issued while it keeps saying
 * so, and no longer than the hold limit allows. A progress without it, or a get_work, clears the
 * mark. Status counts the paused clients (clients.paused) and says so beside the ETA. */

/* The client answered no_kernel for its leased assignment asg_id: it cannot run the kernel the
 * assignment names. The lease ends now and counts as a lapse (srv_asg_refuse: a client cannot
 * hold more by refusing than by letting leases run out), the kernel is not named to this client
 * again, and the unit is leased elsewhere (its key gets it back only after it waited a lease for
 * another, as past a hold limit). kernel (len >= NQ_KERNEL_NAME_MAX) gets the refused kernel.
 * NQ_ENOTFOUND for an assignment that is not the client's live lease or names no kernel;
 * NQ_EBANNED; NQ_ETXN; NQ_EIO. */
int srv_sched_refuse(srv_sched_t *s, int64_t client_id, int64_t asg_id, int64_t now,
                     char *kernel, size_t len);

/* Lapses (leases expired without a result, less one per result: srv_client_t.lapses) per step
 * of the lapse factor, and its largest value. */
#define SRV_LAPSE_STEP 4
#define SRV_LAPSE_FACTOR_MAX 64
/* The lapse factor of a client: 1 + lapses / SRV_LAPSE_STEP, at most SRV_LAPSE_FACTOR_MAX. Its
 * max_outstanding is divided by it (at least 1), and so is each new lease (at least lease_min). */
int srv_sched_lapse_factor(int64_t lapses);

/* The hold limit of a unit in seconds: hold_factor x max(lease_seconds, est_nodes on the reference
 * core, NQ_REF_NODES_PER_SEC); est_nodes < 0 when unknown. Pure: exposed for the tests. */
int64_t srv_sched_hold(const srv_sched_config_t *cfg, int64_t est_nodes);

typedef enum {
  SRV_RESULT_ACCEPTED = 0, /* stored; unit undecided or decided by it */
  SRV_RESULT_DUPLICATE,    /* this assignment was already reported: nothing changed */
  SRV_RESULT_LATE          /* stored for the record; the unit was already verified/disputed */
} srv_result_status_t;

/* The ack status of a result: accepted, duplicate or late. */
nq_ack_status_t srv_result_ack(srv_result_status_t st);

/* What a result caused, for logs and for the network layer. */
typedef struct srv_result_info_s {
  srv_result_status_t status;
  int unit_verified;  /* this result completed the unit's quorum */
  int unit_disputed;  /* this result made the unit disputed */
  int job_done;       /* ... and that finished the job (final totals written) */
  int banned;         /* clients auto-banned by this call (possibly the caller itself) */
  int unit_reopened;  /* a spot check disagreed: the verified unit was re-opened */
  int job_reopened;   /* ... and that made the finished job running again */
  int suspects;       /* clients marked suspect by this call */
  int unit_contested; /* results disagree and a trusted owner exists: contested */
  int unit_settled;   /* ... and a trusted result (or srv_sched_settle) settled it */
} srv_result_info_t;

/* result. Checks, in order: the assignment exists (NQ_ENOTFOUND), it is this client's (NQ_EAUTH),
 * the client is not banned (NQ_EBANNED), unit_text equals the assignment's unit and the numbers are
 * possible (NQ_EINVAL: counts and nodes <= INT64_MAX, count1 = 0, nodes >= 1,
 * c2 + c4 + c8 <= nodes, corner unit => c2 = c4 = 0, seconds >= 0, solver a version of the
 * closed list nq/versions.h, the backend the kernel the lease named when it named one).
 * Then: already reported -> DUPLICATE, nothing changes. Unit verified -> LATE, judged valid/invalid
 * against it (trust counts change) -- unless the assignment is a spot check: ACCEPTED, and if it
 * disagrees the unit is re-opened with the group that verified it voided (info->unit_reopened,
 * and job_reopened when that made the finished job running again). Otherwise (open or disputed)
 * the result is stored (also for an expired lease) and the votes are counted: two results agree
 * iff c2, c4, c8 are equal and, where their solver versions walk the same search tree at the
 * job's N (nq/versions.h), their nodes are equal too;
 * a result votes unless voided or its client is banned or suspect; the votes of a group are its
 * distinct keys (cfg.quorum_distinct). When the best group has >= quorum votes and more than all
 * the others (a strict majority), and the votes of one search tree in it reach the quorum too (the
 * unit's nodes, hence the job's node total and the credit, are an agreed count: a version of
 * another tree is compared on counts alone), the unit is verified with its counts, every result is judged
 * (clients that agreed on one wrong answer are marked suspect), other live leases are released,
 * clients past the ban threshold are banned (srv_sched_ban), a spot check may be drawn, and if it
 * was the job's last unit the job becomes done with its final totals -- all in this call.
 * Without that and with max_results + extra_results results the unit becomes disputed (it keeps
 * taking replicas, docs/store.md). r is the result as the client sent it (nq/proto.h): r->id its
 * assignment; r->backend (what computed it: "avx512", "opencl:NAME", ...) is stored with the result
 * when not "". info may be NULL. */
int srv_sched_result(srv_sched_t *s, int64_t client_id, const nq_result_t *r, int64_t now,
                     srv_result_info_t *info);

/* ---- trust: bans and re-opened units ------------------------------------------------------- *
 * These run inside the caller's transaction when one is open, else in their own. Each re-opened
 * unit's votes are counted again at once (it may be verified again by the votes it has left). */

/* Ban a client: its leases go back (srv_client_ban), every unit of the job it helped verify is
 * re-opened without its vote (its result voided) and verified again, and its undecided results
 * stop voting. *reopened (may be NULL) gets the number of units re-opened, *job_reopened whether
 * the finished job became running again. Idempotent for the ban; NQ_ENOTFOUND. */
int srv_sched_ban(srv_sched_t *s, int64_t client_id, int64_t now, int64_t *reopened,
                  int *job_reopened);
/* Ban an owner: its key enrols nobody and every client of it is banned as above. */
int srv_sched_ban_owner(srv_sched_t *s, int64_t owner_id, int64_t now, int64_t *reopened,
                        int *job_reopened);
/* The operator re-opens a unit (verified, disputed or open): every result it has is voided (it
 * no longer votes, and is judged against the new answer), and the unit is verified again by
 * `quorum` fresh results of other keys. NQ_ENOTFOUND; NQ_EINVAL for a unit of another job. */
int srv_sched_reopen(srv_sched_t *s, int64_t unit_id, int64_t now, int *job_reopened);

/* The operator retries a disputed or awaiting unit (nq-admin unit retry): its voided votes that
 * nothing voting contradicts any more are restored (srv_unit_restore_votes; *restored, may be
 * NULL), it may take `extra` more results (srv_unit_retry), and its votes are counted again at
 * once, so it may be verified by this call (info: may be NULL). Atomic; NQ_ENOTFOUND, NQ_ESTATE,
 * NQ_EINVAL as srv_unit_retry, and for a unit of another job. */
int srv_sched_retry(srv_sched_t *s, int64_t unit_id, int extra, int64_t now, int64_t *restored,
                    srv_result_info_t *info);

/* Sweep: leases with deadline <= now become expired and their units need a replica again (they
 * are reissued to other clients by get_work). The original client's result still counts if it
 * arrives before the unit is decided. *n_expired (may be NULL) gets the number swept. Call it from
 * a timer; get_work also calls it. */
int srv_sched_expire(srv_sched_t *s, int64_t now, int64_t *n_expired);

/* ---- trusted resolution (docs/store.md "Trusted resolution") ------------------------------ *
 * While any trusted owner (nq-admin owner trust) is not banned, a disagreement among results --
 * a spot check or a late result against a verified unit, results of an open unit that differ --
 * is not decided by votes: the unit is contested (state disputed, units.contest 1, no counts, no
 * untrusted replica, nobody judged) until a trusted owner's result settles it; the owners whose
 * results disagree with a trusted result are banned (srv_sched_ban_owner's path: what they
 * helped verify re-opens). Contested units and spot checks go to trusted clients first; while one
 * was seen within SRV_TRUSTED_ACTIVE_WINDOW s, spot checks go to nobody else. The job is not done
 * while a unit is contested or a spot check is wanted or out. Without a trusted owner the votes
 * decide as before (and bans follow --ban-threshold). */
#define SRV_TRUSTED_ACTIVE_WINDOW 600

/* Settle a unit with an authoritative count (the hook for an audit with the reference solver):
 * the unit (contested, open or verified) is verified with *c (units.contest = 3), every result
 * is judged against it (the nodes too, for results whose solver version is `solver`), and the
 * untrusted owners of results that disagree are banned, what they helped verify re-opened
 * (unless --ban-threshold 0). In the caller's transaction when one is open, else in its own.
 * info (may be NULL) as for a result. NQ_EINVAL for impossible counts or a unit of another
 * job, NQ_ENOTFOUND. */
int srv_sched_settle(srv_sched_t *s, int64_t unit_id, const nq_counts_t *c, const char *solver,
                     int64_t now, srv_result_info_t *info);

/* At start: count the votes of every disputed unit of the job again (best, others, need), as a
 * result would. A database from before schema 006 kept its disputed units with others = 0 and
 * need = 0, so they took no replica and the job could never finish (test_upgrade); for a unit
 * counted since, nothing changes. In the caller's transaction when one is open, else in its own;
 * refreshes s->job (a recount may verify the last unit). *n (may be NULL): units recounted. */
int srv_sched_recount_disputed(srv_sched_t *s, int64_t now, int *n);

/* Spot checks never hold a job (docs/reliability.md, "Liveness"): once every unit of a running
 * job with a trusted owner is verified, a spot check that no client may take -- none online
 * (seen within SRV_TRUSTED_ACTIVE_WINDOW s) that can vote is of a key that never had the unit, or,
 * while a trusted owner's client is active, none of those is trusted -- is dropped once its unit
 * was verified SRV_SPOT_WAIT_S s ago: units.spot back to 0, counted in jobs.spot_dropped (schema
 * 019), and the job finishes without it when nothing else is wanted. get_work and the sweep
 * (srv_sched_expire's caller) call it. *dropped (may be NULL) gets the number dropped,
 * *job_done (may be NULL) whether that finished the job. In the caller's transaction. */
#define SRV_SPOT_WAIT_S 600
int srv_sched_drop_spots(srv_sched_t *s, int64_t now, int64_t *dropped, int *job_done);

/* The operator moves past the job (nq-admin job next --force): when every unit is verified and
 * only spot checks hold it, they are all dropped (counted in jobs.spot_dropped) and the job
 * finishes with its final totals; otherwise nothing changes (it keeps its verified counts and
 * resumes when its N is queued again). Its own transaction unless the caller has one. */
int srv_sched_set_aside(srv_sched_t *s, int64_t now, int64_t *dropped, int *job_done);

/* Earliest deadline of a leased assignment of the job, or 0 if none (for the sweep timer). */
int srv_sched_next_deadline(srv_sched_t *s, int64_t *deadline);

#endif
