/* nq: the wire contract -- every message in both directions, in one place (docs/protocol.md).
 *
 * Each message has a plain value struct, one pack function (struct -> JSON object, a new
 * reference; NULL only when memory runs out or a required string is NULL) and one parse function
 * (JSON object -> struct) that holds every check the protocol makes on it: presence, JSON types,
 * ranges. Server, client, nq-admin and nq-loadgen build and read messages only through these, so
 * both sides of the wire cannot drift apart. Values the parse cannot judge alone (does assignment
 * 42 belong to this client? is this count possible for this unit?) are the receiver's business.
 *
 * Strings. In a parsed struct every `const char *` points into the JSON object and lives as long
 * as it does (a connection's on_frame message: until the callback returns; take copies to keep
 * them). In a struct given to a pack function they are the caller's; NULL means "absent" for an
 * optional field.
 *
 * Integers. Counts and node counts (u64) are 0..2^63-1 and go on the wire as JSON integers; both
 * sides use one codec for them (nq_msg_set_u64 / nq_msg_get_u64), whose decimal-string form is
 * only ever needed above that range, where a parse refuses the value anyway. Job totals, which
 * may pass 64 bits, are decimal strings (the admin output code renders them).
 *
 * Parse failures. A parse returns 0, or NQ_EPROTO and, when err is not NULL, fills *err with the
 * error frame the receiver should answer with: its code (bad_message, version, bad_result, ...),
 * whether it is fatal, the assignment id it concerns (-1 if none) and a one-line message.
 *
 * Adding a field: a member in the struct, one line in its pack, the check in its parse, a round
 * trip and a refusal in tests/test_proto.c, and a row in docs/protocol.md. A change that an older
 * peer cannot read needs a new protocol version (NQ_PROTO_VERSION_MAX) and hello/welcome to say
 * which one is spoken.
 */
#ifndef NQ_PROTO_H
#define NQ_PROTO_H

#include <jansson.h>
#include <stdint.h>

#include "nq/admin_cmd.h"
#include "nq/json.h"
#include "nq/solver.h"

/* Protocol versions this build speaks. A hello carries the range its sender speaks (v_min..v_max,
 * and v, its preferred one, for servers that predate ranges); the server answers in the highest
 * version both speak, or refuses: `upgrade_required` (naming its minimum) when the client's whole
 * range is below the server's, `version` when it is above (the server is the old one). A welcome
 * whose `v` lies outside [MIN, MAX] is refused with `version`. Version 1 is the only one so far;
 * raising MIN is how a server retires an old protocol, and every client then learns it by exit
 * code instead of a restart loop (docs/protocol.md, "Versions"). */
#define NQ_PROTO_VERSION_MIN 1
#define NQ_PROTO_VERSION_MAX 1
/* The version this build sends in hello and welcome. */
#define NQ_PROTO_VERSION NQ_PROTO_VERSION_MAX

/* Ranges the parsers enforce (docs/protocol.md). */
#define NQ_PROTO_NAME_MAX 64          /* client names: 1..64 of [A-Za-z0-9._-] */
#define NQ_PROTO_SOLVER_MAX NQ_SOLVER_VERSION_MAX /* solver version strings: 1..64 characters */
#define NQ_PROTO_BACKEND_MAX 128      /* result.backend: 1..128 printable ASCII characters */
#define NQ_PROTO_THREADS_MAX 1024     /* hello.threads: 1..1024 */
#define NQ_PROTO_WANT_MAX 256         /* get_work.want: 1..256; assignments per work */
#define NQ_PROTO_OUTSTANDING_MAX 256  /* welcome.max_outstanding: 1..256 */
#define NQ_PROTO_LEASE_MAX (366 * 86400) /* work assignment `lease`: 0..this many seconds */
#define NQ_PROTO_RETRY_EXTRA_MAX 1000 /* admin unit_retry `extra`: 1..1000 */
#define NQ_PROTO_ERRMSG_MAX 200       /* bytes of a parse error's message */
#define NQ_PROTO_SOFTWARE_MAX 64      /* hello.software: 1..64 printable ASCII characters */
#define NQ_PROTO_SHOWN_MAX 88         /* welcome.shown_as: 1..88 printable ASCII characters */
#define NQ_PROTO_PAGE_MAX 255         /* welcome.page: 1..255 printable ASCII characters */
#define NQ_PROTO_CREDIT_MAX 39        /* welcome.credit: the decimal digits of a u128 */
#define NQ_PROTO_V_LIMIT 1000000      /* protocol versions on the wire: 0..this (0 is never spoken) */
#define NQ_RETRY_AFTER_MAX 3600       /* error.retry_after, signup_reply.retry_after: 1..this */

