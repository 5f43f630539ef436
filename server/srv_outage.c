/* nq-server: an outage that costs nothing (see srv_outage.h). */
#include "srv_outage.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "nq/log.h"
#include "nq/nq.h"
#include "srv.h"

struct srv_outage_s {
  srv_t *srv;
  uv_timer_t timer;
};

/* Write the stamp (its own small transaction: the batch and the sweep hold none between their
 * callbacks). A failure is logged; the next stamp tries again. */
static void stamp(srv_t *s, int64_t now) {
  char v[32];
  snprintf(v, sizeof v, "%" PRId64, now);
  if (srv_store_in_tx(s->store) || srv_meta_set(s->store, SRV_META_ALIVE, v) != 0)
    nq_log(NQ_LOG_WARN, "cannot record that the server is alive: %s", srv_store_errmsg(s->store));
}

static void on_alive(uv_timer_t *t) {
  srv_outage_t *o = t->data;
  if (!o->srv->stopping) stamp(o->srv, nq_now_wall());
}

static void on_closed(uv_handle_t *h) {
  free(h->data);
}

/* The leases live at the last stamp get the downtime back. */
static int extend(srv_t *s, int64_t now, char *errbuf, size_t errlen) {
  char v[32];
  if (srv_meta_get(s->store, SRV_META_ALIVE, v, sizeof v) != 0) return 0; /* first start */
  int64_t alive = strtoll(v, NULL, 10), down = now - alive, by = down + SRV_OUTAGE_GRACE_S;
  if (alive <= 0 || down < 0) return 0; /* a clock that went back: nothing to give */
  if (by > s->cfg.outage_max) by = s->cfg.outage_max;
  int64_t n = 0;
  if (by > 0 && srv_asg_shift_leases(s->store, alive, by, &n) != 0) {
    snprintf(errbuf, errlen, "extending the leases after an outage: %s",
             srv_store_errmsg(s->store));
    return NQ_EIO;
  }
  if (down >= SRV_ALIVE_S || n > 0)
    nq_log(NQ_LOG_INFO, "the server was down for %" PRId64 " s (last alive %" PRId64 "): %" PRId64
           " live lease(s) extended by %" PRId64 " s (the downtime and %d s for the clients to "
           "come back%s)", down, alive, n, by, SRV_OUTAGE_GRACE_S,
           by < down + SRV_OUTAGE_GRACE_S ? "; capped by --outage-max" : "");
  return 0;
}

int srv_outage_start(srv_t *s, int64_t now, char *errbuf, size_t errlen) {
  int rc = extend(s, now, errbuf, errlen);
  if (rc) return rc;
  stamp(s, now);
  srv_outage_t *o = calloc(1, sizeof *o);
  if (!o) {
    snprintf(errbuf, errlen, "out of memory");
    return NQ_ENOMEM;
  }
  o->srv = s;
  uv_timer_init(s->loop, &o->timer);
  o->timer.data = o;
  uv_timer_start(&o->timer, on_alive, SRV_ALIVE_S * 1000, SRV_ALIVE_S * 1000);
  s->outage = o;
  return 0;
}

void srv_outage_stop(srv_t *s) {
  srv_outage_t *o = s->outage;
  if (!o) return;
  s->outage = NULL;
  stamp(s, nq_now_wall());
  uv_close((uv_handle_t *)&o->timer, on_closed);
}
