/* nq-client: the on-disk state of a client (docs/client.md).
 *
 *   STATE/token               the client token, mode 0600, one line
 *   STATE/journal/<id>.json   a finished result for assignment <id> (nq_result_t, the one result
 *                             type of nq/proto.h): the `result` message exactly as it is sent
 *                             (nq_result_pack, its one packer), written BEFORE it is sent and
 *                             removed once the server answered it (ack or a non-fatal refusal)
 *   STATE/assigned/<id>.json  an assignment received but not finished yet: a `work` message
 *                             holding it, its deadline on this machine's clock
 *   STATE/checkpoint/<id>.ckpt  what is finished of assignment <id>'s unit (nq/checkpoint.h),
 *                             written while it runs and when it stops, removed once its result
 *                             is journalled (or the server no longer needs the unit)
 *
 *   STATE/nq-client.lock      locked (flock) by the client that owns the directory; holds its pid
 *
 * Every file is written by nq_file_replace (nq/files.h): a temporary dot-file, fsync'd, renamed
 * into place and the directory fsync'd, so a crash leaves either the old state or the new one,
 * never half a file. Two kinds skip the fsyncs (nq_file_replace_volatile: still atomic against a
 * crash of the process, not against a power loss), because after a power loss the server gives
 * back what they hold: assignments (re-sent at the first get_work), and results that took less
 * than CLI_JOURNAL_SYNC_SECONDS to solve (solved again). A torn one is set aside like any other. Leftover temporary files are ignored by the listings (and removed by
 * cli_journal_open). A file that does not parse (with the protocol's parsers) is reported (log
 * WARN), renamed to "<name>.bad" and skipped.
 *
 * All functions run on the caller's thread and do blocking file I/O on small files.
 */
#ifndef CLI_JOURNAL_H
#define CLI_JOURNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "nq/checkpoint.h"
#include "nq/proto.h"
#include "nq/solver.h"
#include "nq/unit.h"

#define CLI_TOKEN_MAX 256
#define CLI_LOCK_FILE "nq-client.lock"
/* Results of units solved in less time than this are journalled without fsync (cli_journal_put). */
#define CLI_JOURNAL_SYNC_SECONDS 1.0

typedef struct cli_journal_s {
  char *dir;          /* the state directory */
  int locked;         /* lock_fd holds STATE/nq-client.lock: one client per state directory */
  int lock_fd;
  char *results_dir;  /* dir/journal */
  char *assigned_dir; /* dir/assigned */
  char *ckpt_dir;     /* dir/checkpoint */
} cli_journal_t;

/* One assignment as received in `work`. */
typedef struct cli_assign_s {
  int64_t id;
  char unit[NQ_UNIT_TEXT_MAX];
  int64_t deadline; /* on this machine's clock: receipt time + the server's `lease` (the server's
                       own `deadline` only when `lease` is absent), so clock skew does not matter */
  int unconfirmed;  /* not in the file: loaded from the state directory at start, and the server
                       has not said yet in this run that it still holds it for us */
  char kernel[NQ_KERNEL_NAME_MAX]; /* the kernel the assignment names, "" none */
  int on_disk;      /* not in the file: its assigned/ entry exists (written, or loaded at start);
                       short units are not written while connected (ctx.h, "lazy records") */
} cli_assign_t;

/* Create (mode 0700) the state directory and its subdirectories when missing, take its lock,
 * remove stale temporary files, and fill *j. Returns 0, NQ_EBUSY (another nq-client owns the
 * directory: an ERROR line names its pid), NQ_EIO (with a log line naming the path) or NQ_ENOMEM.
 * Release with cli_journal_close. */
int cli_journal_open(const char *state_dir, cli_journal_t *j);
void cli_journal_close(cli_journal_t *j);

/* Results. put: atomically write (replacing any earlier file for the id), durably (fsync'd) when
 * the result took CLI_JOURNAL_SYNC_SECONDS or more to solve; remove: NQ_ENOTFOUND
 * when there is no such entry. has: 1 if an entry exists. list: every valid entry in increasing id
 * order into a new malloc'd array (*out, caller frees; NULL when *n is 0); corrupt files are
 * counted in *corrupt (may be NULL), reported and set aside. Returns 0, NQ_EIO, NQ_ENOMEM. */
int cli_journal_put(cli_journal_t *j, const nq_result_t *r);
int cli_journal_remove(cli_journal_t *j, int64_t id);
int cli_journal_has(cli_journal_t *j, int64_t id);
int cli_journal_list(cli_journal_t *j, nq_result_t **out, size_t *n, size_t *corrupt);

/* Assignments received but not finished; same contracts as the result functions. */
int cli_assigned_put(cli_journal_t *j, const cli_assign_t *a);
int cli_assigned_remove(cli_journal_t *j, int64_t id);
int cli_assigned_list(cli_journal_t *j, cli_assign_t **out, size_t *n, size_t *corrupt);

/* Checkpoints of running units. put: atomically write (nq_ckpt_save: fsync'd, renamed, directory
 * fsync'd). get: 0; NQ_ENOTFOUND when there is none; NQ_EINVAL with the reason in err when the
 * file is no valid checkpoint (the caller sets it aside with cli_ckpt_set_aside). remove:
 * NQ_ENOTFOUND when there is none. list: the ids that have a checkpoint file, in increasing order,
 * into a new array (*out, caller frees; NULL when *n is 0). */
int cli_ckpt_put(cli_journal_t *j, int64_t id, const nq_ckpt_t *c);
int cli_ckpt_get(cli_journal_t *j, int64_t id, nq_ckpt_t *c, char *err, size_t errlen);
int cli_ckpt_remove(cli_journal_t *j, int64_t id);
void cli_ckpt_set_aside(cli_journal_t *j, int64_t id);
int cli_ckpt_list(cli_journal_t *j, int64_t **out, size_t *n);

/* The stored token: read into buf (trailing newline stripped). Returns 0, NQ_ENOTFOUND when there
 * is no token file, NQ_EINVAL if it is empty or too long, NQ_EIO. */
int cli_token_load(cli_journal_t *j, char *buf, size_t len);
/* Store the token atomically with mode 0600. Returns 0 or NQ_EIO. */
int cli_token_store(cli_journal_t *j, const char *token);

#endif
