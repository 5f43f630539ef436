/* nq: SHA-256 (libcrypto's EVP) and hex helpers. */
#include "nq/hash.h"

#include "nq/nq.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <string.h>

void nq_hex_encode(const void *data, size_t len, char *out) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    out[2 * i] = hex[p[i] >> 4];
    out[2 * i + 1] = hex[p[i] & 15];
  }
  out[2 * len] = '\0';
}

int nq_hex_decode(const char *hex, size_t len, void *out) {
  unsigned char *p = out;
  for (size_t i = 0; i < len; i++) {
    int v[2];
    for (int k = 0; k < 2; k++) {
      char c = hex[2 * i + k];
      v[k] = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (v[k] < 0) return NQ_EINVAL;
    }
    p[i] = (unsigned char)(v[0] << 4 | v[1]);
  }
  return hex[2 * len] == '\0' ? 0 : NQ_EINVAL;
}

int nq_sha256(const void *data, size_t len, unsigned char out[32]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  ERR_clear_error();
  if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1 || n != 32) {
    ERR_clear_error();
    return NQ_ETLS;
  }
  memcpy(out, md, 32);
  return 0;
}

/* The context is libcrypto's digest context itself, behind our own name. */
int nq_sha256_begin(nq_sha256_ctx_t **out) {
  *out = NULL;
  ERR_clear_error();
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  if (!c) return NQ_ENOMEM;
  if (EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
    EVP_MD_CTX_free(c);
    ERR_clear_error();
    return NQ_ETLS;
  }
  *out = (nq_sha256_ctx_t *)c;
  return 0;
}

int nq_sha256_add(nq_sha256_ctx_t *c, const void *data, size_t len) {
  ERR_clear_error();
  if (EVP_DigestUpdate((EVP_MD_CTX *)c, data, len) != 1) {
    ERR_clear_error();
    return NQ_ETLS;
  }
  return 0;
}

int nq_sha256_end(nq_sha256_ctx_t *c, unsigned char out[32]) {
  int rc = 0;
  if (!c) return NQ_EINVAL;
  if (out) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    ERR_clear_error();
    if (EVP_DigestFinal_ex((EVP_MD_CTX *)c, md, &n) != 1 || n != 32) {
      ERR_clear_error();
      rc = NQ_ETLS;
    } else {
      memcpy(out, md, 32);
    }
  }
  EVP_MD_CTX_free((EVP_MD_CTX *)c);
  return rc;
}

int nq_sha256_hex(const char *s, char out[65]) {
  unsigned char md[32];
  out[0] = '\0';
  if (!s) return NQ_EINVAL;
  int rc = nq_sha256(s, strlen(s), md);
  if (rc == 0) nq_hex_encode(md, sizeof md, out);
  return rc;
}

int nq_secure_streq(const char *a, const char *b) {
  if (!a || !b) return 0;
  size_t n = strlen(a);
  if (n != strlen(b)) return 0;
  return CRYPTO_memcmp(a, b, n) == 0;
}
