/* nq-client: the lanes room -- one solver worker per lane and the unit it runs (see ctx.h for
 * the rooms). The CPU threads are one lane and each GPU is a lane of its own (docs/gpu.md): each
 * takes its own units from the queue and reports them, so a device's results are the device's
 * alone and the CPU's the CPU's. Loop thread only. */
#ifndef CLI_LANES_H
#define CLI_LANES_H

#include "ctx.h"

/* Start the lanes: the CPU's (with --threads > 0), then one for each device, each with its worker
 * thread (on_event: the conductor's, which calls cli_lanes_poll and then its scheduler) and its
 * timers. A lane whose worker cannot start is not counted. 0 or the worker's error. */
int cli_lanes_init(cli_t *cli, void (*on_event)(cli_worker_t *w));
/* What the lane's worker posted: progress figures, a finished or stopped unit (its result to the
 * reporting room, its files removed or kept). */
void cli_lanes_poll(cli_lane_t *ln);
/* Every free lane takes the next queued unit (the devices' lanes first: they are the fastest);
 * then, while it solves one, a fresh one to go on with. */
void cli_lanes_start(cli_t *cli);
/* Take the lane's next unit back from its worker if it has not started: to the front of the
 * queue, or forgotten once the job is over. 1 if it was taken back. */
int cli_lane_unqueue(cli_lane_t *ln);
/* Stop every lane's unit (and take back the next ones). */
void cli_lanes_cancel(cli_t *cli);
/* The job is finished: what we hold will never be needed, here or in a later run. */
void cli_job_finished(cli_t *cli);

/* progress {id, nodes, fraction, seconds, paused} for the lane's running unit, now. */
void cli_lane_progress(cli_lane_t *ln);
/* The running lanes report at a new pace (a welcome's progress interval, in seconds). */
void cli_lanes_pace(cli_t *cli, int interval_s);
/* Save what is finished of the lane's running unit, if anything new is. */
void cli_lane_checkpoint(cli_lane_t *ln);

/* Assignments received by an earlier run and not finished go to the front of the queue, with
 * their checkpoints; checkpoints of finished units are removed. */
void cli_lanes_load(cli_t *cli);

#endif
