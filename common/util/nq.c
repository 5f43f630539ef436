/* nq: error strings and clocks shared by every program. */
#include "nq/nq.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *nq_strerror(int err) {
  switch (err) {
  case NQ_OK: return "success";
  case NQ_EINVAL: return "invalid argument";
  case NQ_ERANGE: return "value out of range";
  case NQ_ENOMEM: return "out of memory";
  case NQ_EIO: return "I/O error";
  case NQ_EPROTO: return "protocol error";
  case NQ_ETOOBIG: return "message too big";
  case NQ_EAGAIN: return "need more data";
  case NQ_EAUTH: return "authentication failed";
  case NQ_ENOTFOUND: return "not found";
  case NQ_EEXIST: return "already exists";
  case NQ_ESTATE: return "invalid state";
  case NQ_ETLS: return "TLS error";
  case NQ_EOVERFLOW: return "arithmetic overflow";
  case NQ_EBANNED: return "client is banned";
  case NQ_ECANCELED: return "cancelled";
  case NQ_ENOTOPEN: return "connection not open";
  case NQ_ETXN: return "no transaction open, or one already open";
  case NQ_EBUSY: return "busy";
  case NQ_ESCHEMA: return "database schema newer than this program";
  case NQ_ENODEV: return "no such device or kernel";
  case NQ_EDEVICE: return "device failure";
  case NQ_ECORRUPT: return "data fails its consistency checks";
  case NQ_EEXPIRED: return "the lease expired";
  default: return "unknown error";
  }
}

int nq_errorf(char *errbuf, size_t errlen, int code, const char *fmt, ...) {
  if (errbuf && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}

int nq_name_index(const char *const *names, int n, const char *name) {
  for (int i = 0; name && i < n; i++)
    if (names[i] && names[i][0] && strcmp(names[i], name) == 0) return i;
  return -1;
}

int nq_grow(void *arrp, size_t *cap, size_t n, size_t elem, size_t first) {
  if (n < *cap) return 0;
  size_t nc;
  if (*cap == 0) nc = first;
  else if (*cap > SIZE_MAX / 2) return NQ_ENOMEM;
  else nc = *cap * 2;
  if (nc <= n) nc = n + 1;
  if (elem == 0 || nc > SIZE_MAX / elem) return NQ_ENOMEM;
  void *old;
  memcpy(&old, arrp, sizeof old); /* arrp points at a T*, not a void* */
  void *p = realloc(old, nc * elem);
  if (!p) return NQ_ENOMEM;
  memcpy(arrp, &p, sizeof p);
  *cap = nc;
  return 0;
}

double nq_now_mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t nq_now_wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec;
}
