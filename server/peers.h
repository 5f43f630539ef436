/* nq-server: what the server remembers per source address, and the limits it enforces with it
 * (docs/server.md, "Per-address limits"; docs/reliability.md, threat model).
 *
 * An address is an IPv4 /32 or an IPv6 /64 (one subscriber's usual allocation; IPv4-mapped IPv6
 * addresses count as IPv4). For each address seen recently the table keeps:
 *   - its live connections, and how many of them have not authenticated yet (pre-auth): new
 *     connections past --max-preauth-per-addr are refused at accept;
 *   - an enrolment token bucket: --enrol-per-addr enrolments at once, refilled at that many per
 *     hour;
 *   - its live connections to the HTTP port: past --http-max-per-addr new ones get 429;
 *   - failed logins in the current minute: past --auth-fail-limit each further refusal is
 *     delayed (the connection stays pre-auth meanwhile, so one address gets at most
 *     max-preauth refusals per delay);
 *   - what was refused since the last summary, so the log gets one line per kind and interval
 *     (with the busiest addresses) instead of one line per refusal.
 * Entries without connections whose state has decayed are dropped; the table holds at most
 * SRV_PEERS_MAX entries, beyond which new addresses are not tracked (they are still bound by
 * --max-conns, and counted in the summaries as "untracked"). A summary line names the busiest
 * addresses and, when many addresses of one network take part, the busiest networks (IPv4 /24,
 * IPv6 /48) with how many addresses each.
 *
 * Loop thread only. Times are the loop's milliseconds (uv_now). */
#ifndef SRV_PEERS_H
#define SRV_PEERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define SRV_PEERS_MAX 65536
#define SRV_PEER_ADDR_STR 56         /* INET6_ADDRSTRLEN + "/64" */
#define SRV_AUTH_FAIL_WINDOW_MS 60000 /* failed logins are counted per minute */

/* An address prefix: 16 bytes, IPv4 as ::ffff:a.b.c.d, IPv6 with the low 64 bits zero. */
typedef struct srv_addr_key_s {
  uint8_t b[16];
} srv_addr_key_t;

/* What the summaries count. */
typedef enum {
  SRV_PEER_REFUSED_PREAUTH = 0, /* connection refused: pre-auth limit of its address */
  SRV_PEER_REFUSED_BUSY,        /* connection refused or told `busy`: --max-conns */
  SRV_PEER_AUTH_FAILED,         /* hello refused with `auth` (token, enrolment key, admin) */
  SRV_PEER_AUTH_DELAYED,        /* ... of which the refusal was delayed */
  SRV_PEER_ENROL_RATE,          /* enrolment refused: the address's rate */
  SRV_PEER_ENROL_CAP,           /* enrolment refused: --max-clients reached */
  SRV_PEER_EVICTED,             /* pre-auth connection closed to admit a newer one */
  SRV_PEER_HTTP_PER_ADDR,       /* HTTP connection refused (429): the address's limit */
  SRV_PEER_HTTP_BUSY,           /* HTTP connection refused (503): --http-max-conns */
  SRV_PEER_LOGIN_QUIET,         /* successful login not logged one by one (over the budget) */
  SRV_PEER_HTTP_UNAVAILABLE,    /* HTTP request answered 503: every export slot in use */
  SRV_PEER_HTTP_STALLED,        /* HTTP export closed: its reader below the minimum rate */
  SRV_PEER_HTTP_EVICTED,        /* idle HTTP connection closed to admit a new one (server full) */
  SRV_PEER_NCOUNT
} srv_peer_count_t;

typedef struct srv_peer_limits_s {
  int max_preauth;     /* pre-auth connections per address; 0 = no limit */
  int enrol_per_addr;  /* enrolment burst and hourly refill per address; 0 = no limit */
  int auth_fail_limit; /* failed logins per address and minute before refusals are delayed;
                          0 = never delayed */
  int auth_fail_delay_ms;
} srv_peer_limits_t;

typedef struct srv_peer_s {
  srv_addr_key_t key;
  struct srv_peer_s *next; /* hash chain */
  int conns;               /* live connections from here (they point at this entry) */
  int preauth;             /* ... of which not authenticated yet */
  int http;                /* live connections to the HTTP port (http.c keeps it; they point at
                              this entry); the limit is --http-max-per-addr */
  double enrol_tokens;     /* enrolments available now */
  uint64_t enrol_ms;       /* when enrol_tokens was last brought up to date */
  int fails;               /* failed logins since fails_ms */
  uint64_t fails_ms;       /* start of the current one-minute window */
  uint32_t iv[SRV_PEER_NCOUNT]; /* counts since the last summary */
} srv_peer_t;

typedef struct srv_peers_s {
  srv_peer_limits_t lim;
  srv_peer_t **bucket;
  size_t nbucket, count;
  uint64_t seed;                 /* hash key: random, so chains cannot be aimed at */
  uint64_t untracked[SRV_PEER_NCOUNT];
  uint64_t last_prune_ms;
} srv_peers_t;

/* The prefix of a socket address. Returns 0, or NQ_EINVAL for a family other than IPv4/IPv6. */
int srv_addr_key(const struct sockaddr_storage *ss, srv_addr_key_t *k);
/* "192.0.2.7" or "2001:db8:1:2::/64". */
void srv_addr_key_str(const srv_addr_key_t *k, char out[SRV_PEER_ADDR_STR]);
/* Its network, as the summaries group an address-spread flood: "192.0.2.0/24" or
 * "2001:db8:1::/48". */
void srv_addr_net_str(const srv_addr_key_t *k, char out[SRV_PEER_ADDR_STR]);

/* Returns 0 or NQ_ENOMEM. */
int srv_peers_init(srv_peers_t *p, const srv_peer_limits_t *lim);
void srv_peers_free(srv_peers_t *p);

/* The entry of k, created if needed; NULL when the table is full (the address is untracked). */
srv_peer_t *srv_peers_get(srv_peers_t *p, const srv_addr_key_t *k, uint64_t now_ms);
/* Count one event for the next summary; e may be NULL (untracked). */
void srv_peers_count(srv_peers_t *p, srv_peer_t *e, srv_peer_count_t what);
/* 1 if the address may open one more pre-auth connection. */
int srv_peer_preauth_ok(const srv_peers_t *p, const srv_peer_t *e);
/* Take one enrolment from the address's bucket: 1 if allowed, 0 if over its rate. */
int srv_peer_enrol_take(srv_peers_t *p, srv_peer_t *e, uint64_t now_ms);
/* Record a failed login; returns how long (ms) its refusal is to be delayed, 0 for at once. */
uint64_t srv_peer_auth_failed(srv_peers_t *p, srv_peer_t *e, uint64_t now_ms);

/* Log one line per kind of refusal counted since the last call (`seconds` is the interval, for
 * the text), with the three busiest addresses, then reset the counts and drop decayed entries.
 * Returns the number of lines logged. */
int srv_peers_summary(srv_peers_t *p, int seconds, uint64_t now_ms);

#endif
