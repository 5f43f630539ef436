/* nq: the evidence file -- a finished job's units, results and totals as one self-describing,
 * checksummed file that leaves the server (nq-admin export writes it, nq-verify checks it with
 * no server and no database). The format is documented in docs/evidence.md; this module is its
 * one pack and one parse, so the writer and the verifier cannot drift apart.
 *
 * JSON lines, UTF-8, each line one JSON object ending in "\n", in this order:
 *   {"type":"header", "format":"nq-evidence", "version":1, "n":..., ...}   exactly one, first
 *   {"type":"unit", "text":..., "c2":..., ..., "results":[...]}             one per unit, in the
 *                                                                          generator's order
 *   {"type":"totals", "units":..., "c2":"...", ..., "total":"...", "unique":"..."}   one
 *   {"type":"sha256", "sha256":"<64 hex>"}   last: SHA-256 of every byte before this line
 * 64-bit counts are JSON integers up to INT64_MAX (a string of digits above it, nq/json.h);
 * 128-bit totals are strings of decimal digits.
 */
#ifndef NQ_EVIDENCE_H
#define NQ_EVIDENCE_H

#include <stdint.h>
#include <stdio.h>

#include "nq/sign.h"
#include "nq/solver.h"
#include "nq/unit.h"

#define NQ_EV_FORMAT "nq-evidence"
#define NQ_EV_VERSION 3     /* what the writer writes (3: results carry their id, the totals
                               the Merkle root of the results) */
#define NQ_EV_VERSION_MIN 1 /* the oldest a reader reads (version 1: every unit settled by its
                               quorum, no signature) */
/* Longest line a reader accepts (a unit with NQ_EV_RESULTS_MAX results fits well inside). */
#define NQ_EV_LINE_MAX (1 << 20)
/* Most results one unit line may carry (every result the store holds for a unit, judged or
 * not; the scheduler stops a unit at 3 x max_results + extra_results). */
#define NQ_EV_RESULTS_MAX 256
#define NQ_EV_NAME_MAX 129 /* client, owner, backend, solver names: up to 128 bytes */

/* What makes two agreeing results independent in the quorum rule (the server's
 * --quorum-distinct): their clients, their clients' owners, or their networks. */
#define NQ_EV_DISTINCT_MAP(X) X(CLIENT, "client") X(OWNER, "owner") X(NETWORK, "network")
typedef enum {
#define NQ_EV_DISTINCT_ENUM_ONE(e, name) NQ_EV_DISTINCT_##e,
  NQ_EV_DISTINCT_MAP(NQ_EV_DISTINCT_ENUM_ONE)
#undef NQ_EV_DISTINCT_ENUM_ONE
  NQ_EV_DISTINCT_N
} nq_ev_distinct_t;
const char *nq_ev_distinct_name(nq_ev_distinct_t d);
/* The mode for "client", "owner" or "network"; NQ_EINVAL for anything else. */
int nq_ev_distinct_parse(const char *name);

/* How a unit was settled (docs/evidence.md, "How a unit is settled"), each checked by its own rule:
 * by the quorum of agreeing results, by a trusted owner's result (the result marked `settles`),
 * or by the operator's audit with the reference solver (nq-admin audit). */
#define NQ_EV_SETTLED_MAP(X) X(QUORUM, "quorum") X(TRUSTED, "trusted") X(AUDIT, "audit")
typedef enum {
#define NQ_EV_SETTLED_ENUM_ONE(e, name) NQ_EV_SETTLED_##e,
  NQ_EV_SETTLED_MAP(NQ_EV_SETTLED_ENUM_ONE)
#undef NQ_EV_SETTLED_ENUM_ONE
  NQ_EV_SETTLED_N
} nq_ev_settled_t;
const char *nq_ev_settled_name(nq_ev_settled_t s);
/* The path for its name; NQ_EINVAL for anything else. */
int nq_ev_settled_parse(const char *name);

