/* nq-server: the per-address table and its limits (see peers.h). */
#include "peers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/certs.h"
#include "nq/log.h"
#include "nq/nq.h"

#define NBUCKET 4096 /* chains stay short up to SRV_PEERS_MAX (16 on average when full) */
#define PRUNE_EVERY_MS 1000
#define TOP 3

int srv_addr_key(const struct sockaddr_storage *ss, srv_addr_key_t *k) {
  memset(k, 0, sizeof *k);
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
    k->b[10] = k->b[11] = 0xff;
    memcpy(k->b + 12, &a->sin_addr, 4);
    return 0;
  }
  if (ss->ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
    memcpy(k->b, &a->sin6_addr, 16);
    /* An IPv4-mapped address (a dual-stack listener) is that IPv4 address, all 32 bits. */
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(k->b, mapped, sizeof mapped) != 0) memset(k->b + 8, 0, 8);
    return 0;
  }
  return NQ_EINVAL;
}

static int key_is_v4(const srv_addr_key_t *k) {
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return memcmp(k->b, mapped, sizeof mapped) == 0;
}

static void key_str(const srv_addr_key_t *k, const char *v4_suffix, const char *v6_suffix,
                    char out[SRV_PEER_ADDR_STR]) {
  char ip[INET6_ADDRSTRLEN] = "?";
  int v4 = key_is_v4(k);
  inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? k->b + 12 : k->b, ip, sizeof ip);
  snprintf(out, SRV_PEER_ADDR_STR, "%s%s", ip, v4 ? v4_suffix : v6_suffix);
}

void srv_addr_key_str(const srv_addr_key_t *k, char out[SRV_PEER_ADDR_STR]) {
  key_str(k, "", "/64", out);
}

/* FNV-1a over the seed and the 16 bytes: cheap, and the random seed keeps a peer from choosing
 * addresses that share one chain. */
static size_t key_hash(const srv_peers_t *p, const srv_addr_key_t *k) {
  uint64_t h = 1469598103934665603ull ^ p->seed;
  for (int i = 0; i < 16; i++) {
    h ^= k->b[i];
    h *= 1099511628211ull;
  }
  return (size_t)(h ^ (h >> 29)) % p->nbucket;
}

int srv_peers_init(srv_peers_t *p, const srv_peer_limits_t *lim) {
  memset(p, 0, sizeof *p);
  p->lim = *lim;
  p->nbucket = NBUCKET;
  p->bucket = calloc(p->nbucket, sizeof *p->bucket);
  if (!p->bucket) return NQ_ENOMEM;
  char hex[2 * 8 + 1];
  if (nq_random_token(hex, 8) == 0) p->seed = strtoull(hex, NULL, 16);
  return 0;
}

void srv_peers_free(srv_peers_t *p) {
  if (!p->bucket) return;
  for (size_t i = 0; i < p->nbucket; i++) {
    srv_peer_t *e = p->bucket[i];
    while (e) {
      srv_peer_t *n = e->next;
      free(e);
      e = n;
    }
  }
  free(p->bucket);
  p->bucket = NULL;
  p->count = 0;
}

/* Bring the enrolment bucket up to now: refilled at enrol_per_addr per hour, up to that many. */
static void enrol_refill(const srv_peers_t *p, srv_peer_t *e, uint64_t now_ms) {
  double cap = p->lim.enrol_per_addr;
  if (now_ms > e->enrol_ms) {
    e->enrol_tokens += cap * (double)(now_ms - e->enrol_ms) / 3600000.0;
    if (e->enrol_tokens > cap) e->enrol_tokens = cap;
  }
  e->enrol_ms = now_ms;
}

/* An entry can go when nothing about it would differ from a fresh one. */
static int decayed(const srv_peers_t *p, srv_peer_t *e, uint64_t now_ms) {
  if (e->conns > 0 || e->http > 0) return 0;
  for (int i = 0; i < SRV_PEER_NCOUNT; i++)
    if (e->iv[i]) return 0;
  if (e->fails && now_ms - e->fails_ms < SRV_AUTH_FAIL_WINDOW_MS) return 0;
  enrol_refill(p, e, now_ms);
  return e->enrol_tokens >= (double)p->lim.enrol_per_addr;
}

static void prune(srv_peers_t *p, uint64_t now_ms) {
  p->last_prune_ms = now_ms;
  for (size_t i = 0; i < p->nbucket; i++) {
    srv_peer_t **pp = &p->bucket[i];
    while (*pp) {
      srv_peer_t *e = *pp;
      if (decayed(p, e, now_ms)) {
        *pp = e->next;
        free(e);
        p->count--;
      } else {
        pp = &e->next;
      }
    }
  }
}

