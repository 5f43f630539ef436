/* nq-server: data directory initialisation (see datadir.h). */
#include "datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nq/certs.h"
#include "nq/files.h"
#include "nq/hash.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "store_backup.h"
#include "store_clients.h"

static int join(char *out, const char *dir, const char *name) {
  return nq_path_join(out, SRV_DATADIR_PATH_MAX, dir, name);
}

/* Make the secret file dir/name unless it exists (create-new: never overwritten; if another
 * process made it meanwhile, theirs wins), then read it back and hash it. */
static int secret_ensure(const char *dir, const char *name, const char *path, char hash[65],
                         char *errbuf, size_t errlen) {
  char tok[2 * SRV_SECRET_BYTES + 2];
  int rc;
  if (access(path, F_OK) != 0) {
    if ((rc = nq_random_token(tok, SRV_SECRET_BYTES)) != 0) {
      snprintf(errbuf, errlen, "random token: %s", nq_strerror(rc));
      return rc;
    }
    size_t n = strlen(tok);
    tok[n] = '\n';
    rc = nq_file_create(dir, name, tok, n + 1, 0600);
    memset(tok, 0, sizeof tok);
    if (rc != 0 && rc != NQ_EEXIST) {
      snprintf(errbuf, errlen, "write %s: %s", path, nq_strerror(rc));
      return rc;
    }
  }
  if ((rc = nq_file_read_line(path, tok, sizeof tok)) != 0) {
    snprintf(errbuf, errlen, "read %s: %s", path, rc == NQ_ETOOBIG ? "too long" : "unreadable");
    return rc == NQ_ETOOBIG ? rc : NQ_EIO;
  }
  rc = nq_sha256_hex(tok, hash);
  memset(tok, 0, sizeof tok);
  if (rc != 0) {
    snprintf(errbuf, errlen, "sha256: %s", nq_strerror(rc));
    return rc;
  }
  return 0;
}

/* Take group/other permissions off `path` (if it exists) down to `want`, with a warning: a
 * directory made by hand, or an old database, may be readable by everyone. */
static int tighten(const char *path, mode_t want, char *errbuf, size_t errlen) {
  struct stat sb;
  if (stat(path, &sb) != 0) return 0;
  mode_t mode = sb.st_mode & 07777;
  if (!(mode & ~want & 0777)) return 0;
  if (chmod(path, mode & want) != 0) {
    snprintf(errbuf, errlen, "chmod %s: %s", path, strerror(errno));
    return NQ_EIO;
  }
  nq_log(NQ_LOG_WARN, "%s had mode %04o; now %04o (it holds secrets or the store)", path,
         (unsigned)mode, (unsigned)(mode & want));
  return 0;
}

/* The directory 0700, and the store (with SQLite's -wal and -shm files, which copy the
 * database's mode when SQLite creates them), the keys and the secrets 0600. A missing database
 * is created empty here with 0600 (SQLite would use 0644). */
static int tighten_all(const srv_datadir_t *dd, char *errbuf, size_t errlen) {
  int rc = tighten(dd->dir, 0700, errbuf, errlen);
  if (rc) return rc;
  int fd = open(dd->db, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    close(fd);
  } else if (errno != EEXIST) {
    snprintf(errbuf, errlen, "create %s: %s", dd->db, strerror(errno));
    return NQ_EIO;
  }
  static const char *const names[] = {SRV_DB_FILE "-wal", SRV_DB_FILE "-shm", NQ_CERTS_CA_KEY,
                                      NQ_CERTS_SERVER_KEY, SRV_ENROL_FILE, SRV_ADMIN_FILE};
  if ((rc = tighten(dd->db, 0600, errbuf, errlen)) != 0) return rc;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char path[SRV_DATADIR_PATH_MAX];
    if (join(path, dd->dir, names[i]) != 0) continue; /* cannot happen: dir was checked */
    if ((rc = tighten(path, 0600, errbuf, errlen)) != 0) return rc;
  }
  return 0;
}

