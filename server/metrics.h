/* nq-server: in-memory counters and latency histograms for /metrics (docs/http.md).
 *
 * Counters count events since the process started (Prometheus handles the reset at a restart);
 * the durable totals (units, results, verified counts) come from the store's counters instead.
 * Everything runs on the loop thread.
 */
#ifndef SRV_METRICS_H
#define SRV_METRICS_H

#include <stdint.h>

/* Upper bounds of the latency buckets, seconds (the +Inf bucket is implicit). */
#define SRV_HIST_NBOUNDS 14
extern const double srv_hist_bounds[SRV_HIST_NBOUNDS];

typedef struct srv_hist_s {
  uint64_t buckets[SRV_HIST_NBOUNDS + 1]; /* not cumulative; the last one is +Inf */
  uint64_t count;
  double sum;                             /* seconds */
} srv_hist_t;

/* Count one observation of `seconds` (negative counts as 0). */
void srv_hist_observe(srv_hist_t *h, double seconds);

/* How a result message ended (the protocol's ack statuses, and a refusal). */
#define SRV_OUTCOME_MAP(X)                                                                       \
  X(ACCEPTED, "accepted")                                                                        \
  X(DUPLICATE, "duplicate")                                                                      \
  X(LATE, "late")                                                                                \
  X(INVALID, "invalid") /* refused: impossible counts, wrong unit, unknown or another's */       \
                        /* assignment */
typedef enum {
#define SRV_OUTCOME_ENUM_ONE(e, name) SRV_OUTCOME_##e,
  SRV_OUTCOME_MAP(SRV_OUTCOME_ENUM_ONE)
#undef SRV_OUTCOME_ENUM_ONE
  SRV_OUTCOME_N
} srv_outcome_t;

/* "accepted", "duplicate", "late", "invalid". */
const char *srv_outcome_name(srv_outcome_t o);

typedef struct srv_metrics_s {
  uint64_t results[SRV_OUTCOME_N];
  uint64_t commits_failed;
  srv_hist_t commit;   /* one group commit (srv_store_commit) */
  srv_hist_t get_work; /* handling one get_work request, inside its batch */
  /* Scheduled backups (srv_backup.c). */
  uint64_t backups_ok, backups_failed;
  int64_t backup_last_ok;      /* Unix time the last good backup was taken; 0: none yet */
  double backup_last_seconds;  /* its copy and check */
  int64_t backup_last_bytes;
} srv_metrics_t;

/* Seconds since an uv_hrtime() stamp. */
double srv_metrics_since(uint64_t hr_start);

#endif