/* The first line: the job and the rules its units were verified by. */
typedef struct nq_ev_header_s {
  int version;                        /* NQ_EV_VERSION */
  int n;                              /* NQ_UNIT_MIN_N..NQ_MAX_N */
  int64_t job;                        /* the job's id on the server that made the file */
  char solver[NQ_EV_NAME_MAX];        /* NQ_SOLVER_VERSION of the exporter */
  char software[NQ_EV_NAME_MAX];      /* the exporter's nq version */
  int depth, min_depth;               /* deepest and shallowest unit prefix */
  double unit_seconds;                /* the plan's target (0: a flat --depth job) */
  uint64_t seed;                      /* the plan's estimator seed */
  int has_internal;                   /* always 1 in a file (the writer refuses 0) */
  uint64_t internal;                  /* the plan's split nodes: nodes(units) + internal =
                                         the whole N's nodes */
  int quorum, max_results;            /* the job's quorum rule */
  nq_ev_distinct_t distinct;          /* what made two results independent */
  uint64_t units;                     /* the number of unit lines that follow */
  int64_t created, finished, exported; /* Unix times (finished 0: not finished) */
} nq_ev_header_t;

/* One result of a unit, as the store judged it. */
typedef struct nq_ev_result_s {
  int64_t id;                         /* the result's id on the server (the assignment's; 0:
                                         absent, a file before version 3) */
  char client[NQ_EV_NAME_MAX], owner[NQ_EV_NAME_MAX];
  int64_t net;                        /* an opaque number per network (0: unknown); equal
                                         numbers in one file = the same network */
  char state[16];                     /* valid, invalid, late or reported */
  int spot, voided;                   /* a spot check; a result that lost its vote */
  int settles;                        /* the trusted owner's result that settled the unit */
  char solver[NQ_EV_NAME_MAX];        /* the client's solver version */
  char backend[NQ_EV_NAME_MAX];       /* the kernel that computed it ("" = not said) */
  uint64_t c2, c4, c8, nodes;
  int64_t reported;                   /* Unix time */
} nq_ev_result_t;

/* One unit line. */
typedef struct nq_ev_unit_s {
  char text[NQ_UNIT_TEXT_MAX];
  char state[16];                     /* "verified" in a finished job */
  uint64_t c2, c4, c8, nodes;         /* the verified counts */
  char nodes_solver[NQ_EV_NAME_MAX];  /* the solver version the nodes value comes from */
  nq_ev_settled_t settled;            /* how (absent from a line: quorum, the strictest rule) */
  int64_t verified_at;                /* when it was settled */
  int nresults;
  nq_ev_result_t results[NQ_EV_RESULTS_MAX];
} nq_ev_unit_t;

/* The totals line: the job's stored totals. */
typedef struct nq_ev_totals_s {
  uint64_t units;
  nq_u128 c2, c4, c8, nodes, total, unique;
  int has_root;                       /* version 3: the root of the results' Merkle tree */
  uint64_t leaves;                    /* its leaves: every result of every unit */
  unsigned char root[32];
} nq_ev_totals_t;

/* ---- the root and the receipts (docs/evidence.md, "The root and the receipts") ------------
 * Every result of every unit is a leaf of an RFC 6962 Merkle tree (nq/merkle.h), the units in
 * the file's order and each unit's results by ascending id. A leaf's bytes are what the
 * volunteer reported and the server acknowledged, nothing it judged later:
 *   "nq-leaf 1;job=J;unit=L:TEXT;id=I;solver=L:S;backend=L:B;c2=X;c4=X;c8=X;nodes=X;reported=T"
 * (decimal numbers; each string after its length in bytes and a colon, so no two results share
 * their bytes). nq_ev_leaf writes its leaf hash (SHA-256 of 0x00 and the bytes). 0, NQ_EINVAL
 * (a string too long) or NQ_ETLS. */
#define NQ_EV_LEAF_MAX 1024
int nq_ev_leaf_bytes(int64_t job, const char *unit, const nq_ev_result_t *r, char *out,
                     size_t len, size_t *n);
int nq_ev_leaf(int64_t job, const char *unit, const nq_ev_result_t *r, unsigned char out[32]);
/* Add the leaves of unit u's results to m, by ascending id (ties in the line's order); each(r,
 * its leaf hash, arg), when not NULL, sees each one as it is added (a non-zero return stops and
 * is returned). 0, or nq_ev_leaf's or nq_merkle_add's error. */
struct nq_merkle_s;
typedef int (*nq_ev_leaf_cb)(const nq_ev_result_t *r, const unsigned char leaf[32], void *arg);
int nq_ev_unit_leaves(int64_t job, const nq_ev_unit_t *u, struct nq_merkle_s *m, nq_ev_leaf_cb each,
                      void *arg);