/* ---- message types --------------------------------------------------------------------------- */

/* The message types: X(ENUM, "type" on the wire). */
#define NQ_MSG_TYPE_MAP(X)                                                                         \
  X(NONE, "") /* not a message we know: `type` missing, not a string, or unknown */                \
  X(HELLO, "hello") /* client/admin -> server: first frame */                                      \
  X(WELCOME, "welcome") /* server -> client/admin */                                               \
  X(GET_WORK, "get_work") /* client -> server */                                                   \
  X(WORK, "work") /* server -> client */                                                           \
  X(NO_WORK, "no_work") /* server -> client */                                                     \
  X(PROGRESS, "progress") /* client -> server */                                                   \
  X(LEASE, "lease") /* server -> client: the answer to progress */                                 \
  X(RESULT, "result") /* client -> server */                                                       \
  X(ACK, "ack") /* server -> client: the answer to result */                                       \
  X(ADMIN, "admin") /* admin -> server */                                                          \
  X(ADMIN_REPLY, "admin_reply") /* server -> admin */                                              \
  X(ERROR, "error") /* either way */                                                               \
  X(BYE, "bye") /* either way */                                                                   \
  X(SIGNUP, "signup") /* client -> server: first frame, instead of hello: join by oneself */       \
  X(SIGNUP_REPLY, "signup_reply") /* server -> client: joined (keys) or pending (a ticket) */     \
  X(NEWS, "news") /* server -> client, unasked: the project's news (also in welcome) */
typedef enum {
#define NQ_MSG_ENUM_ONE(e, name) NQ_MSG_##e,
  NQ_MSG_TYPE_MAP(NQ_MSG_ENUM_ONE)
#undef NQ_MSG_ENUM_ONE
  NQ_MSG_COUNT
} nq_msg_type_t;

/* "hello", "welcome", ...; "" for NQ_MSG_NONE or out of range. */
const char *nq_msg_type_name(nq_msg_type_t t);
/* The type of a received message. *name (may be NULL) gets the `type` string as sent, or NULL
 * when the field is missing or not a string; the result is NQ_MSG_NONE for those and for an
 * unknown name. */
nq_msg_type_t nq_msg_type(const json_t *msg, const char **name);

/* ---- error codes ----------------------------------------------------------------------------- */

/* The error codes: X(ENUM, "code" on the wire); "" for none. */
#define NQ_ERRCODE_MAP(X)                                                                          \
  X(NONE, "")                                                                                      \
  X(BAD_FRAME, "bad_frame") /* fatal: length 0, truncated by close */                              \
  X(FRAME_TOO_BIG, "frame_too_big") /* fatal: length above NQ_FRAME_MAX */                         \
  X(BAD_JSON, "bad_json") /* fatal: not a UTF-8 JSON object, duplicate keys, too deep */           \
  X(UNKNOWN_TYPE, "unknown_type") /* fatal: type missing/unknown, or not valid for the role */     \
  X(NOT_HELLO, "not_hello") /* fatal: first frame not hello, or a second hello */                  \
  X(VERSION, "version") /* fatal: protocol version mismatch (the server is the older side) */      \
  /* fatal: the client's protocols are all older than the server's minimum                         \
     (error.min_version names it): upgrade the client */                                           \
  X(UPGRADE_REQUIRED, "upgrade_required")                                                          \
  X(AUTH, "auth") /* fatal: wrong token / key */                                                   \
  X(BANNED, "banned") /* fatal: the client is banned */                                            \
  /* fatal (not for admin): field missing or of the wrong                                          \
     type/range */                                                                                 \
  X(BAD_MESSAGE, "bad_message")                                                                    \
  X(BUSY, "busy") /* fatal: too many connections */                                                \
  X(TIMEOUT, "timeout") /* fatal: handshake/hello or idle timeout */                               \
  X(SHUTDOWN, "shutdown") /* fatal: the server is stopping */                                      \
  X(UNKNOWN_ASSIGNMENT, "unknown_assignment") /* no such assignment of this client, or finished */ \
  X(NOT_YOURS, "not_yours") /* the assignment belongs to another client */                         \
  X(BAD_RESULT, "bad_result") /* impossible numbers or wrong unit */                               \
  /* progress: the lease expired and the unit went to another client; a                            \
     result is still taken until the unit is decided */                                            \
  X(LEASE_EXPIRED, "lease_expired")                                                                \
  X(NOT_FOUND, "not_found") /* admin: no such object */                                            \
  X(EXISTS, "exists") /* admin: it exists already */                                               \
  X(BAD_STATE, "bad_state") /* admin: the object is in the wrong state */                          \
  X(INTERNAL, "internal") /* fatal: store failure; retry later */                                  \
  X(RATE_LIMITED, "rate_limited") /* fatal: too many enrolments from this address; retry later */  \
  X(ENROL_CLOSED, "enrol_closed") /* fatal: the server takes no more clients (--max-clients) */    \
  /* client -> server, with the assignment's id: this machine cannot run the                       \
     kernel the assignment names (the unit goes elsewhere) */                                      \
  X(NO_KERNEL, "no_kernel")                                                                        \
  /* fatal: this server takes no sign-ups (nq-server --signup off) */                              \
  X(SIGNUP_CLOSED, "signup_closed")                                                                \
  X(SIGNUP_REJECTED, "signup_rejected") /* fatal: the operator rejected this sign-up */            \
  X(OTHER, "other") /* a code this build does not know (see nq_error_msg_t.name) */
