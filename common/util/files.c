/* nq: path joins, directories, durable writes and small reads (see files.h). The parts that
 * differ by system are at the end, for POSIX; files_win.c has them for Windows (files_os.h). */
#include "nq/files.h"
#include "nq/log.h"
#include "nq/nq.h"

#include "files_os.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef _WIN32
#include <sys/file.h>
#endif

#define LINE_FILE_MAX 65536 /* a secret or token file is a line; anything this big is not one */

int nq_path_join(char *out, size_t len, const char *dir, const char *name) {
  int n = snprintf(out, len, "%s/%s", dir, name);
  if (n < 0 || (size_t)n >= len) {
    if (len) out[0] = '\0';
    return NQ_EINVAL;
  }
  return 0;
}

/* The temporary and the final path of dir/name. */
int nq_files_paths(const char *dir, const char *name, char *tmp, char *dst) {
  char tname[PATH_BUF];
  int n = snprintf(tname, sizeof tname, ".%s.%ld.tmp", name, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof tname) return NQ_EINVAL;
  if (nq_path_join(tmp, PATH_BUF, dir, tname) || nq_path_join(dst, PATH_BUF, dir, name))
    return NQ_EINVAL;
  return 0;
}

int nq_file_create(const char *dir, const char *name, const void *data, size_t len, mode_t mode) {
  return nq_files_write(dir, name, data, len, mode, 1, 1);
}

int nq_file_replace(const char *dir, const char *name, const void *data, size_t len,
                    mode_t mode) {
  return nq_files_write(dir, name, data, len, mode, 0, 1);
}

int nq_file_replace_volatile(const char *dir, const char *name, const void *data, size_t len,
                             mode_t mode) {
  return nq_files_write(dir, name, data, len, mode, 0, 0);
}

int nq_file_read(const char *path, size_t max, char **out, size_t *out_len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_BINARY);
  if (fd < 0) return errno == ENOENT ? NQ_ENOTFOUND : NQ_EIO;
  int rc = NQ_EIO;
  size_t len = 0;
  char *buf = malloc(max + 1);
  if (!buf) {
    rc = NQ_ENOMEM;
    goto out;
  }
  for (;;) {
    ssize_t r = read(fd, buf + len, max + 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) goto out;
    if (r == 0) break;
    len += (size_t)r;
    if (len > max) {
      rc = NQ_ETOOBIG;
      goto out;
    }
  }
  buf[len] = '\0';
  *out = buf;
  *out_len = len;
  buf = NULL;
  rc = 0;
out:
  free(buf);
  close(fd);
  return rc;
}

int nq_file_read_line(const char *path, char *buf, size_t len) {
  char *text = NULL;
  size_t n = 0;
  int rc = nq_file_read(path, LINE_FILE_MAX, &text, &n);
  if (rc) return rc;
  char *p = text;
  while (*p && isspace((unsigned char)*p) && *p != '\n') p++;
  size_t l = strcspn(p, "\n");
  while (l > 0 && isspace((unsigned char)p[l - 1])) l--;
  if (l == 0) rc = NQ_EINVAL;
  else if (l >= len) rc = NQ_ETOOBIG;
  else {
    memcpy(buf, p, l);
    buf[l] = '\0';
  }
  /* The file may be a secret: do not leave a copy in freed memory. */
  memset(text, 0, n);
  free(text);
  return rc;
}

/* ---- POSIX ---------------------------------------------------------------------------- */
#ifndef _WIN32

int nq_mkdir_p(const char *path, mode_t mode) {
  char buf[PATH_BUF];
  size_t len = path ? strlen(path) : 0;
  if (len == 0 || len >= sizeof buf) return NQ_EINVAL;
  memcpy(buf, path, len + 1);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, mode) != 0 && errno != EEXIST) return NQ_EIO;
    *p = '/';
  }
  if (mkdir(buf, mode) != 0 && errno != EEXIST) return NQ_EIO;
  struct stat st;
  if (stat(buf, &st) != 0) return NQ_EIO;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return NQ_EIO;
  }
  return 0;
}

int nq_fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return NQ_EIO;
  int rc = fsync(fd) == 0 ? 0 : NQ_EIO;
  close(fd);
  return rc;
}

/* Write data into a new file at tmp (O_EXCL) with exactly `mode`, fsync it (when durable) and
 * close it. A leftover of a crashed run with our pid is removed and the create tried again. On
 * failure nothing is left at tmp. */
static int write_tmp(const char *tmp, const void *data, size_t len, mode_t mode, int durable) {
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0 && errno == EEXIST) {
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  }
  if (fd < 0) return NQ_EIO;
  const char *p = data;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, p + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) goto fail;
    off += (size_t)w;
  }
  if (fchmod(fd, mode) != 0 || (durable && fsync(fd) != 0)) goto fail;
  if (close(fd) != 0) {
    fd = -1;
    goto fail;
  }
  return 0;
fail:
  {
    int e = errno;
    if (fd >= 0) close(fd);
    unlink(tmp);
    errno = e;
  }
  return NQ_EIO;
}

/* Every writer: a temporary file (fsync'ed when durable), moved into place by link() (exclusive:
 * create-new) or rename() (replace), then the directory fsync'ed (when durable). */
int nq_files_write(const char *dir, const char *name, const void *data, size_t len,
                      mode_t mode, int exclusive, int durable) {
  char tmp[PATH_BUF], dst[PATH_BUF];
  int rc = nq_files_paths(dir, name, tmp, dst);
  if (rc) {
    nq_log(NQ_LOG_ERROR, "cannot write %s/%s: path too long", dir, name);
    return rc;
  }
  if ((rc = write_tmp(tmp, data, len, mode, durable)) != 0) goto fail;
  /* link() refuses an existing name, which is exactly create-new; rename() replaces it. */
  if (exclusive ? link(tmp, dst) != 0 : rename(tmp, dst) != 0) {
    int e = errno;
    unlink(tmp);
    errno = e;
    if (exclusive && e == EEXIST) return NQ_EEXIST;
    rc = NQ_EIO;
    goto fail;
  }
  if (exclusive) unlink(tmp);
  if (durable && (rc = nq_fsync_dir(dir)) != 0) goto fail;
  return 0;
fail:
  nq_log(NQ_LOG_ERROR, "cannot write %s: %s", dst, strerror(errno));
  return rc;
}

int nq_dir_lock(const char *dir, const char *name, int *fd_out, long *holder) {
  char path[PATH_BUF];
  *fd_out = -1;
  if (holder) *holder = 0;
  if (nq_path_join(path, sizeof path, dir, name) != 0) return NQ_EINVAL;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    nq_log(NQ_LOG_ERROR, "open %s: %s", path, strerror(errno));
    return NQ_EIO;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int busy = errno == EWOULDBLOCK;
    if (!busy) nq_log(NQ_LOG_ERROR, "lock %s: %s", path, strerror(errno));
    char buf[32] = "";
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (holder && n > 0) {
      buf[n] = '\0';
      *holder = strtol(buf, NULL, 10);
    }
    close(fd);
    return busy ? NQ_EBUSY : NQ_EIO;
  }
  /* Ours now: say who holds it, for the next one's message. */
  char buf[32];
  int len = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)len, 0) != len)
    nq_log(NQ_LOG_WARN, "lock %s: cannot record the pid: %s", path, strerror(errno));
  *fd_out = fd;
  return 0;
}

#endif /* !_WIN32 */
