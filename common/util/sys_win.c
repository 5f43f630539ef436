/* nq: the Windows side of nq/sys.h (sys.c is the POSIX one). */
#ifdef _WIN32
#include "nq/sys.h"

#include "nq/nq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

int nq_sys_thread_lower(int idle) {
  if (idle && SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_IDLE)) return 2;
  if (SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_LOWEST)) return 1;
  errno = EPERM;
  return NQ_EIO;
}

void nq_sys_thread_name(const char *name) {
  /* SetThreadDescription (Windows 10 1607+) is looked up: older systems lack it. */
  typedef HRESULT(WINAPI * set_fn)(HANDLE, PCWSTR);
  HMODULE k = GetModuleHandleA("kernel32.dll");
  FARPROC p = k ? GetProcAddress(k, "SetThreadDescription") : NULL;
  if (!p) return;
  wchar_t w[64];
  if (MultiByteToWideChar(CP_UTF8, 0, name, -1, w, 64) <= 0) return;
  set_fn f;
  memcpy(&f, &p, sizeof f);
  f(GetCurrentThread(), w);
}

int nq_sys_on_battery(const char *power_dir) {
  (void)power_dir;
  SYSTEM_POWER_STATUS s;
  if (!GetSystemPowerStatus(&s)) return 0;
  /* ACLineStatus 0: offline, 1: online, 255: unknown (a desktop without a battery says 1). */
  return s.ACLineStatus == 0;
}

int nq_sys_state_dir(const char *name, char *buf, size_t len) {
  const char *base = getenv("LOCALAPPDATA");
  int n = -1;
  if (base && *base) n = snprintf(buf, len, "%s\\%s", base, name);
  if (n < 0 || (size_t)n >= len) n = snprintf(buf, len, ".\\%s", name);
  return n < 0 || (size_t)n >= len ? NQ_EINVAL : 0;
}

/* The console's close, log-off and shutdown events come to a handler on a thread of their own;
 * the process is ended when the handler returns, so it waits (up to the grace) for fn's effect:
 * the program's own exit. */
static void (*stop_fn)(void *);
static void *stop_arg;
static unsigned stop_grace;

static BOOL WINAPI on_console(DWORD ev) {
  if (ev != CTRL_BREAK_EVENT && ev != CTRL_CLOSE_EVENT && ev != CTRL_LOGOFF_EVENT &&
      ev != CTRL_SHUTDOWN_EVENT)
    return FALSE; /* Ctrl-C: SIGINT, through the C library and libuv */

  if (!stop_fn) return FALSE;
  stop_fn(stop_arg);
  if (ev == CTRL_BREAK_EVENT) return TRUE; /* the process goes on: the program ends itself */
  Sleep(stop_grace); /* the process ends before this returns once the program has exited */
  return TRUE;
}

int nq_sys_on_stop(void (*fn)(void *), void *arg, unsigned grace_ms) {
  stop_fn = fn;
  stop_arg = arg;
  stop_grace = grace_ms;
  return SetConsoleCtrlHandler(on_console, TRUE) ? 0 : NQ_EIO;
}

int nq_sys_ncpu(void) {
  DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS); /* every group: over 64 too */
  return n < 1 ? 1 : (int)n;
}

int nq_sys_pid_alive(long pid) {
  if (pid <= 0) return 0;
  HANDLE h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
  if (!h) return GetLastError() == ERROR_ACCESS_DENIED; /* it exists, under another user */
  DWORD code = 0;
  int alive = GetExitCodeProcess(h, &code) && code == STILL_ACTIVE;
  CloseHandle(h);
  return alive;
}

#endif /* _WIN32 */