typedef enum { NQ_EV_HEADER = 1, NQ_EV_UNIT, NQ_EV_TOTALS, NQ_EV_SHA256 } nq_ev_type_t;

/* ---- writing ---------------------------------------------------------------------------------
 * A writer hashes every byte it writes. Use: begin, header, each unit, totals, end (which writes
 * the sha256 line). Each returns 0, NQ_EIO (the stream failed: errno says why), NQ_EINVAL (a
 * value the format cannot carry) or NQ_ENOMEM / NQ_ETLS. nq_ev_writer_free releases a writer that
 * was not ended. */
typedef struct nq_ev_writer_s nq_ev_writer_t;
int nq_ev_writer_begin(FILE *f, nq_ev_writer_t **out);
int nq_ev_write_header(nq_ev_writer_t *w, const nq_ev_header_t *h);
int nq_ev_write_unit(nq_ev_writer_t *w, const nq_ev_unit_t *u);
/* The totals line carries the writer's own root of the results written (t's has_root, leaves
 * and root are not read). */
int nq_ev_write_totals(nq_ev_writer_t *w, const nq_ev_totals_t *t);
/* The root of the results written so far (64 hex digits and the NUL) and their count. */
int nq_ev_writer_root(const nq_ev_writer_t *w, char hex[65], uint64_t *leaves);
int nq_ev_writer_end(nq_ev_writer_t *w);
/* The same, signed: the sha256 line also carries the public key of priv and its Ed25519
 * signature of nq_ev_signed_message(digest) (docs/evidence.md, "The signature"). */
int nq_ev_writer_end_signed(nq_ev_writer_t *w, const unsigned char priv[NQ_SIGN_KEY_BYTES]);
/* The message a file's signature signs: "nq-evidence sha256 " and the digest's 64 hex digits
 * (out: 84 bytes with the NUL; the length without it is returned). */
#define NQ_EV_SIGNED_MSG_MAX 84
size_t nq_ev_signed_message(const unsigned char digest[32], char out[NQ_EV_SIGNED_MSG_MAX]);
void nq_ev_writer_free(nq_ev_writer_t *w);

/* ---- reading ---------------------------------------------------------------------------------
 * One parsed line: its type and the matching member (the others untouched). `unit` is large
 * (about 150 KiB): allocate the struct, do not put it on a small stack. */
typedef struct nq_ev_line_s {
  nq_ev_type_t type;
  nq_ev_header_t header;
  nq_ev_unit_t unit;
  nq_ev_totals_t totals;
  unsigned char sha256[32];
  int has_sig;                        /* the sha256 line carries a key and a signature */
  unsigned char key[NQ_SIGN_KEY_BYTES], sig[NQ_SIGN_SIG_BYTES];
} nq_ev_line_t;

/* Parse one line (len bytes, without its "\n"; it need not be NUL-terminated). Checks the JSON
 * and every field's type and range, not the unit text's meaning (nq_unit_parse is the caller's).
 * Returns 0, or NQ_EINVAL / NQ_ERANGE with a one-line reason in err. */
int nq_ev_parse_line(const char *line, size_t len, nq_ev_line_t *out, char *err, size_t errlen);

/* A reader of lines from a stream: each line is handed out with the SHA-256 of every byte
 * before it available (nq_ev_reader_digest), so the sha256 line can be checked against it; at
 * the end of the stream the digest is that of every line but the last. */
typedef struct nq_ev_reader_s nq_ev_reader_t;
int nq_ev_reader_begin(FILE *f, nq_ev_reader_t **out);
/* The next line in *line (without "\n"; valid until the next call) and its length: 1; 0 at the
 * end of the stream; NQ_EIO (read error), NQ_ETOOBIG (a line over NQ_EV_LINE_MAX) or NQ_EINVAL
 * (a last line without its "\n": a truncated file, or a NUL byte in a line). *lineno counts
 * from 1. */
int nq_ev_reader_next(nq_ev_reader_t *r, const char **line, size_t *len, uint64_t *lineno);
/* SHA-256 of every byte before the line nq_ev_reader_next returned last. Ends the hashing: call
 * it once. 0, NQ_ESTATE (called before) or NQ_ETLS. */
int nq_ev_reader_digest(nq_ev_reader_t *r, unsigned char out[32]);
void nq_ev_reader_free(nq_ev_reader_t *r);

#endif
