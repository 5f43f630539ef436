/* nq: the solver threads' priority, CPU-use limit and pause hook (see throttle.h). */
#include "nq/throttle.h"

#include "nq/files.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/sys.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The longest a waiting thread sleeps before it looks at its cancel flag again. */
#define WAIT_SLICE 0.1

struct nq_throttle_s {
  nq_priority_t priority;
  int cpu_limit;
  char *pause_file;
  int battery;         /* pause on battery, batteries under power_dir */
  char *power_dir;
  int window, wfrom, wto; /* pause window, minutes after midnight */
  double period, poll;
  pthread_mutex_t lock;
  pthread_cond_t cond; /* the pause changed, or quit (monotonic clock) */
  int paused;          /* a pause condition holds (guarded by lock, as the next three) */
  char reason[160];    /* which one */
  double paused_total; /* seconds paused before paused_since */
  double paused_since; /* monotonic time the current pause began */
  double debt;         /* seconds of rest owed by the solver threads together (guarded by lock) */
  int quit;            /* guarded by lock */
  int has_thread;
  pthread_t thread;
  int warned;          /* the priority fallback was logged (guarded by lock) */
};

#define PRIO_NAME(e, name) name,
static const char *const prio_names[NQ_PRIO_N] = {NQ_PRIORITY_MAP(PRIO_NAME)};
#undef PRIO_NAME

int nq_priority_parse(const char *s, nq_priority_t *out) {
  int i = nq_name_index(prio_names, NQ_PRIO_N, s);
  if (i < 0) return NQ_EINVAL;
  *out = (nq_priority_t)i;
  return 0;
}

const char *nq_priority_name(nq_priority_t p) {
  return (unsigned)p < NQ_PRIO_N ? prio_names[p] : "";
}

int nq_priority_apply(nq_priority_t p) {
  if (p == NQ_PRIO_NORMAL) return NQ_PRIO_NORMAL;
  int got = nq_sys_thread_lower(p == NQ_PRIO_IDLE);
  return got < 0 ? got : got == 2 ? NQ_PRIO_IDLE : NQ_PRIO_LOW;
}

static void add_seconds(struct timespec *ts, double s) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  long ns = (long)((s - (double)(long)s) * 1e9);
  ts->tv_sec += (time_t)s;
  ts->tv_nsec += ns;
  if (ts->tv_nsec >= 1000000000L) ts->tv_sec++, ts->tv_nsec -= 1000000000L;
}

/* Whether the local time of day is in [from, to) (minutes; from > to wraps past midnight). */
static int in_window(int from, int to) {
  time_t now = time(NULL);
  struct tm tm;
  if (!localtime_r(&now, &tm)) return 0;
  int m = tm.tm_hour * 60 + tm.tm_min;
  return from < to ? m >= from && m < to : m >= from || m < to;
}

/* Look at every pause condition now (no lock held: file system reads); why gets the first that
 * holds. Returns 1 when one does. */
static int look(const nq_throttle_t *t, char *why, size_t len) {
  struct stat st;
  why[0] = '\0';
  if (t->pause_file && stat(t->pause_file, &st) == 0) {
    snprintf(why, len, "%s exists", t->pause_file);
  } else if (t->battery && nq_sys_on_battery(t->power_dir)) {
    snprintf(why, len, "on battery");
  } else if (t->window && in_window(t->wfrom, t->wto)) {
    snprintf(why, len, "pause window %02d:%02d-%02d:%02d", t->wfrom / 60, t->wfrom % 60,
             t->wto / 60, t->wto % 60);
  }
  return why[0] != '\0';
}

/* Record the pause state (the lock is held): its time account, the log line, the waiters. */
static void set_paused_locked(nq_throttle_t *t, int on, const char *why) {
  double now = nq_now_mono();
  if (on && !t->paused) {
    t->paused_since = now;
    nq_log(NQ_LOG_INFO, "solver paused: %s", why);
  } else if (!on && t->paused) {
    t->paused_total += now - t->paused_since;
    nq_log(NQ_LOG_INFO, "solver resumed (was: %s)", t->reason);
  }
  t->paused = on;
  snprintf(t->reason, sizeof t->reason, "%s", on ? why : "");
  pthread_cond_broadcast(&t->cond);
}

