/* nq: the core's public interface for nq-admin's local mode -- the server's database opened
 * directly (beside a running server, or without one) and the admin API over it.
 *
 * With nq/backup.h and the views, this is what nq-admin includes of server/ (it links the core
 * and the store, never the daemon: docs/design.md, "Module map"); the scheduler and the admin API
 * behind it stay the core's own.
 * Requests and refusals are the protocol's (nq/proto.h), so a command reads the same whether it
 * runs here or through a server's admin session.
 */
#ifndef NQ_ADMIN_DB_H
#define NQ_ADMIN_DB_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nq/evidence.h"
#include "nq/proto.h"
#include "nq/solver.h"
#include "nq/unit.h"
#include "store_audit.h" /* the audit's types: nq_admin_audit_unit_t, nq_admin_audit_t */

typedef struct nq_admin_db_s nq_admin_db_t;

/* Open the database file at `path` (it must exist: nothing is created) with its schema brought up
 * to date, and pick the job requests refer to: the job for N when n > 0 (the newest archived one
 * when N has no live job), else the newest running job, else the newest job. Returns 0 and *out;
 * or NQ_EIO / NQ_ESCHEMA / NQ_ENOMEM (cannot open),
 * or NQ_ENOTFOUND when need_job is set and there is no such job. errbuf gets a one-line reason
 * that names the path. Close with nq_admin_db_close. */
int nq_admin_db_open(const char *path, int n, int need_job, nq_admin_db_t **out, char *errbuf,
                     size_t errlen);
void nq_admin_db_close(nq_admin_db_t *db);

/* Run one admin request at time `now` (as the server's admin session would): 0 and *data (a new
 * reference, the `data` object of the reply), or a negative code and *err, the refusal the server
 * would send (bad_message, not_found, exists, bad_state, internal). Without a job (need_job 0 and
 * none found) only the commands that need none make sense: clients, client_add/ban, jobs. */
/* The view of command c's reply (the reply column of its row, nq/admin_cmd.h): how nq-admin reads
 * the `data` of an admin_reply. unit_retry of several units answers with nq_view_retried_desc
 * instead. NULL for an unknown command. */
const nq_view_t *nq_admin_reply_view(nq_admin_cmd_t c);
int nq_admin_db_call(nq_admin_db_t *db, const nq_admin_req_t *req, int64_t now, json_t **data,
                     nq_proto_err_t *err);

/* Take the data directory's lock, the one a running nq-server holds (nq-admin job archive and
 * delete in local mode: they rewrite a job and must not run beside a server). 0 and *fd (close it
 * to release); NQ_EBUSY when a server runs on it (errbuf names its pid); NQ_EIO. */
int nq_admin_db_lock(const char *data_dir, int *fd, char *errbuf, size_t errlen);

/* What nq_admin_db_export wrote. */
typedef struct nq_admin_export_s {
  int n;
  uint64_t units;
  nq_u128 total, unique;
} nq_admin_export_t;

/* Write the evidence file of the picked job (nq/evidence.h, docs/evidence.md) to out, as of
 * `now`, recording `distinct` (the server's --quorum-distinct) as the rule its units were
 * verified by. Streams from one read snapshot (a running server goes on). 0 and *info;
 * NQ_ENOTFOUND (no job), NQ_ESTATE (the job is not done), NQ_ERANGE, NQ_EIO, NQ_ENOMEM with a
 * one-line reason in errbuf. */
int nq_admin_db_export(nq_admin_db_t *db, nq_ev_distinct_t distinct, int64_t now, FILE *out,
                       nq_admin_export_t *info, char *errbuf, size_t errlen);

/* ---- the audit (nq-admin audit; docs/reliability.md, "The audit") ---- */

/* Draw up to `sample` verified units of the picked job by `seed` (the same units for the same
 * seed while the verified set is the same): cb gets each. *verified: how many there were. */
int nq_admin_db_audit_draw(nq_admin_db_t *db, int sample, uint64_t seed, int64_t *verified,
                           int (*cb)(const nq_admin_audit_unit_t *u, void *arg), void *arg,
                           char *errbuf, size_t errlen);
/* Up to `limit` contested units of the picked job (results that disagree, waiting for a trusted
 * owner's result): cb gets each one's id and text (stored counts 0). The audit settles them with
 * the reference count (nq_admin_db_audit_settle). *contested: how many there are in all. */
int nq_admin_db_audit_contested(nq_admin_db_t *db, int limit, int64_t *contested,
                                int (*cb)(const nq_admin_audit_unit_t *u, void *arg), void *arg,
                                char *errbuf, size_t errlen);
/* The audit disagrees with unit_id's stored answer: settle the unit with the reference count
 * (srv_sched_settle: re-opened, verified with *c, every result judged against it, the untrusted
 * owners whose results disagree banned and what they helped verify re-opened). *banned gets the
 * clients banned, *job_reopened whether a finished job runs again. */
int nq_admin_db_audit_settle(nq_admin_db_t *db, int64_t unit_id, const nq_counts_t *c, int64_t now,
                             int *banned, int *job_reopened, char *errbuf, size_t errlen);
/* Record an audit of the picked job. */
int nq_admin_db_audit_record(nq_admin_db_t *db, const nq_admin_audit_t *a, char *errbuf,
                             size_t errlen);

#endif
