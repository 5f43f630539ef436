/* nq-server: the end of a request that closes its connection (srv_req.h). */
#include "srv_req.h"

#include <stdarg.h>
#include <stdio.h>

void srv_req_fatal(srv_req_t *r, nq_errcode_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err_msg, sizeof r->err_msg, fmt, ap);
  va_end(ap);
  json_decref(r->reply);
  r->reply = NULL;
  r->close = 1;
  r->err_code = code;
  r->sc->state = SRV_CONN_DEAD;
}

