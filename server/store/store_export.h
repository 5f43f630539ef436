/* nq-server: the store's reads for the evidence file (nq/evidence.h, docs/evidence.md): a
 * job's units with every result, streamed in the generator's order inside one read snapshot,
 * so a file written beside a running server is consistent and memory stays bounded.
 */
#ifndef SRV_STORE_EXPORT_H
#define SRV_STORE_EXPORT_H

#include "nq/evidence.h"
#include "nq/merkle.h"
#include "store.h"
#include "store_jobs.h"
#include "store_work.h"

/* Open a read snapshot (a deferred transaction: it takes no write lock, so a running server
 * goes on) and read the job into *job, and the TOTAL and UNIQUE it published (0 while it runs)
 * into *total and *unique. Outside a transaction only (NQ_ETXN); NQ_ENOTFOUND; NQ_EIO.
 * End it with srv_export_end, whatever happened in between. */
int srv_export_begin(srv_store_t *st, int64_t job_id, srv_job_t *job, nq_u128 *total,
                     nq_u128 *unique);
void srv_export_end(srv_store_t *st);

/* Every unit of the job in id order (the plan's order, which is the generator's: nq_unit_cmp),
 * each with its results (assignments that reported one: valid, invalid, late or reported) filled
 * into *scratch and handed to cb; a non-zero return of cb stops the walk and is returned.
 * nodes_solver is the solver version of the oldest valid result carrying the unit's nodes.
 * A network appears as an opaque number, equal for equal networks (the /24 or /64 stays on the
 * server). NQ_ERANGE: a unit with more than NQ_EV_RESULTS_MAX results; NQ_EIO. */
typedef int (*srv_export_unit_cb)(const nq_ev_unit_t *u, void *arg);
int srv_export_units(srv_store_t *st, const srv_job_t *job, nq_ev_unit_t *scratch,
                     srv_export_unit_cb cb, void *arg);

/* The Merkle root of the job's results as they stand (docs/evidence.md, "The root and the
 * receipts"): every result with a report (reported, valid, invalid or late), the units by id and
 * each unit's results by id, each leaf nq_ev_leaf of the values the export writes -- it walks the
 * job with srv_export_units, so a finished job's root is its evidence file's. *m is the tree
 * (nq_merkle_root gives the root, m->leaves the count). Reads the whole job: O(results), in
 * bounded memory (one unit at a time, no sort). 0, NQ_ERANGE, NQ_EIO, NQ_ENOMEM.
 * Inside or outside a transaction. */
int srv_export_root(srv_store_t *st, const srv_job_t *job, nq_merkle_t *m);

/* The receipt of one result: its job, its unit's text and its leaf hash (the same leaf
 * srv_export_root adds). NQ_ENOTFOUND when the assignment has no report; NQ_EIO. */
int srv_result_leaf(srv_store_t *st, int64_t assignment_id, int64_t *job_id, char *unit,
                    size_t ulen, unsigned char leaf[32]);

#endif
