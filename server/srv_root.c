/* nq-server: the running job's root, kept and refreshed within a cost bound (srv_root.h). */
#include "srv_root.h"

#include <uv.h>

#include "nq/hash.h"
#include "nq/merkle.h"
#include "store_export.h"

int srv_root_refresh(srv_store_t *st, const srv_job_t *job, srv_root_t *r, int64_t now) {
  uint64_t t0 = uv_hrtime() / 1000000;
  uint64_t wait = r->cost_ms * SRV_ROOT_COST_X;
  if (wait < SRV_ROOT_MIN_MS) wait = SRV_ROOT_MIN_MS;
  if (r->have && r->job == job->id && t0 - r->ms < wait) return 0;
  nq_merkle_t m;
  unsigned char root[32];
  int rc = srv_export_root(st, job, &m);
  if (rc == 0) rc = nq_merkle_root(&m, root);
  if (rc) return rc;
  nq_hex_encode(root, sizeof root, r->hex);
  r->have = 1;
  r->job = job->id;
  r->leaves = (int64_t)m.leaves;
  r->at = now;
  r->ms = t0;
  r->cost_ms = uv_hrtime() / 1000000 - t0;
  return 0;
}
