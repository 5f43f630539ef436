/* nq-server: the store's side of kernel-diverse verification (contracts in store_kernels.h). */
#include <string.h>

#include "nq/nq.h"
#include "store_int.h"
#include "store_kernels.h"

#define KERNELS_SCHEMA 16
#define EVIDENCE_SCHEMA 18

int srv_kernel_listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

/* Append name to the comma-separated list in buf when it is not there and fits. */
static void list_add(char *buf, size_t len, const char *name) {
  if (!name || !*name || srv_kernel_listed(buf, name)) return;
  size_t used = strlen(buf), n = strlen(name);
  if (used + (used ? 1 : 0) + n + 1 > len) return;
  if (used) buf[used++] = ',';
  memcpy(buf + used, name, n + 1);
}

int srv_unit_kernels_present(srv_store_t *st, int64_t unit_id, char *buf, size_t len) {
  sqlite3_stmt *q;
  buf[0] = '\0';
  int rc = srv_store_stmt(st,
      "SELECT CASE WHEN a.reported_at IS NOT NULL THEN a.backend ELSE "
      "coalesce(a.kernel, nullif(c.kernel_native, ''), '" SRV_KERNEL_UNKNOWN "') END "
      "FROM assignments a JOIN clients c ON c.id = a.client_id WHERE a.unit_id = ?1 AND "
      "((a.reported_at IS NOT NULL AND a.voided = 0 AND NOT c.banned AND NOT c.suspect) OR "
      " (a.state = 'leased' AND a.reported_at IS NULL)) ORDER BY a.id", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, unit_id);
  int sr;
  while ((sr = sqlite3_step(q)) == SQLITE_ROW)
    list_add(buf, len, (const char *)sqlite3_column_text(q, 0));
  if (sr != SQLITE_DONE) rc = srv_store_fail(st, "unit kernels");
  sqlite3_reset(q);
  return rc;
}

int srv_client_kernels(srv_store_t *st, int64_t client_id, char *backends, size_t blen,
                       char *native, size_t nlen, char *refused, size_t rlen) {
  sqlite3_stmt *q;
  backends[0] = native[0] = refused[0] = '\0';
  int rc = srv_store_stmt(st, "SELECT kernels_refused, kernel_native FROM clients WHERE id = ?1",
                          &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, client_id);
  int sr = sqlite3_step(q);
  if (sr == SQLITE_ROW) {
    col_str(q, 0, refused, rlen);
    col_str(q, 1, native, nlen);
  } else if (sr == SQLITE_DONE) {
    rc = srv_store_failf(st, NQ_ENOTFOUND, "no client %lld", (long long)client_id);
  } else {
    rc = srv_store_fail(st, "client kernels");
  }
  sqlite3_reset(q);
  if (rc) return rc;
  /* What it ran of its own choice (no kernel named, or a name it ignored): a kernel the server
   * named says nothing of what the machine is. */
  size_t l = (size_t)snprintf(backends, blen, "%s", native);
  if ((rc = srv_store_stmt(st, "SELECT DISTINCT backend FROM (SELECT backend, kernel FROM "
                               "assignments WHERE client_id = ?1 AND seconds IS NOT NULL ORDER BY "
                               "id DESC LIMIT 1000) WHERE backend IS NOT NULL AND (kernel IS NULL "
                               "OR kernel != backend)", &q)) != 0)
    return rc;
  sqlite3_bind_int64(q, 1, client_id);
  while ((sr = sqlite3_step(q)) == SQLITE_ROW) {
    const char *b = (const char *)sqlite3_column_text(q, 0);
    if (l + 1 + strlen(b) + 1 <= blen) l += (size_t)snprintf(backends + l, blen - l, " %s", b);
  }
  if (sr != SQLITE_DONE) rc = srv_store_fail(st, "client backends");
  sqlite3_reset(q);
  return rc;
}

int srv_client_kernel_native_set(srv_store_t *st, int64_t client_id, const char *native) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "UPDATE clients SET kernel_native = ?2 WHERE id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, client_id);
  sqlite3_bind_text(q, 2, native, -1, SQLITE_TRANSIENT);
  return srv_store_step(st, q, "client kernel");
}

int srv_asg_kernel_set(srv_store_t *st, int64_t asg_id, const char *kernel) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "UPDATE assignments SET kernel = ?2 WHERE id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, asg_id);
  if (kernel && *kernel) sqlite3_bind_text(q, 2, kernel, -1, SQLITE_STATIC);
  else sqlite3_bind_null(q, 2);
  return srv_store_step(st, q, "assignment kernel");
}

