/* nq-server library: backups as files -- names, the temporary file and its rename, the check,
 * rotation and restore (contracts in nq/backup.h). The copy and the check themselves are the
 * store's (store_backup.c); the schedule is the server's (srv_backup.c). */
#include "nq/backup.h"

#include <dirent.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "datadir.h"
#include "evkey.h"
#include "nq/certs.h"
#include "nq/files.h"
#include "nq/nq.h"
#include "store_api.h"

#define PATH_MAX_NQ 4096

static void utc_stamp(int64_t t, char *buf, size_t len) {
  time_t tt = (time_t)t;
  struct tm tm;
  gmtime_r(&tt, &tm);
  strftime(buf, len, "%Y%m%dT%H%M%SZ", &tm);
}

void nq_backup_name(int64_t t, char *buf, size_t len) {
  char stamp[24];
  utc_stamp(t, stamp, sizeof stamp);
  snprintf(buf, len, NQ_BACKUP_PREFIX "%s" NQ_BACKUP_SUFFIX, stamp);
}

/* The time a scheduled backup's name says, or -1 when the name is not exactly one. */
static int64_t name_time(const char *name) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  int end = 0;
  if (sscanf(name, NQ_BACKUP_PREFIX "%4d%2d%2dT%2d%2d%2dZ" NQ_BACKUP_SUFFIX "%n", &tm.tm_year,
             &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &end) != 6 ||
      end == 0 || name[end] != 0 || end != (int)strlen(NQ_BACKUP_PREFIX "20261127T071500Z"
                                                        NQ_BACKUP_SUFFIX))
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return (int64_t)timegm(&tm);
}

/* dirname / basename of a path without touching it ("." for a bare name). */
static int split_path(const char *path, char *dir, size_t dlen, const char **base) {
  const char *slash = strrchr(path, '/');
  *base = slash ? slash + 1 : path;
  if (!**base) return NQ_EINVAL;
  if (!slash) return snprintf(dir, dlen, ".") < (int)dlen ? 0 : NQ_EINVAL;
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  if (n >= dlen) return NQ_EINVAL;
  memcpy(dir, path, n);
  dir[n] = 0;
  return 0;
}

static void info_from(const srv_check_t *c, const char *path, nq_backup_info_t *info) {
  struct stat sb;
  memset(info, 0, sizeof *info);
  info->schema = c->schema;
  info->taken = c->taken;
  info->jobs = c->jobs;
  info->units = c->units;
  info->assignments = c->assignments;
  info->results = c->results;
  info->clients = c->clients;
  info->bytes = stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

int nq_backup_verify(const char *path, nq_backup_info_t *info, char *errbuf, size_t errlen) {
  srv_store_t *st = NULL;
  srv_check_t c;
  int rc = srv_store_open_ro(&st, path, errbuf, errlen);
  if (rc) return rc;
  if ((rc = srv_store_check(st, &c)) != 0) {
    snprintf(errbuf, errlen, "%s: %s", path, srv_store_errmsg(st));
  } else if (c.problems > 0) {
    snprintf(errbuf, errlen, "%s is not a consistent job: %s%s", path, c.first,
             c.problems > 1 ? " (and more)" : "");
    rc = NQ_ECORRUPT;
  } else if (info) {
    info_from(&c, path, info);
  }
  srv_store_close(st);
  return rc;
}

int nq_backup_take(const char *db, const char *dest, int64_t now, nq_backup_info_t *info,
                   char *errbuf, size_t errlen) {
  char dir[PATH_MAX_NQ], tmp[PATH_MAX_NQ], name[PATH_MAX_NQ];
  const char *base;
  nq_backup_info_t tmpinfo;
  double t0 = nq_now_mono();
  if (split_path(dest, dir, sizeof dir, &base) != 0 ||
      snprintf(name, sizeof name, ".%s.tmp", base) >= (int)sizeof name ||
      nq_path_join(tmp, sizeof tmp, dir, name) != 0) {
    snprintf(errbuf, errlen, "backup path too long or empty: %s", dest);
    return NQ_EINVAL;
  }
  int rc = srv_store_backup_copy(db, tmp, now, errbuf, errlen);
  if (rc) return rc;
  if ((rc = nq_backup_verify(tmp, info ? info : &tmpinfo, errbuf, errlen)) != 0) goto fail;
  if (rename(tmp, dest) != 0) {
    snprintf(errbuf, errlen, "rename %s to %s: %s", tmp, dest, strerror(errno));
    rc = NQ_EIO;
    goto fail;
  }
  if (nq_fsync_dir(dir) != 0) {
    snprintf(errbuf, errlen, "fsync of directory %s failed", dir);
    return NQ_EIO; /* the backup is in place and good; only its durability is in doubt */
  }
  if (info) info->seconds = nq_now_mono() - t0;
  return 0;
fail:
  unlink(tmp);
  return rc;
}

static int name_cmp(const void *a, const void *b) { return strcmp(a, b); }

/* The scheduled backups of dir, sorted by name (= time): a malloc'ed array of names. */
static int list_backups(const char *dir, char (**out)[NQ_BACKUP_NAME_MAX], int *n) {
  *out = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? NQ_ENOTFOUND : NQ_EIO;
  char (*v)[NQ_BACKUP_NAME_MAX] = NULL;
  int cnt = 0, rc = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strlen(e->d_name) >= NQ_BACKUP_NAME_MAX || name_time(e->d_name) < 0) continue;
    char (*p)[NQ_BACKUP_NAME_MAX] = realloc(v, (size_t)(cnt + 1) * sizeof *v);
    if (!p) {
      rc = NQ_ENOMEM;
      break;
    }
    v = p;
    memcpy(v[cnt++], e->d_name, strlen(e->d_name) + 1); /* shorter than NQ_BACKUP_NAME_MAX */
  }
  closedir(d);
  if (rc) {
    free(v);
    return rc;
  }
  if (cnt > 1) qsort(v, (size_t)cnt, sizeof *v, name_cmp);
  *out = v;
  *n = cnt;
  return 0;
}