typedef enum {
#define NQ_ERR_ENUM_ONE(e, name) NQ_ERR_##e,
  NQ_ERRCODE_MAP(NQ_ERR_ENUM_ONE)
#undef NQ_ERR_ENUM_ONE
  NQ_ERR_COUNT
} nq_errcode_t;

/* "bad_frame", ...; "" for NQ_ERR_NONE, "other" for NQ_ERR_OTHER. */
const char *nq_errcode_name(nq_errcode_t c);
/* The code for a name; NQ_ERR_OTHER for one this build does not know (or NULL). */
nq_errcode_t nq_errcode_parse(const char *name);

/* Why a parse refused a message: the error frame to answer with. */
typedef struct nq_proto_err_s {
  nq_errcode_t code;
  int fatal;
  int64_t id; /* the assignment it concerns, or -1 */
  int64_t min_version; /* upgrade_required: the oldest protocol the server speaks; else 0 */
  char message[NQ_PROTO_ERRMSG_MAX];
} nq_proto_err_t;

/* 1 if name is a valid client name: 1..NQ_PROTO_NAME_MAX of [A-Za-z0-9._-]. */
int nq_proto_name_valid(const char *name);
/* 1 when t is a news item's text: 1..NQ_PROTO_NEWS_TEXT_MAX bytes, no control characters. */
int nq_proto_news_text_valid(const char *t);

/* ---- hello / welcome ------------------------------------------------------------------------- */

typedef enum { NQ_ROLE_CLIENT = 0, NQ_ROLE_ADMIN } nq_role_t;

typedef struct nq_hello_s {
  int64_t v;            /* the protocol version preferred (pack: 0 = v_max) */
  nq_role_t role;
  const char *token;    /* the client's token, or the admin token */
  const char *enrol;    /* role client, instead of token: the enrolment key */
  const char *name;     /* with enrol: the requested client name */
  const char *solver;   /* informative, optional */
  int threads;          /* informative, optional: 0 when absent (parse), omitted when 0 (pack) */
  const char *software; /* optional: "nq-client 0.2.0"; the server records it per client */
  const char *public_name; /* role client, optional: the name to show on the public page
                            * (nq_proto_name_valid); absent: anonymous */
  int64_t v_min, v_max; /* the range spoken (pack: 0 = this build's; parse: v..v when absent) */
  int64_t speak;        /* parse only: the version to answer in (the highest both speak) */
  int wait;             /* role client, optional boolean `wait`: the client waits
                         * between jobs, so the server may answer it `waiting` (welcome's job
                         * state, no_work's reason) where older clients are told `done` */
  const char *kernel;   /* role client, optional: the kernel it runs when none is named (its
                         * fastest CPU kernel, or its GPU's backend label), so that the kernel
                         * rule knows its kind before its first result of its own choice */
} nq_hello_t;

