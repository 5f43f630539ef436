/* nq: the file helpers every program shares -- path joins, directories, the two durable writers
 * and small reads. There is one of each: the data directory (secrets), the certificates and the
 * client's journal and token all go through these.
 *
 * Durability. Both writers put the bytes in a temporary file ".<name>.<pid>.tmp" in the same
 * directory (created O_EXCL with `mode`, then fchmod'ed to exactly `mode`, so a key is never
 * readable by others, not even briefly or through the umask), fsync it, move it into place, and
 * fsync the directory, so that once they return 0 the new file survives a crash or power loss.
 * A crash before that leaves either nothing (create) or the old file (replace), plus at most a
 * stray ".*.tmp" file, never a torn one. Readers ignore dot-files.
 *
 * Failures are logged (ERROR, with the path and the system's reason) except NQ_EEXIST from
 * nq_file_create, which is an expected outcome the caller decides about.
 */
#ifndef NQ_FILES_H
#define NQ_FILES_H

#include <stddef.h>
#include <sys/types.h>

/* out = dir "/" name. Returns 0, or NQ_EINVAL if it does not fit in len bytes (out is then ""). */
int nq_path_join(char *out, size_t len, const char *dir, const char *name);

/* mkdir -p: every missing component is created with `mode`. 0, NQ_EINVAL (empty or over
 * PATH_MAX), NQ_EIO (a component cannot be made or is not a directory; errno says why). */
int nq_mkdir_p(const char *path, mode_t mode);

/* fsync a directory, making the entries created, renamed or removed in it durable. 0 or NQ_EIO. */
int nq_fsync_dir(const char *dir);

/* Durable create-new: dir/name gets `len` bytes of data and `mode`, but only if it does not exist
 * yet: NQ_EEXIST if it does (the existing file is untouched; with two writers racing, the first
 * one wins). Returns 0, NQ_EEXIST, NQ_EINVAL (path too long), NQ_EIO. */
int nq_file_create(const char *dir, const char *name, const void *data, size_t len, mode_t mode);

/* Durable replace: dir/name becomes exactly `data` with `mode`, whether it existed or not, in one
 * atomic step (rename). Returns 0, NQ_EINVAL (path too long), NQ_EIO. */
int nq_file_replace(const char *dir, const char *name, const void *data, size_t len, mode_t mode);

/* Atomic but not durable replace: like nq_file_replace without its two fsyncs. A crash of the
 * process leaves the old file or the new one; a power loss may leave the old one, the new one or
 * an empty or torn one (the kernel had not written it yet), so use it only for files whose loss
 * costs nothing that cannot be had again (the client's list of assignments: the server re-sends
 * them). Two fsyncs are most of a small write's cost. Same returns. */
int nq_file_replace_volatile(const char *dir, const char *name, const void *data, size_t len,
                             mode_t mode);

/* Read a whole small file into a new NUL-terminated buffer (*out, caller frees; *len its length
 * without the terminator). 0, NQ_ENOTFOUND (no such file), NQ_ETOOBIG (more than max bytes),
 * NQ_EIO, NQ_ENOMEM. */
int nq_file_read(const char *path, size_t max, char **out, size_t *len);

/* Read the first line of a small text file (a secret, a token) into buf, surrounding white space
 * removed. 0, NQ_ENOTFOUND (no such file), NQ_EINVAL (the line is empty), NQ_ETOOBIG (it does not
 * fit in len bytes), NQ_EIO, NQ_ENOMEM. */
int nq_file_read_line(const char *path, char *buf, size_t len);

/* Take an exclusive advisory lock (flock) on dir/name, creating the file (mode 0644) when
 * missing, and write this process's pid into it: one process at a time may own a directory
 * (a server's data directory, a client's state directory). Returns 0 and *fd, which holds the
 * lock until it is closed (or the process ends; it is not inherited across exec);
 * NQ_EBUSY when another process holds it (*holder gets its pid, 0 if unknown; holder may be
 * NULL); NQ_EINVAL (path too long), NQ_EIO. The lock is the kernel's: it goes away with its
 * holder, so a crash never leaves a stale one. */
int nq_dir_lock(const char *dir, const char *name, int *fd, long *holder);

#endif
