/* nq-server: the store's sign-ups (layer 3, store.h; schema 022): requests of volunteers who join
 * by themselves (nq-client --join), the windows the limits count, and the owners they make.
 */
#ifndef SRV_STORE_SIGNUP_H
#define SRV_STORE_SIGNUP_H

#include <stdint.h>
#include "store.h"

#define SRV_SIGNUP_STATE_MAP(X)                                                                  \
  X(PENDING, "pending")                                                                          \
  X(APPROVED, "approved")                                                                        \
  X(REJECTED, "rejected")                                                                        \
  X(JOINED, "joined")
typedef enum {
#define SRV_SIGNUP_ENUM_ONE(e, name) SRV_SIGNUP_##e,
  SRV_SIGNUP_STATE_MAP(SRV_SIGNUP_ENUM_ONE)
#undef SRV_SIGNUP_ENUM_ONE
  SRV_SIGNUP_NSTATES
} srv_signup_state_t;

const char *srv_signup_state_name(srv_signup_state_t s);

#define SRV_SIGNUP_ADDR_MAX 64

typedef struct srv_signup_s {
  int64_t id, at;
  char addr[SRV_SIGNUP_ADDR_MAX], net[SRV_SIGNUP_ADDR_MAX];
  srv_signup_state_t state;
  char client_name[SRV_NAME_MAX + 1];
  char public_name[SRV_NAME_MAX + 1]; /* "": anonymous */
  char team[SRV_NAME_MAX + 1];        /* "": none */
  int64_t owner_id;                   /* joined: the owner it made; else 0 */
  int64_t decided;                    /* when the operator approved or rejected it; 0 */
} srv_signup_t;

/* The sign-ups admitted since `since` from this address (column addr) or network (net), or from
 * anywhere (key NULL): how many, and the oldest's time (0 when none). */
typedef enum { SRV_SIGNUP_BY_ADDR, SRV_SIGNUP_BY_NET, SRV_SIGNUP_BY_ALL } srv_signup_by_t;
int srv_signup_window(srv_store_t *st, srv_signup_by_t by, const char *key, int64_t since,
                      int64_t *count, int64_t *oldest);
/* Requests waiting for the operator, and approved ones whose client has not come back for its
 * keys yet: both are rows only the cap bounds (pruning keeps them). */
int srv_signup_pending_count(srv_store_t *st, int64_t *n);
/* Record an admitted sign-up (state pending or joined; ticket_hash NULL for joined). */
int srv_signup_add(srv_store_t *st, const srv_signup_t *su, const char *ticket_hash,
                   int64_t *id);
/* Lookups; NQ_ENOTFOUND. */
int srv_signup_find_ticket(srv_store_t *st, const char *ticket_hash, srv_signup_t *out);
int srv_signup_get(srv_store_t *st, int64_t id, srv_signup_t *out);
/* The operator's decision on a pending request (approved or rejected): NQ_ESTATE when it is not
 * pending, NQ_ENOTFOUND. */
int srv_signup_decide(srv_store_t *st, int64_t id, srv_signup_state_t to, int64_t now);
/* The request is complete: its owner exists; the ticket is dropped. */
int srv_signup_joined(srv_store_t *st, int64_t id, int64_t owner_id);
/* Requests in one state (or every one when state < 0), oldest first, at most limit (0: all). */
typedef int (*srv_signup_cb)(const srv_signup_t *su, void *arg);
int srv_signup_list(srv_store_t *st, int state, int limit, srv_signup_cb cb, void *arg);
/* Rows no limit counts any more: decided or joined ones older than `before`. Returns how many
 * went in *n (may be NULL). Pending ones stay (the cap counts them). */
int srv_signup_prune(srv_store_t *st, int64_t before, int64_t *n);
/* Mark an owner as made by a sign-up, with the public name it chose ("" or NULL: anonymous).
 * NQ_EEXIST when another owner is shown under that name. */
int srv_owner_set_joined(srv_store_t *st, int64_t owner_id, const char *public_name);
/* 1 when an owner or a pending request already goes by this public name, else 0. */
int srv_public_name_taken(srv_store_t *st, const char *public_name, int *taken);

#endif
