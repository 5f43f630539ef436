/* nq-server: the store's side of `nq-admin audit` (schema 016, docs/reliability.md, "The audit"):
 * a seeded draw of a job's verified units, and the audits table.
 */
#ifndef SRV_STORE_AUDIT_H
#define SRV_STORE_AUDIT_H

#include <stdint.h>

#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/unit.h"
#include "store.h"
#include "store_work.h"

/* One verified unit drawn for the audit: its stored answer and the solver version of the results
 * that verified it (nodes are compared only where that version is this build's). */
typedef struct nq_admin_audit_unit_s {
  int64_t id;
  char text[NQ_UNIT_TEXT_MAX];
  nq_counts_t stored;
  char solver[NQ_SOLVER_VERSION_MAX + 1];
} nq_admin_audit_unit_t;

/* One audit as recorded (schema 016, table audits). */
typedef struct nq_admin_audit_s {
  int64_t at;          /* when it finished, Unix seconds */
  int sample;          /* units asked for */
  uint64_t seed;       /* the draw's seed */
  int checked;         /* units recomputed */
  int mismatched;      /* of them, disagreeing with the store (each re-opened) */
  double seconds;      /* the recomputation's time */
  char outcome[16];    /* "agree", "disagree", "empty" */
  char detail[512];    /* the first mismatched units' texts */
} nq_admin_audit_t;

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
