/* nq-server: backups and checks at the store's level (layer 3, store.h): the online copy, a
 * read-only open, the consistency check. The files around them are backup.c's.
 */
#ifndef SRV_STORE_BACKUP_H
#define SRV_STORE_BACKUP_H

#include <stdint.h>
#include "store.h"

#define SRV_META_BACKUP_TAKEN "backup_taken" /* in a backup: when it was taken (Unix seconds) */
/* In the live database (srv_backup.c): "<unix time> <path>" of the newest good scheduled backup,
 * and "<unix time> <reason>" of the last failure (status shows it while it is the newer). */
#define SRV_META_BACKUP_OK "backup_last_good"
#define SRV_META_BACKUP_ERROR "backup_last_error"
#define SRV_CHECK_MIN_SCHEMA 9 /* srv_store_check knows the counters from this version on */

/* Open an existing database read-only, as it is (no migration, nothing written): a backup being
 * checked. Returns 0, NQ_EIO (no such file, not a database), NQ_ENOMEM; errbuf says why. */
int srv_store_open_ro(srv_store_t **out, const char *path, char *errbuf, size_t errlen);

/* What srv_store_check found. */
typedef struct srv_check_s {
  int schema;                /* the database's schema version */
  int64_t problems;          /* broken invariants; 0: the database holds a consistent job */
  char first[256];           /* the first of them, in words */
  int64_t jobs, units, assignments, results, clients; /* rows */
  int64_t taken;             /* a backup: when it was taken (0 when not a backup) */
} srv_check_t;

/* Check a database: PRAGMA integrity_check and foreign_key_check, then every counter the
 * store keeps recounted from the tables it stands for (job_stats against the units, the units'
 * live leases and results against their assignments, the rate buckets against the results,
 * the credit against the valid results, each job's unit count). Reads only; may take minutes on
 * a record job (it reads every page). Returns 0 with out->problems (0: consistent), NQ_ESCHEMA
 * (older than SRV_CHECK_MIN_SCHEMA), NQ_EIO. */
int srv_store_check(srv_store_t *st, srv_check_t *out);

/* Copy the database at `src` into a new file `dst` (replaced if present) with SQLite's online
 * backup API, on a read-only connection of its own: one snapshot in one read transaction, so a
 * server writing `src` meanwhile is never blocked (WAL) and the copy is consistent. The copy is a
 * self-contained file (journal_mode DELETE), holds meta SRV_META_BACKUP_TAKEN = now (when now > 0;
 * 0 keeps the source's: a restore), and is fsync'ed. Any thread (it shares nothing with an open
 * store). Returns 0 or NQ_EIO (errbuf says why; nothing is left at dst). */
int srv_store_backup_copy(const char *src, const char *dst, int64_t now, char *errbuf,
                          size_t errlen);

#endif
