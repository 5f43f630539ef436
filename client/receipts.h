/* nq-client: the receipts the server's acks carry, kept in the state folder, and their check
 * against a published evidence file (`nq-client status --receipts FILE`; nq/receipts.h,
 * docs/evidence.md "The root and the receipts", docs/client.md).
 *
 * STATE/receipts holds one line per acknowledged result ("JOB ID UNIT LEAF", about 110 bytes).
 * Bounded by job: when a receipt of a new job arrives, the receipts of every job but the one
 * before it are dropped (the file holds the last finished job, to check against its evidence,
 * and the running one), and that one's too if they fill the bound; and by size: past
 * CLI_RECEIPTS_MAX_BYTES a new receipt of the running job is not kept.
 */
#ifndef CLI_RECEIPTS_H
#define CLI_RECEIPTS_H

#include <stdio.h>

#include "nq/proto.h"
#include "nq/receipts.h"

#define CLI_RECEIPTS_MAX_BYTES ((long)NQ_RECEIPTS_MAX * 110)

/* Keep the receipt of ack a (nothing when it carries none) in state/receipts. 0; NQ_ETOOBIG
 * (the file is full: not kept); NQ_EIO / NQ_EINVAL (not kept; errno says why). */
int cli_receipt_keep(const char *state, const nq_ack_t *a);
/* The same with another size bound (tests). */
int cli_receipt_keep_max(const char *state, const nq_ack_t *a, long max_bytes);

/* nq-client status --receipts FILE [--root HEX]: check the receipts of state against the
 * evidence file, print the outcome (text, or one JSON object with json) to out, the problems to
 * err. 0 every receipt is in the file under its root; 1 one is not (or the root is wrong); 3 a
 * file cannot be read. */
int cli_receipts_check(const char *state, const char *evidence, const char *root, int json,
                       FILE *out, FILE *err);

#endif