int nq_backup_rotate(const char *dir, int keep, int *removed, char *errbuf, size_t errlen) {
  char (*v)[NQ_BACKUP_NAME_MAX] = NULL;
  int n = 0, gone = 0;
  if (removed) *removed = 0;
  if (keep < 1) keep = 1;
  int rc = list_backups(dir, &v, &n);
  if (rc) {
    snprintf(errbuf, errlen, "backup directory %s: cannot list it", dir);
    return NQ_EIO;
  }
  for (int i = 0; i + keep < n; i++) {
    char path[PATH_MAX_NQ];
    if (nq_path_join(path, sizeof path, dir, v[i]) != 0) continue;
    if (unlink(path) == 0) gone++;
    else if (rc == 0) {
      snprintf(errbuf, errlen, "remove old backup %s: %s", path, strerror(errno));
      rc = NQ_EIO;
    }
  }
  free(v);
  if (gone && nq_fsync_dir(dir) != 0 && rc == 0) {
    snprintf(errbuf, errlen, "fsync of directory %s failed", dir);
    rc = NQ_EIO;
  }
  if (removed) *removed = gone;
  return rc;
}

int nq_backup_newest(const char *dir, char *path, size_t len, int64_t *taken) {
  char (*v)[NQ_BACKUP_NAME_MAX] = NULL;
  int n = 0;
  int rc = list_backups(dir, &v, &n);
  if (rc == 0 && n == 0) rc = NQ_ENOTFOUND;
  if (rc == 0) {
    *taken = name_time(v[n - 1]);
    rc = nq_path_join(path, len, dir, v[n - 1]);
  }
  free(v);
  return rc == NQ_EIO ? NQ_ENOTFOUND : rc;
}

/* Move the database of a data directory and its -wal / -shm aside (those that exist). */
static int move_aside(const char *db, const char *aside, char *errbuf, size_t errlen) {
  static const char *const ext[] = {"", "-wal", "-shm"};
  for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
    char from[PATH_MAX_NQ], to[PATH_MAX_NQ];
    snprintf(from, sizeof from, "%s%s", db, ext[i]);
    snprintf(to, sizeof to, "%s%s", aside, ext[i]);
    if (rename(from, to) != 0 && errno != ENOENT) {
      snprintf(errbuf, errlen, "move %s aside to %s: %s", from, to, strerror(errno));
      return NQ_EIO;
    }
  }
  return 0;
}

