/* nq-server: the store's owners and re-opening (layer 3, store.h; schema 006).
 */
#ifndef SRV_STORE_OWNERS_H
#define SRV_STORE_OWNERS_H

#include <stdint.h>
#include "store.h"
#include "store_work.h"

typedef struct srv_owner_s {
  int64_t id;
  char name[SRV_NAME_MAX + 1];
  int64_t created;
  int banned;
  int has_key;          /* it has an enrolment key of its own */
  int trusted;          /* schema 014: the operator trusts its results (nq-admin owner trust) */
  int64_t clients;      /* clients that belong to it (srv_owner_list, srv_owner_find_name) */
  int self_joined;      /* schema 022: made by a sign-up (nq-client --join), not the operator */
  char public_name[SRV_NAME_MAX + 1]; /* schema 022: the name it is shown under; "": anonymous */
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
/* Mark an owner trusted (1) or not (0): its results settle conflicts (store_trusted.h). */
int srv_owner_set_trusted(srv_store_t *st, int64_t owner_id, int trusted);
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

#endif
