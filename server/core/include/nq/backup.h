/* nq: backups of the server's database -- taken, checked, rotated and restored (docs/operations.md,
 * "Backups and the restore drill"). nq-server takes them on a schedule (--backup-dir), nq-admin on
 * demand (backup --to FILE) and puts one back (restore FILE --data DIR); both through this header,
 * the server library's public interface for backups.
 *
 * A backup is one self-contained SQLite file, a consistent snapshot of the database taken online
 * (the server keeps writing; store.h, srv_store_backup_copy), written as a temporary file,
 * fsync'ed, CHECKED (opened read-only: PRAGMA integrity_check, foreign keys, every counter the
 * store keeps recounted from its tables), and only then renamed into place, so a file with a
 * backup's name is a backup that passed its check. The scheduled ones are named
 * nq-YYYYmmddTHHMMSSZ.db (UTC, so names sort by time) in the backup directory.
 *
 * Not thread-safe beyond this: each call opens connections of its own, so it may run on any
 * thread, beside a server that writes the database.
 */
#ifndef NQ_BACKUP_H
#define NQ_BACKUP_H

#include <stddef.h>
#include <stdint.h>

#define NQ_BACKUP_PREFIX "nq-"
#define NQ_BACKUP_SUFFIX ".db"
#define NQ_BACKUP_NAME_MAX 32 /* "nq-20261127T071500Z.db" and its NUL */
#define NQ_BACKUP_KEYS_PATH_MAX 1100

/* What a checked backup holds. */
typedef struct nq_backup_info_s {
  int schema;          /* schema version */
  int64_t taken;       /* when it was taken (Unix seconds) */
  int64_t jobs, units, assignments, results, clients; /* rows */
  int64_t bytes;       /* file size */
  double seconds;      /* nq_backup_take: copy and check, wall clock */
} nq_backup_info_t;

/* The scheduled name of a backup taken at Unix time t: "nq-20261127T071500Z.db". */
void nq_backup_name(int64_t t, char *buf, size_t len);

/* Check the backup at `path` (any database file of a current schema): 0 and *info (may be NULL);
 * NQ_ECORRUPT when it is not a consistent job (errbuf names the first broken invariant and how
 * many there are), NQ_ESCHEMA (too old a schema to check), NQ_EIO (cannot open, not a database). */
int nq_backup_verify(const char *path, nq_backup_info_t *info, char *errbuf, size_t errlen);

/* Take a backup of the database `db` into the file `dest` (its directory must exist): copy into
 * ".NAME.tmp" beside it, fsync, check (nq_backup_verify), rename to dest and fsync the directory.
 * `now` is stamped into the copy. A failure leaves nothing behind (dest, if it existed, is
 * untouched). Returns 0 and *info (may be NULL), NQ_ECORRUPT, NQ_EIO, NQ_EINVAL (path too long);
 * errbuf says why. */
int nq_backup_take(const char *db, const char *dest, int64_t now, nq_backup_info_t *info,
                   char *errbuf, size_t errlen);

/* Keep the `keep` (>= 1) newest scheduled backups of dir (names as nq_backup_name makes them,
 * sorted by name = time) and remove the others; stray temporary files of failed attempts go too.
 * *removed (may be NULL) gets how many files were removed. 0 or NQ_EIO. */
int nq_backup_rotate(const char *dir, int keep, int *removed, char *errbuf, size_t errlen);

/* The newest scheduled backup of dir: 0 with its path and the time its name says; NQ_ENOTFOUND
 * (none, or no such directory), NQ_EINVAL (path too long). */
int nq_backup_newest(const char *dir, char *path, size_t len, int64_t *taken);

/* Put the backup `file` in place as the database of data directory `data_dir` (created, mode
 * 0700, when missing): refused with NQ_EBUSY while a server holds the directory's lock (taken
 * here for the whole restore), NQ_ECORRUPT / NQ_ESCHEMA / NQ_EIO when the backup fails its check.
 * The database it replaces, with its -wal and -shm, is moved aside to
 * nq.db.before-restore-YYYYmmddTHHMMSSZ (and its -wal / -shm), never deleted: *aside gets that
 * path ("" when there was none). The backup is copied (not moved: it stays a backup) as a
 * temporary file, fsync'ed and renamed to nq.db. Returns 0 and *info (may be NULL). */
int nq_backup_restore(const char *file, const char *data_dir, int64_t now, nq_backup_info_t *info,
                      char *aside, size_t asidelen, char *errbuf, size_t errlen);

/* ---- the fleet's keys, kept beside the backups ----
 * A backup is the database; the CA (ca.pem, ca.key), the server's certificate and key
 * (server.pem, server.key) and the two secrets (enrol.key, admin.token) are files of the data
 * directory. Without the CA a restored server would lock out every enrolled client, so a copy of
 * these files is kept in NQ_BACKUP_KEYS_DIR beside the backups (mode 0700, files 0600), and
 * restore puts back what the data directory lacks. The evidence signing key is in the database
 * (its meta table), so every backup holds it already: restore names its fingerprint. */
#define NQ_BACKUP_KEYS_DIR "keys"

/* What nq_backup_keys_restore did, each list space-separated file names. */
typedef struct nq_backup_keys_s {
  char kept[NQ_BACKUP_KEYS_PATH_MAX]; /* where the kept copies are (looked for) */
  char copied[128];  /* put back into the data directory from the kept copies */
  char missing[128]; /* neither in the data directory nor kept */
  char differs[128]; /* in the data directory and kept, but not the same (left as they are) */
  int ca_missing;    /* ca.pem or ca.key is still missing from the data directory */
  char evkey[65];    /* the evidence key's fingerprint the restored database holds ("" none) */
} nq_backup_keys_t;

/* Keep a copy of data_dir's key files in backup_dir/NQ_BACKUP_KEYS_DIR (created 0700): each file
 * the data directory has is written there (durably, 0600) when the kept copy is missing or
 * differs. *written (may be NULL) gets how many were. 0, NQ_EIO, NQ_EINVAL (path too long). */
int nq_backup_keys_keep(const char *data_dir, const char *backup_dir, int *written,
                        char *errbuf, size_t errlen);

/* After nq_backup_restore of `file` into data_dir: put back each key file data_dir lacks from the
 * kept copies beside `file` (its directory's NQ_BACKUP_KEYS_DIR), durably, 0600; name what is
 * still missing and what differs; read the restored database's evidence key. Existing files are
 * never replaced. 0, NQ_EIO, NQ_EINVAL (path too long). */
int nq_backup_keys_restore(const char *file, const char *data_dir, nq_backup_keys_t *k,
                           char *errbuf, size_t errlen);

#endif
