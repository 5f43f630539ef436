/* nq: what differs between the operating systems, in one place (libuv's unix/ and win/): the
 * solver threads' priority, the battery, the default state folder, the process's stop events.
 * sys.c is the POSIX side (Linux), sys_win.c the Windows side; each compiles to nothing on the
 * other. The file helpers' own platform code is files.c / files_win.c (nq/files.h). No program
 * and no other module tests _WIN32 for these.
 */
#ifndef NQ_SYS_H
#define NQ_SYS_H

#include <stddef.h>

/* Lower the calling thread's priority: idle != 0 asks for the idle class (Linux SCHED_IDLE;
 * Windows THREAD_PRIORITY_IDLE), else for a low one (Linux nice 19 of the thread; Windows
 * THREAD_PRIORITY_LOWEST). Returns 2 when it runs idle, 1 when low (an idle request refused:
 * the fallback), or NQ_EIO (errno says why). */
int nq_sys_thread_lower(int idle);

/* Name the calling thread (debuggers, top -H); nothing where the system has no names. */
void nq_sys_thread_name(const char *name);

/* 1 when the machine runs on a battery that is discharging. Linux: an entry of power_dir (the
 * sysfs power_supply class; NULL: /sys/class/power_supply) whose type is "Battery" and status
 * "Discharging". Windows: GetSystemPowerStatus says the AC line is off (power_dir unused). */
int nq_sys_on_battery(const char *power_dir);

/* The default state folder of a program: Linux $HOME/.<name> ("./.<name>" without $HOME or
 * when it does not fit); Windows %LOCALAPPDATA%\<name>. 0, or NQ_EINVAL when it does not fit. */
int nq_sys_state_dir(const char *name, char *buf, size_t len);

/* Windows: call fn(arg) from the system's handler thread on Ctrl-Break and on a console's close,
 * log-off and shutdown (Ctrl-C stays SIGINT, as on Linux), and for the last three wait up to
 * grace_ms for the process to end on its own before the system ends it. fn must be safe to
 * call from another thread (uv_async_send). fn NULL: those events are the system's again.
 * Linux: SIGTERM is the stop event and comes as a signal, so it does nothing. 0, or NQ_EIO. */
int nq_sys_on_stop(void (*fn)(void *), void *arg, unsigned grace_ms);

/* The number of processors online (at least 1). */
int nq_sys_ncpu(void);

/* Whether process pid is alive (a lock holder's pid, a status file's writer). */
int nq_sys_pid_alive(long pid);

#endif
