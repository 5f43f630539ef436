/* nq: SHA-256 and hex, shared by the checkpoint file (solver), the task list's hash and the
 * credential hashes (server). SHA-256 comes from OpenSSL's libcrypto (EVP), the library the
 * rest of nq already trusts for its TLS; nothing here needs libssl.
 */
#ifndef NQ_HASH_H
#define NQ_HASH_H

#include <stddef.h>

/* Lowercase hex SHA-256 of the string s (without its terminator). Returns 0, NQ_EINVAL for a
 * NULL s, or NQ_ETLS if libcrypto fails. */
int nq_sha256_hex(const char *s, char out[65]);
/* SHA-256 of len bytes (a checkpoint's body, a task list). Returns 0 or NQ_ETLS. */
int nq_sha256(const void *data, size_t len, unsigned char out[32]);

/* SHA-256 over data that arrives in pieces (the evidence file, nq/evidence.h, hashed as it is
 * written or read, in bounded memory). nq_sha256_begin: 0 and *out, or NQ_ENOMEM / NQ_ETLS.
 * nq_sha256_add: 0 or NQ_ETLS. nq_sha256_end writes the digest and frees the context (out may
 * be NULL to only free it); 0 or NQ_ETLS. */
typedef struct nq_sha256_ctx_s nq_sha256_ctx_t;
int nq_sha256_begin(nq_sha256_ctx_t **out);
int nq_sha256_add(nq_sha256_ctx_t *c, const void *data, size_t len);
int nq_sha256_end(nq_sha256_ctx_t *c, unsigned char out[32]);
/* Lowercase hex of len bytes into out (2 * len + 1 characters, NUL-terminated). */
void nq_hex_encode(const void *data, size_t len, char *out);
/* The len bytes that exactly 2 * len lowercase hex digits (then the string's end) stand for.
 * Returns 0, or NQ_EINVAL for any other character or a string of another length. */
int nq_hex_decode(const char *hex, size_t len, void *out);

/* Constant-time comparison of two strings (for token hashes); 1 if equal. Only the lengths
 * may leak through timing. */
int nq_secure_streq(const char *a, const char *b);

#endif
