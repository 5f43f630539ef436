/* nq-server: backups at the store's level (store_backup.h; layer 3 of store.h): the online copy
 * with SQLite's backup API, a read-only open, and the check that a database holds a consistent job
 * (its counters recounted from the tables). The files around them -- names, temporary files,
 * rotation, restore -- are backup.c's; the schedule is srv_backup.c's. */
#include "store_backup.h"
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BACKUP_BUSY_TRIES 200 /* x 50 ms: a source locked this long (a checkpoint) is a failure */

/* ---- read-only open ------------------------------------------------------------------------ */

int srv_store_open_ro(srv_store_t **out, const char *path, char *errbuf, size_t errlen) {
  *out = NULL;
  srv_store_t *st = calloc(1, sizeof *st);
  if (!st) {
    if (errbuf && errlen) snprintf(errbuf, errlen, "out of memory");
    return NQ_ENOMEM;
  }
  int rc = 0;
  if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
      SQLITE_OK) {
    rc = srv_store_failf(st, NQ_EIO, "open %s: %s", path,
                         st->db ? sqlite3_errmsg(st->db) : "out of memory");
    goto out;
  }
  sqlite3_extended_result_codes(st->db, 0);
  sqlite3_busy_timeout(st->db, 5000);
  /* A file that is not a database fails here, on its first read, rather than later. */
  rc = srv_store_exec(st, "PRAGMA query_only=1; SELECT count(*) FROM sqlite_master");
  if (rc) srv_store_failf(st, NQ_EIO, "open %s: %s", path, sqlite3_errmsg(st->db));
out:
  return srv_store_opened(st, rc, out, errbuf, errlen);
}

/* ---- the check ----------------------------------------------------------------------------- */

/* The verified units' sum of a column, split at 2^32 like the job_stats counters (schema 005),
 * as columns COL_hi and COL_lo of the scan; and the counter pair PFX_hi/_lo against them. */
#define VSUM(col)                                                                               \
  "sum(CASE WHEN state = 'verified' THEN coalesce(" col ", 0) >> 32 ELSE 0 END) AS " col "_hi, " \
  "sum(CASE WHEN state = 'verified' THEN coalesce(" col ", 0) & 4294967295 ELSE 0 END) AS " col "_lo"
#define VNE(pfx, col) "s." pfx "_hi != coalesce(u." col "_hi, 0) OR s." pfx "_lo != coalesce(u." \
                      col "_lo, 0)"
/* The per-minute rate buckets as a scan of the reported results. */
#define RATE_SCAN                                                                               \
  "SELECT u.job_id AS job, a.reported_at / 60 AS minute, count(*) AS n, "                     \
  "sum(coalesce(a.nodes, 0) >> 32) AS hi, sum(coalesce(a.nodes, 0) & 4294967295) AS lo "      \
  "FROM assignments a JOIN units u ON u.id = a.unit_id WHERE a.reported_at IS NOT NULL "      \
  "GROUP BY 1, 2"
#define CREDIT(part, op) "credit_" part " != (SELECT coalesce(sum(coalesce(u.nodes, 0) " op    \
  "), 0) FROM assignments a JOIN units u ON u.id = a.unit_id WHERE a.client_id = c.id AND "    \
  "a.state = 'valid')"