srv_peer_t *srv_peers_get(srv_peers_t *p, const srv_addr_key_t *k, uint64_t now_ms) {
  size_t h = key_hash(p, k);
  for (srv_peer_t *e = p->bucket[h]; e; e = e->next)
    if (!memcmp(e->key.b, k->b, sizeof k->b)) return e;
  if (p->count >= SRV_PEERS_MAX) {
    /* At most one full pass a second, so a flood of new addresses cannot make each accept
     * walk the whole table. */
    if (now_ms - p->last_prune_ms < PRUNE_EVERY_MS) return NULL;
    prune(p, now_ms);
    if (p->count >= SRV_PEERS_MAX) return NULL;
  }
  srv_peer_t *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->key = *k;
  e->enrol_tokens = p->lim.enrol_per_addr;
  e->enrol_ms = now_ms;
  e->fails_ms = now_ms;
  e->next = p->bucket[h];
  p->bucket[h] = e;
  p->count++;
  return e;
}

void srv_peers_count(srv_peers_t *p, srv_peer_t *e, srv_peer_count_t what) {
  if (e) {
    if (e->iv[what] < UINT32_MAX) e->iv[what]++;
  } else {
    p->untracked[what]++;
  }
}

int srv_peer_preauth_ok(const srv_peers_t *p, const srv_peer_t *e) {
  return !e || p->lim.max_preauth <= 0 || e->preauth < p->lim.max_preauth;
}

int srv_peer_enrol_take(srv_peers_t *p, srv_peer_t *e, uint64_t now_ms) {
  if (p->lim.enrol_per_addr <= 0) return 1;
  if (!e) return 0; /* untracked: cannot be limited, so not allowed */
  enrol_refill(p, e, now_ms);
  if (e->enrol_tokens < 1.0) return 0;
  e->enrol_tokens -= 1.0;
  return 1;
}

uint64_t srv_peer_auth_failed(srv_peers_t *p, srv_peer_t *e, uint64_t now_ms) {
  if (!e) return p->lim.auth_fail_limit > 0 ? (uint64_t)p->lim.auth_fail_delay_ms : 0;
  if (now_ms - e->fails_ms >= SRV_AUTH_FAIL_WINDOW_MS) {
    e->fails = 0;
    e->fails_ms = now_ms;
  }
  if (e->fails < INT32_MAX) e->fails++;
  if (p->lim.auth_fail_limit <= 0 || e->fails <= p->lim.auth_fail_limit) return 0;
  return (uint64_t)p->lim.auth_fail_delay_ms;
}

/* ---- summaries ---- */

static const char *const count_what[SRV_PEER_NCOUNT] = {
    [SRV_PEER_REFUSED_PREAUTH] = "connection(s) refused over the per-address pre-auth limit",
    [SRV_PEER_REFUSED_BUSY] = "connection(s) refused over --max-conns",
    [SRV_PEER_AUTH_FAILED] = "failed login(s)",
    [SRV_PEER_AUTH_DELAYED] = "failed login(s) answered late (address over --auth-fail-limit)",
    [SRV_PEER_ENROL_RATE] = "enrolment(s) refused over the per-address rate",
    [SRV_PEER_ENROL_CAP] = "enrolment(s) refused at --max-clients",
    [SRV_PEER_EVICTED] = "connection(s) without hello closed to admit newer ones (server full)",
    [SRV_PEER_HTTP_PER_ADDR] = "HTTP connection(s) refused over --http-max-per-addr (429)",
    [SRV_PEER_HTTP_BUSY] = "HTTP connection(s) refused over --http-max-conns (503)",
    [SRV_PEER_LOGIN_QUIET] = "more successful login(s) not logged one by one",
    [SRV_PEER_HTTP_UNAVAILABLE] = "HTTP request(s) answered 503: every /api/export slot in use",
    [SRV_PEER_HTTP_STALLED] = "HTTP export(s) closed: the reader was below the minimum rate",
    [SRV_PEER_HTTP_EVICTED] = "idle HTTP connection(s) closed to admit new ones (server full)"};

typedef struct {
  const srv_peer_t *e;
  uint32_t n;
} top_t;

/* An address-spread flood (many addresses of one network) is summarised per network too: IPv4
 * /24, IPv6 /48. NET_SLOTS networks are told apart per line; more fall into "other". */
#define NET_SLOTS 256

typedef struct {
  srv_addr_key_t net;
  uint64_t n;
  uint32_t naddr;
  int used;
} net_t;

static srv_addr_key_t key_net(const srv_addr_key_t *k) {
  srv_addr_key_t n = *k;
  if (key_is_v4(k)) n.b[15] = 0;
  else memset(n.b + 6, 0, 10);
  return n;
}

