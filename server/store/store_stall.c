/* nq-server: stalled units (store_stall.h): the keys that can vote, and one grouped query over
 * the units in flight with no live lease. */
#include "store_stall.h"

#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define SPOT_DROP_SCHEMA 19

static const char *const reason_names[] = {
#define SRV_STALL_NAME(e, name, text) name,
    SRV_STALL_REASONS(SRV_STALL_NAME)
#undef SRV_STALL_NAME
};
static const char *const reason_texts[] = {
#define SRV_STALL_TEXT(e, name, text) text,
    SRV_STALL_REASONS(SRV_STALL_TEXT)
#undef SRV_STALL_TEXT
};

const char *srv_stall_reason_name(srv_stall_reason_t r) {
  return (unsigned)r < SRV_STALL_NREASONS ? reason_names[r] : "?";
}

const char *srv_stall_reason_text(srv_stall_reason_t r) {
  return (unsigned)r < SRV_STALL_NREASONS ? reason_texts[r] : "?";
}

/* A client that can vote: neither it nor its owner banned, not suspect (sched.c counts no vote
 * of such a client). c is the clients row, o its owner. */
#define CAN_VOTE "c.banned = 0 AND c.suspect = 0 AND o.banned = 0"

/* The key of a client (the keys that exist) and of an assignment (the keys a unit has used: the
 * network is the assignment's own, as the scheduler's pick compares it), per --quorum-distinct.
 * A client that never connected has no network yet: it is a key of its own. */
#define KEYS_SQL(key)                                                                            \
  "SELECT count(DISTINCT " key "), count(DISTINCT CASE WHEN c.last_seen >= ?1 THEN " key       \
  " END), count(CASE WHEN c.last_seen >= ?1 AND o.trusted = 1 THEN 1 END), "                    \
  "count(DISTINCT CASE WHEN c.last_seen >= ?1 AND o.trusted = 1 THEN " key " END) "             \
  "FROM clients c JOIN owners o ON o.id = c.owner_id WHERE " CAN_VOTE
static const char *const keys_sql[SRV_DISTINCT_NMODES] = {
    KEYS_SQL("c.id"), KEYS_SQL("c.owner_id"), KEYS_SQL("coalesce(c.net, 'client ' || c.id)")};

/* Per awaiting or disputed unit with no live lease: its need (replicas wanted), and the
 * keys that can vote and already hold or gave it a replica (an expired lease holds nothing), all
 * of them and those online. */
#define USED_SQL(key, extra)                                                                     \
  "(SELECT count(DISTINCT " key ") FROM assignments a JOIN clients c ON c.id = a.client_id "    \
  "JOIN owners o ON o.id = c.owner_id WHERE a.unit_id = u.id AND a.state != 'expired' AND "     \
  CAN_VOTE extra ")"
/* A unit's keys used are at most its results (live = 0: no other assignment holds a key), so a
 * unit with need <= keys online - results cannot be stalled: the WHERE skips it before the
 * subqueries run (?3 = keys online), and a healthy job's awaiting units cost a column test. */
/* A unit short only of kernels (schema 018) takes kernel evidence from a client of its own that
 * voted on it and has not given evidence yet: how many such clients, all and online. */
#define EVIDENCE_SQL(extra)                                                                      \
  "(SELECT count(*) FROM assignments a JOIN clients c ON c.id = a.client_id JOIN owners o ON "  \
  "o.id = c.owner_id WHERE u.kshort = 1 AND a.unit_id = u.id AND a.evidence = 0 AND "           \
  "a.reported_at IS NOT NULL AND a.voided = 0 AND " CAN_VOTE extra " AND NOT EXISTS (SELECT 1 " \
  "FROM assignments e WHERE e.unit_id = u.id AND e.client_id = a.client_id AND "               \
  "((e.evidence = 1 AND e.state != 'expired') OR e.evidence = 2)))"