/* Each check counts the rows that break one invariant; 0 is consistent. */
static const struct {
  const char *what, *sql;
} checks[] = {
    {"jobs without counters",
     "SELECT count(*) FROM jobs j WHERE NOT EXISTS (SELECT 1 FROM job_stats s WHERE "
     "s.job_id = j.id)"},
    {"jobs whose unit count differs from their units",
     "SELECT count(*) FROM jobs j WHERE state != 'creating' AND units != (SELECT count(*) FROM "
     "units u WHERE u.job_id = j.id)"},
    /* One pass over the units for every job's counters (a record job has 30 million). */
    {"job counters (job_stats) that differ from a recount of the units",
     "SELECT count(*) FROM job_stats s LEFT JOIN (SELECT job_id, "
     "sum(state = 'pending') AS pending, sum(state = 'leased') AS leased, "
     "sum(state = 'awaiting') AS awaiting, sum(state = 'verified') AS verified, "
     "sum(state = 'disputed') AS disputed, sum(results) AS results, "
     VSUM("c2") ", " VSUM("c4") ", " VSUM("c8") ", " VSUM("nodes") ", " VSUM("est_nodes") ", "
     "sum(coalesce(est_nodes, 0) >> 32) AS est_hi, "
     "sum(coalesce(est_nodes, 0) & 4294967295) AS est_lo, "
     "sum(est_nodes IS NOT NULL) AS est_units FROM units GROUP BY job_id) u "
     "ON u.job_id = s.job_id WHERE "
     "s.pending != coalesce(u.pending, 0) OR s.leased != coalesce(u.leased, 0) OR "
     "s.awaiting != coalesce(u.awaiting, 0) OR s.verified != coalesce(u.verified, 0) OR "
     "s.disputed != coalesce(u.disputed, 0) OR s.results != coalesce(u.results, 0) OR "
     VNE("c2", "c2") " OR " VNE("c4", "c4") " OR " VNE("c8", "c8") " OR " VNE("nodes", "nodes")
     " OR " VNE("vest", "est_nodes") " OR s.est_hi != coalesce(u.est_hi, 0) OR "
     "s.est_lo != coalesce(u.est_lo, 0) OR s.est_units != coalesce(u.est_units, 0)"},
    {"units whose live leases or results differ from their assignments",
     "SELECT count(*) FROM units u WHERE live != (SELECT count(*) FROM assignments a WHERE "
     "a.unit_id = u.id AND a.state = 'leased') OR results != (SELECT count(*) FROM assignments "
     "a WHERE a.unit_id = u.id AND a.reported_at IS NOT NULL)"},
    {"verified units without their counts",
     "SELECT count(*) FROM units WHERE state = 'verified' AND (c2 IS NULL OR c4 IS NULL OR "
     "c8 IS NULL OR nodes IS NULL)"},
    {"rate buckets (job_rate) that differ from the reported results",
     "SELECT count(*) FROM (" RATE_SCAN ") x LEFT JOIN job_rate r ON r.job_id = x.job AND "
     "r.minute = x.minute WHERE r.results IS NOT x.n OR r.nodes_hi IS NOT x.hi OR "
     "r.nodes_lo IS NOT x.lo"},
    {"rate buckets without reported results",
     "SELECT (SELECT count(*) FROM job_rate) - (SELECT count(*) FROM (" RATE_SCAN "))"},
    {"clients whose credit differs from their valid results",
     "SELECT count(*) FROM clients c WHERE " CREDIT("hi", ">> 32") " OR "
     CREDIT("lo", "& 4294967295")},
};

static int check_count(srv_store_t *st, const char *sql, int64_t *n) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, sql, &s);
  if (rc) return rc;
  int sr = sqlite3_step(s);
  if (sr == SQLITE_ROW) *n = sqlite3_column_int64(s, 0);
  else rc = srv_store_fail(st, "check");
  sqlite3_reset(s);
  return rc;
}

/* PRAGMA integrity_check (full: every page, index and constraint), then the foreign keys. */
static int check_pages(srv_store_t *st, srv_check_t *out) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(st->db, "PRAGMA integrity_check", -1, &s, NULL) != SQLITE_OK)
    return srv_store_fail(st, "integrity check");
  int sr, rc = 0;
  while ((sr = sqlite3_step(s)) == SQLITE_ROW) {
    const char *line = (const char *)sqlite3_column_text(s, 0);
    if (line && strcmp(line, "ok") != 0 && out->problems++ == 0)
      snprintf(out->first, sizeof out->first, "integrity check: %s", line);
  }
  if (sr != SQLITE_DONE) rc = srv_store_fail(st, "integrity check");
  sqlite3_finalize(s);
  if (rc) return rc;
  if (sqlite3_prepare_v2(st->db, "PRAGMA foreign_key_check", -1, &s, NULL) != SQLITE_OK)
    return srv_store_fail(st, "foreign key check");
  while ((sr = sqlite3_step(s)) == SQLITE_ROW)
    if (out->problems++ == 0)
      snprintf(out->first, sizeof out->first, "foreign key broken in table %s",
               (const char *)sqlite3_column_text(s, 0));
  if (sr != SQLITE_DONE) rc = srv_store_fail(st, "foreign key check");
  sqlite3_finalize(s);
  return rc;
}

/* The summary: rows of the main tables, and the newest job that is not archived. */
static int check_summary(srv_store_t *st, srv_check_t *out) {
  static const char *sql =
      "SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM units), "
      "(SELECT count(*) FROM assignments), (SELECT count(*) FROM assignments WHERE reported_at "
      "IS NOT NULL), (SELECT count(*) FROM clients), (SELECT value FROM meta WHERE key = "
      "'" SRV_META_BACKUP_TAKEN "')";
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, sql, &s);
  if (rc) return rc;
  if (sqlite3_step(s) != SQLITE_ROW) {
    sqlite3_reset(s);
    return srv_store_fail(st, "check summary");
  }
  out->jobs = col_i64(s, 0);
  out->units = col_i64(s, 1);
  out->assignments = col_i64(s, 2);
  out->results = col_i64(s, 3);
  out->clients = col_i64(s, 4);
  const char *t = (const char *)sqlite3_column_text(s, 5);
  out->taken = t ? strtoll(t, NULL, 10) : 0;
  sqlite3_reset(s);
  return 0;
}

