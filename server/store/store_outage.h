/* nq-server: the store's part of an outage that costs nothing (layer 3, store.h; srv_outage.h).
 */
#ifndef SRV_STORE_OUTAGE_H
#define SRV_STORE_OUTAGE_H

#include <stdint.h>
#include "store.h"

#define SRV_META_ALIVE "alive_at" /* the last moment the server was known alive (Unix seconds) */

/* Give every lease that was live at `alive_at` (state leased, deadline > alive_at) `by` more
 * seconds: deadline and issued both move, so the hold limit moves with the lease. by <= 0 changes
 * nothing. *n (may be NULL) gets how many leases moved. Atomic on its own. */
int srv_asg_shift_leases(srv_store_t *st, int64_t alive_at, int64_t by, int64_t *n);

#endif
