/* nq: a tiny leveled logger.
 *
 * One line per call on stderr:  2026-11-23T08:17:03.123Z nq-server[4242] WARN: message
 * Lines are short by construction: the message is cut at NQ_LOG_LINE_MAX bytes and control
 * characters (which a peer could smuggle in through strings we log) are replaced by '?', so one
 * call is always exactly one line.
 */
#ifndef NQ_LOG_H
#define NQ_LOG_H

#include "nq/nq.h" /* NQ_PRINTF */

/* The levels: X(ENUM, "NAME" in a log line), most severe first (NQ_LOG_ERROR = 0). */
#define NQ_LOG_LEVEL_MAP(X) X(ERROR, "ERROR") X(WARN, "WARN") X(INFO, "INFO") X(DEBUG, "DEBUG")
enum {
#define NQ_LOG_ENUM_ONE(e, name) NQ_LOG_##e,
  NQ_LOG_LEVEL_MAP(NQ_LOG_ENUM_ONE)
#undef NQ_LOG_ENUM_ONE
};

#define NQ_LOG_LINE_MAX 512

/* Set the program tag and the level. The environment variable NQ_LOG_LEVEL (error, warn, info,
 * debug or 0..3), when set and valid, overrides `level`. May be called again; before the first
 * call the tag is "nq" and the level INFO. */
void nq_log_init(const char *prog, int level);
/* Change the level at run time (clamped to ERROR..DEBUG). */
void nq_log_set_level(int level);
int nq_log_get_level(void);
/* Parse "error", "warn"/"warning", "info", "debug" (any case) or a digit 0..3; returns the level
 * or NQ_EINVAL. */
int nq_log_parse_level(const char *s);
/* True when a message at `level` would be written (to skip expensive formatting). */
int nq_log_enabled(int level);

#if defined(__GNUC__)
__attribute__((format(NQ_PRINTF, 2, 3)))
#endif
void nq_log(int level, const char *fmt, ...);

#endif
