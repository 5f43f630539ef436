/* nq-server: the evidence file's writer over the store (export.h). */
#include "export.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

#include "nq/hash.h"
#include "nq/nq.h"
#include "evkey.h"
#include "store_export.h"

typedef struct ex_s {
  nq_ev_writer_t *w;
  uint64_t units;
  int64_t job;
  int names;                 /* write the real names (--names) */
  unsigned char key[32];     /* else the pseudonyms' key */
  nq_ev_unit_t *copy;        /* the unit with its names replaced */
} ex_t;

/* The pseudonym of a client's or an owner's name in one job's evidence: PREFIX and the first 20
 * hex digits (80 bits) of HMAC-SHA256(key, "KIND JOB NAME"). The key is derived from the server's
 * signing key, so the pseudonyms are stable (every export of a job names a client alike) and
 * nobody without the key can test a guessed name; the job in the message makes one client's
 * pseudonyms in two jobs unrelated. Distinct names get distinct pseudonyms (a collision among
 * 2^80 is beyond any fleet), which is all the quorum's rule needs of them. */
static int pseudonym(const ex_t *x, const char *kind, char *name, size_t len) {
  char msg[NQ_EV_NAME_MAX + 64], hex[65];
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  int k = snprintf(msg, sizeof msg, "%s %lld %s", kind, (long long)x->job, name);
  if (k < 0 || (size_t)k >= sizeof msg) return NQ_EINVAL;
  if (!HMAC(EVP_sha256(), x->key, sizeof x->key, (const unsigned char *)msg, (size_t)k, md, &n) ||
      n < 10)
    return NQ_ETLS;
  nq_hex_encode(md, 10, hex);
  snprintf(name, len, "%c-%s", kind[0], hex);
  return 0;
}

static int write_unit(const nq_ev_unit_t *u, void *arg) {
  ex_t *x = arg;
  x->units++;
  if (x->names) return nq_ev_write_unit(x->w, u);
  /* Only the header part and the results in use are copied (the struct is large). */
  memcpy(x->copy, u, offsetof(nq_ev_unit_t, results));
  for (int i = 0; i < u->nresults; i++) {
    nq_ev_result_t *r = &x->copy->results[i];
    *r = u->results[i];
    int rc = pseudonym(x, "client", r->client, sizeof r->client);
    if (rc == 0) rc = pseudonym(x, "owner", r->owner, sizeof r->owner);
    if (rc) return rc;
  }
  return nq_ev_write_unit(x->w, x->copy);
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

int srv_export_write(srv_store_t *st, int64_t job_id, nq_ev_distinct_t distinct, int names,
                     int64_t now, FILE *out, nq_admin_export_t *info, char *err, size_t errlen) {
  srv_job_t job;
  nq_ev_header_t h;
  nq_ev_totals_t t;
  ex_t x = {0};
  unsigned char priv[NQ_SIGN_KEY_BYTES] = {0}, pub[NQ_SIGN_KEY_BYTES];
  nq_ev_unit_t *scratch = malloc(sizeof *scratch);
  memset(info, 0, sizeof *info);
  x.names = names;
  x.job = job_id;
  if (!names) x.copy = malloc(sizeof *x.copy);
  if (!scratch || (!names && !x.copy)) {
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
  if (!names) { /* the pseudonyms' key: SHA-256 of a label and the signing key */
    static const char label[] = "nq-evidence pseudonyms 1 ";
    unsigned char buf[sizeof label - 1 + NQ_SIGN_KEY_BYTES];
    memcpy(buf, label, sizeof label - 1);
    memcpy(buf + sizeof label - 1, priv, NQ_SIGN_KEY_BYTES);
    rc = nq_sha256(buf, sizeof buf, x.key);
    memset(buf, 0, sizeof buf);
    if (rc) {
      snprintf(err, errlen, "the pseudonyms' key: %s", nq_strerror(rc));
      goto out;
    }
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
  if (rc == 0) rc = nq_ev_writer_root(x.w, info->root, &info->leaves);
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
  memset(x.key, 0, sizeof x.key);
  free(x.copy);
  nq_ev_writer_free(x.w);
  srv_export_end(st);
  free(scratch);
  return rc;
}