int nq_backup_restore(const char *file, const char *data_dir, int64_t now, nq_backup_info_t *info,
                      char *aside, size_t asidelen, char *errbuf, size_t errlen) {
  char db[PATH_MAX_NQ], tmp[PATH_MAX_NQ], moved[PATH_MAX_NQ], stamp[24];
  struct stat sb;
  int fd = -1;
  if (aside && asidelen) aside[0] = 0;
  utc_stamp(now, stamp, sizeof stamp);
  if (nq_path_join(db, sizeof db, data_dir, SRV_DB_FILE) != 0 ||
      nq_path_join(tmp, sizeof tmp, data_dir, "." SRV_DB_FILE ".restore.tmp") != 0 ||
      snprintf(moved, sizeof moved, "%s.before-restore-%s", db, stamp) >= (int)sizeof moved) {
    snprintf(errbuf, errlen, "data directory path too long: %s", data_dir);
    return NQ_EINVAL;
  }
  /* Check first: a backup that fails its check changes nothing. */
  int rc = nq_backup_verify(file, info, errbuf, errlen);
  if (rc) return rc;
  if (nq_mkdir_p(data_dir, 0700) != 0) {
    snprintf(errbuf, errlen, "cannot create the data directory %s", data_dir);
    return NQ_EIO;
  }
  if ((rc = srv_datadir_lock(data_dir, &fd, errbuf, errlen)) != 0) return rc;
  /* A copy (the backup stays one), not stamped again: it keeps the time it was taken. */
  if ((rc = srv_store_backup_copy(file, tmp, 0, errbuf, errlen)) != 0) goto out;
  if (stat(db, &sb) == 0) {
    if ((rc = move_aside(db, moved, errbuf, errlen)) != 0) goto out;
    if (aside && asidelen) snprintf(aside, asidelen, "%s", moved);
  } else if ((rc = move_aside(db, moved, errbuf, errlen)) != 0) {
    goto out; /* a stray -wal without its database must not meet the restored one */
  }
  if (rename(tmp, db) != 0) {
    snprintf(errbuf, errlen, "rename %s to %s: %s", tmp, db, strerror(errno));
    rc = NQ_EIO;
    char ignore[8];
    if (aside && aside[0] && move_aside(moved, db, ignore, sizeof ignore) == 0)
      aside[0] = 0; /* the old one back, with its -wal */
    goto out;
  }
  if (nq_fsync_dir(data_dir) != 0) {
    snprintf(errbuf, errlen, "fsync of directory %s failed", data_dir);
    rc = NQ_EIO;
  }
out:
  if (rc) unlink(tmp);
  close(fd);
  return rc;
}

/* ---- the fleet's keys, kept beside the backups ---- */

/* The data directory's files that a backup (the database) does not hold. */
static const char *const key_files[] = {NQ_CERTS_CA_CERT,    NQ_CERTS_CA_KEY, NQ_CERTS_SERVER_CERT,
                                        NQ_CERTS_SERVER_KEY, SRV_ENROL_FILE,  SRV_ADMIN_FILE};
#define NKEY_FILES (sizeof key_files / sizeof key_files[0])
#define KEY_FILE_MAX 65536 /* a PEM certificate or key, a secret: far below */

/* dir/name read whole: 0, NQ_ENOTFOUND, or another NQ_E* (errbuf says which file). */
static int key_read(const char *dir, const char *name, char **data, size_t *len, char *errbuf,
                    size_t errlen) {
  char p[PATH_MAX_NQ];
  *data = NULL;
  if (nq_path_join(p, sizeof p, dir, name) != 0) {
    snprintf(errbuf, errlen, "path too long: %s/%s", dir, name);
    return NQ_EINVAL;
  }
  int rc = nq_file_read(p, KEY_FILE_MAX, data, len);
  if (rc && rc != NQ_ENOTFOUND) snprintf(errbuf, errlen, "cannot read %s: %s", p, nq_strerror(rc));
  return rc;
}

/* A key file's bytes wiped (OPENSSL_cleanse: a plain memset before free may be dropped by the
 * compiler) and freed; NULL is fine. */
static void key_free(char *data, size_t len) {
  if (data) OPENSSL_cleanse(data, len);
  free(data);
}

static void list_add(char *list, size_t len, const char *name) {
  size_t l = strlen(list);
  snprintf(list + l, len - l, "%s%s", l ? " " : "", name);
}

