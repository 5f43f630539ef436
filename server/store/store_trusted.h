/* nq-server: the store's side of trusted resolution (layer 3, store.h; schema 014).
 */
#ifndef SRV_STORE_TRUSTED_H
#define SRV_STORE_TRUSTED_H

#include <stdint.h>
#include "store.h"
#include "store_work.h"

/* units.contest (srv_contest_t, nq/states.h): */
/* "none", "contested", "trusted", "audit". */
const char *srv_contest_name(int contest);

/* Owners other than `default` (id 1): any of them closes enrolment with the server's own key
 * unless the operator keeps it open (nq-server --keep-default-enrol). */
int srv_owner_count_named(srv_store_t *st, int64_t *n);
/* The trusted owners that are not banned, and their clients that are not banned and were seen
 * at or after active_since (either may be NULL). */
int srv_trust_counts(srv_store_t *st, int64_t active_since, int64_t *owners, int64_t *active);
/* Whether the client's owner is trusted and not banned. NQ_ENOTFOUND for no such client. */
int srv_client_trusted(srv_store_t *st, int64_t client_id, int *trusted);
/* Contest a unit that is not verified: state 'disputed', contest 1, its live leases released
 * (it takes no untrusted replica: need 0). */
int srv_unit_contest(srv_store_t *st, int64_t unit_id);
/* A contested unit whose results agree again (the dissenter was banned): contest 0, back to
 * 'awaiting', need derived as usual. */
int srv_unit_uncontest(srv_store_t *st, int64_t unit_id);
/* Record what settled a verified unit (SRV_CONTEST_TRUSTED or SRV_CONTEST_AUDIT). */
int srv_unit_set_contest(srv_store_t *st, int64_t unit_id, srv_contest_t c);
/* Record the assignment whose trusted result settled the unit (0: none, for a quorum or an
 * audit; schema 020). */
int srv_unit_set_settled_by(srv_store_t *st, int64_t unit_id, int64_t asg_id);
/* Contested units of the job (through units_contested). */
int srv_job_contested(srv_store_t *st, int64_t job_id, int64_t *n);
/* Up to `room` contested units of pk->job_id for a trusted client: none with a live lease (one
 * trusted replica at a time), none its owner reported (unit id, text, est_nodes; hold 0). */
int srv_unit_pick_contested(srv_store_t *st, const srv_pick_t *pk, int room, srv_work_t *out,
                            int *n);

#endif
