/* nq-server: scheduled backups (see srv_backup.h). The worker thread touches no loop handle and
 * no part of srv_t: it gets its paths in the job struct and leaves its outcome there
 * (docs/style.md, "Threads"); the after-callback on the loop thread reports it. */
#include "srv_backup.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/backup.h"
#include "nq/files.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "srv.h"
#include "srv_task.h"

#define FIRST_DELAY_S 60 /* a directory without a backup gets its first this soon (at most S) */

struct srv_backup_s {
  srv_t *srv;
  srv_task_t task; /* the timer, the backup on the thread pool, their life cycle */
  int64_t started; /* Unix time the running (or last) backup started */
  /* The job: inputs set on the loop thread before it is queued, outputs set by the worker. */
  char db[SRV_DATADIR_PATH_MAX];
  char data[SRV_DATADIR_PATH_MAX]; /* the data directory, whose key files are kept too */
  char dir[SRV_DATADIR_PATH_MAX];
  int keep;
  char dest[SRV_DATADIR_PATH_MAX + NQ_BACKUP_NAME_MAX + 1];
  int rc, removed, rotate_rc, keys_rc, keys_written;
  nq_backup_info_t info;
  char err[600], rotate_err[300], keys_err[1300];
};

/* Worker thread: take the backup, then drop the oldest beyond --backup-keep, and keep the key
 * files a restore needs beside them (nq/backup.h; rewritten only when they changed). */
static void backup_work(srv_task_t *task) {
  srv_backup_t *b = task->data;
  b->rc = nq_backup_take(b->db, b->dest, b->started, &b->info, b->err, sizeof b->err);
  b->removed = 0;
  b->rotate_rc = b->keys_rc = b->keys_written = 0;
  if (b->rc == 0) {
    b->rotate_rc = nq_backup_rotate(b->dir, b->keep, &b->removed, b->rotate_err,
                                    sizeof b->rotate_err);
    b->keys_rc = nq_backup_keys_keep(b->data, b->dir, &b->keys_written, b->keys_err,
                                     sizeof b->keys_err);
  }
}

/* The outcome in the live database, for `nq-admin status` (local or remote). */
static void backup_record(srv_t *s, const char *key, int64_t t, const char *what) {
  char v[800];
  snprintf(v, sizeof v, "%lld %s", (long long)t, what);
  /* The batch and the sweep open and commit their transactions within one callback, so none is
   * open here; a meta row needs no group. */
  assert(!srv_store_in_tx(s->store));
  if (srv_meta_set(s->store, key, v) != 0)
    nq_log(NQ_LOG_ERROR, "backup: recording the outcome failed: %s", srv_store_errmsg(s->store));
}

static void backup_arm(srv_backup_t *b, int64_t delay_s);

/* The outcome is recorded even after the stop (a backup that runs then finishes). */
static void backup_done(srv_task_t *task) {
  srv_backup_t *b = task->data;
  srv_t *s = b->srv;
  srv_metrics_t *m = &s->metrics;
  if (b->rc == 0) {
    m->backups_ok++;
    m->backup_last_ok = b->started;
    m->backup_last_seconds = b->info.seconds;
    m->backup_last_bytes = b->info.bytes;
    nq_log(NQ_LOG_INFO, "backup %s: checked good (schema %d, %lld units, %lld results, %lld "
           "clients, %lld bytes) in %.2f s; %d old backup(s) removed", b->dest, b->info.schema,
           (long long)b->info.units, (long long)b->info.results, (long long)b->info.clients,
           (long long)b->info.bytes, b->info.seconds, b->removed);
    backup_record(s, SRV_META_BACKUP_OK, b->started, b->dest);
    if (b->rotate_rc != 0) nq_log(NQ_LOG_WARN, "backup rotation: %s", b->rotate_err);
    if (b->keys_rc != 0)
      nq_log(NQ_LOG_ERROR, "backup: keeping the keys beside it FAILED (a restore would lack "
             "them): %s", b->keys_err);
    else if (b->keys_written > 0)
      nq_log(NQ_LOG_INFO, "backup: %d key file(s) kept in %s/" NQ_BACKUP_KEYS_DIR
             " (the CA, the server's certificate and key, the secrets: restore puts them back)",
             b->keys_written, b->dir);
  } else {
    m->backups_failed++;
    nq_log(NQ_LOG_ERROR, "backup FAILED (%s): %s", nq_strerror(b->rc), b->err);
    backup_record(s, SRV_META_BACKUP_ERROR, b->started, b->err);
  }
  if (task->stopped) return;
  /* The next one S seconds after this one started, so the cadence does not drift. */
  int64_t next = b->started + s->cfg.backup_every - nq_now_wall();
  backup_arm(b, next);
}

