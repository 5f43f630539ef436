/* nq-server: an outage that costs nothing (docs/server.md, "Outages").
 *
 * While it runs, the server writes the time into the database (meta SRV_META_ALIVE) every
 * SRV_ALIVE_S seconds and once more when it stops. At the next start, before it listens, every
 * lease that was live at that moment gets the downtime (now - alive_at) and SRV_OUTAGE_GRACE_S
 * more, at most --outage-max in all, added to its deadline and issue time: a lease's clock does
 * not run while the server is down, nor while its client finds it again (the clients' backoff
 * reaches 60 s, plus a quarter of jitter).
 * The clients that held units come back to find them still theirs -- their progress and results
 * are taken as usual, and nobody is given the unit a second time -- where otherwise the first
 * sweep after the restart would have expired every lease in flight and handed the units out
 * again while their holders were still computing them. After a crash the downtime is counted
 * from the last stamp, so it is over-counted by at most SRV_ALIVE_S: a lease never shortens.
 */
#ifndef SRV_OUTAGE_H
#define SRV_OUTAGE_H

#include <stddef.h>
#include <stdint.h>

#define SRV_ALIVE_S 5 /* seconds between the stamps */
#define SRV_OUTAGE_GRACE_S 90 /* the clients' time to come back after the restart */

struct srv_s;
typedef struct srv_outage_s srv_outage_t;

/* At start, store open, not yet listening: extend the leases by the downtime (when there was a
 * stamp, now is later, and cfg.outage_max > 0), log what was done, stamp now and start the
 * timer. 0, or NQ_EIO / NQ_ENOMEM with errbuf saying why. */
int srv_outage_start(struct srv_s *s, int64_t now, char *errbuf, size_t errlen);
/* Stamp the time of stopping and stop the timer. Idempotent. */
void srv_outage_stop(struct srv_s *s);

#endif
