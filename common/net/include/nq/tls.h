/* nq: TLS contexts (OpenSSL 3) for the connection layer in conn.h.
 *
 * Both sides speak TLS 1.2 or newer only, with forward-secret AEAD suites for 1.2 and no
 * renegotiation. A client context always verifies the server: chain against the given CA file
 * and, per connection, the host name or IP address (nq_conn_connect).
 */
#ifndef NQ_TLS_H
#define NQ_TLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct nq_tls_ctx_s nq_tls_ctx_t;
struct ssl_ctx_st;

/* Server context from a PEM certificate chain (leaf first) and its PEM private key.
 * Returns 0 and *out, NQ_EIO if a file cannot be read/parsed, NQ_ETLS if the key does not match
 * the certificate or OpenSSL refuses the setup, NQ_ENOMEM, NQ_EINVAL. */
int nq_tls_ctx_server_new(const char *cert_pem_path, const char *key_pem_path,
                          nq_tls_ctx_t **out);
/* Client context trusting the CA certificate(s) in ca_pem_path, or the system's default trust
 * store when ca_pem_path is NULL. Returns 0 and *out; NQ_ENOTFOUND (no such file), NQ_EIO (it
 * cannot be read), NQ_EINVAL (it is not a PEM certificate file: the log says what it looks like),
 * NQ_ETLS (OpenSSL refuses the certificates in it), NQ_ENOMEM. */
int nq_tls_ctx_client_new(const char *ca_pem_path, nq_tls_ctx_t **out);
/* Connections hold their own reference to the OpenSSL context, so a context may be freed while
 * connections made from it are still open. NULL is fine. */
void nq_tls_ctx_free(nq_tls_ctx_t *ctx);

int nq_tls_ctx_is_server(const nq_tls_ctx_t *ctx);
/* The underlying SSL_CTX (for conn.c, or for a caller that needs to tune it). */
struct ssl_ctx_st *nq_tls_ctx_ssl(const nq_tls_ctx_t *ctx);

/* The leaf certificate of a server context: its expiry (Unix seconds) in *not_after and, when
 * names is not NULL, the names it is made out to (nq_tls_cert_names; len >= 16). Returns 0,
 * NQ_EINVAL (not a server context), NQ_ENOTFOUND (no certificate), NQ_ETLS (unreadable date). */
int nq_tls_ctx_leaf(const nq_tls_ctx_t *ctx, int64_t *not_after, char *names, size_t len);

/* The names a certificate is made out to, for people: its SubjectAltName DNS and IP entries as
 * "localhost, 127.0.0.1, nq.example.org" (the subject's CN when it has no SAN; "(none)" when it
 * has neither). A list too long for buf ends in ", ..." (buf is always terminated; len >= 16).
 * Returns buf. */
struct x509_st;
char *nq_tls_cert_names(const struct x509_st *cert, char *buf, size_t len);

/* A client connection's pin on the server it dialled (before the handshake): an IP literal is
 * matched against the certificate's IP SubjectAltNames (and sent without SNI, which may not
 * carry addresses); a name is sent as SNI and matched against its DNS SubjectAltNames, with no
 * partial wildcards. The chain is verified against the context's CA as ever. 0 or NQ_ETLS. */
struct ssl_st;
int nq_tls_pin_peer(struct ssl_st *ssl, const char *hostname);
/* Why a pinned client's handshake failed, for people, into buf: a name mismatch lists the names
 * the certificate does carry; another verification failure says which; else OpenSSL's first
 * queued error ("" when none). Returns buf. */
char *nq_tls_handshake_error(const struct ssl_st *ssl, char *buf, size_t len);

/* Drain the calling thread's OpenSSL error queue into buf as one short line ("" if empty),
 * keeping the first (root-cause) error. Returns buf. */
char *nq_tls_errors(char *buf, size_t len);

#endif