/* Checks: v, v_min, v_max integers 0..NQ_PROTO_V_LIMIT with v_min <= v <= v_max (bad_message);
 * a common version with [MIN, MAX] (else upgrade_required when v_max < MIN, with min_version,
 * or version when v_min > MAX); role "client" or "admin"; token, enrol, name strings when
 * present; solver 1..64 characters; software 1..64 printable ASCII; threads 1..1024;
 * role admin: token and no enrol; role client: exactly one of token and enrol; enrol: a valid
 * name; public_name, when present: a valid name; kernel, when present: 1..NQ_PROTO_BACKEND_MAX
 * printable ASCII characters. Every refusal is fatal. */
json_t *nq_hello_pack(const nq_hello_t *h);
int nq_hello_parse(const json_t *msg, nq_hello_t *out, nq_proto_err_t *err);

/* The job state a welcome announces. `waiting`: the server runs no job now (the last one
 * is done and none is queued yet); only sent to a client whose hello said `wait`. */
/* welcome.job_state: X(ENUM, "state" on the wire). */
#define NQ_JOB_STATE_MAP(X)                                                                        \
  X(RUNNING, "running")                                                                            \
  X(DONE, "done")                                                                                  \
  X(WAITING, "waiting")
typedef enum {
#define NQ_JOB_ENUM_ONE(e, name) NQ_JOB_##e,
  NQ_JOB_STATE_MAP(NQ_JOB_ENUM_ONE)
#undef NQ_JOB_ENUM_ONE
} nq_job_state_t;

/* The project's news (welcome.news, and the unasked `news` message when an item is added): the
 * newest NQ_PROTO_NEWS_MAX items, newest first. */
#define NQ_PROTO_NEWS_MAX 5
#define NQ_PROTO_NEWS_TEXT_MAX 400 /* bytes of UTF-8, no control characters */
typedef struct nq_news_item_s {
  int64_t id;       /* >= 1; a client logs each id once */
  int64_t at;       /* Unix seconds */
  const char *text;
} nq_news_item_t;

typedef struct nq_news_s {
  int n;            /* 0..NQ_PROTO_NEWS_MAX */
  nq_news_item_t items[NQ_PROTO_NEWS_MAX];
} nq_news_t;

/* Checks: items an array of at most NQ_PROTO_NEWS_MAX objects {id >= 1, at >= 0, text 1..400
 * bytes without control characters}; else bad_message. */
json_t *nq_news_pack(const nq_news_t *n);
int nq_news_parse(const json_t *msg, nq_news_t *out, nq_proto_err_t *err);

typedef struct nq_welcome_s {
  int64_t v;             /* the server's protocol version */
  const char *client;    /* the client's name (NULL for admin) */
  const char *token;     /* only after enrolment: the new token, shown once */
  int job_n, job_depth;
  nq_job_state_t job_state;
  int max_outstanding;   /* 1..NQ_PROTO_OUTSTANDING_MAX */
  int progress_interval; /* seconds, >= 1 */
  /* For the volunteer (optional; a client logs them and `nq-client status` shows them): */
  const char *shown_as;  /* the name the public page credits this client under */
  const char *page;      /* the public page's address */
  const char *credit;    /* this client's credit (verified nodes), decimal */
  const char *evidence_key; /* the fingerprint of the key the server signs its evidence with
                               (64 lowercase hex digits; docs/evidence.md) */
  nq_news_t news;        /* optional (n = 0: absent): the project's newest news */
} nq_welcome_t;

/* Checks: v an integer inside [MIN, MAX] (else version: the client speaks another protocol);
 * job {n 1..32, depth >= 1, state "running"|"done"|"waiting"} (while waiting: the last job's);
 * max_outstanding and progress_interval in
 * range; client and token strings when present; shown_as and page printable ASCII
 * (NQ_PROTO_SHOWN_MAX, NQ_PROTO_PAGE_MAX), credit a decimal u128, evidence_key 64 lowercase hex
 * digits, when present. */
json_t *nq_welcome_pack(const nq_welcome_t *w);
int nq_welcome_parse(const json_t *msg, nq_welcome_t *out, nq_proto_err_t *err);

/* ---- signup / signup_reply ------------------------------------------------------------------ */

