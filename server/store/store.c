/* nq-server: the store's bottom layer -- connection, statements, savepoints, migrations, meta
 * (layer 0: see store.h for the contracts and the layers, docs/store.md for the model). */
#include "store_int.h"

#include "nq/switches.h"
#include "nq/files.h"

#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


#ifndef NQ_SOURCE_DIR
#define NQ_SOURCE_DIR "."
#endif

#define BUSY_TIMEOUT_MS 5000
#define SCHEMA_FILE_MAX (1 << 20)
#define SCHEMA_FILES_MAX 999

/* ---- errors, statements, savepoints ------------------------------------------------------- */

const char *srv_store_errmsg(const srv_store_t *st) { return st ? st->err : "no store"; }

int srv_store_failf(srv_store_t *st, int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->err, sizeof st->err, fmt, ap);
  va_end(ap);
  return err;
}

int srv_store_fail(srv_store_t *st, const char *what) {
  return srv_store_failf(st, NQ_EIO, "%s: %s", what, sqlite3_errmsg(st->db));
}

int srv_store_stmt(srv_store_t *st, const char *sql, sqlite3_stmt **out) {
  *out = NULL; /* on every path, so a caller's statement is never read unset */
  for (size_t i = 0; i < st->nstmts; i++) {
    if (st->stmts[i].sql == sql) {
      sqlite3_reset(st->stmts[i].stmt);
      sqlite3_clear_bindings(st->stmts[i].stmt);
      *out = st->stmts[i].stmt;
      return 0;
    }
  }
  if (nq_grow(&st->stmts, &st->capstmts, st->nstmts, sizeof *st->stmts, 32) != 0)
    return srv_store_failf(st, NQ_ENOMEM, "statement cache: out of memory");
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK)
    return srv_store_fail(st, "prepare");
  st->stmts[st->nstmts].sql = sql;
  st->stmts[st->nstmts].stmt = s;
  st->nstmts++;
  *out = s;
  return 0;
}

int srv_store_exec(srv_store_t *st, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    srv_store_failf(st, NQ_EIO, "%s", msg ? msg : sqlite3_errmsg(st->db));
    sqlite3_free(msg);
    return NQ_EIO;
  }
  return 0;
}

int srv_store_step(srv_store_t *st, sqlite3_stmt *s, const char *what) {
  int rc = sqlite3_step(s);
  int err = 0;
  if (rc == SQLITE_CONSTRAINT)
    err = srv_store_failf(st, NQ_EEXIST, "%s: %s", what, sqlite3_errmsg(st->db));
  else if (rc != SQLITE_DONE && rc != SQLITE_ROW)
    err = srv_store_fail(st, what);
  sqlite3_reset(s);
  return err;
}

int srv_store_savepoint(srv_store_t *st) { return srv_store_exec(st, "SAVEPOINT nq_sp"); }

int srv_store_release(srv_store_t *st, int rc) {
  if (rc == 0) {
    if (srv_store_exec(st, "RELEASE nq_sp") == 0) return 0;
    rc = NQ_EIO; /* fall through: undo what the section did */
  }
  /* Keep the error that made us roll back; the rollback's own message would hide it. */
  char keep[sizeof st->err];
  memcpy(keep, st->err, sizeof keep);
  char *msg = NULL;
  if (sqlite3_exec(st->db, "ROLLBACK TO nq_sp; RELEASE nq_sp", NULL, NULL, &msg) != SQLITE_OK) {
    /* SQLite may already have rolled the whole transaction back (I/O error, disk full). */
    sqlite3_free(msg);
    rc = NQ_EIO;
  }
  memcpy(st->err, keep, sizeof keep);
  return rc;
}

int srv_store_in_tx(const srv_store_t *st) { return st && !sqlite3_get_autocommit(st->db); }

int srv_store_begin(srv_store_t *st) {
  if (srv_store_in_tx(st)) return srv_store_failf(st, NQ_ETXN, "transaction already open");
  return srv_store_exec(st, "BEGIN IMMEDIATE");
}

int srv_store_commit(srv_store_t *st) {
  if (!srv_store_in_tx(st)) return srv_store_failf(st, NQ_ETXN, "no transaction open");
  if (srv_store_exec(st, "COMMIT") == 0) return 0;
  /* A failed COMMIT may leave the transaction open; end it so the store stays usable. */
  if (srv_store_in_tx(st)) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  return NQ_EIO;
}