#define UNITS_SQL(key)                                                                           \
  "SELECT u.need, u.contest = 1, " USED_SQL(key, "") ", "                                       \
  USED_SQL(key, " AND c.last_seen >= ?2") ", " EVIDENCE_SQL("") ", "                            \
  EVIDENCE_SQL(" AND c.last_seen >= ?2") ", u.kshort FROM units u WHERE u.job_id = ?1 AND "   \
  "(u.state = 'awaiting' OR u.state = 'disputed') AND u.live = 0 AND "                          \
  "(u.need <= 0 OR u.need > ?3 - u.results)"
static const char *const units_sql[SRV_DISTINCT_NMODES] = {
    UNITS_SQL("a.client_id"), UNITS_SQL("c.owner_id"), UNITS_SQL("a.net")};

static int stall_keys(srv_store_t *st, srv_distinct_t d, int64_t since, srv_stalls_t *out) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, keys_sql[d], &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, since);
  if (sqlite3_step(s) == SQLITE_ROW) {
    out->keys = col_i64(s, 0);
    out->keys_online = col_i64(s, 1);
    out->trusted_online = col_i64(s, 2);
    out->trusted_keys_online = col_i64(s, 3);
  } else {
    rc = srv_store_fail(st, "stalls: keys");
  }
  sqlite3_reset(s);
  return rc;
}

/* The reason one awaiting or disputed unit without a live lease is stalled, or -1. A contested
 * unit takes no untrusted replica: only a trusted owner's client settles it. */
static int unit_reason(const srv_stalls_t *o, int64_t need, int contested, int64_t used,
                       int64_t used_online, int64_t evidence, int64_t evidence_online,
                       int kshort) {
  if (contested) return o->trusted_online > 0 ? -1 : SRV_STALL_CONTESTED;
  if (need <= 0) return SRV_STALL_BLOCKED; /* no replica wanted and none running: at its cap */
  /* Short only of kernels: a voter of its own that is online adds kernel evidence; with none
   * that can, only a key that has not voted can (KERNELS when there is none). */
  if (evidence_online > 0) return -1;
  if (evidence > 0 && o->keys_online - used_online < need) return SRV_STALL_OFFLINE;
  if (kshort && o->keys - used < need) return SRV_STALL_KERNELS;
  if (o->keys - used < need) return SRV_STALL_VOTED;
  if (o->keys_online - used_online < need) return SRV_STALL_OFFLINE;
  return -1;
}

static int stall_units(srv_store_t *st, srv_distinct_t d, int64_t job_id, int64_t since,
                       srv_stalls_t *out) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, units_sql[d], &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, job_id);
  sqlite3_bind_int64(s, 2, since);
  sqlite3_bind_int64(s, 3, out->keys_online);
  int sr;
  while ((sr = sqlite3_step(s)) == SQLITE_ROW) {
    int r = unit_reason(out, col_i64(s, 0), sqlite3_column_int(s, 1), col_i64(s, 2),
                        col_i64(s, 3), col_i64(s, 4), col_i64(s, 5), sqlite3_column_int(s, 6));
    if (r >= 0) out->by[r]++;
  }
  if (sr != SQLITE_DONE) rc = srv_store_fail(st, "stalls: units");
  sqlite3_reset(s);
  return rc;
}

/* The online clients (a trusted owner's only, when ?3) that could take a spot check of unit u: the
 * keys of clients that can vote and were seen since ?2 of which no client ever had u (as
 * srv_unit_pick_spot sees it). */
#define SPOT_FROM                                                                                \
  " FROM clients c JOIN owners o ON o.id = c.owner_id WHERE " CAN_VOTE " AND c.last_seen >= ?2 " \
  "AND (?3 = 0 OR o.trusted = 1) AND NOT EXISTS (SELECT 1 FROM assignments a "
#define SPOT_SQL(count, mine)                                                                    \
  "SELECT u.id FROM units u WHERE u.job_id = ?1 AND u.spot = 1 AND "                            \
  "coalesce(u.verified_at, 0) <= ?4 AND (SELECT count(DISTINCT " count ")" SPOT_FROM           \
  "WHERE a.unit_id = u.id AND " mine ")) = 0 ORDER BY u.id"