#define NQ_PROTO_TICKET_MAX 128 /* signup.ticket: 1..128 of [0-9a-f] */

/* A volunteer joins without the operator (nq-client --join): the first frame of a connection,
 * instead of hello. The server creates an owner and this machine's client at once (--signup
 * open), or queues the request for the operator (approve) and hands out a ticket to ask again
 * with. After `joined` the client goes on with a hello carrying its new token on the same
 * connection. */
typedef struct nq_signup_s {
  int64_t v;               /* the protocol version the sender speaks (pack: 0 = this build's) */
  const char *name;        /* the client name asked for (nq_proto_name_valid) */
  const char *public_name; /* optional: the volunteer's public name (nq_proto_name_valid) */
  const char *team;        /* optional: the team to join, by name (nq_proto_name_valid) */
  const char *software;    /* optional: 1..64 printable ASCII */
  const char *ticket;      /* optional: asking again about a pending request: its ticket */
} nq_signup_t;

/* Checks: v an integer the server speaks (else version); name a valid name; public_name, team
 * valid names when present; software 1..64 printable ASCII; ticket 1..128 of [0-9a-f]. Every
 * refusal is fatal. */
json_t *nq_signup_pack(const nq_signup_t *s);
int nq_signup_parse(const json_t *msg, nq_signup_t *out, nq_proto_err_t *err);

#define NQ_SIGNUP_STATE_MAP(X)                                                                     \
  X(JOINED, "joined")                                                                              \
  X(PENDING, "pending")
typedef enum {
#define NQ_SIGNUP_ENUM_ONE(e, name) NQ_SIGNUP_##e,
  NQ_SIGNUP_STATE_MAP(NQ_SIGNUP_ENUM_ONE)
#undef NQ_SIGNUP_ENUM_ONE
} nq_signup_state_t;

typedef struct nq_signup_reply_s {
  nq_signup_state_t state;
  const char *owner;       /* joined: the new owner's name */
  const char *owner_key;   /* joined: its enrolment key (shown once; enrols more machines) */
  const char *client;      /* joined: this machine's client name */
  const char *token;       /* joined: this machine's token (shown once) */
  const char *ticket;      /* pending, the first answer only: the secret to ask again with */
  int64_t request;         /* pending: the request's number (what the operator approves) */
  int64_t retry_after;     /* pending: seconds before asking again, 1..NQ_RETRY_AFTER_MAX */
} nq_signup_reply_t;

/* Checks: state "joined" with owner, owner_key, client and token strings (1..128 printable
 * ASCII), or "pending" with request >= 1, retry_after 1..NQ_RETRY_AFTER_MAX and an optional
 * ticket (1..128 of [0-9a-f]); else bad_message. */
json_t *nq_signup_reply_pack(const nq_signup_reply_t *r);
int nq_signup_reply_parse(const json_t *msg, nq_signup_reply_t *out, nq_proto_err_t *err);

/* ---- work ------------------------------------------------------------------------------------ */

typedef struct nq_get_work_s {
  int want; /* 1..NQ_PROTO_WANT_MAX, counting the assignments already held */
} nq_get_work_t;

json_t *nq_get_work_pack(const nq_get_work_t *g);
int nq_get_work_parse(const json_t *msg, nq_get_work_t *out, nq_proto_err_t *err);

typedef struct nq_assignment_s {
  int64_t id;       /* the assignment (one unit given to one client), >= 0 */
  const char *unit; /* the unit text, 1..NQ_UNIT_TEXT_MAX-1 bytes (common/solver/include/nq/unit.h) */
  int64_t deadline; /* lease expiry, Unix seconds on the server's clock */
  int64_t lease;    /* the same as seconds from now, 0..NQ_PROTO_LEASE_MAX */
  const char *kernel; /* optional (NULL: the client's own choice): the kernel to solve it with
                       * (nq_kernel_available: "avx512", "avx2", "neon", "scalar", "reference");
                       * 1..NQ_KERNEL_NAME_MAX-1 of [a-z0-9_-]. A client that cannot run it
                       * answers with the non-fatal error no_kernel and the assignment's id. */
} nq_assignment_t;

typedef struct nq_work_s {
  int n; /* 1..NQ_PROTO_WANT_MAX */
  nq_assignment_t a[NQ_PROTO_WANT_MAX];
} nq_work_t;

