/* nq-server: the evidence file's writer over the store (export.h). */
#include "export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nq/nq.h"
#include "evkey.h"
#include "store_export.h"

typedef struct ex_s {
  nq_ev_writer_t *w;
  uint64_t units;
} ex_t;

static int write_unit(const nq_ev_unit_t *u, void *arg) {
  ex_t *x = arg;
  x->units++;
  return nq_ev_write_unit(x->w, u);
}

static void fill_header(const srv_job_t *job, nq_ev_distinct_t distinct, int64_t now,
                        nq_ev_header_t *h) {
  memset(h, 0, sizeof *h);
  h->version = NQ_EV_VERSION;
  h->n = job->n;
  h->job = job->id;
  snprintf(h->solver, sizeof h->solver, "%s", NQ_SOLVER_VERSION);
  snprintf(h->software, sizeof h->software, "%s", NQ_VERSION_STRING);
  h->depth = job->depth;
  h->min_depth = job->min_depth;
  h->unit_seconds = job->unit_seconds;
  h->seed = job->seed;
  h->has_internal = job->has_internal;
  h->internal = job->internal;
  h->quorum = job->quorum;
  h->max_results = job->max_results;
  h->distinct = distinct;
  h->units = (uint64_t)job->units;
  h->created = job->created;
  h->finished = job->finished;
  h->exported = now;
}

int srv_export_write(srv_store_t *st, int64_t job_id, nq_ev_distinct_t distinct, int64_t now,
                     FILE *out, nq_admin_export_t *info, char *err, size_t errlen) {
  srv_job_t job;
  nq_ev_header_t h;
  nq_ev_totals_t t;
  ex_t x = {0};
  unsigned char priv[NQ_SIGN_KEY_BYTES] = {0}, pub[NQ_SIGN_KEY_BYTES];
  nq_ev_unit_t *scratch = malloc(sizeof *scratch);
  memset(info, 0, sizeof *info);
  if (!scratch) {
    snprintf(err, errlen, "out of memory");
    return NQ_ENOMEM;
  }
  int rc = srv_export_begin(st, job_id, &job, &t.total, &t.unique);
  if (rc) {
    snprintf(err, errlen, "%s", srv_store_errmsg(st));
    free(scratch);
    return rc;
  }
  if (job.state != SRV_JOB_DONE) {
    snprintf(err, errlen, "the job for N=%d is %s: only a finished job has evidence to export",
             job.n, srv_job_state_name(job.state));
    rc = NQ_ESTATE;
    goto out;
  }
  if (!job.has_internal) { /* only a job made before schema 5, until nq-server opens it */
    snprintf(err, errlen, "the job for N=%d does not know its split nodes yet: start nq-server on "
             "this data directory once, then export", job.n);
    rc = NQ_ESTATE;
    goto out;
  }
  /* Signed with the server's key (evkey.h), read in the same snapshot. */
  if ((rc = srv_evkey_load(st, priv, pub)) != 0) {
    snprintf(err, errlen, rc == NQ_ENOTFOUND ? "the data directory has no signing key yet: start "
             "nq-server on it once, then export" : "the signing key: %s", srv_store_errmsg(st));
    goto out;
  }
  fill_header(&job, distinct, now, &h);
  if ((rc = nq_ev_writer_begin(out, &x.w)) != 0 || (rc = nq_ev_write_header(x.w, &h)) != 0) {
    snprintf(err, errlen, "writing the header: %s", rc == NQ_EIO ? strerror(errno) : nq_strerror(rc));
    goto out;
  }
  rc = srv_export_units(st, &job, scratch, write_unit, &x);
  if (rc) {
    snprintf(err, errlen, "%s", rc == NQ_EIO && ferror(out) ? strerror(errno)
                                : rc == NQ_ERANGE || rc == NQ_EIO ? srv_store_errmsg(st)
                                                                  : nq_strerror(rc));
    goto out;
  }
  t.units = x.units;
  t.c2 = job.totals.c2;
  t.c4 = job.totals.c4;
  t.c8 = job.totals.c8;
  t.nodes = job.totals.nodes;
  rc = nq_ev_write_totals(x.w, &t);
  if (rc == 0) {
    rc = nq_ev_writer_end_signed(x.w, priv);
    x.w = NULL; /* nq_ev_writer_end frees it, whatever it returns */
  }
  if (rc) {
    snprintf(err, errlen, "writing the totals: %s", rc == NQ_EIO ? strerror(errno) : nq_strerror(rc));
    goto out;
  }
  info->n = job.n;
  info->units = x.units;
  info->total = t.total;
  info->unique = t.unique;
out:
  memset(priv, 0, sizeof priv);
  nq_ev_writer_free(x.w);
  srv_export_end(st);
  free(scratch);
  return rc;
}
