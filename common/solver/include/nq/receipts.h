/* nq: a volunteer's receipts and their check against a published evidence file
 * (docs/evidence.md, "The root and the receipts").
 *
 * The server acknowledges each result with a receipt: the job, the result's id, its unit and the
 * hash of its leaf in the job's Merkle tree (nq/evidence.h, nq_ev_leaf). The client keeps one
 * line per receipt in its state folder (client/receipts.c):
 *     "JOB ID UNIT LEAF\n"   e.g. "3 1041 12:c:2:0,2,4 9f86d08...(64 hex)"
 * After the job, nq_receipts_check reads the published file, recomputes the root from its
 * results and finds every receipt's leaf in it: a receipt whose result is missing, or whose
 * leaf differs (the result was changed after it was acknowledged), is named, and so is a root
 * that is not the root of the file's results or not the one the caller pinned.
 */
#ifndef NQ_RECEIPTS_H
#define NQ_RECEIPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nq/unit.h"

#define NQ_RECEIPTS_FILE "receipts"   /* its name in the client's state folder */
#define NQ_RECEIPT_LINE_MAX 256       /* one line, with its "\n" and a NUL */
/* Most receipts a check loads (and the client keeps): about 100 bytes each. */
#define NQ_RECEIPTS_MAX 200000

typedef struct nq_receipt_s {
  int64_t job, id;
  char unit[NQ_UNIT_TEXT_MAX];
  unsigned char leaf[32];
} nq_receipt_t;

/* The line of r, with its "\n" (out: NQ_RECEIPT_LINE_MAX bytes). Its length, or NQ_EINVAL. */
int nq_receipt_format(const nq_receipt_t *r, char *out, size_t len);
/* Parse one line (len bytes, without its "\n"; need not be NUL-terminated): two decimal numbers
 * (job >= 0, id >= 1, no sign, at most 18 digits), a unit text (1..NQ_UNIT_TEXT_MAX - 1 of
 * [0-9a-z:,]) and 64 lowercase hex digits, separated by single spaces. 0 or NQ_EINVAL. */
int nq_receipt_parse(const char *line, size_t len, nq_receipt_t *out);

/* The outcome of a check. */
typedef struct nq_receipts_report_s {
  int64_t job;                 /* the file's job */
  uint64_t kept;               /* receipts of that job in the folder */
  uint64_t found, missing, changed, unit_differs;
  uint64_t valid;              /* found receipts whose result the file marks valid */
  uint64_t other_jobs;         /* receipts of other jobs (not checked) */
  uint64_t bad_lines;          /* unreadable lines in the receipts file (skipped) */
  uint64_t leaves;
  char root[65];               /* the root recomputed from the file's results */
  int root_ok;                 /* the file's root is that root (and the pinned one, if any) */
} nq_receipts_report_t;

/* Check the receipts in the file at receipts_path against the evidence file ev (read once,
 * from its start): the root recomputed from the results must be the one in the totals line
 * (and pin_root's, when not NULL: 64 hex digits as the server's page shows it), and every
 * receipt of the file's job must name a result there whose leaf is the receipt's. Problems are
 * written to out (one line each, at most max_named of each kind named; out may be NULL).
 * Returns 0 (everything holds), 1 (a check failed: err says the first), or a negative error
 * (the files cannot be read: err says why). */
int nq_receipts_check(FILE *ev, const char *receipts_path, const char *pin_root, FILE *out,
                      int max_named, nq_receipts_report_t *rep, char *err, size_t errlen);

#endif
