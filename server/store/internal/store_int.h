/* nq-server: the inside of the store's bottom layer (store.c, layer 0 of store.h), for the store's
 * files only: the connection, the statement cache and the row helpers every family uses. Nothing
 * here knows a table family. Nothing outside server/store/store*.c includes this: every other module
 * asks the store through the families' typed functions, so all SQL lives in those files
 * (docs/store.md, "Who owns the tables"). Tests may include it to reach the raw connection.
 */
#ifndef SRV_STORE_INT_H
#define SRV_STORE_INT_H

#include <sqlite3.h>
#include <stdio.h>

#include "store.h"

typedef struct stmt_slot_s {
  const char *sql;
  sqlite3_stmt *stmt;
} stmt_slot_t;

struct srv_store_s {
  sqlite3 *db;
  stmt_slot_t *stmts; /* prepared-statement cache, keyed by the SQL pointer */
  size_t nstmts, capstmts;
  char err[512];
  void *ext; /* plain memory a family keeps with the connection (store_stall.c: its cache of the
              * last count); allocated by that family, freed by srv_store_close, opaque here */
};

/* A cached prepared statement for `sql`, reset and with bindings cleared. The cache is keyed by
 * the pointer `sql`, so pass string literals / static constants. The statement belongs to the
 * store; do not finalize it. */
int srv_store_stmt(srv_store_t *st, const char *sql, sqlite3_stmt **out);
/* Open the connection at `path` and apply the migrations (srv_store_open, store_api.h, is this and
 * what the families fill in after it). Contract as srv_store_open's. */
int srv_store_open_db(srv_store_t **out, const char *path, const char *schema_dir, char *errbuf,
                      size_t errlen);

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

/* An update of one row (sql: ?1 = id, ?2 = v): NQ_ENOTFOUND ("no such ROW") when it changed none. */
int srv_store_update_one(srv_store_t *st, const char *sql, int64_t id, int64_t v,
                         const char *what, const char *row);

/* One row of `sql` (?1 = text when text is not NULL, else num) read by `row` into out:
 * NQ_ENOTFOUND ("no such WHAT") without a row. Lookups of clients and owners. */
typedef void (*srv_row_fn)(sqlite3_stmt *s, void *out);
int srv_store_one(srv_store_t *st, const char *sql, const char *text, int64_t num,
                  srv_row_fn row, void *out, const char *what);

/* The end of an open (read-write or read-only): on failure (rc) the store's reason goes into
 * errbuf and st is closed; else *out = st. Returns rc. */
int srv_store_opened(srv_store_t *st, int rc, srv_store_t **out, char *errbuf, size_t errlen);

/* The ids one query (?1 = arg, and ?2 = arg2 when it has one) selects, as a malloc'ed array
 * (NULL when *n = 0); on failure none. */
int srv_store_id_list(srv_store_t *st, const char *sql, int64_t arg, int64_t arg2, int64_t **ids,
                      int *n);
/* The same for a statement already bound: column 0 of each row; s is reset; `what` names the
 * query in an error. */
int srv_store_ids_step(srv_store_t *st, sqlite3_stmt *s, int64_t **ids, int *n, const char *what);

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

#endif
