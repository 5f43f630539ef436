/* nq-server: counters and histograms (see metrics.h). */
#include "metrics.h"

#include <uv.h>

/* From 100 us to 10 s: a group commit is a few ms on a disk with a write cache, tens of ms on a
 * slow one; a get_work that takes seconds is a store in trouble. */
const double srv_hist_bounds[SRV_HIST_NBOUNDS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                  0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                                  1.0,    10.0};

void srv_hist_observe(srv_hist_t *h, double seconds) {
  if (!(seconds > 0)) seconds = 0;
  int i = 0;
  while (i < SRV_HIST_NBOUNDS && seconds > srv_hist_bounds[i]) i++;
  h->buckets[i]++;
  h->count++;
  h->sum += seconds;
}

const char *srv_outcome_name(srv_outcome_t o) {
#define OUTCOME_NAME(e, name) name,
  static const char *const names[SRV_OUTCOME_N] = {SRV_OUTCOME_MAP(OUTCOME_NAME)};
#undef OUTCOME_NAME
  return o >= 0 && o < SRV_OUTCOME_N ? names[o] : "";
}

double srv_metrics_since(uint64_t hr_start) {
  return (double)(uv_hrtime() - hr_start) / 1e9;
}
