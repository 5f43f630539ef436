/* nq: a Merkle tree over SHA-256 in the manner of RFC 6962 (Certificate Transparency), built
 * from a stream of leaves in bounded memory: the evidence file's root over its results
 * (docs/evidence.md, "The root and the receipts").
 *
 *   leaf hash  = SHA-256(0x00 || leaf bytes)
 *   node hash  = SHA-256(0x01 || left || right)
 *   MTH(0 leaves) = SHA-256 of nothing; MTH(1) = the leaf hash; MTH(n > 1) = node(MTH of the
 *   first k leaves, MTH of the other n - k), k the largest power of two below n.
 * The domain bytes keep a leaf from ever passing for a node. The builder holds one hash per bit
 * of the leaf count (at most 64): the complete subtrees so far, merged as they fill, and folded
 * right to left at the end, which gives exactly MTH.
 */
#ifndef NQ_MERKLE_H
#define NQ_MERKLE_H

#include <stddef.h>
#include <stdint.h>

#define NQ_MERKLE_HASH 32

typedef struct nq_merkle_s {
  unsigned char h[64][NQ_MERKLE_HASH]; /* the complete subtrees, largest first */
  uint64_t size[64];                   /* their leaf counts (powers of two, decreasing) */
  int depth;                           /* how many */
  uint64_t leaves;
} nq_merkle_t;

void nq_merkle_init(nq_merkle_t *m);
/* The leaf hash of len bytes: SHA-256(0x00 || data). 0 or NQ_ETLS. */
int nq_merkle_leaf_hash(const void *data, size_t len, unsigned char out[NQ_MERKLE_HASH]);
/* Append a leaf by its leaf hash. 0, NQ_ERANGE (2^64 - 1 leaves) or NQ_ETLS. */
int nq_merkle_add(nq_merkle_t *m, const unsigned char leaf[NQ_MERKLE_HASH]);
/* The root of the leaves so far (the builder is left as it was: more may follow). 0 or NQ_ETLS. */
int nq_merkle_root(const nq_merkle_t *m, unsigned char out[NQ_MERKLE_HASH]);

#endif