static int backup_begin(srv_task_t *task) {
  srv_backup_t *b = task->data;
  srv_t *s = b->srv;
  if (s->stopping) return -1;
  b->started = nq_now_wall();
  char name[NQ_BACKUP_NAME_MAX];
  nq_backup_name(b->started, name, sizeof name);
  if (nq_path_join(b->dest, sizeof b->dest, b->dir, name) != 0) {
    nq_log(NQ_LOG_ERROR, "backup FAILED: path too long in %s", b->dir);
    backup_arm(b, s->cfg.backup_every);
    return -1;
  }
  return 0;
}

static void backup_queue_failed(srv_task_t *task, int r) {
  srv_backup_t *b = task->data;
  nq_log(NQ_LOG_ERROR, "backup FAILED: cannot start its thread: %s", uv_strerror(r));
  b->srv->metrics.backups_failed++;
  backup_arm(b, b->srv->cfg.backup_every);
}

static void backup_free(srv_task_t *task) { free(task->data); }

static const srv_task_ops_t backup_ops = {backup_begin, backup_work, backup_done,
                                          backup_queue_failed, backup_free};

static void backup_arm(srv_backup_t *b, int64_t delay_s) {
  if (delay_s < 0) delay_s = 0;
  srv_task_arm(&b->task, (uint64_t)delay_s * 1000);
}

int srv_backup_start(srv_t *s, char *errbuf, size_t errlen) {
  const srv_config_t *c = &s->cfg;
  if (!c->backup_dir || !c->backup_dir[0]) return 0;
  if (nq_mkdir_p(c->backup_dir, 0700) != 0) {
    snprintf(errbuf, errlen, "--backup-dir %s: cannot create it", c->backup_dir);
    return NQ_EIO;
  }
  srv_backup_t *b = calloc(1, sizeof *b);
  if (!b) {
    snprintf(errbuf, errlen, "out of memory");
    return NQ_ENOMEM;
  }
  b->srv = s;
  snprintf(b->db, sizeof b->db, "%s", s->dd.db);
  snprintf(b->data, sizeof b->data, "%s", s->dd.dir);
  if (snprintf(b->dir, sizeof b->dir, "%s", c->backup_dir) >= (int)sizeof b->dir) {
    free(b);
    snprintf(errbuf, errlen, "--backup-dir: path too long");
    return NQ_EINVAL;
  }
  b->keep = c->backup_keep;
  srv_task_init(&b->task, s->loop, &backup_ops, b);
  s->backup = b;
  char newest[SRV_DATADIR_PATH_MAX + NQ_BACKUP_NAME_MAX + 1];
  int64_t taken = 0, now = nq_now_wall();
  int64_t delay = c->backup_every < FIRST_DELAY_S ? c->backup_every : FIRST_DELAY_S;
  if (nq_backup_newest(c->backup_dir, newest, sizeof newest, &taken) == 0) {
    delay = taken + c->backup_every - now;
    if (delay > c->backup_every) delay = c->backup_every; /* a clock that went back */
    nq_log(NQ_LOG_INFO, "backups: every %d s into %s, keeping %d; the newest is %s, the next "
           "in %lld s", c->backup_every, c->backup_dir, c->backup_keep, newest,
           (long long)(delay > 0 ? delay : 0));
  } else {
    nq_log(NQ_LOG_INFO, "backups: every %d s into %s, keeping %d; none yet, the first in %lld s",
           c->backup_every, c->backup_dir, c->backup_keep, (long long)delay);
  }
  backup_arm(b, delay);
  return 0;
}

void srv_backup_stop(srv_t *s) {
  srv_backup_t *b = s->backup;
  if (!b) return;
  s->backup = NULL;
  /* A backup still queued (not started) is cancelled; one that runs finishes. */
  srv_task_stop(&b->task);
}