json_t *nq_work_pack(const nq_work_t *w);
int nq_work_parse(const json_t *msg, nq_work_t *out, nq_proto_err_t *err);

/* waiting: no job runs now; ask again later (only to a client whose hello said
 * `wait`; others are told done). */
/* Why there is no work: X(ENUM, "reason" on the wire). */
#define NQ_NOWORK_MAP(X)                                                                           \
  X(NONE_PENDING, "none_pending")                                                                  \
  X(CAP, "cap")                                                                                    \
  X(DONE, "done")                                                                                  \
  X(WAITING, "waiting")
typedef enum {
#define NQ_NOWORK_ENUM_ONE(e, name) NQ_NOWORK_##e,
  NQ_NOWORK_MAP(NQ_NOWORK_ENUM_ONE)
#undef NQ_NOWORK_ENUM_ONE
} nq_nowork_reason_t;

typedef struct nq_no_work_s {
  int64_t retry_after; /* seconds, >= 0 */
  nq_nowork_reason_t reason;
} nq_no_work_t;

/* "none_pending", "cap", "done", "waiting" */
const char *nq_nowork_reason_name(nq_nowork_reason_t r);
json_t *nq_no_work_pack(const nq_no_work_t *n);
int nq_no_work_parse(const json_t *msg, nq_no_work_t *out, nq_proto_err_t *err);

/* ---- progress / lease ------------------------------------------------------------------------ */

typedef struct nq_progress_s {
  int64_t id;
  int has_nodes;    /* nodes is informative and optional */
  uint64_t nodes;   /* counted so far, 0..2^63-1 */
  int has_fraction; /* optional: */
  double fraction;  /* the share of the unit done, 0..1 */
  int has_seconds;  /* optional: */
  double seconds;   /* solve time spent on the unit so far (every run of a resumed unit), >= 0 */
  int paused;       /* optional `paused`: 1 the client's solver is paused (sent as true only) */
} nq_progress_t;

json_t *nq_progress_pack(const nq_progress_t *p);
int nq_progress_parse(const json_t *msg, nq_progress_t *out, nq_proto_err_t *err);

typedef struct nq_lease_s {
  int64_t id;
  int64_t deadline; /* the new lease expiry, server clock */
} nq_lease_t;

json_t *nq_lease_pack(const nq_lease_t *l);
int nq_lease_parse(const json_t *msg, nq_lease_t *out, nq_proto_err_t *err);

/* ---- result / ack ---------------------------------------------------------------------------- */

/* One finished result, the same value from the solver to the store: the client fills it, keeps it
 * in memory or in its journal (as this message), sends it; the server parses it and hands it to
 * its scheduler (srv_sched_result). It owns its strings, so it can be held and copied. */
typedef struct nq_result_s {
  int64_t id;
  char unit[NQ_UNIT_TEXT_MAX]; /* 1..NQ_UNIT_TEXT_MAX-1 bytes */
  nq_counts_t counts; /* c2, c4, c8, nodes (count1 is not sent: units exist for N >= 4 only) */
  double seconds;
  char solver[NQ_PROTO_SOLVER_MAX + 1]; /* 1..NQ_PROTO_SOLVER_MAX bytes */
  char backend[NQ_PROTO_BACKEND_MAX + 1]; /* optional ("": not said): what computed it, e.g.
                          "avx512", "scalar", "opencl:NVIDIA H200", several joined by '+' */
} nq_result_t;

/* 1 if s is a valid kernel name on the wire: 1..NQ_KERNEL_NAME_MAX-1 of [a-z0-9_-]. */
int nq_proto_kernel_valid(const char *s);

/* Checks: id a non-negative integer, c2/c4/c8/nodes integers, unit and solver strings, seconds a
 * number, backend (when present) 1..NQ_PROTO_BACKEND_MAX printable ASCII characters (all fatal
 * bad_message); a count outside 0..2^63-1, negative seconds, a unit or solver too long for the
 * struct is the non-fatal bad_result with the id. Whether the numbers are possible for the unit is the
 * server's check. */
json_t *nq_result_pack(const nq_result_t *r);
int nq_result_parse(const json_t *msg, nq_result_t *out, nq_proto_err_t *err);