static const char *const spot_sql[SRV_DISTINCT_NMODES] = {
    SPOT_SQL("c.id", "a.client_id = c.id"),
    SPOT_SQL("c.owner_id", "a.client_id IN (SELECT k.id FROM clients k WHERE k.owner_id = "
                           "c.owner_id)"),
    SPOT_SQL("coalesce(c.net, 'client ' || c.id)", "(a.client_id = c.id OR a.net = c.net)")};

int srv_spot_unreachable(srv_store_t *st, int64_t job_id, srv_distinct_t d, int64_t since,
                         int trusted_only, int64_t verified_before, int64_t **ids, int *n) {
  *ids = NULL;
  *n = 0;
  if ((unsigned)d >= SRV_DISTINCT_NMODES) d = SRV_DISTINCT_OWNER;
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, spot_sql[d], &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, job_id);
  sqlite3_bind_int64(q, 2, since);
  sqlite3_bind_int(q, 3, trusted_only ? 1 : 0);
  sqlite3_bind_int64(q, 4, verified_before);
  return srv_store_ids_step(st, q, ids, n, "spot checks unreachable");
}

int srv_spot_drop(srv_store_t *st, int64_t job_id, const int64_t *ids, int n) {
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++)
    rc = srv_store_exec3(st, "UPDATE units SET spot = 0 WHERE id = ?1 AND job_id = ?2 AND "
                             "spot = 1", ids[i], job_id, 0, "drop spot check");
  if (rc == 0 && n > 0)
    rc = srv_store_exec3(st, "UPDATE jobs SET spot_dropped = spot_dropped + ?2 WHERE id = ?1",
                         job_id, n, 0, "spot checks dropped");
  return rc;
}

int srv_job_spot_dropped(srv_store_t *st, int64_t job_id, int64_t *n) {
  int64_t v[1] = {0};
  *n = 0;
  if (!srv_store_schema_has(st, SPOT_DROP_SCHEMA)) return 0;
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "SELECT spot_dropped FROM jobs WHERE id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, job_id);
  if (sqlite3_step(q) == SQLITE_ROW) v[0] = col_i64(q, 0);
  else rc = srv_store_failf(st, NQ_ENOTFOUND, "no job %lld", (long long)job_id);
  sqlite3_reset(q);
  *n = v[0];
  return rc;
}

/* Owners trusted and not banned (the job then waits for its spot checks). */
static int trusted_owners(srv_store_t *st, int64_t *n) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "SELECT count(*) FROM owners WHERE trusted = 1 AND banned = 0", &q);
  if (rc) return rc;
  if (sqlite3_step(q) == SQLITE_ROW) *n = col_i64(q, 0);
  else rc = srv_store_fail(st, "trusted owners");
  sqlite3_reset(q);
  return rc;
}

int srv_stalls_compute(srv_store_t *st, int64_t job_id, srv_distinct_t d, int64_t now,
                       int window, srv_stalls_t *out) {
  srv_stats_t c;
  memset(out, 0, sizeof *out);
  memset(&c, 0, sizeof c);
  if ((unsigned)d >= SRV_DISTINCT_NMODES) d = SRV_DISTINCT_OWNER;
  out->job_id = job_id;
  out->distinct = d;
  out->at = now;
  int rc = srv_job_get(st, job_id, &c.job);
  if (rc == 0) rc = srv_store_counters(st, job_id, &c);
  if (rc) return rc;
  out->quorum = c.job.quorum;
  if (c.job.state != SRV_JOB_RUNNING) return 0;
  int64_t since = now - window;
  if ((rc = stall_keys(st, d, since, out)) != 0) return rc;
  if (out->keys < out->quorum) {
    out->by[SRV_STALL_OWNERS] = c.job.units - c.units[SRV_UNIT_VERIFIED];
  } else {
    if (out->keys_online < out->quorum) out->by[SRV_STALL_OFFLINE] = c.units[SRV_UNIT_PENDING];
    if ((rc = stall_units(st, d, job_id, since, out)) != 0) return rc;
  }
  /* Every unit verified, and the job waits for spot checks (it does while a trusted owner
   * exists): those that no client online may take are stalled until the scheduler drops them. */
  int64_t trusted = 0;
  if (c.units[SRV_UNIT_VERIFIED] == c.job.units &&
      (rc = trusted_owners(st, &trusted)) == 0 && trusted > 0) {
    int64_t *ids = NULL;
    int n = 0;
    rc = srv_spot_unreachable(st, job_id, d, since, out->trusted_online > 0, now, &ids, &n);
    free(ids);
    if (rc) return rc;
    out->by[SRV_STALL_SPOT] = n;
  }
  if (rc) return rc;
  for (int i = 0; i < SRV_STALL_NREASONS; i++) out->units += out->by[i];
  return 0;
}

