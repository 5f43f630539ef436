/* nq-server: the scheduler's options, declared once (nq/opts.h): the table that fills a
 * srv_sched_config_t (sched.h), and its defaults. nq-server's command line takes this table as one
 * of its groups (srv_opts.c); nq-admin's local mode and the suites start from the same defaults. */
#include "sched.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

#include "nq/nq.h"
#include "nq/opts.h"

/* srv_sched_config_t.quorum_distinct is stored as an NQ_OPT_ENUM's int. */
_Static_assert(sizeof(srv_distinct_t) == sizeof(int), "srv_distinct_t is an int");

#define DAYS(d) ((d) * 86400LL)

#define SC_INT(nm, field, a, l, h, d, hlp)                                                       \
  {NQ_OPT_INT, nm, .off = offsetof(srv_sched_config_t, field), .arg = a, .lo = l, .hi = h,        \
   .def = d, .help = hlp}

const nq_opt_t srv_sched_opts_table[] = {
    {NQ_OPT_SECTION, .help = "The scheduler:"},
    {NQ_OPT_ENUM, "quorum-distinct", .off = offsetof(srv_sched_config_t, quorum_distinct),
     .arg = "M", .choices = "client|owner|network", .def = "owner",
     .help = "what makes two results independent: client, owner or network (their /24 or "
             "/64); every client enrolled with the server's own key has the owner `default`: "
             "give volunteers their own keys, nq-admin owner add"},
    {NQ_OPT_ENUM, "self-joined-distinct", .off = offsetof(srv_sched_config_t, self_joined),
     .arg = "M", .choices = "owner-and-network|owner", .def = "owner-and-network",
     .help = "with --quorum-distinct owner: a result of an owner that joined by itself (nq-client "
             "--join) is independent of another only if they differ in owner AND network "
             "(owner-and-network: many self-made owners on one network are one vote), or in "
             "owner alone"},
    {NQ_OPT_DOUBLE, "spot-check", .off = offsetof(srv_sched_config_t, spot_check), .arg = "P",
     .dlo = 0, .dhi = 100, .def = "2",
     .help = "percent of verified units re-issued to yet another owner; a disagreement "
             "re-opens the unit"},
    SC_INT("hold-factor", hold_factor, "K", 1, 1000, "8",
           "a lease never runs past issue + K x max(lease-seconds, the unit's estimated time); "
           "progress that does not advance never extends it"),
    SC_INT("lease-seconds", lease_seconds, "S", 1, DAYS(30), "3600",
           "longest lease: from issue while a client's speed is unknown, and from each progress"),
    SC_INT("lease-min", lease_min, "S", 1, DAYS(30), "60",
           "shortest lease from issue; leases are sized from the client's recent solve times, "
           "queue included"),
    SC_INT("max-outstanding", max_outstanding, "K", 1, 256, "16",
           "assignments one client may hold"),
    SC_INT("retry-after", retry_after, "S", 1, NQ_RETRY_AFTER_MAX, "30",
           "how long a client is told to wait when the server is full (`busy`) or has no work "
           "for it"),
    SC_INT("ban-threshold", ban_threshold, "T", 0, 1000000, "3",
           "auto-ban after T invalid results, 0 = never"),
    {NQ_OPT_END}};

void srv_sched_config_default(srv_sched_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  char err[200];
  int rc = nq_opts_table_defaults(srv_sched_opts_table, cfg, err, sizeof err);
  assert(rc == 0); /* a default the table refuses is a bug in the table: test_opts checks it */
  (void)rc;
  cfg->seed = 0;
}