/* The controller: look at the pause conditions every `poll` seconds. */
static void *controller_main(void *arg) {
  nq_throttle_t *t = arg;
  pthread_mutex_lock(&t->lock);
  while (!t->quit) {
    pthread_mutex_unlock(&t->lock);
    char why[sizeof t->reason];
    int on = look(t, why, sizeof why);
    pthread_mutex_lock(&t->lock);
    if (on != t->paused || (on && strcmp(why, t->reason) != 0)) set_paused_locked(t, on, why);
    struct timespec until;
    add_seconds(&until, t->poll);
    while (!t->quit && pthread_cond_timedwait(&t->cond, &t->lock, &until) == 0) {
    }
  }
  pthread_mutex_unlock(&t->lock);
  return NULL;
}

int nq_pause_window_parse(const char *s, int *from, int *to) {
  unsigned h1, m1, h2, m2;
  char tail;
  if (!s || sscanf(s, "%2u:%2u-%2u:%2u%c", &h1, &m1, &h2, &m2, &tail) != 4 || h1 > 23 ||
      h2 > 23 || m1 > 59 || m2 > 59 || strlen(s) != 11)
    return NQ_EINVAL;
  if (h1 * 60 + m1 == h2 * 60 + m2) return NQ_EINVAL;
  *from = (int)(h1 * 60 + m1);
  *to = (int)(h2 * 60 + m2);
  return 0;
}

int nq_throttle_new(const nq_throttle_cfg_t *cfg, nq_throttle_t **out) {
  *out = NULL;
  if (cfg->cpu_limit < 1 || cfg->cpu_limit > 100 || (unsigned)cfg->priority > NQ_PRIO_NORMAL)
    return NQ_EINVAL;
  nq_throttle_t *t = calloc(1, sizeof *t);
  if (!t) return NQ_ENOMEM;
  t->priority = cfg->priority;
  t->cpu_limit = cfg->cpu_limit;
  t->period = cfg->period > 0 ? cfg->period : 1.0;
  t->poll = cfg->poll > 0 ? cfg->poll : 0.25;
  t->battery = cfg->pause_on_battery;
  t->window = cfg->pause_window;
  t->wfrom = cfg->pause_from;
  t->wto = cfg->pause_to;
  if (t->window && (t->wfrom < 0 || t->wfrom >= 1440 || t->wto < 0 || t->wto >= 1440 ||
                    t->wfrom == t->wto)) {
    free(t);
    return NQ_EINVAL;
  }
  if ((cfg->pause_file && !(t->pause_file = strdup(cfg->pause_file))) ||
      (t->battery && !(t->power_dir = strdup(cfg->power_dir ? cfg->power_dir
                                                              : "/sys/class/power_supply")))) {
    free(t->pause_file);
    free(t);
    return NQ_ENOMEM;
  }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&t->lock, NULL);
  pthread_cond_init(&t->cond, &ca);
  pthread_condattr_destroy(&ca);
  if (t->pause_file || t->battery || t->window) {
    /* The first look happens here, so a client started while paused never solves. */
    char why[sizeof t->reason];
    if (look(t, why, sizeof why)) set_paused_locked(t, 1, why);
    if (pthread_create(&t->thread, NULL, controller_main, t) != 0) {
      nq_throttle_free(t);
      return NQ_EIO;
    }
    t->has_thread = 1;
  }
  *out = t;
  return 0;
}

void nq_throttle_free(nq_throttle_t *t) {
  if (!t) return;
  if (t->has_thread) {
    pthread_mutex_lock(&t->lock);
    t->quit = 1;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
  }
  pthread_cond_destroy(&t->cond);
  pthread_mutex_destroy(&t->lock);
  free(t->pause_file);
  free(t->power_dir);
  free(t);
}

