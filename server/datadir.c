/* nq-server: data directory initialisation (see datadir.h). */
#include "datadir.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nq/certs.h"
#include "nq/nq.h"

static int join(char *out, const char *dir, const char *name) {
  int n = snprintf(out, SRV_DATADIR_PATH_MAX, "%s/%s", dir, name);
  return (n < 0 || n >= SRV_DATADIR_PATH_MAX) ? NQ_EINVAL : 0;
}

int srv_secret_read(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f) return NQ_EIO;
  char line[512];
  int rc = NQ_EIO;
  if (fgets(line, sizeof line, f)) {
    char *p = line;
    while (*p && isspace((unsigned char)*p)) p++;
    size_t n = strlen(p);
    while (n > 0 && isspace((unsigned char)p[n - 1])) p[--n] = '\0';
    if (n == 0) rc = NQ_EIO;
    else if (n >= len) rc = NQ_ETOOBIG;
    else {
      memcpy(buf, p, n + 1);
      rc = 0;
    }
  }
  fclose(f);
  return rc;
}

/* Make the secret file at path unless it exists (O_EXCL: never overwrite), then read it back
 * and hash it. The file is written completely before it is renamed into place, so a crash
 * never leaves an empty secret behind. */
static int secret_ensure(const char *path, char hash[65], char *errbuf, size_t errlen) {
  char tok[2 * SRV_SECRET_BYTES + 1];
  int rc;
  if (access(path, F_OK) != 0) {
    char tmp[SRV_DATADIR_PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if ((rc = nq_random_token(tok, SRV_SECRET_BYTES)) != 0) {
      snprintf(errbuf, errlen, "random token: %s", nq_strerror(rc));
      return rc;
    }
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
      snprintf(errbuf, errlen, "create %s: %s", tmp, strerror(errno));
      return NQ_EIO;
    }
    size_t n = strlen(tok);
    tok[n] = '\n';
    int ok = write(fd, tok, n + 1) == (ssize_t)(n + 1) && fsync(fd) == 0;
    tok[n] = '\0';
    if (close(fd) != 0) ok = 0;
    /* link() fails if someone made the file meanwhile: theirs wins, ours is dropped. */
    if (!ok || (link(tmp, path) != 0 && errno != EEXIST)) {
      snprintf(errbuf, errlen, "write %s: %s", path, strerror(errno));
      unlink(tmp);
      return NQ_EIO;
    }
    unlink(tmp);
  }
  if ((rc = srv_secret_read(path, tok, sizeof tok)) != 0) {
    snprintf(errbuf, errlen, "read %s: %s", path, rc == NQ_ETOOBIG ? "too long" : "unreadable");
    return rc;
  }
  if ((rc = nq_sha256_hex(tok, hash)) != 0) {
    snprintf(errbuf, errlen, "sha256: %s", nq_strerror(rc));
    return rc;
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
  if (join(dd->db, dir, SRV_DB_FILE) || join(dd->ca_cert, dir, NQ_CERTS_CA_CERT) ||
      join(dd->server_cert, dir, NQ_CERTS_SERVER_CERT) ||
      join(dd->server_key, dir, NQ_CERTS_SERVER_KEY) ||
      join(dd->enrol_key, dir, SRV_ENROL_FILE) || join(dd->admin_token, dir, SRV_ADMIN_FILE)) {
    snprintf(errbuf, errlen, "data directory path too long");
    return NQ_EINVAL;
  }
  int rc = nq_certs_ensure(dir, extra_names);
  if (rc != 0) {
    snprintf(errbuf, errlen, "certificates in %s: %s", dir, nq_strerror(rc));
    return rc;
  }
  if ((rc = secret_ensure(dd->enrol_key, dd->enrol_hash, errbuf, errlen)) != 0) return rc;
  if ((rc = secret_ensure(dd->admin_token, dd->admin_hash, errbuf, errlen)) != 0) return rc;
  return 0;
}

int srv_datadir_store_hashes(const srv_datadir_t *dd, srv_store_t *st) {
  int rc = srv_meta_set(st, SRV_META_ENROL_HASH, dd->enrol_hash);
  if (rc == 0) rc = srv_meta_set(st, SRV_META_ADMIN_HASH, dd->admin_hash);
  return rc;
}
