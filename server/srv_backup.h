/* nq-server: scheduled backups (--backup-dir DIR --backup-every S --backup-keep K;
 * docs/operations.md, "Backups and the restore drill").
 *
 * Every S seconds a backup of the database is taken on a libuv worker thread (nq/backup.h:
 * online copy, fsync, check, rename; the loop and the writer never wait for it), and the K newest
 * good ones are kept. The loop thread learns the outcome in the work's after-callback: the log
 * (INFO for a good backup, ERROR for a failure, never silent), the metrics (metrics.h) and the
 * meta rows that `nq-admin status` shows (store.h, SRV_META_BACKUP_OK and _ERROR). One backup at a time; the first
 * is due S seconds after the newest good one in DIR (at once when that is older), or 60 s (at most
 * S) after start when DIR has none.
 */
#ifndef SRV_BACKUP_H
#define SRV_BACKUP_H

#include <stddef.h>

struct srv_s;
typedef struct srv_backup_s srv_backup_t;

/* Start the schedule when cfg.backup_dir is set (the directory is created, 0700, if missing).
 * 0, or NQ_EIO / NQ_EINVAL / NQ_ENOMEM with errbuf saying why (the server does not start
 * without the backups it was asked for). */
int srv_backup_start(struct srv_s *s, char *errbuf, size_t errlen);
/* Stop the schedule: no new backup starts; one that runs finishes on its thread (the loop waits
 * for it before uv_run returns). Idempotent. */
void srv_backup_stop(struct srv_s *s);

#endif