int srv_datadir_init(srv_datadir_t *dd, const char *dir, const char *const *extra_names,
                     char *errbuf, size_t errlen) {
  char dummy[8];
  if (!errbuf || !errlen) {
    errbuf = dummy;
    errlen = sizeof dummy;
  }
  memset(dd, 0, sizeof *dd);
  dd->lock_fd = -1;
  int rc;
  if (!dir || !*dir || strlen(dir) >= SRV_DATADIR_PATH_MAX - 32) {
    snprintf(errbuf, errlen, "bad data directory path");
    return NQ_EINVAL;
  }
  snprintf(dd->dir, sizeof dd->dir, "%s", dir);
  if (mkdir(dir, 0700) == 0) {
    dd->created = 1;
  } else if (errno != EEXIST) {
    snprintf(errbuf, errlen, "mkdir %s: %s", dir, strerror(errno));
    return NQ_EIO;
  }
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    snprintf(errbuf, errlen, "%s is not a directory", dir);
    return NQ_EIO;
  }
  if ((rc = srv_datadir_lock(dir, &dd->lock_fd, errbuf, errlen)) != 0) return rc;
  if (join(dd->db, dir, SRV_DB_FILE) || join(dd->ca_cert, dir, NQ_CERTS_CA_CERT) ||
      join(dd->server_cert, dir, NQ_CERTS_SERVER_CERT) ||
      join(dd->server_key, dir, NQ_CERTS_SERVER_KEY) ||
      join(dd->enrol_key, dir, SRV_ENROL_FILE) || join(dd->admin_token, dir, SRV_ADMIN_FILE)) {
    snprintf(errbuf, errlen, "data directory path too long");
    srv_datadir_close(dd);
    return NQ_EINVAL;
  }
  rc = tighten_all(dd, errbuf, errlen);
  if (rc == 0 && (rc = nq_certs_ensure(dir, extra_names)) != 0) {
    snprintf(errbuf, errlen, "certificates in %s: %s", dir, nq_strerror(rc));
  } else if (rc == 0 && (rc = secret_ensure(dir, SRV_ENROL_FILE, dd->enrol_key, dd->enrol_hash, errbuf,
                                 errlen)) == 0) {
    rc = secret_ensure(dir, SRV_ADMIN_FILE, dd->admin_token, dd->admin_hash, errbuf, errlen);
  }
  if (rc) srv_datadir_close(dd);
  return rc;
}

int srv_datadir_lock(const char *dir, int *fd, char *errbuf, size_t errlen) {
  long holder = 0;
  int rc = nq_dir_lock(dir, SRV_LOCK_FILE, fd, &holder);
  if (rc == NQ_EBUSY && holder > 0)
    snprintf(errbuf, errlen, "data directory %s is in use by another nq-server (pid %ld; lock "
             "%s/%s)", dir, holder, dir, SRV_LOCK_FILE);
  else if (rc == NQ_EBUSY)
    snprintf(errbuf, errlen, "data directory %s is in use by another nq-server (lock %s/%s)", dir,
             dir, SRV_LOCK_FILE);
  else if (rc)
    snprintf(errbuf, errlen, "cannot lock data directory %s (%s/%s)", dir, dir, SRV_LOCK_FILE);
  return rc;
}

void srv_datadir_close(srv_datadir_t *dd) {
  if (dd->lock_fd >= 0) close(dd->lock_fd);
  dd->lock_fd = -1;
}

int srv_datadir_store_hashes(const srv_datadir_t *dd, srv_store_t *st) {
  int rc = srv_meta_set(st, SRV_META_ENROL_HASH, dd->enrol_hash);
  if (rc == 0) rc = srv_meta_set(st, SRV_META_ADMIN_HASH, dd->admin_hash);
  return rc;
}

int srv_datadir_ca_check(const char *dir, int new_ca, char *errbuf, size_t errlen) {
  char db[SRV_DATADIR_PATH_MAX], cac[SRV_DATADIR_PATH_MAX], cak[SRV_DATADIR_PATH_MAX];
  struct stat sb;
  if (join(db, dir, SRV_DB_FILE) || join(cac, dir, NQ_CERTS_CA_CERT) ||
      join(cak, dir, NQ_CERTS_CA_KEY))
    return 0; /* srv_datadir_init says the path is too long */
  int has_ca = stat(cac, &sb) == 0 && stat(cak, &sb) == 0;
  if (has_ca || new_ca || stat(db, &sb) != 0) return 0;
  srv_store_t *st = NULL;
  int64_t n = 0;
  char err[256];
  if (srv_store_open_ro(&st, db, err, sizeof err) != 0 || srv_clients_count(st, &n) != 0) n = 0;
  srv_store_close(st);
  if (n == 0) return 0;
  snprintf(errbuf, errlen, "%s holds %lld enrolled client(s), but %s or %s is missing: a new CA "
           "would lock every one of them out (they trust the old one). Put back ca.pem and ca.key "
           "(with server.pem, server.key, enrol.key and admin.token) from the old data directory "
           "or where you keep its keys, or start once with --new-ca to make a new CA (every "
           "client then needs the new ca.pem)", db, (long long)n, cac, cak);
  return NQ_EINVAL;
}
