/* nq-server: the store's job queue -- jobs the operator queued to run after the current one
 * (nq-admin job add / list / cancel; schema/015_job_queue.sql, docs/store.md "The job queue").
 *
 * A queued job is only its settings (nq/job_opts.h) until the server starts it: its units are made
 * then (srv_job_open), so a long queue costs nothing. Entries run oldest first. Like the rest of
 * the store: typed functions, every SQL statement here, atomic on their own (a SAVEPOINT: they
 * join an open transaction or commit by themselves), `now` from the caller.
 */
#ifndef SRV_STORE_QUEUE_H
#define SRV_STORE_QUEUE_H

#include <stdint.h>

#include "nq/job_opts.h"
#include "nq/states.h"
#include "store.h"

/* The queue entries' states (job_queue.state holds the name): X(ENUM, "name"). */
#define SRV_QUEUE_STATE_MAP(X)                                                                     \
  X(QUEUED, "queued") /* waiting for its turn */                                                   \
  X(STARTED, "started") /* the server made its job (job_id) */                                     \
  X(CANCELLED, "cancelled") /* taken back by the operator before it started */                     \
  X(FAILED, "failed") /* the server could not make its job (error says why) */
typedef enum {
#define SRV_QUEUE_ENUM_ONE(e, name) SRV_QUEUE_##e,
  SRV_QUEUE_STATE_MAP(SRV_QUEUE_ENUM_ONE)
#undef SRV_QUEUE_ENUM_ONE
  SRV_QUEUE_NSTATES
} srv_queue_state_t;

/* "queued", "started", "cancelled", "failed". */
const char *srv_queue_state_name(srv_queue_state_t s);

typedef struct srv_queued_s {
  int64_t id;
  nq_jobopts_t opts;
  srv_queue_state_t state;
  int64_t added, changed; /* changed: when it started, was cancelled or failed (0 before) */
  int64_t job_id;         /* started: its job; else 0 */
  char error[256];        /* failed: why */
} srv_queued_t;

/* Queue a job after every queued one. The options are checked (nq_jobopts_check): NQ_ERANGE /
 * NQ_EINVAL with the reason in srv_store_errmsg. 0 and *out (may be NULL). */
int srv_queue_add(srv_store_t *st, const nq_jobopts_t *o, int64_t now, srv_queued_t *out);
/* One entry by id; NQ_ENOTFOUND. */
int srv_queue_get(srv_store_t *st, int64_t id, srv_queued_t *out);
/* The oldest queued entry; NQ_ENOTFOUND when none is queued. */
int srv_queue_next(srv_store_t *st, srv_queued_t *out);
/* Queued entries (all: every entry, whatever its state), oldest first; a non-zero return of cb
 * stops the walk and is returned. */
typedef int (*srv_queue_cb)(const srv_queued_t *q, void *arg);
int srv_queue_list(srv_store_t *st, int all, srv_queue_cb cb, void *arg);
/* Take a queued entry back: NQ_ENOTFOUND, or NQ_ESTATE when it is not queued (its job started:
 * the message says how to stop that one). 0 and *out (may be NULL) = the entry afterwards. */
int srv_queue_cancel(srv_store_t *st, int64_t id, int64_t now, srv_queued_t *out);
/* The server's record of what became of a queued entry: started (with job_id) or failed (with
 * error). NQ_ESTATE when it is not queued any more. */
int srv_queue_mark(srv_store_t *st, int64_t id, srv_queue_state_t state, int64_t job_id,
                   const char *error, int64_t now);

#endif
