/* nq-server: the store's news and teams (layer 3, store.h; schema 023): what a public project
 * tells its volunteers, and the groups they credit together.
 */
#ifndef SRV_STORE_COMMUNITY_H
#define SRV_STORE_COMMUNITY_H

#include <stdint.h>
#include "store.h"

#define SRV_NEWS_TEXT_MAX 400 /* bytes of one news item (NQ_PROTO_NEWS_TEXT_MAX) */

typedef struct srv_news_s {
  int64_t id, at;
  char text[SRV_NEWS_TEXT_MAX + 1];
} srv_news_t;

/* Add an item (1..SRV_NEWS_TEXT_MAX bytes, no control characters: NQ_EINVAL). */
int srv_news_add(srv_store_t *st, const char *text, int64_t now, srv_news_t *out);
/* The newest `limit` items (0: all), newest first. */
typedef int (*srv_news_cb)(const srv_news_t *n, void *arg);
int srv_news_list(srv_store_t *st, int limit, srv_news_cb cb, void *arg);
/* Remove one; NQ_ENOTFOUND. */
int srv_news_remove(srv_store_t *st, int64_t id);

typedef struct srv_team_s {
  int64_t id, created;
  char name[SRV_NAME_MAX + 1];
  int64_t owners; /* owners in it */
} srv_team_t;

/* Create (a valid name; NQ_EEXIST when taken), rename (NQ_ENOTFOUND, NQ_EEXIST) and remove (its
 * owners are in no team after it; NQ_ENOTFOUND) a team. */
int srv_team_add(srv_store_t *st, const char *name, int64_t now, srv_team_t *out);
int srv_team_rename(srv_store_t *st, const char *name, const char *to);
int srv_team_remove(srv_store_t *st, const char *name);
int srv_team_find(srv_store_t *st, const char *name, srv_team_t *out);
/* Every team by name. */
typedef int (*srv_team_cb)(const srv_team_t *t, void *arg);
int srv_team_list(srv_store_t *st, srv_team_cb cb, void *arg);
/* Put an owner in a team (team_id 0: in none). */
int srv_owner_set_team(srv_store_t *st, int64_t owner_id, int64_t team_id);
/* The team an owner is in: its name in name[SRV_NAME_MAX + 1], "" for none. */
int srv_owner_team(srv_store_t *st, int64_t owner_id, char *name, size_t len);

/* A volunteer: an owner other than `default` (operator-made or self-joined), with what its
 * machines did. display is its public name, or "anonymous-" and six hex digits of a hash of its
 * key's hash (or of its name when it has no key) when it chose none. */
#define SRV_VOLUNTEER_DISPLAY_MAX (SRV_NAME_MAX + 24)
typedef struct srv_volunteer_s {
  int64_t owner_id;
  char display[SRV_VOLUNTEER_DISPLAY_MAX + 1];
  int named;
  char team[SRV_NAME_MAX + 1]; /* "": none */
  int64_t team_id;             /* 0: none */
  int64_t machines, verified;  /* its clients; their results that earned credit */
  nq_u128 credit;
  int banned;
} srv_volunteer_t;

/* Every volunteer, by owner id (the caller ranks them). */
typedef int (*srv_volunteer_cb)(const srv_volunteer_t *v, void *arg);
int srv_volunteer_list(srv_store_t *st, srv_volunteer_cb cb, void *arg);
/* The public names of the machines of one owner that chose one (cb gets each name). */
typedef int (*srv_name_cb)(const char *name, const nq_u128 *credit, int64_t valid, void *arg);
int srv_owner_machines(srv_store_t *st, int64_t owner_id, srv_name_cb cb, void *arg);

#endif
