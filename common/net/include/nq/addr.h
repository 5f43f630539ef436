/* nq: network address text -- the one parser of "HOST:PORT" that every program uses (the server's
 * --listen, the client's, nq-admin's and nq-loadgen's --server).
 *
 * Accepted forms: "host:port", "[ipv6]:port", and with NQ_HOSTPORT_LISTEN also ":port" (empty
 * host: the caller picks its wildcard address) and port 0 (any free port). An IPv6 literal must
 * be in brackets, as in URLs: "::1:7447" is ambiguous and refused. The port is decimal digits
 * only. Nothing is resolved here.
 */
#ifndef NQ_ADDR_H
#define NQ_ADDR_H

#include <stddef.h>

#define NQ_HOST_MAX 256 /* bytes for a host buffer, terminator included */

enum {
  NQ_HOSTPORT_LISTEN = 1 /* an address to listen on: empty host and port 0 are allowed */
};

/* Split spec into host (copied without brackets into host[hostlen]) and *port. Returns 0, or
 * NQ_EINVAL for a malformed spec, a port outside 1..65535 (0..65535 with NQ_HOSTPORT_LISTEN), an
 * empty host without NQ_HOSTPORT_LISTEN, or a host that does not fit. Outputs are untouched on
 * error. */
int nq_hostport_parse(const char *spec, char *host, size_t hostlen, int *port, int flags);

#endif
