/* nq: "HOST:PORT" parsing (see addr.h). */
#include "nq/addr.h"
#include "nq/nq.h"

#include <string.h>

/* Decimal digits only (no sign, no blanks), at most 5 of them. */
static int parse_port(const char *s, int *out) {
  size_t n = strlen(s);
  if (n == 0 || n > 5 || strspn(s, "0123456789") != n) return NQ_EINVAL;
  int v = 0;
  for (size_t i = 0; i < n; i++) v = v * 10 + (s[i] - '0');
  if (v > 65535) return NQ_EINVAL;
  *out = v;
  return 0;
}

int nq_hostport_parse(const char *spec, char *host, size_t hostlen, int *port, int flags) {
  if (!spec || !host || !port || hostlen == 0) return NQ_EINVAL;
  const char *h = spec, *colon;
  size_t hl;
  if (spec[0] == '[') {
    const char *rb = strchr(spec, ']');
    if (!rb || rb[1] != ':') return NQ_EINVAL;
    h = spec + 1;
    hl = (size_t)(rb - h);
    colon = rb + 1;
    if (hl == 0) return NQ_EINVAL; /* "[]:port" names nothing */
  } else {
    colon = strchr(spec, ':');
    if (!colon || strchr(colon + 1, ':')) return NQ_EINVAL; /* none, or an unbracketed IPv6 */
    hl = (size_t)(colon - spec);
  }
  int listen = (flags & NQ_HOSTPORT_LISTEN) != 0, p;
  if (hl >= hostlen || (hl == 0 && !listen)) return NQ_EINVAL;
  if (parse_port(colon + 1, &p) != 0 || (p == 0 && !listen)) return NQ_EINVAL;
  memcpy(host, h, hl);
  host[hl] = '\0';
  *port = p;
  return 0;
}
