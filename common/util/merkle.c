/* nq: a streamed RFC 6962 Merkle tree over SHA-256 (nq/merkle.h). */
#include "nq/merkle.h"

#include <string.h>

#include "nq/hash.h"
#include "nq/nq.h"

void nq_merkle_init(nq_merkle_t *m) { memset(m, 0, sizeof *m); }

int nq_merkle_leaf_hash(const void *data, size_t len, unsigned char out[NQ_MERKLE_HASH]) {
  nq_sha256_ctx_t *c;
  static const unsigned char tag = 0x00;
  int rc = nq_sha256_begin(&c);
  if (rc) return rc;
  if ((rc = nq_sha256_add(c, &tag, 1)) == 0) rc = nq_sha256_add(c, data, len);
  int e = nq_sha256_end(c, rc == 0 ? out : NULL);
  return rc ? rc : e;
}

/* SHA-256(0x01 || l || r). */
static int node_hash(const unsigned char l[NQ_MERKLE_HASH], const unsigned char r[NQ_MERKLE_HASH],
                     unsigned char out[NQ_MERKLE_HASH]) {
  unsigned char buf[1 + 2 * NQ_MERKLE_HASH];
  buf[0] = 0x01;
  memcpy(buf + 1, l, NQ_MERKLE_HASH);
  memcpy(buf + 1 + NQ_MERKLE_HASH, r, NQ_MERKLE_HASH);
  return nq_sha256(buf, sizeof buf, out);
}

int nq_merkle_add(nq_merkle_t *m, const unsigned char leaf[NQ_MERKLE_HASH]) {
  if (m->leaves == UINT64_MAX) return NQ_ERANGE;
  /* Two subtrees of one size merge into one of twice the size: at most one per bit of the
   * count, so the stack never holds more than 64. */
  memcpy(m->h[m->depth], leaf, NQ_MERKLE_HASH);
  m->size[m->depth++] = 1;
  while (m->depth >= 2 && m->size[m->depth - 1] == m->size[m->depth - 2]) {
    int rc = node_hash(m->h[m->depth - 2], m->h[m->depth - 1], m->h[m->depth - 2]);
    if (rc) return rc;
    m->size[m->depth - 2] *= 2;
    m->depth--;
  }
  m->leaves++;
  return 0;
}

int nq_merkle_root(const nq_merkle_t *m, unsigned char out[NQ_MERKLE_HASH]) {
  if (m->depth == 0) return nq_sha256("", 0, out);
  unsigned char acc[NQ_MERKLE_HASH];
  memcpy(acc, m->h[m->depth - 1], NQ_MERKLE_HASH);
  /* The rightmost, smallest subtrees join first: RFC 6962 splits at the largest power of two. */
  for (int i = m->depth - 2; i >= 0; i--) {
    int rc = node_hash(m->h[i], acc, acc);
    if (rc) return rc;
  }
  memcpy(out, acc, NQ_MERKLE_HASH);
  return 0;
}
