/* nq-server: a request's fatal end, for the protocol (srv_proto.c, srv_signup.c) and the batch
 * that commits it (srv.c). */
#ifndef SRV_REQ_H
#define SRV_REQ_H

#include "nq/proto.h"
#include "srv.h"

/* Mark r as closing the connection after a fatal error `code` (NQ_ERR_NONE: close without an
 * error frame) with a printf-style message, and the connection as dead. */
void srv_req_fatal(srv_req_t *r, nq_errcode_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
