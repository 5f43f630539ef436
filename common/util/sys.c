/* nq: the POSIX side of nq/sys.h (sys_win.c is the Windows one). */
#ifndef _WIN32
#define _GNU_SOURCE /* SCHED_IDLE, pthread_setname_np */
#include "nq/sys.h"

#include "nq/files.h"
#include "nq/nq.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

/* nice 19 for the calling thread only: on Linux the nice value belongs to the thread (its tid). */
static int nice_thread(void) {
#if defined(__linux__)
  id_t who = (id_t)syscall(SYS_gettid);
#else
  id_t who = 0; /* elsewhere: the whole process */
#endif
  return setpriority(PRIO_PROCESS, who, 19) == 0 ? 0 : NQ_EIO;
}

int nq_sys_thread_lower(int idle) {
#if defined(SCHED_IDLE)
  if (idle) {
    struct sched_param sp;
    memset(&sp, 0, sizeof sp);
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) == 0) return 2;
  }
#endif
  int rc = nice_thread();
  return rc ? rc : 1;
}

void nq_sys_thread_name(const char *name) {
#if defined(__linux__)
  pthread_setname_np(pthread_self(), name);
#else
  (void)name;
#endif
}

int nq_sys_on_battery(const char *power_dir) {
  const char *dir = power_dir ? power_dir : "/sys/class/power_supply";
  DIR *d = opendir(dir);
  if (!d) return 0;
  int yes = 0;
  struct dirent *e;
  while (!yes && (e = readdir(d)) != NULL) {
    char p[4096], v[64];
    if (e->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s/type", dir, e->d_name);
    if (nq_file_read_line(p, v, sizeof v) != 0 || strcmp(v, "Battery") != 0) continue;
    snprintf(p, sizeof p, "%s/%s/status", dir, e->d_name);
    yes = nq_file_read_line(p, v, sizeof v) == 0 && strcmp(v, "Discharging") == 0;
  }
  closedir(d);
  return yes;
}

int nq_sys_state_dir(const char *name, char *buf, size_t len) {
  const char *home = getenv("HOME");
  int n = -1;
  if (home && *home) n = snprintf(buf, len, "%s/.%s", home, name);
  if (n < 0 || (size_t)n >= len) n = snprintf(buf, len, "./.%s", name);
  return n < 0 || (size_t)n >= len ? NQ_EINVAL : 0;
}

int nq_sys_on_stop(void (*fn)(void *), void *arg, unsigned grace_ms) {
  (void)fn, (void)arg, (void)grace_ms;
  return 0;
}

int nq_sys_ncpu(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 1 << 20 ? 1 << 20 : (int)n;
}

int nq_sys_pid_alive(long pid) {
  return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

#endif /* !_WIN32 */