int nq_backup_keys_keep(const char *data_dir, const char *backup_dir, int *written,
                        char *errbuf, size_t errlen) {
  char kept[PATH_MAX_NQ];
  if (written) *written = 0;
  if (nq_path_join(kept, sizeof kept, backup_dir, NQ_BACKUP_KEYS_DIR) != 0) {
    snprintf(errbuf, errlen, "path too long: %s", backup_dir);
    return NQ_EINVAL;
  }
  if (nq_mkdir_p(kept, 0700) != 0) {
    snprintf(errbuf, errlen, "cannot create %s", kept);
    return NQ_EIO;
  }
  int rc = 0;
  for (size_t i = 0; i < NKEY_FILES && rc == 0; i++) {
    char *have = NULL, *copy = NULL;
    size_t hl = 0, cl = 0;
    rc = key_read(data_dir, key_files[i], &have, &hl, errbuf, errlen);
    if (rc == NQ_ENOTFOUND) { /* nothing to keep (yet) */
      rc = 0;
      continue;
    }
    if (rc == 0) rc = key_read(kept, key_files[i], &copy, &cl, errbuf, errlen);
    if (rc == NQ_ENOTFOUND || (rc == 0 && (cl != hl || memcmp(copy, have, hl) != 0))) {
      rc = nq_file_replace(kept, key_files[i], have, hl, 0600);
      if (rc) snprintf(errbuf, errlen, "cannot write %s/%s: %s", kept, key_files[i],
                       nq_strerror(rc));
      else if (written) (*written)++;
    }
    key_free(have, hl);
    key_free(copy, cl);
  }
  return rc;
}

/* The evidence key's fingerprint in the database at db ("" when it holds none). */
static void evkey_of(const char *db, char fpr[65]) {
  srv_store_t *st = NULL;
  char err[256];
  fpr[0] = '\0';
  if (srv_store_open_ro(&st, db, err, sizeof err) == 0) srv_evkey_fingerprint(st, fpr);
  srv_store_close(st);
}

int nq_backup_keys_restore(const char *file, const char *data_dir, nq_backup_keys_t *k,
                           char *errbuf, size_t errlen) {
  char dir[PATH_MAX_NQ], db[PATH_MAX_NQ];
  memset(k, 0, sizeof *k);
  /* The backup's directory: "." for a bare name, "/" for one at the root. */
  const char *slash = strrchr(file, '/');
  const char *from = !slash ? "." : slash == file ? "/" : file;
  int dl = !slash || slash == file ? 1 : (int)(slash - file);
  if (snprintf(dir, sizeof dir, "%.*s", dl, from) >= (int)sizeof dir ||
      nq_path_join(k->kept, sizeof k->kept, dir, NQ_BACKUP_KEYS_DIR) != 0 ||
      nq_path_join(db, sizeof db, data_dir, SRV_DB_FILE) != 0) {
    snprintf(errbuf, errlen, "path too long: %s", file);
    return NQ_EINVAL;
  }
  int rc = 0;
  for (size_t i = 0; i < NKEY_FILES && rc == 0; i++) {
    char *have = NULL, *copy = NULL;
    size_t hl = 0, cl = 0;
    int rh = key_read(data_dir, key_files[i], &have, &hl, errbuf, errlen);
    int rk = rh == 0 || rh == NQ_ENOTFOUND ? key_read(k->kept, key_files[i], &copy, &cl, errbuf,
                                                      errlen)
                                           : rh;
    if (rk != 0 && rk != NQ_ENOTFOUND) {
      rc = rk;
    } else if (rh == 0) {
      if (rk == 0 && (cl != hl || memcmp(copy, have, hl) != 0))
        list_add(k->differs, sizeof k->differs, key_files[i]);
    } else if (rk == 0) {
      rc = nq_file_create(data_dir, key_files[i], copy, cl, 0600);
      if (rc == 0) list_add(k->copied, sizeof k->copied, key_files[i]);
      else snprintf(errbuf, errlen, "cannot write %s/%s: %s", data_dir, key_files[i],
                    nq_strerror(rc));
    } else {
      list_add(k->missing, sizeof k->missing, key_files[i]);
      k->ca_missing |= i < 2; /* ca.pem, ca.key */
    }
    key_free(have, hl);
    key_free(copy, cl);
  }
  evkey_of(db, k->evkey);
  return rc;
}
