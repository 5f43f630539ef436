/* nq: the Windows side of files.c (files.h): directories, durable writes and the folder lock.
 *
 * Durability the Windows way: the temporary file is written with WriteFile, flushed with
 * FlushFileBuffers and moved into place with MoveFileEx (MOVEFILE_REPLACE_EXISTING to replace;
 * MOVEFILE_WRITE_THROUGH, which returns once the move is on disk: NTFS journals the folder's
 * entries, so there is no folder to flush). Modes: a file takes the access list of its folder
 * (the state folder under %LOCALAPPDATA% is its user's alone), so `mode` is not applied.
 */
#ifdef _WIN32
#include "nq/files.h"
#include "nq/log.h"
#include "nq/nq.h"

#include "files_os.h"

#include <direct.h>
#include <errno.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <windows.h>

/* The system's reason for the last failure, one line. */
static const char *win_error(char *buf, size_t len) {
  DWORD e = GetLastError();
  int n = snprintf(buf, len, "error %lu: ", (unsigned long)e);
  if (n < 0 || (size_t)n >= len) return buf;
  FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e, 0, buf + n,
                 (DWORD)(len - (size_t)n), NULL);
  for (char *p = buf; *p; p++)
    if (*p == '\r' || *p == '\n') *p = ' ';
  return buf;
}

static int is_sep(char c) { return c == '/' || c == '\\'; }

int nq_mkdir_p(const char *path, mode_t mode) {
  (void)mode;
  char buf[PATH_BUF];
  size_t len = path ? strlen(path) : 0;
  if (len == 0 || len >= sizeof buf) return NQ_EINVAL;
  memcpy(buf, path, len + 1);
  /* Past a drive ("C:\") or a share ("\\host\share\"): those are not made. */
  char *p = buf + 1;
  if (len >= 2 && buf[1] == ':') p = buf + 2;
  for (; *p; p++) {
    if (!is_sep(*p) || is_sep(p[-1])) continue;
    char c = *p;
    *p = '\0';
    if (_mkdir(buf) != 0 && errno != EEXIST && errno != EACCES) return NQ_EIO;
    *p = c;
  }
  if (_mkdir(buf) != 0 && errno != EEXIST) return NQ_EIO;
  struct stat st;
  if (stat(buf, &st) != 0) return NQ_EIO;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return NQ_EIO;
  }
  return 0;
}

int nq_fsync_dir(const char *dir) {
  (void)dir; /* MoveFileEx's MOVEFILE_WRITE_THROUGH made the entry durable already */
  return 0;
}

/* Write data into a new file at tmp (CREATE_NEW), flushed when durable. A leftover of a crashed
 * run with our pid is removed first. On failure nothing is left at tmp. */
static int write_tmp(const char *tmp, const void *data, size_t len, int durable) {
  DeleteFileA(tmp);
  HANDLE h = CreateFileA(tmp, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
  if (h == INVALID_HANDLE_VALUE) return NQ_EIO;
  const char *p = data;
  size_t off = 0;
  int ok = 1;
  while (ok && off < len) {
    DWORD chunk = len - off > (1u << 30) ? (1u << 30) : (DWORD)(len - off), w = 0;
    ok = WriteFile(h, p + off, chunk, &w, NULL) && w > 0;
    off += w;
  }
  if (ok && durable) ok = FlushFileBuffers(h) != 0;
  DWORD e = GetLastError();
  if (!CloseHandle(h)) ok = 0;
  if (ok) return 0;
  DeleteFileA(tmp);
  SetLastError(e);
  return NQ_EIO;
}

int nq_files_write(const char *dir, const char *name, const void *data, size_t len, mode_t mode,
                   int exclusive, int durable) {
  (void)mode;
  char tmp[PATH_BUF], dst[PATH_BUF], why[256];
  int rc = nq_files_paths(dir, name, tmp, dst);
  if (rc) {
    nq_log(NQ_LOG_ERROR, "cannot write %s/%s: path too long", dir, name);
    return rc;
  }
  if ((rc = write_tmp(tmp, data, len, durable)) != 0) goto fail;
  /* Without MOVEFILE_REPLACE_EXISTING the move refuses an existing name: create-new. */
  DWORD flags = (exclusive ? 0 : MOVEFILE_REPLACE_EXISTING) | (durable ? MOVEFILE_WRITE_THROUGH : 0);
  if (!MoveFileExA(tmp, dst, flags)) {
    DWORD e = GetLastError();
    DeleteFileA(tmp);
    SetLastError(e);
    if (exclusive && (e == ERROR_ALREADY_EXISTS || e == ERROR_FILE_EXISTS)) return NQ_EEXIST;
    rc = NQ_EIO;
    goto fail;
  }
  return 0;
fail:
  nq_log(NQ_LOG_ERROR, "cannot write %s: %s", dst, win_error(why, sizeof why));
  return rc;
}

/* The lock: the file opened with a sharing mode that lets others read it (the holder's pid) but
 * not write it; a second owner's open for writing fails with a sharing violation. The system
 * closes the handle when its process ends, so a crash leaves no stale lock. */
int nq_dir_lock(const char *dir, const char *name, int *fd_out, long *holder) {
  char path[PATH_BUF], why[256];
  *fd_out = -1;
  if (holder) *holder = 0;
  if (nq_path_join(path, sizeof path, dir, name) != 0) return NQ_EINVAL;
  HANDLE h = CreateFileA(path, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ, NULL, OPEN_ALWAYS,
                         FILE_ATTRIBUTE_NORMAL, NULL);
  if (h == INVALID_HANDLE_VALUE) {
    if (GetLastError() != ERROR_SHARING_VIOLATION) {
      nq_log(NQ_LOG_ERROR, "lock %s: %s", path, win_error(why, sizeof why));
      return NQ_EIO;
    }
    /* Held: read who holds it (the holder allows readers that allow its writes). */
    HANDLE r = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                           OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    if (r != INVALID_HANDLE_VALUE) {
      char buf[32] = "";
      DWORD n = 0;
      if (ReadFile(r, buf, sizeof buf - 1, &n, NULL) && n > 0 && holder) {
        buf[n] = '\0';
        *holder = strtol(buf, NULL, 10);
      }
      CloseHandle(r);
    }
    return NQ_EBUSY;
  }
  /* Ours now: say who holds it, for the next one's message. */
  char buf[32];
  int len = snprintf(buf, sizeof buf, "%ld\n", (long)GetCurrentProcessId());
  DWORD w = 0;
  if (!SetEndOfFile(h) || !WriteFile(h, buf, (DWORD)len, &w, NULL) || w != (DWORD)len)
    nq_log(NQ_LOG_WARN, "lock %s: cannot record the pid: %s", path, win_error(why, sizeof why));
  int fd = _open_osfhandle((intptr_t)h, 0);
  if (fd < 0) {
    CloseHandle(h);
    return NQ_EIO;
  }
  *fd_out = fd;
  return 0;
}

#endif /* _WIN32 */