int srv_store_rollback(srv_store_t *st) {
  if (!srv_store_in_tx(st)) return srv_store_failf(st, NQ_ETXN, "no transaction open");
  return srv_store_exec(st, "ROLLBACK");
}

/* ---- schema migrations -------------------------------------------------------------------- */

typedef struct mig_s {
  int version;
  char name[256];
} mig_t;

static int mig_cmp(const void *a, const void *b) {
  const mig_t *x = a, *y = b;
  return (x->version > y->version) - (x->version < y->version);
}

/* A migration file is NNN_anything.sql: exactly three digits, an underscore, ".sql". */
static int mig_version(const char *name) {
  size_t len = strlen(name);
  if (len < 9 || len >= sizeof((mig_t *)0)->name) return -1;
  if (!isdigit((unsigned char)name[0]) || !isdigit((unsigned char)name[1]) ||
      !isdigit((unsigned char)name[2]) || name[3] != '_' || strcmp(name + len - 4, ".sql") != 0)
    return -1;
  return (name[0] - '0') * 100 + (name[1] - '0') * 10 + (name[2] - '0');
}

/* List the migration files of dir sorted by version; duplicates are an error. */
static int mig_scan(srv_store_t *st, const char *dir, mig_t **out, int *count) {
  DIR *d = opendir(dir);
  if (!d) return srv_store_failf(st, NQ_EIO, "schema dir %s: cannot open", dir);
  mig_t *v = NULL;
  int n = 0, rc = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int ver = mig_version(e->d_name);
    if (ver <= 0) continue;
    if (n == SCHEMA_FILES_MAX) { rc = srv_store_failf(st, NQ_ERANGE, "too many schema files"); goto out; }
    mig_t *p = realloc(v, (size_t)(n + 1) * sizeof *v);
    if (!p) { rc = srv_store_failf(st, NQ_ENOMEM, "schema scan: out of memory"); goto out; }
    v = p;
    v[n].version = ver;
    snprintf(v[n].name, sizeof v[n].name, "%s", e->d_name);
    n++;
  }
  qsort(v, (size_t)n, sizeof *v, mig_cmp);
  for (int i = 1; i < n; i++)
    if (v[i].version == v[i - 1].version) {
      rc = srv_store_failf(st, NQ_EIO, "schema dir %s: two files for version %d", dir, v[i].version);
      goto out;
    }
  if (n == 0) rc = srv_store_failf(st, NQ_EIO, "schema dir %s: no NNN_*.sql files", dir);
out:
  closedir(d);
  if (rc) { free(v); v = NULL; n = 0; }
  *out = v;
  *count = n;
  return rc;
}

/* NQ_EIO when a foreign key of the database is broken (PRAGMA foreign_key_check finds a row). */
static int fk_check(srv_store_t *st) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(st->db, "PRAGMA foreign_key_check", -1, &s, NULL) != SQLITE_OK)
    return srv_store_fail(st, "foreign key check");
  int sr = sqlite3_step(s);
  int rc = 0;
  if (sr == SQLITE_ROW)
    rc = srv_store_failf(st, NQ_EIO, "foreign key broken in table %s",
                         (const char *)sqlite3_column_text(s, 0));
  else if (sr != SQLITE_DONE)
    rc = srv_store_fail(st, "foreign key check");
  sqlite3_finalize(s);
  return rc;
}

/* Apply one migration in its own transaction, recording it in schema_version. */
static int mig_apply(srv_store_t *st, const char *dir, const mig_t *m) {
  char path[4096];
  char *sql = NULL, rec[512];
  size_t len = 0;
  if (nq_path_join(path, sizeof path, dir, m->name) != 0)
    return srv_store_failf(st, NQ_EINVAL, "schema dir %s: path too long", dir);
  int rc = nq_file_read(path, SCHEMA_FILE_MAX, &sql, &len);
  if (rc)
    return srv_store_failf(st, rc == NQ_ENOMEM ? rc : NQ_EIO, "%s: %s", path,
                           rc == NQ_ETOOBIG ? "over 1 MiB" : "cannot read");
  snprintf(rec, sizeof rec,
           "INSERT INTO schema_version(version, name, applied) VALUES (%d, '%s', %lld)",
           m->version, m->name, (long long)nq_now_wall());
  if (strchr(m->name, '\'')) { rc = srv_store_failf(st, NQ_EINVAL, "bad file name %s", m->name); goto out; }
  /* SQLite's way to rebuild a table others refer to: foreign keys off (outside the
   * transaction; the pragma is a no-op inside one), then checked before the commit. */
  if ((rc = srv_store_exec(st, "PRAGMA foreign_keys=OFF")) != 0) goto out;
  if ((rc = srv_store_exec(st, "BEGIN IMMEDIATE")) != 0) goto out;
  if ((rc = srv_store_exec(st, sql)) != 0 || (rc = fk_check(st)) != 0 ||
      (rc = srv_store_exec(st, rec)) != 0 || (rc = srv_store_exec(st, "COMMIT")) != 0) {
    char keep[sizeof st->err];
    memcpy(keep, st->err, sizeof keep);
    if (srv_store_in_tx(st)) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    srv_store_failf(st, NQ_EIO, "migration %s: %s", m->name, keep);
    rc = NQ_EIO;
  }
out:
  if (srv_store_exec(st, "PRAGMA foreign_keys=ON") != 0 && rc == 0) rc = NQ_EIO;
  free(sql);
  return rc;
}

