/* nq: a good guest on a volunteer's machine -- the solver threads' priority, a CPU-use limit and
 * a pause hook (docs/client.md, "Priority, CPU limit and pause").
 *
 * Priority. nq_throttle_enter, called by every solver thread when it starts (solver_pool.c does
 * it for the threads it runs when nq_solve_opts_t.throttle is set), lowers that thread only:
 *   idle    SCHED_IDLE (Linux): the thread runs only when nothing else wants the CPU; where that
 *           is refused (or on another system) nice 19 instead;
 *   low     nice 19 under the normal policy;
 *   normal  unchanged.
 * The thread is also named "nq-solver" (/proc/PID/task/TID/comm), so a user or a test can tell
 * the solver threads from the network thread, which keeps its normal priority.
 *
 * Pause and CPU limit. Solver threads call nq_throttle_wait between two tasks (the solver pool's
 * grain: milliseconds on small units, a tenth of a second on average and seconds at most on a
 * record unit's, see solver_pool.h);
 *   - while a pause condition holds it blocks: the pause file exists, or (pause_on_battery) a
 *     battery under power_dir (/sys/class/power_supply) is discharging, or (pause_window) the
 *     local time is inside pause_from..pause_to. A controller thread, started only when there
 *     is such a condition, looks every `poll` seconds (0.25), so a pause takes hold within about
 *     poll + one task;
 *   - with cpu_limit PCT < 100 the throttle keeps one account for all solver threads: each
 *     task's wall time is run time, and for every second of it (100-PCT)/PCT seconds of rest are
 *     owed; the thread that brings the debt to the rest share of one `period` (1 s) rests all of
 *     it. So the solver threads want the CPU PCT% of their time, in bursts of about a second, as
 *     BOINC's CPU-use limit does; a long task is paid back after it ends, and the account
 *     outlives the pool threads of one unit, so the average holds whatever the task or unit
 *     length.
 *     Wall time (not CPU time) is the measure: on a busy machine the limit caps what the client
 *     asks for, it does not make the client ask for more to catch up.
 * Nothing is stopped inside a task: a paused solve is only a solve that waits, so counts, node
 * counts and checkpoints are those of an uninterrupted one. Time paused is not run time, nor
 * solve time: nq_throttle_paused_seconds counts it, and a solver pool run leaves it out of its
 * seconds (solver_pool.h).
 */
#ifndef NQ_THROTTLE_H
#define NQ_THROTTLE_H

#include <stddef.h>

#define NQ_PRIORITY_MAP(X) X(IDLE, "idle") X(LOW, "low") X(NORMAL, "normal")
typedef enum {
#define NQ_PRIO_ENUM_ONE(e, name) NQ_PRIO_##e,
  NQ_PRIORITY_MAP(NQ_PRIO_ENUM_ONE)
#undef NQ_PRIO_ENUM_ONE
  NQ_PRIO_N
} nq_priority_t;

/* "idle", "low", "normal" -> the value; NQ_EINVAL for anything else. */
int nq_priority_parse(const char *s, nq_priority_t *out);
const char *nq_priority_name(nq_priority_t p);

/* Lower the calling thread to p (see above). Returns the policy actually in force: p, or
 * NQ_PRIO_LOW when SCHED_IDLE was refused and nice 19 was used instead; a negative NQ_E* code
 * when neither could be set. */
int nq_priority_apply(nq_priority_t p);

typedef struct nq_throttle_cfg_s {
  nq_priority_t priority;
  int cpu_limit;          /* 1..100; 100 = no limit */
  const char *pause_file; /* pause while this path exists; NULL = none (copied) */
  double period;          /* seconds of one duty cycle (0: 1.0) */
  double poll;            /* seconds between two looks at the pause file (0: 0.25) */
  int pause_on_battery;   /* pause while a battery under power_dir is discharging */
  const char *power_dir;  /* NULL: /sys/class/power_supply (copied) */
  int pause_window;       /* pause while the local time is in [pause_from, pause_to) */
  int pause_from, pause_to; /* minutes after midnight, 0..1439, different; from > to wraps */
} nq_throttle_cfg_t;

typedef struct nq_throttle_s nq_throttle_t;

/* Create a throttle (and its controller thread when a pause file is given).
 * Returns 0 and *out; NQ_EINVAL for a limit outside 1..100, NQ_ENOMEM, NQ_EIO (thread). */
int nq_throttle_new(const nq_throttle_cfg_t *cfg, nq_throttle_t **out);
/* Stop the controller and release. No solver thread may use t any more. NULL is fine. */
void nq_throttle_free(nq_throttle_t *t);

/* One solver thread's state (its own, on its stack). */
typedef struct nq_throttle_thread_s {
  double since; /* monotonic time the current run began */
} nq_throttle_thread_t;

/* Solver threads. enter: apply the priority and the name to the calling thread and start its
 * account. wait: between two tasks; blocks while the pause file exists and rests what the CPU
 * limit asks for; returns early when *cancel (may be NULL) becomes non-zero (checked at least
 * every 100 ms). Returns 1 if it waited, else 0. */
void nq_throttle_enter(nq_throttle_t *t, nq_throttle_thread_t *th);
int nq_throttle_wait(nq_throttle_t *t, nq_throttle_thread_t *th, volatile int *cancel);
/* From any thread: 1 while a pause condition holds (as the controller last saw it). */
int nq_throttle_paused(nq_throttle_t *t);
/* From any thread: why the solver is paused now ("" when it is not), e.g. "/run/pause exists",
 * "on battery", "pause window 08:00-18:00". Copies at most len - 1 bytes into buf. */
void nq_throttle_pause_reason(nq_throttle_t *t, char *buf, size_t len);
/* From any thread: seconds (monotonic) that a pause condition has held since the throttle was
 * made, the current pause included. 0 for NULL. */
double nq_throttle_paused_seconds(nq_throttle_t *t);

/* "HH:MM-HH:MM" -> minutes after midnight; NQ_EINVAL unless both are valid times and differ. */
int nq_pause_window_parse(const char *s, int *from, int *to);

#endif
