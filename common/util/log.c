/* nq: the leveled logger.
 *
 * The tag and level are process-wide on purpose: logging is the one piece of state every module
 * touches and none owns, and threading a logger through every call would buy nothing. Both are
 * set once at start-up, before worker threads exist; the level is read with a relaxed atomic so
 * nq_log_set_level() from the loop thread is still race-free.
 */
#include "nq/switches.h"
#include "nq/log.h"
#include "nq/nq.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static char log_prog[32] = "nq";
static atomic_int log_level = NQ_LOG_INFO;

#define LEVEL_NAME(e, name) name,
static const char *const level_names[] = {NQ_LOG_LEVEL_MAP(LEVEL_NAME)};
#undef LEVEL_NAME

static int clamp_level(int level) {
  if (level < NQ_LOG_ERROR) return NQ_LOG_ERROR;
  if (level > NQ_LOG_DEBUG) return NQ_LOG_DEBUG;
  return level;
}

int nq_log_parse_level(const char *s) {
  if (!s || !*s) return NQ_EINVAL;
  if (s[0] >= '0' && s[0] <= '3' && s[1] == '\0') return s[0] - '0';
  for (int i = 0; i < (int)(sizeof level_names / sizeof *level_names); i++)
    if (!strcasecmp(s, level_names[i])) return i;
  return strcasecmp(s, "warning") == 0 ? NQ_LOG_WARN : NQ_EINVAL;
}

void nq_log_init(const char *prog, int level) {
  if (prog && *prog) {
    /* Keep only the base name: argv[0] may be a long build path. */
    const char *slash = strrchr(prog, '/');
    snprintf(log_prog, sizeof log_prog, "%s", slash ? slash + 1 : prog);
  }
  int env = nq_log_parse_level(nq_switch_get(NQ_SW_LOG_LEVEL));
  nq_log_set_level(env >= 0 ? env : level);
}

void nq_log_set_level(int level) {
  atomic_store_explicit(&log_level, clamp_level(level), memory_order_relaxed);
}

int nq_log_get_level(void) {
  return atomic_load_explicit(&log_level, memory_order_relaxed);
}

int nq_log_enabled(int level) {
  return level <= nq_log_get_level();
}

void nq_log(int level, const char *fmt, ...) {
  if (!nq_log_enabled(level)) return;
  level = clamp_level(level);

  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);

  char msg[NQ_LOG_LINE_MAX];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof msg) memcpy(msg + sizeof msg - 4, "...", 4);
  for (char *p = msg; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';

  /* Build the whole line first and emit it with one stdio call, so lines from several threads
   * never interleave (stdio locks the stream per call). */
  char line[NQ_LOG_LINE_MAX + 96];
  int len = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%ld] %s: %s\n",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000L, log_prog, (long)getpid(),
                     level_names[level], msg);
  if (len < 0) return;
  if ((size_t)len >= sizeof line) len = (int)sizeof line - 1;
  fwrite(line, 1, (size_t)len, stderr);
}
