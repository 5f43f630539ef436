/* nq-server: its options, declared once (nq/opts.h). Three tables: the job's (nq/job_opts.h,
 * shared with nq-admin job add), the server's into srv_config_t and the scheduler's into the
 * srv_sched_config_t embedded in it (the core's table, sched_opts.c). The defaults live in these
 * tables and nowhere else: srv_config_default and srv_sched_config_default apply them. */
#ifndef SRV_OPTS_H
#define SRV_OPTS_H

#include "nq/job_opts.h"
#include "nq/opts.h"
#include "srv.h"

extern const nq_opt_t srv_opts_table[];       /* into srv_config_t */

/* nq-server's command line: the three tables into job (set to its defaults), cfg and cfg->sched. */
void srv_opts_init(nq_opts_t *o, srv_config_t *cfg, nq_jobopts_t *job);

/* After parsing: the job options need --n (without it the data directory names the job, and
 * they would describe nothing), and then go together (nq_jobopts_check); they are copied into
 * cfg. 0, or NQ_EINVAL / NQ_ERANGE with one line in err. */
int srv_opts_job(srv_config_t *cfg, const nq_jobopts_t *job, char *err, size_t errlen);

#endif