void srv_addr_net_str(const srv_addr_key_t *k, char out[SRV_PEER_ADDR_STR]) {
  srv_addr_key_t n = key_net(k);
  key_str(&n, "/24", "/48", out);
}

/* Add n events of address e to its network's slot (open addressing on the table of networks). */
static void net_add(const srv_peers_t *p, net_t *tab, const srv_peer_t *e, uint32_t n) {
  srv_addr_key_t k = key_net(&e->key);
  size_t h = key_hash(p, &k) % NET_SLOTS;
  for (size_t i = 0; i < NET_SLOTS; i++) {
    net_t *t = &tab[(h + i) % NET_SLOTS];
    if (t->used && memcmp(t->net.b, k.b, sizeof k.b) != 0) continue;
    if (!t->used) {
      t->used = 1;
      t->net = k;
    }
    t->n += n;
    t->naddr++;
    return;
  }
}

/* ", by network: NET xN (A addresses), ..." for the TOP busiest networks, when they hold more
 * than one address each (otherwise the address list says it all). */
static size_t net_list(net_t *tab, char *out, size_t len, size_t cap) {
  const net_t *top[TOP] = {0};
  for (size_t i = 0; i < NET_SLOTS; i++) {
    if (!tab[i].used || tab[i].naddr < 2) continue;
    for (int t = 0; t < TOP; t++)
      if (!top[t] || tab[i].n > top[t]->n) {
        if (t < TOP - 1) memmove(&top[t + 1], &top[t], (size_t)(TOP - 1 - t) * sizeof top[0]);
        top[t] = &tab[i];
        break;
      }
  }
  for (int t = 0; t < TOP && top[t] && len < cap; t++) {
    char a[SRV_PEER_ADDR_STR];
    srv_addr_net_str(&top[t]->net, a);
    len += (size_t)snprintf(out + len, cap - len, "%s%s x%llu (%u addresses)",
                            t ? ", " : "; by network: ", a, (unsigned long long)top[t]->n,
                            top[t]->naddr);
  }
  return len;
}

/* One line for `what`; returns 1 if there was anything to log. */
static int summary_line(srv_peers_t *p, srv_peer_count_t what, int seconds) {
  uint64_t total = p->untracked[what];
  size_t naddr = 0;
  top_t top[TOP];
  memset(top, 0, sizeof top);
  static net_t nets[NET_SLOTS]; /* loop thread only */
  memset(nets, 0, sizeof nets);
  for (size_t i = 0; i < p->nbucket; i++)
    for (const srv_peer_t *e = p->bucket[i]; e; e = e->next) {
      uint32_t n = e->iv[what];
      if (!n) continue;
      total += n;
      naddr++;
      net_add(p, nets, e, n);
      for (int t = 0; t < TOP; t++)
        if (n > top[t].n) {
          if (t < TOP - 1) memmove(&top[t + 1], &top[t], (size_t)(TOP - 1 - t) * sizeof top[0]);
          top[t] = (top_t){e, n};
          break;
        }
    }
  if (!total) return 0;
  char list[512] = "";
  size_t len = 0;
  for (int t = 0; t < TOP && top[t].e && len < sizeof list; t++) {
    char a[SRV_PEER_ADDR_STR];
    srv_addr_key_str(&top[t].e->key, a);
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s x%u", t ? ", " : "", a,
                            top[t].n);
  }
  if (naddr > TOP && len < sizeof list)
    len += (size_t)snprintf(list + len, sizeof list - len, ", ...");
  if (p->untracked[what] && len < sizeof list)
    len += (size_t)snprintf(list + len, sizeof list - len, "%suntracked x%llu", len ? ", " : "",
                            (unsigned long long)p->untracked[what]);
  if (naddr > TOP && len < sizeof list) net_list(nets, list, len, sizeof list);
  nq_log(what == SRV_PEER_LOGIN_QUIET ? NQ_LOG_INFO : NQ_LOG_WARN,
         "last %d s: %llu %s, from %zu address(es): %s", seconds,
         (unsigned long long)total, count_what[what], naddr + (p->untracked[what] ? 1 : 0), list);
  return 1;
}

int srv_peers_summary(srv_peers_t *p, int seconds, uint64_t now_ms) {
  int lines = 0;
  for (int w = 0; w < SRV_PEER_NCOUNT; w++) lines += summary_line(p, (srv_peer_count_t)w, seconds);
  for (size_t i = 0; i < p->nbucket; i++)
    for (srv_peer_t *e = p->bucket[i]; e; e = e->next) memset(e->iv, 0, sizeof e->iv);
  memset(p->untracked, 0, sizeof p->untracked);
  prune(p, now_ms);
  return lines;
}