/* The cache kept with the connection (store_int.h: st->ext), made at its first use; NULL only
 * when out of memory, and then nothing is cached (each srv_stalls_get computes). */
typedef struct stall_cache_s {
  srv_stalls_t last; /* the last stalls computed, a short-lived cache ... */
  int async;         /* ... or the server's worker's last count (srv_stalls_set_async) */
} stall_cache_t;

static stall_cache_t *stall_cache(srv_store_t *st) {
  if (!st->ext) st->ext = calloc(1, sizeof(stall_cache_t));
  return st->ext;
}

int srv_stalls_get(srv_store_t *st, int64_t job_id, srv_distinct_t d, int64_t now, int window,
                   srv_stalls_t *out) {
  stall_cache_t *k = stall_cache(st);
  const srv_stalls_t *c = k ? &k->last : NULL;
  if (k && k->async) {
    if (c->at > 0 && c->job_id == job_id && c->distinct == d) {
      *out = *c;
    } else {
      memset(out, 0, sizeof *out);
      out->job_id = job_id;
      out->distinct = d;
    }
    return 0;
  }
  if (c && c->at > 0 && c->job_id == job_id && c->distinct == d && now >= c->at &&
      now - c->at < SRV_STALL_CACHE_S) {
    *out = *c;
    return 0;
  }
  int rc = srv_stalls_compute(st, job_id, d, now, window, out);
  if (rc == 0 && k) k->last = *out;
  return rc;
}

void srv_stalls_forget(srv_store_t *st) {
  stall_cache_t *k = st->ext;
  if (k && !k->async) k->last.at = 0;
}

void srv_stalls_set_async(srv_store_t *st, int on) {
  stall_cache_t *k = stall_cache(st);
  if (k) k->async = on;
}

void srv_stalls_put(srv_store_t *st, const srv_stalls_t *x) {
  stall_cache_t *k = stall_cache(st);
  if (k) k->last = *x;
}

int srv_units_awaiting_of(srv_store_t *st, int64_t job_id, int64_t client_id, int64_t **ids,
                          int *n) {
  return srv_store_id_list(st, "SELECT id FROM units u WHERE job_id = ?1 AND state = 'awaiting' "
                           "AND EXISTS (SELECT 1 FROM assignments a WHERE a.unit_id = u.id AND "
                           "a.client_id = ?2 AND a.reported_at IS NOT NULL) ORDER BY id",
                           job_id, client_id, ids, n);
}

int srv_units_contested(srv_store_t *st, int64_t job_id, int limit, int64_t **ids, int *n) {
  return srv_store_id_list(st, "SELECT id FROM units WHERE job_id = ?1 AND contest = 1 "
                           "ORDER BY id LIMIT ?2", job_id, limit, ids, n);
}

int srv_spot_drop_all(srv_store_t *st, int64_t job_id, int64_t *n) {
  *n = 0;
  int rc = srv_store_exec3(st, "UPDATE units SET spot = 0 WHERE job_id = ?1 AND state = "
                               "'verified' AND (spot = 1 OR spot = 2)", job_id, 0, 0,
                           "drop spot checks");
  if (rc) return rc;
  *n = sqlite3_changes(st->db);
  if (*n > 0)
    rc = srv_store_exec3(st, "UPDATE jobs SET spot_dropped = spot_dropped + ?2 WHERE id = ?1",
                         job_id, *n, 0, "spot checks dropped");
  return rc;
}