int srv_store_check(srv_store_t *st, srv_check_t *out) {
  memset(out, 0, sizeof *out);
  int rc = srv_store_schema_version(st, &out->schema);
  if (rc) return rc;
  /* Older databases are checked by the migrations that bring them up to date; the counters
   * below exist from schema 009 (credit) on. */
  if (out->schema < SRV_CHECK_MIN_SCHEMA)
    return srv_store_failf(st, NQ_ESCHEMA, "schema version %d: only databases of version %d or "
                           "newer are checked (open it with nq-server once)", out->schema,
                           SRV_CHECK_MIN_SCHEMA);
  if ((rc = check_pages(st, out)) != 0) return rc;
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
    int64_t n = 0;
    if ((rc = check_count(st, checks[i].sql, &n)) != 0) return rc;
    if (n != 0 && out->problems++ == 0)
      snprintf(out->first, sizeof out->first, "%s (%lld)", checks[i].what, (long long)n);
  }
  return check_summary(st, out);
}

/* ---- the online copy ----------------------------------------------------------------------- */

/* fsync a file by path: SQLite syncs what it commits, but the copy is only good once all of it,
 * the last page included, is on disk. */
static int fsync_path(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NQ_EIO;
  int rc = fsync(fd) == 0 ? 0 : NQ_EIO;
  close(fd);
  return rc;
}

int srv_store_backup_copy(const char *src, const char *dst, int64_t now, char *errbuf,
                          size_t errlen) {
  sqlite3 *from = NULL, *to = NULL;
  int rc = NQ_EIO;
  const char *why = NULL;
  /* The copy holds what the database holds (token hashes among it): readable by the owner only,
   * from its first byte. A stray copy of an earlier failed attempt goes first. SQLite takes the
   * empty file as a new database. */
  unlink(dst);
  int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    snprintf(errbuf, errlen, "create %s: %s", dst, strerror(errno));
    return NQ_EIO;
  }
  close(fd);
  /* A connection of its own, read-only: in WAL mode it takes a snapshot and never blocks the
   * server's writer, which goes on committing while the pages are copied. */
  if (sqlite3_open_v2(src, &from, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
      SQLITE_OK) {
    why = from ? sqlite3_errmsg(from) : "out of memory";
    snprintf(errbuf, errlen, "open %s: %s", src, why);
    goto out;
  }
  sqlite3_busy_timeout(from, 5000);
  if (sqlite3_open_v2(dst, &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    snprintf(errbuf, errlen, "create %s: %s", dst, to ? sqlite3_errmsg(to) : "out of memory");
    goto out;
  }
  sqlite3_backup *b = sqlite3_backup_init(to, "main", from, "main");
  if (!b) {
    snprintf(errbuf, errlen, "backup of %s: %s", src, sqlite3_errmsg(to));
    goto out;
  }
  /* All pages in one step, so in one read transaction of the source: the copy is one
   * consistent snapshot, however the server writes meanwhile (a copy in several steps would
   * start over after each of the server's commits, and might never end). */
  int sr, tries = 0;
  while ((sr = sqlite3_backup_step(b, -1)) == SQLITE_BUSY || sr == SQLITE_LOCKED) {
    if (++tries >= BACKUP_BUSY_TRIES) break;
    sqlite3_sleep(50);
  }
  sqlite3_backup_finish(b);
  if (sr != SQLITE_DONE) {
    snprintf(errbuf, errlen, "backup of %s: %s", src, sqlite3_errstr(sr));
    goto out;
  }
  /* The copy is one self-contained file (no -wal beside it), and says when it was taken. */
  char sql[200];
  int len = snprintf(sql, sizeof sql, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;");
  if (now > 0)
    snprintf(sql + len, sizeof sql - (size_t)len, "INSERT OR REPLACE INTO meta(key, value) "
             "VALUES ('" SRV_META_BACKUP_TAKEN "', '%lld')", (long long)now);
  char *msg = NULL;
  if (sqlite3_exec(to, sql, NULL, NULL, &msg) != SQLITE_OK) {
    snprintf(errbuf, errlen, "backup %s: %s", dst, msg ? msg : sqlite3_errmsg(to));
    sqlite3_free(msg);
    goto out;
  }
  rc = 0;
out:
  if (to && sqlite3_close(to) != SQLITE_OK && rc == 0) {
    snprintf(errbuf, errlen, "close %s: %s", dst, sqlite3_errmsg(to));
    rc = NQ_EIO;
  }
  if (from) sqlite3_close(from);
  if (rc == 0 && fsync_path(dst) != 0) {
    snprintf(errbuf, errlen, "fsync %s failed", dst);
    rc = NQ_EIO;
  }
  if (rc) unlink(dst);
  return rc;
}
