/* nq-server: the store's insides, shared by its files only (store.c: the connection,
 * transactions, schema, meta, jobs, clients, status; store_work.c: units, assignments and the
 * scheduler's queries). Nothing outside server/store*.c includes this: every other module asks
 * the store through store.h's typed functions, so all SQL lives in these files (docs/store.md,
 * "Who owns the tables"). Tests may include it to reach the raw connection.
 */
#ifndef SRV_STORE_INT_H
#define SRV_STORE_INT_H

#include <sqlite3.h>
#include <stdio.h>

#include "store.h"
#include "store_stall.h"

typedef struct stmt_slot_s {
  const char *sql;
  sqlite3_stmt *stmt;
} stmt_slot_t;

struct srv_store_s {
  sqlite3 *db;
  stmt_slot_t *stmts; /* prepared-statement cache, keyed by the SQL pointer */
  size_t nstmts, capstmts;
  char err[512];
  srv_stalls_t stalls; /* the last stalls computed (store_stall.h), a short-lived cache ... */
  int stalls_async;    /* ... or the server's worker's last count (srv_stalls_set_async) */
};

/* A cached prepared statement for `sql`, reset and with bindings cleared. The cache is keyed by
 * the pointer `sql`, so pass string literals / static constants. The statement belongs to the
 * store; do not finalize it. */
int srv_store_stmt(srv_store_t *st, const char *sql, sqlite3_stmt **out);
/* Execute SQL without results (several statements allowed). */
int srv_store_exec(srv_store_t *st, const char *sql);
/* Record the SQLite error of the connection as the store's error; returns NQ_EIO. */
int srv_store_fail(srv_store_t *st, const char *what);
/* Step a statement that returns no rows (a first row is ignored), and reset it so it holds no
 * locks or read snapshot. A constraint violation is NQ_EEXIST. */
int srv_store_step(srv_store_t *st, sqlite3_stmt *s, const char *what);

/* Run one statement with up to three integer parameters (as many as it has), no rows. */
int srv_store_exec3(srv_store_t *st, const char *sql, int64_t a, int64_t b, int64_t c,
                    const char *what);

/* One row of `sql` (?1 = text when text is not NULL, else num) read by `row` into out:
 * NQ_ENOTFOUND ("no such WHAT") without a row. Lookups of clients and owners. */
typedef void (*srv_row_fn)(sqlite3_stmt *s, void *out);
int srv_store_one(srv_store_t *st, const char *sql, const char *text, int64_t num,
                  srv_row_fn row, void *out, const char *what);

/* The ids one query (?1 = arg, and ?2 = arg2 when it has one) selects, as a malloc'ed array
 * (NULL when *n = 0); on failure none (store_trust.c). */
int srv_store_id_list(srv_store_t *st, const char *sql, int64_t arg, int64_t arg2, int64_t **ids,
                      int *n);

/* Column readers. */
static inline int64_t col_i64(sqlite3_stmt *s, int i) { return sqlite3_column_int64(s, i); }

static inline void col_str(sqlite3_stmt *s, int i, char *buf, size_t len) {
  const char *v = (const char *)sqlite3_column_text(s, i);
  snprintf(buf, len, "%s", v ? v : "");
}

/* Unit counts are stored as INTEGER and are never negative (the scheduler refuses them). */
static inline uint64_t col_u64(sqlite3_stmt *s, int i) {
  int64_t v = sqlite3_column_int64(s, i);
  return v < 0 ? 0 : (uint64_t)v;
}

/* A 128-bit decimal column (NULL or garbage reads as 0). */
static inline nq_u128 col_u128(sqlite3_stmt *s, int i) {
  nq_u128 v = 0;
  const char *t = (const char *)sqlite3_column_text(s, i);
  if (t && nq_u128_parse(t, &v) != 0) v = 0;
  return v;
}

/* A sum kept as two integer columns split at 2^32 (schema 005): hi * 2^32 + lo. */
static inline nq_u128 col_split(sqlite3_stmt *s, int hi) {
  return ((nq_u128)col_u64(s, hi) << 32) + col_u64(s, hi + 1);
}

/* The counters of one job (job_stats): units per state, results, verified sums and estimates
 * into the matching fields of *out (the rest untouched). NQ_ENOTFOUND without a row. */
int srv_store_counters(srv_store_t *st, int64_t job_id, srv_stats_t *out);
/* Give the flat jobs made before schema 5 their split nodes (store_jobs.c); after migrations. */
int srv_store_fill_internal(srv_store_t *st);

/* Expire the leases that select_sql names (it selects their unit_id; ?1 = arg) with update_sql
 * (?1 = arg), and refresh their units; *n (may be NULL) gets how many. The sweep and the ban. */
int srv_store_expire_leases(srv_store_t *st, const char *select_sql, const char *update_sql,
                            int64_t arg, int64_t *n);
/* Release the leased assignments of a client (ban) and refresh their units; `n` gets the count. */
int srv_store_release_client(srv_store_t *st, int64_t client_id, int64_t *n);

#endif
