/* nq-server: the evidence signing key (docs/evidence.md, "The signature").
 *
 * An Ed25519 key pair made once, with the data directory (the server's first start on it, or its
 * first start after an upgrade), and kept in the database's meta table (SRV_META_EVKEY: the 32
 * private bytes in hex) -- so every backup holds it and a restored server signs with the same key.
 * The public key is also written as DATA/evidence.pub (PEM) for the operator to publish; its
 * fingerprint (nq/sign.h) is shown on the page, in `welcome` and by `nq-admin status`.
 */
#ifndef SRV_EVKEY_H
#define SRV_EVKEY_H

#include "nq/sign.h"
#include "store_api.h"

#define SRV_META_EVKEY "evidence_key"
#define SRV_EVKEY_PUB_FILE "evidence.pub"

/* The key pair; NQ_ENOTFOUND when none was made yet (a database no server opened since). */
int srv_evkey_load(srv_store_t *st, unsigned char priv[NQ_SIGN_KEY_BYTES],
                   unsigned char pub[NQ_SIGN_KEY_BYTES]);
/* Make the key pair when there is none, write dir/evidence.pub (when dir is not NULL), and give
 * its fingerprint (fpr may be NULL). 0, NQ_ETLS, NQ_EIO. */
int srv_evkey_ensure(srv_store_t *st, const char *dir, char fpr[65]);
/* The fingerprint of the key, "" when there is none. */
void srv_evkey_fingerprint(srv_store_t *st, char fpr[65]);

#endif
