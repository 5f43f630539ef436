/* nq: Ed25519 through OpenSSL's EVP interface (nq/sign.h). */
#include "nq/sign.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "nq/hash.h"
#include "nq/nq.h"

int nq_sign_public(const unsigned char priv[NQ_SIGN_KEY_BYTES],
                   unsigned char pub[NQ_SIGN_KEY_BYTES]) {
  EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, priv, NQ_SIGN_KEY_BYTES);
  size_t n = NQ_SIGN_KEY_BYTES;
  int ok = k && EVP_PKEY_get_raw_public_key(k, pub, &n) == 1 && n == NQ_SIGN_KEY_BYTES;
  EVP_PKEY_free(k);
  return ok ? 0 : NQ_ETLS;
}

int nq_sign_keygen(unsigned char priv[NQ_SIGN_KEY_BYTES], unsigned char pub[NQ_SIGN_KEY_BYTES]) {
  if (RAND_bytes(priv, NQ_SIGN_KEY_BYTES) != 1) return NQ_ETLS;
  return nq_sign_public(priv, pub);
}

int nq_sign(const unsigned char priv[NQ_SIGN_KEY_BYTES], const void *msg, size_t len,
            unsigned char sig[NQ_SIGN_SIG_BYTES]) {
  EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, priv, NQ_SIGN_KEY_BYTES);
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  size_t n = NQ_SIGN_SIG_BYTES;
  int ok = k && c && EVP_DigestSignInit(c, NULL, NULL, NULL, k) == 1 &&
           EVP_DigestSign(c, sig, &n, msg, len) == 1 && n == NQ_SIGN_SIG_BYTES;
  EVP_MD_CTX_free(c);
  EVP_PKEY_free(k);
  return ok ? 0 : NQ_ETLS;
}

int nq_sign_verify(const unsigned char pub[NQ_SIGN_KEY_BYTES], const void *msg, size_t len,
                   const unsigned char sig[NQ_SIGN_SIG_BYTES]) {
  EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, NQ_SIGN_KEY_BYTES);
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  int rc = NQ_ETLS;
  if (k && c && EVP_DigestVerifyInit(c, NULL, NULL, NULL, k) == 1)
    rc = EVP_DigestVerify(c, sig, NQ_SIGN_SIG_BYTES, msg, len) == 1 ? 0 : NQ_EAUTH;
  EVP_MD_CTX_free(c);
  EVP_PKEY_free(k);
  return rc;
}

int nq_sign_fingerprint(const unsigned char pub[NQ_SIGN_KEY_BYTES], char out[65]) {
  unsigned char md[32];
  int rc = nq_sha256(pub, NQ_SIGN_KEY_BYTES, md);
  if (rc == 0) nq_hex_encode(md, sizeof md, out);
  return rc;
}

int nq_sign_read_pem(const char *path, unsigned char pub[NQ_SIGN_KEY_BYTES]) {
  FILE *f = fopen(path, "r");
  if (!f) return NQ_EIO;
  EVP_PKEY *k = PEM_read_PUBKEY(f, NULL, NULL, NULL);
  fclose(f);
  size_t n = NQ_SIGN_KEY_BYTES;
  int ok = k && EVP_PKEY_id(k) == EVP_PKEY_ED25519 &&
           EVP_PKEY_get_raw_public_key(k, pub, &n) == 1 && n == NQ_SIGN_KEY_BYTES;
  EVP_PKEY_free(k);
  return ok ? 0 : NQ_EINVAL;
}

int nq_sign_pem(const unsigned char pub[NQ_SIGN_KEY_BYTES], char *buf, size_t len) {
  EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, NQ_SIGN_KEY_BYTES);
  BIO *b = BIO_new(BIO_s_mem());
  int rc = NQ_ETLS;
  char *p = NULL;
  if (k && b && PEM_write_bio_PUBKEY(b, k) == 1) {
    long n = BIO_get_mem_data(b, &p);
    if (n > 0 && (size_t)n < len) {
      memcpy(buf, p, (size_t)n);
      buf[n] = '\0';
      rc = 0;
    } else {
      rc = NQ_ERANGE;
    }
  }
  BIO_free(b);
  EVP_PKEY_free(k);
  return rc;
}
