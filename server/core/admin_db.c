/* nq-server library: the public admin interface over a database file (see nq/admin_db.h). */
#include "nq/admin_db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_api.h"
#include "datadir.h"
#include "export.h"
#include "nq/nq.h"
#include "sched.h"
#include "store_api.h"
#include "store_audit.h"
#include "store_stall.h"

struct nq_admin_db_s {
  srv_store_t *st;
  srv_job_t job; /* zero when there is none */
};

/* Local mode picks the job for --n (the newest archived one when none for N is live), else the
 * newest running job, else the newest job. */
static int pick_job_cb(const srv_job_t *job, void *arg) {
  srv_job_t *best = arg;
  if (best->id == 0 || job->state == SRV_JOB_RUNNING || best->state != SRV_JOB_RUNNING)
    *best = *job;
  return 0;
}

/* --n N when every job for N is archived: the newest of them (its record, answer included). */
typedef struct pick_n_s {
  int n;
  srv_job_t *best;
} pick_n_t;

static int pick_n_cb(const srv_job_t *job, void *arg) {
  pick_n_t *p = arg;
  if (job->n == p->n) *p->best = *job;
  return 0;
}

int nq_admin_db_open(const char *path, int n, int need_job, nq_admin_db_t **out, char *errbuf,
                     size_t errlen) {
  char err[256] = "";
  *out = NULL;
  nq_admin_db_t *db = calloc(1, sizeof *db);
  if (!db) {
    snprintf(errbuf, errlen, "out of memory");
    return NQ_ENOMEM;
  }
  int rc = srv_store_open(&db->st, path, NULL, err, sizeof err);
  if (rc != 0) {
    snprintf(errbuf, errlen, "cannot open %s: %s", path, err[0] ? err : nq_strerror(rc));
    goto fail;
  }
  if (n > 0) {
    rc = srv_job_find_n(db->st, n, &db->job);
    if (rc == NQ_ENOTFOUND) {
      pick_n_t p = {n, &db->job};
      rc = srv_job_list(db->st, pick_n_cb, &p);
      if (rc == 0 && db->job.id == 0) rc = NQ_ENOTFOUND;
    }
  } else {
    rc = srv_job_list(db->st, pick_job_cb, &db->job);
    if (rc == 0 && db->job.id == 0) rc = NQ_ENOTFOUND;
  }
  if (rc != 0) memset(&db->job, 0, sizeof db->job);
  if (rc != 0 && need_job) {
    if (rc == NQ_ENOTFOUND && n > 0)
      snprintf(errbuf, errlen, "%s has no job for N=%d", path, n);
    else if (rc == NQ_ENOTFOUND)
      snprintf(errbuf, errlen, "%s has no job yet (the server creates it at start)", path);
    else
      snprintf(errbuf, errlen, "%s: %s", path, srv_store_errmsg(db->st));
    goto fail;
  }
  *out = db;
  return 0;
fail:
  nq_admin_db_close(db);
  return rc;
}

void nq_admin_db_close(nq_admin_db_t *db) {
  if (!db) return;
  srv_store_close(db->st);
  free(db);
}

int nq_admin_db_call(nq_admin_db_t *db, const nq_admin_req_t *req, int64_t now, json_t **data,
                     nq_proto_err_t *err) {
  srv_admin_effects_t fx; /* nothing to act on here: no connections to close */
  return srv_admin_call(db->st, &db->job, 0, NULL, req, now, data, &fx, err);
}

int nq_admin_db_lock(const char *data_dir, int *fd, char *errbuf, size_t errlen) {
  return srv_datadir_lock(data_dir, fd, errbuf, errlen);
}

int nq_admin_db_export(nq_admin_db_t *db, nq_ev_distinct_t distinct, int names, int64_t now,
                       FILE *out, nq_admin_export_t *info, char *errbuf, size_t errlen) {
  if (db->job.id == 0) {
    snprintf(errbuf, errlen, "no job to export");
    return NQ_ENOTFOUND;
  }
  return srv_export_write(db->st, db->job.id, distinct, names, now, out, info, errbuf, errlen);
}

int nq_admin_db_audit_draw(nq_admin_db_t *db, int sample, uint64_t seed, int64_t *verified,
                           int (*cb)(const nq_admin_audit_unit_t *u, void *arg), void *arg,
                           char *errbuf, size_t errlen) {
  if (db->job.id == 0) {
    snprintf(errbuf, errlen, "no job to audit");
    return NQ_ENOTFOUND;
  }
  int rc = srv_audit_draw(db->st, db->job.id, sample, seed, verified, cb, arg);
  if (rc && rc != NQ_ECANCELED) snprintf(errbuf, errlen, "%s", srv_store_errmsg(db->st));
  return rc;
}

int nq_admin_db_audit_contested(nq_admin_db_t *db, int limit, int64_t *contested,
                                int (*cb)(const nq_admin_audit_unit_t *u, void *arg), void *arg,
                                char *errbuf, size_t errlen) {
  int64_t *ids = NULL;
  int n = 0;
  *contested = 0;
  if (db->job.id == 0) return 0;
  int rc = srv_units_contested(db->st, db->job.id, 1 << 30, &ids, &n);
  *contested = n;
  for (int i = 0; i < n && i < limit && rc == 0; i++) {
    srv_unit_info_t u;
    nq_admin_audit_unit_t a;
    memset(&a, 0, sizeof a);
    if ((rc = srv_unit_get(db->st, ids[i], &u)) != 0) break;
    a.id = u.id;
    snprintf(a.text, sizeof a.text, "%s", u.text);
    rc = cb(&a, arg);
  }
  free(ids);
  if (rc && rc != NQ_ECANCELED) snprintf(errbuf, errlen, "%s", srv_store_errmsg(db->st));
  return rc;
}

int nq_admin_db_audit_settle(nq_admin_db_t *db, int64_t unit_id, const nq_counts_t *c, int64_t now,
                             int *banned, int *job_reopened, char *errbuf, size_t errlen) {
  srv_sched_t sch;
  srv_result_info_t info;
  int rc = srv_sched_init(&sch, db->st, db->job.id, NULL);
  if (rc == 0) rc = srv_sched_settle(&sch, unit_id, c, NQ_SOLVER_VERSION, now, &info);
  if (rc) {
    snprintf(errbuf, errlen, "settling unit %lld: %s", (long long)unit_id,
             srv_store_errmsg(db->st));
    return rc;
  }
  *banned = info.banned;
  *job_reopened = info.job_reopened;
  return 0;
}

int nq_admin_db_audit_record(nq_admin_db_t *db, const nq_admin_audit_t *a, char *errbuf,
                             size_t errlen) {
  int64_t id;
  int rc = db->job.id ? srv_audit_record(db->st, db->job.id, a, &id) : NQ_ENOTFOUND;
  if (rc) snprintf(errbuf, errlen, "recording the audit: %s", srv_store_errmsg(db->st));
  return rc;
}
