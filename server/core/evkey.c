/* nq-server: the evidence signing key (evkey.h). */
#include "evkey.h"

#include <string.h>

#include "nq/files.h"
#include "nq/hash.h"
#include "nq/nq.h"

int srv_evkey_load(srv_store_t *st, unsigned char priv[NQ_SIGN_KEY_BYTES],
                   unsigned char pub[NQ_SIGN_KEY_BYTES]) {
  char hex[2 * NQ_SIGN_KEY_BYTES + 8];
  int rc = srv_meta_get(st, SRV_META_EVKEY, hex, sizeof hex);
  if (rc) return rc;
  if (nq_hex_decode(hex, NQ_SIGN_KEY_BYTES, priv) != 0)
    return srv_store_failf(st, NQ_EIO, "meta %s is not %d hex bytes", SRV_META_EVKEY,
                           NQ_SIGN_KEY_BYTES);
  return nq_sign_public(priv, pub);
}

int srv_evkey_ensure(srv_store_t *st, const char *dir, char fpr[65]) {
  unsigned char priv[NQ_SIGN_KEY_BYTES], pub[NQ_SIGN_KEY_BYTES];
  char hex[2 * NQ_SIGN_KEY_BYTES + 1], pem[256], f[65];
  int rc = srv_evkey_load(st, priv, pub);
  if (rc == NQ_ENOTFOUND) {
    if ((rc = nq_sign_keygen(priv, pub)) != 0) return rc;
    nq_hex_encode(priv, sizeof priv, hex);
    rc = srv_meta_set(st, SRV_META_EVKEY, hex);
  }
  if (rc == 0) rc = nq_sign_fingerprint(pub, f);
  if (rc == 0 && dir && (rc = nq_sign_pem(pub, pem, sizeof pem)) == 0)
    rc = nq_file_replace(dir, SRV_EVKEY_PUB_FILE, pem, strlen(pem), 0644);
  if (rc == 0 && fpr) memcpy(fpr, f, sizeof f);
  memset(priv, 0, sizeof priv);
  memset(hex, 0, sizeof hex);
  return rc;
}

void srv_evkey_fingerprint(srv_store_t *st, char fpr[65]) {
  unsigned char priv[NQ_SIGN_KEY_BYTES], pub[NQ_SIGN_KEY_BYTES];
  fpr[0] = '\0';
  if (srv_evkey_load(st, priv, pub) == 0 && nq_sign_fingerprint(pub, fpr) != 0) fpr[0] = '\0';
  memset(priv, 0, sizeof priv);
}
