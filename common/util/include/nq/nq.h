/* nq: shared definitions -- error codes, version, small helpers used by every module. */
#ifndef NQ_NQ_H
#define NQ_NQ_H

#include <stddef.h>
#include <stdint.h>

/* The software version: CMake passes the project's (project(nq VERSION ...)), so the packages
 * and `--version` agree; the fallback is for a compile outside CMake. */
#ifndef NQ_VERSION_STRING
#define NQ_VERSION_STRING "0.1.0"
#endif

/* The printf flavour of format checks: mingw-w64's own printf (C99: %zu, %llu) on Windows, where
 * CMakeLists.txt asks for it (__USE_MINGW_ANSI_STDIO), not msvcrt's. */
#ifdef __MINGW32__
#define NQ_PRINTF gnu_printf
#else
#define NQ_PRINTF printf
#endif

/* Every function returns 0 or one of these negative codes; nq_strerror() names them. */
enum {
  NQ_OK = 0,
  NQ_EINVAL = -1,    /* invalid argument or malformed input */
  NQ_ERANGE = -2,    /* value out of range (N, depth, sizes) */
  NQ_ENOMEM = -3,    /* allocation failed */
  NQ_EIO = -4,       /* I/O or store failure */
  NQ_EPROTO = -5,    /* protocol violation */
  NQ_ETOOBIG = -6,   /* frame or message over the limit */
  NQ_EAGAIN = -7,    /* need more input */
  NQ_EAUTH = -8,     /* bad token or key */
  NQ_ENOTFOUND = -9, /* no such object */
  NQ_EEXIST = -10,   /* already exists / duplicate */
  NQ_ESTATE = -11,   /* the object is in the wrong state for this (a unit that is not disputed) */
  NQ_ETLS = -12,     /* TLS failure */
  NQ_EOVERFLOW = -13, /* arithmetic overflow */
  NQ_EBANNED = -14,  /* the client is banned */
  NQ_ECANCELED = -15, /* the operation was cancelled (a solve asked to stop) */
  NQ_ENOTOPEN = -16, /* the connection is not open (not yet, or no longer) */
  NQ_ETXN = -17,     /* transaction misuse: none is open, or one already is */
  NQ_EBUSY = -18,    /* busy: held by an earlier request, or locked by another process */
  NQ_ESCHEMA = -19,  /* the database's schema is newer than this program knows */
  NQ_ENODEV = -20,   /* no such device or kernel in this build or on this machine */
  NQ_EDEVICE = -21,  /* a device failed (a GPU's driver, build, resources or results) */
  NQ_ECORRUPT = -22, /* the data fails its own checks (a backup that is not a consistent job) */
  NQ_EEXPIRED = -23  /* a lease ran out, and what it held went to someone else */
};

const char *nq_strerror(int err);

/* Write a one-line reason (printf-style) into errbuf when errbuf and errlen are given, and
 * return code: `return nq_errorf(errbuf, errlen, NQ_ERANGE, "...", ...)`. */
int nq_errorf(char *errbuf, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(NQ_PRINTF, 4, 5)));

/* The index of `name` in names[0..n) (entries NULL or "" never match), or -1 (name NULL too):
 * the parse half of every enum's name table. */
int nq_name_index(const char *const *names, int n, const char *name);

/* Room for one more element in a growing array: when n == *cap, the array *arrp (a pointer to
 * the array's pointer, elements of elem bytes) doubles (to `first` elements the first time) and
 * *cap says so. 0, or NQ_ENOMEM with the array as it was (a size that would overflow included). */
int nq_grow(void *arrp, size_t *cap, size_t n, size_t elem, size_t first);

/* Monotonic clock in seconds (for rates and timings) and wall clock in seconds since the epoch. */
double nq_now_mono(void);
int64_t nq_now_wall(void);

#endif