void nq_throttle_enter(nq_throttle_t *t, nq_throttle_thread_t *th) {
  th->since = nq_now_mono();
  if (!t) return;
  /* Once per thread and priority: a client's solver thread enters once a unit, and two system
   * calls a unit are a measurable share of millisecond units. */
  static _Thread_local int applied = -1, applied_got;
  int got = applied_got;
  if (applied != (int)t->priority) {
    got = nq_priority_apply(t->priority);
    /* named after its priority is set: whoever finds it by name sees the policy it runs under */
    nq_sys_thread_name("nq-solver");
    applied = (int)t->priority;
    applied_got = got;
  }
  if (got == (int)t->priority) return;
  pthread_mutex_lock(&t->lock);
  int first = !t->warned;
  t->warned = 1;
  pthread_mutex_unlock(&t->lock);
  if (first && got >= 0)
    nq_log(NQ_LOG_INFO, "SCHED_IDLE refused for the solver threads: they run at nice 19");
  else if (first)
    nq_log(NQ_LOG_WARN, "cannot lower the solver threads' priority (%s): they run at %s",
           strerror(errno), "the normal priority");
}

static int cancelled(volatile int *cancel) {
  return cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED);
}

/* Rest `s` seconds in slices, waking early for a cancel (the lock is held). Returns when the rest
 * was planned to end: the time after that, until this thread has a CPU again, is time it wants
 * the CPU and counts as run time, or a busy machine would stretch every rest. */
static double rest_locked(nq_throttle_t *t, double s, volatile int *cancel) {
  double end = nq_now_mono() + s;
  for (double left = s; left > 0 && !t->quit && !cancelled(cancel);
       left = end - nq_now_mono()) {
    struct timespec until;
    add_seconds(&until, left < WAIT_SLICE ? left : WAIT_SLICE);
    pthread_cond_timedwait(&t->cond, &t->lock, &until);
  }
  return end;
}

int nq_throttle_wait(nq_throttle_t *t, nq_throttle_thread_t *th, volatile int *cancel) {
  if (!t) return 0;
  double now = nq_now_mono(), since = now;
  int waited = 0;
  if (t->cpu_limit < 100) {
    /* The run since this thread's last wait owes rest in proportion. The account is the
     * throttle's, not the thread's: pool threads come and go with each unit, and a unit shorter
     * than a period must still pay. Whoever brings the debt to a period's share rests all of it,
     * so the sum of rest over the threads stays (100-PCT)/PCT of the sum of their runs. */
    double owed = 0;
    pthread_mutex_lock(&t->lock);
    double ran = now > th->since ? now - th->since : 0; /* a cancelled rest ends "later" */
    t->debt += ran * (100 - t->cpu_limit) / t->cpu_limit;
    if (t->debt >= t->period * (100 - t->cpu_limit) / 100) {
      owed = t->debt;
      t->debt = 0;
      since = rest_locked(t, owed, cancel);
      waited = 1;
    }
    pthread_mutex_unlock(&t->lock);
  }
  if (t->has_thread) {
    pthread_mutex_lock(&t->lock);
    while (t->paused && !t->quit && !cancelled(cancel)) {
      rest_locked(t, WAIT_SLICE, cancel);
      since = nq_now_mono(); /* a pause is not owed rest: the run starts again when it ends */
      waited = 1;
    }
    pthread_mutex_unlock(&t->lock);
  }
  th->since = since;
  return waited;
}

int nq_throttle_paused(nq_throttle_t *t) {
  if (!t) return 0;
  pthread_mutex_lock(&t->lock);
  int p = t->paused;
  pthread_mutex_unlock(&t->lock);
  return p;
}

void nq_throttle_pause_reason(nq_throttle_t *t, char *buf, size_t len) {
  if (!len) return;
  buf[0] = '\0';
  if (!t) return;
  pthread_mutex_lock(&t->lock);
  snprintf(buf, len, "%s", t->reason);
  pthread_mutex_unlock(&t->lock);
}

double nq_throttle_paused_seconds(nq_throttle_t *t) {
  if (!t) return 0;
  pthread_mutex_lock(&t->lock);
  double s = t->paused_total + (t->paused ? nq_now_mono() - t->paused_since : 0);
  pthread_mutex_unlock(&t->lock);
  return s;
}
