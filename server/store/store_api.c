/* nq-server: what spans the store's families (store_api.h; layer 4 of store.h): the full open,
 * the status view, archiving and deleting a job with its leases. The layers below never call
 * up here. */
#include "store_api.h"

#include <string.h>

#include "store_int.h"

/* ---- open --------------------------------------------------------------------------------- */

int srv_store_open(srv_store_t **out, const char *path, const char *schema_dir, char *errbuf,
                   size_t errlen) {
  srv_store_t *st = NULL;
  int rc = srv_store_open_db(&st, path, schema_dir, errbuf, errlen);
  /* The schema has job_stats (005), so jobs have the columns filled after a migration. A database
   * opened with an older schema directory (tests of migrations) has not. */
  if (rc == 0 && srv_store_schema_has(st, 5)) rc = srv_job_fill_internal(st);
  if (rc && st) {
    if (errbuf && errlen) snprintf(errbuf, errlen, "%s", srv_store_errmsg(st));
    srv_store_close(st);
    st = NULL;
  }
  *out = st;
  return rc;
}

/* ---- archive and delete ------------------------------------------------------------------- */

/* Refuse while clients hold leases on the job, or release them all (force). */
static int leases_gate(srv_store_t *st, const srv_job_t *job, int force, const char *what) {
  int64_t n = 0;
  int rc = srv_job_leases(st, job, &n);
  if (rc || n == 0) return rc;
  if (!force)
    return srv_store_failf(st, NQ_EBUSY, "clients hold %lld lease(s) on the job for N=%d; wait "
                           "for them, or %s it anyway with --force", (long long)n, job->n, what);
  return srv_job_release_leases(st, job, NULL);
}

int srv_job_archive(srv_store_t *st, int64_t job_id, int force, int64_t now) {
  srv_job_t job;
  int rc = srv_store_savepoint(st);
  if (rc) return rc;
  if ((rc = srv_job_get(st, job_id, &job)) != 0) goto out;
  if (job.state == SRV_JOB_ARCHIVED) {
    rc = srv_store_failf(st, NQ_ESTATE, "job %lld (N=%d) is already archived", (long long)job.id,
                         job.n);
    goto out;
  }
  if ((rc = leases_gate(st, &job, force, "archive")) != 0) goto out;
  rc = srv_job_set_archived(st, job_id, now);
out:
  return srv_store_release(st, rc);
}

int srv_job_delete(srv_store_t *st, int64_t job_id, int force, int batch) {
  if (srv_store_in_tx(st)) return srv_store_failf(st, NQ_ETXN, "job delete inside a transaction");
  srv_job_t job;
  int rc = srv_job_get(st, job_id, &job);
  if (rc) return rc;
  if ((rc = srv_store_begin(st)) != 0) return rc;
  rc = leases_gate(st, &job, force, "delete");
  rc = rc ? (srv_store_rollback(st), rc) : srv_store_commit(st);
  return rc ? rc : srv_job_drop(st, &job, batch);
}

/* ---- status ------------------------------------------------------------------------------- */

static int stats_clients(srv_store_t *st, int64_t since, srv_stats_t *out) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT count(*), coalesce(sum(banned), 0), "
                              "coalesce(sum(banned = 0 AND last_seen >= ?1), 0) FROM clients", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, since);
  if (sqlite3_step(s) == SQLITE_ROW) {
    out->clients_known = col_i64(s, 0);
    out->clients_banned = col_i64(s, 1);
    out->clients_active = col_i64(s, 2);
  } else {
    rc = srv_store_fail(st, "client stats");
  }
  sqlite3_reset(s);
  return rc;
}

/* The results of the whole minutes from (now - window) to now: a few rows of job_rate, which a
 * trigger keeps with every reported result (schema 005), whatever the rate. */
static int stats_rate(srv_store_t *st, int64_t job_id, int64_t now, int window,
                      srv_stats_t *out) {
  sqlite3_stmt *s;
  int64_t first = (now - window) / 60;
  int rc = srv_store_stmt(st, "SELECT coalesce(sum(results), 0), coalesce(sum(nodes_hi), 0), "
                              "coalesce(sum(nodes_lo), 0) FROM job_rate "
                              "WHERE job_id = ?1 AND minute BETWEEN ?2 AND ?3", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, job_id);
  sqlite3_bind_int64(s, 2, first);
  sqlite3_bind_int64(s, 3, now / 60);
  if (sqlite3_step(s) == SQLITE_ROW) {
    out->recent_results = col_i64(s, 0);
    out->recent_nodes = col_split(s, 1);
  } else {
    rc = srv_store_fail(st, "rate");
  }
  sqlite3_reset(s);
  out->rate_window = (int)(now - first * 60);
  return rc;
}

/* The job's live leases and the share of their units already done, by their last progress. */
static int stats_leased(srv_store_t *st, int64_t job_id, srv_stats_t *out) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT count(*), total(a.progress) FROM assignments a "
                              "CROSS JOIN units u ON u.id = a.unit_id "
                              "WHERE a.state = 'leased' AND u.job_id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, job_id);
  if (sqlite3_step(s) == SQLITE_ROW) {
    out->leased = sqlite3_column_int64(s, 0);
    out->leased_progress = sqlite3_column_double(s, 1);
  } else {
    rc = srv_store_fail(st, "leased progress");
  }
  sqlite3_reset(s);
  return rc;
}

/* Disputed units that reached their cap (blocked until an operator retries them; a
 * contested unit waits for a trusted result instead and is not counted),
 * spot checks wanted or in flight, and suspect clients: through the partial indexes units_active
 * and units_spot, as many rows as such units. */
static int stats_trust(srv_store_t *st, int64_t job_id, srv_stats_t *out) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT "
                              "(SELECT count(*) FROM units WHERE job_id = ?1 AND "
                              " state = 'disputed' AND need = 0 AND live = 0 AND contest != 1), "
                              "(SELECT count(*) FROM units WHERE job_id = ?1 AND "
                              " (spot = 1 OR spot = 2)), "
                              "(SELECT count(*) FROM clients WHERE suspect = 1)", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, job_id);
  if (sqlite3_step(s) == SQLITE_ROW) {
    out->blocked = sqlite3_column_int64(s, 0);
    out->spot_pending = sqlite3_column_int64(s, 1);
    out->clients_suspect = sqlite3_column_int64(s, 2);
  } else {
    rc = srv_store_fail(st, "trust stats");
  }
  sqlite3_reset(s);
  return rc;
}

int srv_store_stats(srv_store_t *st, int64_t job_id, int64_t now, int active_window,
                    int rate_window, srv_stats_t *out) {
  memset(out, 0, sizeof *out);
  out->rate_window = rate_window;
  int rc = srv_job_get(st, job_id, &out->job);
  if (rc == 0) rc = srv_store_counters(st, job_id, out);
  if (rc == 0) rc = stats_clients(st, now - active_window, out);
  if (rc == 0) rc = stats_rate(st, job_id, now, rate_window, out);
  if (rc == 0) rc = stats_leased(st, job_id, out);
  if (rc == 0) rc = stats_trust(st, job_id, out);
  if (rc == 0) rc = srv_job_contested(st, job_id, &out->contested);
  if (rc == 0)
    rc = srv_trust_counts(st, now - active_window, &out->trusted_owners, &out->trusted_active);
  return rc;
}
