/* nq-server: the store's clients (layer 3, store.h): enrolment, lookups, activity, the ban. The
 * owners and what a client's trust changes are store_owners.h's.
 */
#ifndef SRV_STORE_CLIENTS_H
#define SRV_STORE_CLIENTS_H

#include <stdint.h>
#include "store.h"
#include "store_work.h"

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

/* The client says it is paused (`paused` in progress; schema 019): clients.paused_since = now,
 * and every lease it holds runs to now + lease_s, never past its hold limit (hold_until; issued +
 * hold_s for a row without one), never shortened. paused 0 clears it. A no-op before 019. */
int srv_client_pause(srv_store_t *st, int64_t client_id, int paused, int64_t now,
                     int64_t lease_s, int64_t hold_s);
/* Clients that can vote, seen since `since`, that said they are paused. */
int srv_clients_paused(srv_store_t *st, int64_t since, int64_t *n);

/* How many clients the database has enrolled (banned ones too). */
int srv_clients_count(srv_store_t *st, int64_t *n);

#endif
