/* nq-server: the store's part of the public view (layer 3, store.h; schema 009): volunteer
 * credit, public names and the job's sampled history.
 */
#ifndef SRV_STORE_PUBLIC_H
#define SRV_STORE_PUBLIC_H

#include <stdint.h>
#include "store.h"

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
  char root[65];       /* the Merkle root of the job's results then ("": not taken) */
  int64_t leaves;      /* ... over this many results */
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

#endif