/* What became of a result: X(ENUM, "status" on the wire). */
#define NQ_ACK_MAP(X)                                                                              \
  X(ACCEPTED, "accepted")                                                                          \
  X(DUPLICATE, "duplicate")                                                                        \
  X(LATE, "late")
typedef enum {
#define NQ_ACK_ENUM_ONE(e, name) NQ_ACK_##e,
  NQ_ACK_MAP(NQ_ACK_ENUM_ONE)
#undef NQ_ACK_ENUM_ONE
} nq_ack_status_t;

typedef struct nq_ack_s {
  int64_t id;
  nq_ack_status_t status;
  /* The receipt (optional; docs/evidence.md, "The root and the receipts"): the result's leaf in
   * the job's Merkle tree and what finds it in the evidence file (the job, the unit; the result
   * is `id`). has_receipt 0: absent (pack omits it; an older server sends none). */
  int has_receipt;
  int64_t job;
  const char *unit;     /* the unit's text, 1..NQ_UNIT_TEXT_MAX - 1 of [0-9a-z:,] */
  const char *leaf;     /* the leaf hash: 64 lowercase hex digits */
  const char *credit; /* optional (NULL: not said): the client's credit (verified nodes) as this
                         answer leaves, decimal, as welcome.credit: the volunteer's figure stays
                         fresh without a reconnect */
} nq_ack_t;

const char *nq_ack_status_name(nq_ack_status_t s); /* "accepted", "duplicate", "late" */
/* A receipt that is present must be {job >= 0, unit, leaf} as above (else bad_message). */
json_t *nq_ack_pack(const nq_ack_t *a);
int nq_ack_parse(const json_t *msg, nq_ack_t *out, nq_proto_err_t *err);

/* ---- admin ----------------------------------------------------------------------------------- */

/* The commands, their requests' views and the request struct: nq/admin_cmd.h. The message is
 * {"type": "admin", "cmd": NAME, ...the request view's fields}. Refusals are the non-fatal
 * bad_message (an admin session survives a typo), their message naming the field
 * ("units.limit: is not in 0..2147483647"). */
json_t *nq_admin_req_pack(const nq_admin_req_t *r);
int nq_admin_req_parse(const json_t *msg, nq_admin_req_t *out, nq_proto_err_t *err);

typedef struct nq_admin_reply_s {
  nq_admin_cmd_t cmd;
  json_t *data; /* the command's data object (docs/operations.md); borrowed both ways */
} nq_admin_reply_t;

json_t *nq_admin_reply_pack(const nq_admin_reply_t *r);
int nq_admin_reply_parse(const json_t *msg, nq_admin_reply_t *out, nq_proto_err_t *err);

/* ---- error / bye ----------------------------------------------------------------------------- */

typedef struct nq_error_msg_s {
  nq_errcode_t code;   /* NQ_ERR_OTHER: a code this build does not know, named by `name` */
  const char *name;    /* parse: the code as sent; pack: used only for NQ_ERR_OTHER */
  const char *message; /* human readable; "" when absent */
  int fatal;           /* the sender closes the connection after it */
  int64_t id;          /* the assignment the error answers, or -1 */
  int64_t min_version; /* upgrade_required: the server's oldest protocol; 0 = absent */
  int64_t retry_after; /* busy: seconds the client should wait before it comes back (it adds
                          jitter); 1..NQ_RETRY_AFTER_MAX; 0 = absent */
} nq_error_msg_t;

/* Checks: code a string; message a string, fatal a boolean, id a non-negative integer,
 * min_version an integer 1..NQ_PROTO_V_LIMIT and retry_after 1..NQ_RETRY_AFTER_MAX when
 * present. */
json_t *nq_error_pack(const nq_error_msg_t *e);
int nq_error_parse(const json_t *msg, nq_error_msg_t *out, nq_proto_err_t *err);
/* The common case: an error frame from a code and a message (id -1). */
json_t *nq_error_new(nq_errcode_t code, const char *message, int fatal);

json_t *nq_bye_pack(void);

/* The field helpers (nq_msg_get_str, nq_msg_set_u64, ...) are in nq/json.h. */

/* `--version` of every program that speaks the protocol: "PROG VERSION" and, on a second line,
 * the protocol versions this build speaks and its solver, on stdout. (nq-solve speaks none and
 * prints "solver VERSION" instead.) */
void nq_print_version(const char *prog);

#endif