/* NQ_SCHEMA_DIR, else the source tree's schema/ (a build tree), else the installed copy (a
 * package: the source tree is not on the machine). */
static const char *schema_dir_default(void) {
  const char *env = nq_switch_get(NQ_SW_SCHEMA_DIR);
  if (env && *env) return env;
#ifdef NQ_SCHEMA_INSTALL_DIR
  struct stat st;
  if (stat(NQ_SOURCE_DIR "/schema", &st) != 0 && stat(NQ_SCHEMA_INSTALL_DIR, &st) == 0)
    return NQ_SCHEMA_INSTALL_DIR;
#endif
  return NQ_SOURCE_DIR "/schema";
}

static int migrate(srv_store_t *st, const char *dir) {
  mig_t *migs = NULL;
  int n = 0, cur = 0;
  int rc = srv_store_exec(st, "CREATE TABLE IF NOT EXISTS schema_version ("
                              "version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                              "applied INTEGER NOT NULL)");
  if (rc) goto out;
  if ((rc = srv_store_schema_version(st, &cur)) != 0) goto out;
  if ((rc = mig_scan(st, dir, &migs, &n)) != 0) goto out;
  if (cur > migs[n - 1].version) {
    rc = srv_store_failf(st, NQ_ESCHEMA, "database schema version %d is newer than %s (%d)", cur,
                         dir, migs[n - 1].version);
    goto out;
  }
  for (int i = 0; i < n && rc == 0; i++)
    if (migs[i].version > cur) rc = mig_apply(st, dir, &migs[i]);
out:
  free(migs);
  return rc;
}

int srv_store_schema_version(srv_store_t *st, int *version) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT coalesce(max(version), 0) FROM schema_version", &s);
  if (rc) return rc;
  if (sqlite3_step(s) != SQLITE_ROW) rc = srv_store_fail(st, "schema version");
  else *version = sqlite3_column_int(s, 0);
  sqlite3_reset(s);
  return rc;
}

int srv_store_schema_has(srv_store_t *st, int version) {
  int v = 0;
  return srv_store_schema_version(st, &v) == 0 && v >= version;
}

/* ---- open / close ------------------------------------------------------------------------- */

int srv_store_open_db(srv_store_t **out, const char *path, const char *schema_dir, char *errbuf,
                      size_t errlen) {
  *out = NULL;
  srv_store_t *st = calloc(1, sizeof *st);
  if (!st) {
    if (errbuf && errlen) snprintf(errbuf, errlen, "out of memory");
    return NQ_ENOMEM;
  }
  int rc;
  /* One store belongs to one thread (store.h), so the connection needs no mutex of its own; and
   * SQLite's allocation statistics, which take a global mutex for every malloc, are never read. A
   * job of 30 million units spends a tenth of its time on those mutexes otherwise. (The config
   * call fails harmlessly once SQLite is initialised.) */
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                      SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
    rc = srv_store_failf(st, NQ_EIO, "open %s: %s", path,
                         st->db ? sqlite3_errmsg(st->db) : "out of memory");
    goto out;
  }
  sqlite3_extended_result_codes(st->db, 0);
  sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
  /* WAL lets readers (nq-admin) run beside the server; FULL makes every commit durable before
   * we acknowledge it; foreign keys keep units/assignments/clients consistent. */
  rc = srv_store_exec(st, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
                          "PRAGMA foreign_keys=ON;");
  if (rc) goto out;
  rc = migrate(st, schema_dir ? schema_dir : schema_dir_default());
out:
  return srv_store_opened(st, rc, out, errbuf, errlen);
}