int srv_asg_kernel_get(srv_store_t *st, int64_t asg_id, char *buf, size_t len) {
  sqlite3_stmt *q;
  buf[0] = '\0';
  int rc = srv_store_stmt(st, "SELECT kernel FROM assignments WHERE id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, asg_id);
  int sr = sqlite3_step(q);
  if (sr == SQLITE_ROW) col_str(q, 0, buf, len);
  else if (sr != SQLITE_DONE) rc = srv_store_fail(st, "assignment kernel");
  sqlite3_reset(q);
  return rc;
}

int srv_asg_refuse(srv_store_t *st, int64_t asg_id, int64_t client_id, const char *kernel,
                   int64_t now) {
  sqlite3_stmt *q;
  /* No hold (hold_until 0): the unit may come back to this client at once with a kernel it can
   * run -- with a hold it was kept from it for --lease-seconds, and a unit whose other keys had
   * all voted waited that long for nobody (e2e_kernels under load). Re-asking cannot loop: each
   * refusal takes one kernel off the client's list for good. */
  int rc = srv_store_stmt(st, "UPDATE assignments SET state = 'expired', deadline = ?3, "
                              "hold_until = 0 WHERE id = ?1 AND client_id = ?2 AND "
                              "state = 'leased' AND reported_at IS NULL RETURNING unit_id", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, asg_id);
  sqlite3_bind_int64(q, 2, client_id);
  sqlite3_bind_int64(q, 3, now > 0 ? now : 1);
  int sr = sqlite3_step(q);
  int64_t unit_id = sr == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
  if (sr == SQLITE_ROW) sr = sqlite3_step(q);
  sqlite3_reset(q);
  if (sr != SQLITE_DONE) return srv_store_fail(st, "refuse");
  if (unit_id < 0)
    return srv_store_failf(st, NQ_ENOTFOUND, "no live assignment %lld of this client",
                           (long long)asg_id);
  char refused[SRV_KERNELS_REFUSED_MAX + 1];
  if ((rc = srv_store_stmt(st, "SELECT kernels_refused FROM clients WHERE id = ?1", &q)) != 0)
    return rc;
  sqlite3_bind_int64(q, 1, client_id);
  refused[0] = '\0';
  if (sqlite3_step(q) == SQLITE_ROW) col_str(q, 0, refused, sizeof refused);
  sqlite3_reset(q);
  list_add(refused, sizeof refused, kernel);
  if ((rc = srv_store_stmt(st, "UPDATE clients SET lapses = lapses + 1, kernels_refused = ?2 "
                               "WHERE id = ?1", &q)) != 0)
    return rc;
  sqlite3_bind_int64(q, 1, client_id);
  sqlite3_bind_text(q, 2, refused, -1, SQLITE_TRANSIENT);
  if ((rc = srv_store_step(st, q, "refused kernels")) != 0) return rc;
  return srv_store_unit_refresh(st, unit_id);
}

int srv_unit_kshort_set(srv_store_t *st, int64_t unit_id, int kshort) {
  if (!srv_store_schema_has(st, EVIDENCE_SCHEMA)) return 0;
  return srv_store_exec3(st, "UPDATE units SET kshort = ?2 WHERE id = ?1 AND kshort != ?2",
                         unit_id, kshort ? 1 : 0, 0, "unit kshort");
}

int srv_unit_kernels_set(srv_store_t *st, int64_t unit_id, int kernels) {
  if (!srv_store_schema_has(st, KERNELS_SCHEMA)) return 0;
  return srv_store_exec3(st, "UPDATE units SET kernels = ?2 WHERE id = ?1", unit_id, kernels, 0,
                         "unit kernels");
}

int srv_job_units_two_kernels(srv_store_t *st, int64_t job_id, int64_t *n) {
  *n = 0;
  if (!srv_store_schema_has(st, KERNELS_SCHEMA)) return 0;
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "SELECT count(*) FROM units WHERE job_id = ?1 AND "
                              "state = 'verified' AND kernels >= 2", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, job_id);
  if (sqlite3_step(q) == SQLITE_ROW) *n = sqlite3_column_int64(q, 0);
  else rc = srv_store_fail(st, "units by two kernels");
  sqlite3_reset(q);
  return rc;
}
