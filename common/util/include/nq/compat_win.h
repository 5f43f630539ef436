/* nq: the few C library functions mingw-w64's runtime (msvcrt) lacks, for the Windows build
 * only: CMakeLists.txt gives every file of ours `-include nq/compat_win.h` there, so no source
 * file tests _WIN32 for them. What the systems do differently (priority, battery, files, the
 * lock, stop events) is nq/sys.h and files_win.c, not here.
 */
#ifndef NQ_COMPAT_WIN_H
#define NQ_COMPAT_WIN_H
#ifdef _WIN32

#include <stdio.h>
#include <stdlib.h>

/* The unlocked getc of POSIX is msvcrt's _getc_nolock. */
#define getc_unlocked(f) _getc_nolock(f)

/* POSIX setenv/unsetenv over _putenv_s (an empty value removes the variable). */
static inline int nq_compat_setenv(const char *k, const char *v, int overwrite) {
  if (!overwrite && getenv(k)) return 0;
  return _putenv_s(k, v) == 0 ? 0 : -1;
}
static inline int nq_compat_unsetenv(const char *k) { return _putenv_s(k, "") == 0 ? 0 : -1; }
#define setenv nq_compat_setenv
#define unsetenv nq_compat_unsetenv

/* msvcrt has no aligned_alloc whose memory free() releases (_aligned_malloc needs
 * _aligned_free); the solver's chunk arrays are read with unaligned loads, so malloc's 16-byte
 * alignment costs at most a split cache line, never a wrong result. */
#define aligned_alloc(a, n) malloc(n)

/* rand_r: the C library's example generator (a seed of one's own, no shared state). */
static inline int nq_compat_rand_r(unsigned *seed) {
  *seed = *seed * 1103515245u + 12345u;
  return (int)((*seed / 65536u) % 32768u);
}
#define rand_r nq_compat_rand_r

/* Signals: Windows has SIGINT, SIGTERM and SIGBREAK (libuv adds SIGHUP for a console's close);
 * there is no SIGPIPE (a write to a closed socket fails with an error) and no signal mask (the
 * console's events come on a thread of their own; winpthreads' pthread_sigmask does nothing).
 * So ignoring SIGPIPE and masking are no-ops there. */
#include <signal.h>
#include <sys/types.h>
#ifndef SIGPIPE
#define SIGPIPE 13 /* signal() refuses it: nothing to ignore */
#endif
#ifndef _POSIX
typedef _sigset_t sigset_t;
#endif
static inline int nq_compat_sigemptyset(sigset_t *s) { return *s = 0, 0; }
static inline int nq_compat_sigaddset(sigset_t *s, int n) { return *s |= 1ull << n, 0; }
#define sigemptyset nq_compat_sigemptyset
#define sigaddset nq_compat_sigaddset
/* winpthreads' pthread_sigmask is a macro that drops its arguments: this one reads them. */
#include <pthread.h>
#undef pthread_sigmask
static inline int nq_compat_pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  (void)how, (void)set;
  if (old) *old = 0;
  return 0;
}
#define pthread_sigmask nq_compat_pthread_sigmask

/* timegm (struct tm in UTC to time_t) is msvcrt's _mkgmtime. */
#include <time.h>
#define timegm _mkgmtime

/* recv flags: libuv's sockets are non-blocking already. */
#define MSG_DONTWAIT 0

#endif
#endif