int srv_store_opened(srv_store_t *st, int rc, srv_store_t **out, char *errbuf, size_t errlen) {
  if (rc) {
    if (errbuf && errlen) snprintf(errbuf, errlen, "%s", st->err);
    srv_store_close(st);
    return rc;
  }
  *out = st;
  return 0;
}

void srv_store_close(srv_store_t *st) {
  if (!st) return;
  if (st->db && srv_store_in_tx(st)) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  for (size_t i = 0; i < st->nstmts; i++) sqlite3_finalize(st->stmts[i].stmt);
  free(st->stmts);
  if (st->db) sqlite3_close(st->db);
  free(st->ext);
  free(st);
}

/* ---- meta --------------------------------------------------------------------------------- */

int srv_meta_get(srv_store_t *st, const char *key, char *buf, size_t len) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT value FROM meta WHERE key = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
  int sr = sqlite3_step(s);
  if (sr == SQLITE_ROW) {
    const char *v = (const char *)sqlite3_column_text(s, 0);
    if (buf && len) snprintf(buf, len, "%s", v ? v : "");
  } else if (sr == SQLITE_DONE) {
    rc = srv_store_failf(st, NQ_ENOTFOUND, "meta %s: not set", key);
  } else {
    rc = srv_store_fail(st, "meta get");
  }
  sqlite3_reset(s);
  return rc;
}

int srv_meta_set(srv_store_t *st, const char *key, const char *value) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", &s);
  if (rc) return rc;
  sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, value, -1, SQLITE_STATIC);
  return srv_store_step(st, s, "meta set");
}

/* ---- row helpers (store_int.h) ----------------------------------------------------------- */

/* Run one statement with up to three integer parameters (as many as it has). */
int srv_store_exec3(srv_store_t *st, const char *sql, int64_t a, int64_t b, int64_t c,
                 const char *what) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, sql, &q);
  if (rc) return rc;
  int np = sqlite3_bind_parameter_count(q);
  if (np >= 1) sqlite3_bind_int64(q, 1, a);
  if (np >= 2) sqlite3_bind_int64(q, 2, b);
  if (np >= 3) sqlite3_bind_int64(q, 3, c);
  return srv_store_step(st, q, what);
}


int srv_store_update_one(srv_store_t *st, const char *sql, int64_t id, int64_t v,
                         const char *what, const char *row) {
  int rc = srv_store_exec3(st, sql, id, v, 0, what);
  if (rc == 0 && sqlite3_changes(st->db) == 0)
    rc = srv_store_failf(st, NQ_ENOTFOUND, "no such %s", row);
  return rc;
}

int srv_store_one(srv_store_t *st, const char *sql, const char *text, int64_t num,
                  srv_row_fn row, void *out, const char *what) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, sql, &s);
  if (rc) return rc;
  if (text) sqlite3_bind_text(s, 1, text, -1, SQLITE_STATIC);
  else sqlite3_bind_int64(s, 1, num);
  int sr = sqlite3_step(s);
  if (sr == SQLITE_ROW) row(s, out);
  else if (sr == SQLITE_DONE) rc = srv_store_failf(st, NQ_ENOTFOUND, "no such %s", what);
  else rc = srv_store_failf(st, NQ_EIO, "%s lookup: %s", what, sqlite3_errmsg(st->db));
  sqlite3_reset(s);
  return rc;
}


int srv_store_id_list(srv_store_t *st, const char *sql, int64_t arg, int64_t arg2, int64_t **ids,
                      int *n) {
  *ids = NULL;
  *n = 0;
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, sql, &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, arg);
  if (sqlite3_bind_parameter_count(s) >= 2) sqlite3_bind_int64(s, 2, arg2);
  return srv_store_ids_step(st, s, ids, n, "id list");
}

int srv_store_ids_step(srv_store_t *st, sqlite3_stmt *s, int64_t **ids, int *n, const char *what) {
  *ids = NULL;
  *n = 0;
  size_t cap = 0;
  int rc = 0, sr;
  while ((sr = sqlite3_step(s)) == SQLITE_ROW) {
    if (*n == INT32_MAX || nq_grow(ids, &cap, (size_t)*n, sizeof **ids, 16) != 0) {
      rc = srv_store_failf(st, NQ_ENOMEM, "%s: out of memory", what);
      break;
    }
    (*ids)[(*n)++] = sqlite3_column_int64(s, 0);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, what);
  sqlite3_reset(s);
  if (rc) {
    free(*ids);
    *ids = NULL;
    *n = 0;
  }
  return rc;
}

