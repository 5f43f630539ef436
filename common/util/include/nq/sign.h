/* nq: Ed25519 signatures (OpenSSL's libcrypto, EVP), for the evidence file a server signs
 * (docs/evidence.md, "The signature"). Keys are the raw 32-byte forms; a key's fingerprint is the
 * lowercase hex SHA-256 of its 32 public bytes. */
#ifndef NQ_SIGN_H
#define NQ_SIGN_H

#include <stddef.h>

#define NQ_SIGN_KEY_BYTES 32
#define NQ_SIGN_SIG_BYTES 64

/* A new key pair from the system's CSPRNG. 0 or NQ_ETLS. */
int nq_sign_keygen(unsigned char priv[NQ_SIGN_KEY_BYTES], unsigned char pub[NQ_SIGN_KEY_BYTES]);
/* The public key of a private one. 0 or NQ_ETLS. */
int nq_sign_public(const unsigned char priv[NQ_SIGN_KEY_BYTES],
                   unsigned char pub[NQ_SIGN_KEY_BYTES]);
/* Sign len bytes of msg. 0 or NQ_ETLS. */
int nq_sign(const unsigned char priv[NQ_SIGN_KEY_BYTES], const void *msg, size_t len,
            unsigned char sig[NQ_SIGN_SIG_BYTES]);
/* 0 when sig is pub's signature of msg; NQ_EAUTH when it is not; NQ_ETLS. */
int nq_sign_verify(const unsigned char pub[NQ_SIGN_KEY_BYTES], const void *msg, size_t len,
                   const unsigned char sig[NQ_SIGN_SIG_BYTES]);
/* The fingerprint of a public key: 64 lowercase hex digits and a NUL. 0 or NQ_ETLS. */
int nq_sign_fingerprint(const unsigned char pub[NQ_SIGN_KEY_BYTES], char out[65]);
/* The public key in a PEM file (SubjectPublicKeyInfo, as `openssl pkey -pubout` writes it).
 * 0, NQ_EIO (cannot read it), NQ_EINVAL (not an Ed25519 public key). */
int nq_sign_read_pem(const char *path, unsigned char pub[NQ_SIGN_KEY_BYTES]);
/* PEM text of a public key into buf (len >= 128). 0, NQ_ERANGE, NQ_ETLS. */
int nq_sign_pem(const unsigned char pub[NQ_SIGN_KEY_BYTES], char *buf, size_t len);

#endif
