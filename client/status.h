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

#define CLI_STATUS_FILE "status.json"
#define CLI_STATUS_SECONDS 2
#define CLI_STATUS_TEXT 160

typedef struct cli_status_s {
  int64_t pid;           /* the daemon's */
  int64_t updated;       /* Unix seconds of this snapshot */
  int stopped;           /* 1: written as the daemon left */
  char version[32];      /* nq-client's */
  char kernel[16];       /* the solver kernel in use */
  char server[NQ_HOST_MAX + 16]; /* HOST:PORT */
  char conn[16];         /* connection state: idle, connecting, hello, ready, done */
  int64_t last_contact;  /* Unix seconds of the last message from the server; 0: never */
  char last_outcome[CLI_STATUS_TEXT]; /* what the last connection attempt or session came to */
  int64_t down_since;    /* Unix seconds since the server is out of reach; 0: it is not */
  /* From the server's welcome (kept across restarts; empty or has_credit 0 until one says) */
  char client[NQ_PROTO_NAME_MAX + 1];   /* this client's name on the server */
  char shown_as[NQ_PROTO_SHOWN_MAX + 1]; /* the name the public page credits it under */
  char page[NQ_PROTO_PAGE_MAX + 1];     /* the public page's address */
  int has_credit;
  char credit[NQ_PROTO_CREDIT_MAX + 1]; /* this client's credit (verified nodes), decimal */
  int64_t credit_at;                    /* Unix seconds it said so */
  int job_n;                            /* 0: not known */
  /* The guest's settings and pause */
  int threads;
  char priority[8];
  int cpu_limit;
  int paused;
  char pause_reason[CLI_STATUS_TEXT];
  /* This run of the daemon */
  int64_t units_done;
  uint64_t nodes_done;
  double solve_seconds;   /* of the units done, paused time left out */
  int queued;             /* assignments not started */
  /* The running unit */
  int running;
  char unit[NQ_UNIT_TEXT_MAX];
  int64_t unit_id;
  double fraction;        /* 0..1 */
  uint64_t nodes;
  double seconds;         /* solve time so far, every run of it together, pauses left out */
  /* Why the daemon left: written as it leaves (stopped 1), "" while it runs. Optional in the
   * file (one written by an older nq-client has neither). */
  char exit_reason[16];   /* the reason's name (cli_reason_name): limit, job_done, banned, ... */
  char exit_why[CLI_STATUS_TEXT]; /* in words; the server's own when it gave any */
} cli_status_t;

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
/* Read one back: 0, or NQ_EPROTO with why in err (a missing or mistyped key). */
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
