/* nq-server: the store's side of `nq-admin audit` (schema 016, docs/reliability.md, "The audit"):
 * a seeded draw of a job's verified units, and the audits table.
 */
#ifndef SRV_STORE_AUDIT_H
#define SRV_STORE_AUDIT_H

#include <stdint.h>

#include "nq/admin_db.h"
#include "store.h"
#include "store_work.h"

/* Draw up to `sample` distinct verified units of the job, the same ones for the same seed and
 * the same set of verified units (splitmix64 offsets into the verified units by id), and hand
 * each to cb (a non-zero return stops the draw and is returned). *verified gets how many verified
 * units there were to draw from. NQ_EIO. */
int srv_audit_draw(srv_store_t *st, int64_t job_id, int sample, uint64_t seed, int64_t *verified,
                   int (*cb)(const nq_admin_audit_unit_t *u, void *arg), void *arg);

/* Record one audit (outcome "agree", "disagree" or "empty"); *id gets its row id. */
int srv_audit_record(srv_store_t *st, int64_t job_id, const nq_admin_audit_t *a, int64_t *id);

/* The job's audits: how many, how many disagreed, and the newest (last->at = 0 when none). A
 * database older than schema 016 has none. */
int srv_audit_summary(srv_store_t *st, int64_t job_id, int64_t *count, int64_t *disagreed,
                      nq_admin_audit_t *last);

#endif
