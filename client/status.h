/* nq-client: what the client is doing, for its volunteer (`nq-client status`, docs/client.md).
 *
 * The daemon writes STATE/status.json (cli_status_write) every CLI_STATUS_SECONDS and when it
 * leaves: one cli_status_t, packed by cli_status_pack and read back by cli_status_parse, the only
 * two places that know its keys. `nq-client status` reads it together with what the state
 * directory itself says (cli_status_view): whether the daemon runs (its pid, from the status file
 * and the directory lock), the checkpoint of every unit in progress, the results waiting in the
 * journal and the assignments not started, so the command answers whether the daemon runs or
 * not. It only reads: nothing in the directory is locked, renamed or written.
 */
#ifndef CLI_STATUS_H
#define CLI_STATUS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nq/addr.h"
#include "nq/proto.h"
#include "nq/unit.h"
#include "nq/view.h"

#define CLI_STATUS_FILE "status.json"
#define CLI_STATUS_SECONDS 2
#define CLI_STATUS_TEXT 160

/* The status file's one record, a typed view (nq/view.h): the field list below is the struct,
 * its JSON keys in order, and the one pack and parse. */
#define CLI_STATUS_VIEW(F)                                                                         \
  F(INT, pid, REQ, 0)                           /* the daemon's */                                 \
  F(INT, updated, REQ, 0)                       /* Unix seconds of this snapshot */                \
  F(I32, stopped, REQ, 0)                       /* 1: written as the daemon left */                \
  F(CHARS, version, REQ, 32)                    /* nq-client's */                                  \
  F(CHARS, kernel, REQ, 16)                     /* the solver kernel in use */                     \
  F(CHARS, server, REQ, NQ_HOST_MAX + 16)       /* HOST:PORT */                                    \
  F(CHARS, conn, REQ, 16) /* connection state: idle, connecting, hello, ready, done */             \
  F(INT, last_contact, REQ, 0) /* the last message from the server (Unix s); 0: never */           \
  F(CHARS, last_outcome, REQ, CLI_STATUS_TEXT) /* the last connection attempt or session's end */  \
  F(INT, down_since, REQ, 0) /* Unix seconds since the server is out of reach; 0: it is not */     \
  /* From the server's welcome (kept across restarts; empty or has_credit 0 until one says) */     \
  F(CHARS, client, REQ, NQ_PROTO_NAME_MAX + 1)  /* this client's name on the server */             \
  F(CHARS, shown_as, REQ, NQ_PROTO_SHOWN_MAX + 1) /* the name the public page credits it under */  \
  F(CHARS, page, REQ, NQ_PROTO_PAGE_MAX + 1)    /* the public page's address */                    \
  F(I32, has_credit, REQ, 0)                                                                       \
  F(CHARS, credit, REQ, NQ_PROTO_CREDIT_MAX + 1) /* its credit (verified nodes), decimal */        \
  F(INT, credit_at, REQ, 0)                     /* Unix seconds it said so */                      \
  F(I32, job_n, REQ, 0)                         /* 0: not known */                                 \
  /* The guest's settings and pause */                                                             \
  F(I32, threads, REQ, 0)                                                                          \
  F(CHARS, priority, REQ, 8)                                                                       \
  F(I32, cpu_limit, REQ, 0)                                                                        \
  F(I32, paused, REQ, 0)                                                                           \
  F(CHARS, pause_reason, REQ, CLI_STATUS_TEXT)                                                     \
  /* This run of the daemon */                                                                     \
  F(INT, units_done, REQ, 0)                                                                       \
  F(U64, nodes_done, REQ, 0)                                                                       \
  F(REAL, solve_seconds, REQ, 0)                /* of the units done, paused time left out */      \
  F(I32, queued, REQ, 0)                        /* assignments not started */                      \
  /* The running unit */                                                                           \
  F(I32, running, REQ, 0)                                                                          \
  F(CHARS, unit, REQ, NQ_UNIT_TEXT_MAX)                                                            \
  F(INT, unit_id, REQ, 0)                                                                          \
  F(REAL, fraction, REQ, 0)                     /* 0..1 */                                         \
  F(U64, nodes, REQ, 0)                                                                            \
  F(REAL, seconds, REQ, 0) /* solve time so far, every run of it together, pauses left out */   \
  /* Why the daemon left: written as it leaves (stopped 1); "" (no key) while it runs */           \
  F(CHARS, exit_reason, ZERO, 16) /* the reason's name (cli_reason_name): limit, banned, ... */    \
  F(CHARS, exit_why, ZERO, CLI_STATUS_TEXT) /* in words; the server's own when it gave any */
NQ_VIEW_STRUCT(cli_status, CLI_STATUS_VIEW)
typedef nq_view_cli_status_t cli_status_t;

/* One checkpoint in the state directory: a unit in progress (or stopped in a former run). */
typedef struct cli_status_ckpt_s {
  int64_t id;
  char unit[NQ_UNIT_TEXT_MAX];
  uint32_t ndone, ntasks;
  uint64_t nodes;
  double seconds;
} cli_status_ckpt_t;

/* What `nq-client status` shows: the status file (has_file) and the directory. */
typedef struct cli_status_view_s {
  int has_file;
  cli_status_t s;
  int running;            /* the daemon of the status file (or of the lock file) is alive */
  int64_t pid;            /* its pid, or the last one known */
  size_t journal;         /* results waiting to be acknowledged */
  size_t assigned;        /* assignments held (running, checkpointed or not started) */
  cli_status_ckpt_t *ckpt;
  size_t nckpt;
} cli_status_view_t;

/* The JSON object of s (new reference; NULL when out of memory). */
json_t *cli_status_pack(const cli_status_t *s);
/* Read one back: 0, or NQ_EPROTO with why in err (a missing or mistyped key, named by its path:
 * "cli_status.threads: is missing"). */
int cli_status_parse(const json_t *o, cli_status_t *out, char *err, size_t errlen);
/* STATE/status.json := s (atomic replace, not fsync'd: it is rewritten every few seconds). */
int cli_status_write(const char *state_dir, const cli_status_t *s);
/* Read STATE/status.json: 0, NQ_ENOTFOUND, NQ_EPROTO (err says why), NQ_EIO, NQ_ENOMEM. */
int cli_status_read(const char *state_dir, cli_status_t *out, char *err, size_t errlen);

/* Fill v from the state directory (read only). 0, or NQ_ENOTFOUND when dir is no state
 * directory (err says why). Release with cli_status_view_free. */
int cli_status_view(const char *state_dir, cli_status_view_t *v, char *err, size_t errlen);
void cli_status_view_free(cli_status_view_t *v);
/* The view as text for people (now: Unix seconds), or as one JSON object for scripts. */
void cli_status_print_text(FILE *f, const cli_status_view_t *v, int64_t now);
json_t *cli_status_view_json(const cli_status_view_t *v);

/* `nq-client status [--state DIR] [--json]`: the process exit code (0, 2 usage, 3 no state). */
int cli_status_main(int argc, char **argv, const char *default_state);

#endif
