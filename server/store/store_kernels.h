/* nq-server: the store's side of kernel-diverse verification (schema 016, docs/store.md): the
 * kernel an assignment names, the kernels a client refused. The rules
 * that use them are the scheduler's (sched.c: "kernels").
 */
#ifndef SRV_STORE_KERNELS_H
#define SRV_STORE_KERNELS_H

#include <stdint.h>

#include "nq/solver.h"
#include "store.h"
#include "store_jobs.h" /* the job's diverse_kernels: srv_job_kernels_get/set */
#include "store_work.h"

#define SRV_KERNELS_REFUSED_MAX 128 /* clients.kernels_refused: bytes */

/* A live lease that names no kernel, of a client whose own kernel is not known yet: it will run
 * its own, whatever that is (kernels.c counts it against every kernel a machine may call its
 * own, so a replica leased beside it at the same time is named another). */
#define SRV_KERNEL_UNKNOWN "?"

/* The kernels present for a unit: the backends of its reported results that still vote (not
 * voided; clients neither banned nor suspect) and the kernels of its live leases -- the one named,
 * else the holder's own (clients.kernel_native), else SRV_KERNEL_UNKNOWN -- distinct, as one
 * comma-separated list in buf ("" for none). */
int srv_unit_kernels_present(srv_store_t *st, int64_t unit_id, char *buf, size_t len);

/* What the server knows of a client's kernels: `backends` gets its kernel_native followed by the
 * distinct backends of its newest 1,000 results that ran a kernel of its own choice (none was
 * named, or it ignored the name; space-separated, "" none yet),
 * `native` its kernel_native alone, `refused` its kernels_refused list. */
int srv_client_kernels(srv_store_t *st, int64_t client_id, char *backends, size_t blen,
                       char *native, size_t nlen, char *refused, size_t rlen);
/* Keep the client's own kernel (srv_kernel_native of what srv_client_kernels gave). */
int srv_client_kernel_native_set(srv_store_t *st, int64_t client_id, const char *native);

/* The kernel an assignment names (NULL or "" clears it), and read back ("" none). */
int srv_asg_kernel_set(srv_store_t *st, int64_t asg_id, const char *kernel);
int srv_asg_kernel_get(srv_store_t *st, int64_t asg_id, char *buf, size_t len);

/* The client answered no_kernel for its leased assignment: the lease ends now (a lapse of the
 * client, as an expiry is, so a refuser holds no more than a hoarder), with its hold spent so no
 * client of its key gets the unit again before it waited a lease for another key (PICK_MINE),
 * and the kernel joins the client's kernels_refused (when it fits). The unit needs a replica
 * again. NQ_ENOTFOUND for an assignment that is not this client's live lease. */
int srv_asg_refuse(srv_store_t *st, int64_t asg_id, int64_t client_id, const char *kernel,
                   int64_t now);

/* units.kshort (schema 018; a no-op before): 1 while the unit's best group has its votes but not
 * the kernels the job asks for, so that its voters may add kernel evidence
 * (srv_unit_pick_evidence). */
int srv_unit_kshort_set(srv_store_t *st, int64_t unit_id, int kshort);

/* The distinct kernels among the results that verified the unit (units.kernels; a no-op on a
 * database older than schema 016). */
int srv_unit_kernels_set(srv_store_t *st, int64_t unit_id, int kernels);
/* The job's verified units whose verifying results came from at least 2 kernels. */
int srv_job_units_two_kernels(srv_store_t *st, int64_t job_id, int64_t *n);

/* 1 when `name` is in the comma-separated list. */
int srv_kernel_listed(const char *list, const char *name);

#endif
