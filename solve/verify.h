/* nq-verify: the checks of an evidence file (nq/evidence.h, docs/evidence.md), with no server and
 * no database: the file's checksum, every unit text, the tiling of the search tree, the
 * verification rule of every unit, the totals, and a random sample recomputed here.
 */
#ifndef NQ_VERIFY_H
#define NQ_VERIFY_H

#include <stdint.h>
#include <stdio.h>

#include "nq/evidence.h"

/* Outcomes of verify_file (nq-verify's exit statuses). */
enum { VERIFY_OK = 0, VERIFY_FAILED = 1, VERIFY_USAGE = 2, VERIFY_ERROR = 3 };

typedef struct verify_opts_s {
  uint64_t sample;      /* units to recompute; UINT64_MAX: every unit */
  uint64_t seed;        /* the sample's seed */
  const char *kernel;   /* "reference", or an NQ_KERNEL name: auto, scalar, avx2, avx512 */
  int threads;          /* solver threads of a fast-kernel recount (>= 1) */
  const char *key;      /* --key: a public key's PEM file, its 64 hex digits, or its fingerprint;
                           NULL: any signature is checked, none is required */
  const char *root;     /* --root: the root the server published (64 hex digits); NULL: none */
  const char *receipts; /* --receipts DIR: a client's state folder whose receipts to check */
} verify_opts_t;

typedef struct verify_report_s {
  nq_ev_header_t header;
  nq_ev_totals_t totals;
  uint64_t units, results, spot_results, invalid_results, multi_backend_units;
  uint64_t split_nodes;    /* nodes above the units (the walk's expansions) */
  uint64_t sampled;        /* units recomputed */
  uint64_t nodes_skipped;  /* sampled units whose nodes come from another solver version */
  char kernel[32];         /* the kernel that recomputed them */
  uint64_t settled[NQ_EV_SETTLED_N]; /* units by how they were settled */
  uint64_t audits_recounted;         /* audit-settled units recomputed (every one, unless
                                        --sample 0) */
  int is_signed;                     /* the file carries a signature, and it verifies */
  char key_fpr[65];                  /* the signing key's fingerprint */
  int has_root;                      /* the file's root is the root of its results */
  uint64_t leaves;                   /* its results (the tree's leaves) */
  char root[65];                     /* the root recomputed from them */
} verify_report_t;

/* Check the file at path. VERIFY_OK with *rep filled; VERIFY_FAILED with the first failed check
 * in err ("LINE N: unit TEXT: reason"); VERIFY_ERROR when the file cannot be read or the kernel
 * cannot run here (err says why). */
int verify_file(const char *path, const verify_opts_t *o, verify_report_t *rep, char *err,
                size_t errlen);
/* The same on an open stream, which must be seekable (the checks read it twice). */
int verify_stream(FILE *f, const verify_opts_t *o, verify_report_t *rep, char *err,
                  size_t errlen);

#endif
