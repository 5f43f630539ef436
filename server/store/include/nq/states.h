/* nq: the server's enums whose names leave it -- in the admin views (nq/admin_view.h), the page,
 * the database -- each as one X-macro table (libuv's UV_ERRNO_MAP): the enum, its names and its
 * parse all come from the row list, so a state is added in one line.
 *
 * The database stores unit states by name (schema/001_init.sql's CHECK on units.state, which SQL
 * cannot take from here): tests/test_views.c checks that list against NQ_UNIT_STATE_MAP.
 */
#ifndef NQ_STATES_H
#define NQ_STATES_H

/* The state of a unit: X(ENUM, "name", meaning). */
#define NQ_UNIT_STATE_MAP(X)                                                                     \
  X(PENDING, "pending", "no live lease, no result")                                              \
  X(LEASED, "leased", "live lease(s), no result yet")                                            \
  X(AWAITING, "awaiting", "at least one result, no quorum yet")                                  \
  X(VERIFIED, "verified", "`quorum` agreeing results from distinct clients")                     \
  X(DISPUTED, "disputed", "max_results (+ extra) results without a quorum; needs the operator")

/* Why a unit cannot finish as the fleet stands (server/store/store_stall.h): X(ENUM, "name", text). */
#define NQ_STALL_REASON_MAP(X)                                                                   \
  X(OWNERS, "owners", "fewer keys that can vote than the quorum needs: nq-admin owner add NAME")  \
  X(VOTED, "voted", "every key that can vote has already given it a result: nq-admin owner add " \
    "NAME and enrol a client of it")                                                             \
  X(OFFLINE, "offline", "the keys that could give it its next results are not online: bring "   \
    "their clients back (nq-admin clients)")                                                     \
  X(CONTESTED, "contested", "contested, and no trusted owner's client is online to settle it: "  \
    "nq-admin audit --sample K settles K of them with the reference solver")                                       \
  X(BLOCKED, "blocked", "disputed at its cap on results: nq-admin unit retry")                   \
  X(KERNELS, "kernels", "its votes agree but come from fewer kernels than --diverse-kernels "    \
    "asks, and no client that may add one can: enrol a client of another owner, or one that "   \
    "runs another kernel (nq-admin unit retry asks its voters again)")                                            \
  X(SPOT, "spot", "a spot check no client online may take: dropped by itself 600 s after its "  \
    "unit was verified (the job then finishes and says so), or bring a trusted owner's client "  \
    "online")

/* nq_work_state_t: NQ_UNIT_PENDING .. NQ_UNIT_DISPUTED, in the table's order (the server's
 * srv_unit_state_t is the same table's). */
typedef enum {
#define NQ_UNIT_ENUM_ONE(e, name, text) NQ_UNIT_##e,
  NQ_UNIT_STATE_MAP(NQ_UNIT_ENUM_ONE)
#undef NQ_UNIT_ENUM_ONE
} nq_work_state_t;

#define NQ_ENUM_COUNT_ONE(e, name, text) +1
#define NQ_ENUM_NAME_ONE(e, name, text) name,
/* The same for two-column tables X(ENUM, "name"). */
#define NQ_ENUM_NAME_OF(e, name) name,
#define NQ_UNIT_STATE_N (0 NQ_UNIT_STATE_MAP(NQ_ENUM_COUNT_ONE))
#define NQ_STALL_REASON_N (0 NQ_STALL_REASON_MAP(NQ_ENUM_COUNT_ONE))

/* units.contest: why a unit is (or was) contested, and what settled it. */
#define SRV_CONTEST_MAP(X)                                                                         \
  X(NONE, "none") /* never contested, or decided by votes (no trusted owner) */                    \
  X(OPEN, "contested") /* its results disagree: not verified, waits for a trusted result */        \
  X(TRUSTED, "trusted") /* verified by a trusted owner's result */                                 \
  X(AUDIT, "audit") /* verified by an authoritative count (srv_sched_settle) */
typedef enum {
#define SRV_CONTEST_ENUM_ONE(e, name) SRV_CONTEST_##e,
  SRV_CONTEST_MAP(SRV_CONTEST_ENUM_ONE)
#undef SRV_CONTEST_ENUM_ONE
  SRV_CONTEST_N
} srv_contest_t;

#endif
