/* nq: what files.c shares with its Windows side, files_win.c (private to common/util). */
#ifndef NQ_FILES_OS_H
#define NQ_FILES_OS_H

#include <fcntl.h>
#include <stddef.h>
#include <sys/types.h>

#define PATH_BUF 4096

#ifdef _WIN32
#define O_CLOEXEC _O_NOINHERIT /* not inherited by child processes */
#else
#define O_BINARY 0 /* Windows' CRT translates line ends without it */
#endif

/* The temporary (".<name>.<pid>.tmp") and the final path of dir/name (PATH_BUF bytes each). */
int nq_files_paths(const char *dir, const char *name, char *tmp, char *dst);

/* Every writer of files.h: a temporary file (flushed when durable), moved into place (exclusive:
 * only when dst does not exist, NQ_EEXIST otherwise; else replacing it), then the move made
 * durable. Failures other than NQ_EEXIST are logged. */
int nq_files_write(const char *dir, const char *name, const void *data, size_t len, mode_t mode,
                   int exclusive, int durable);

#endif
