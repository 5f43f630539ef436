/* nq: a private CA and server certificate made in-process (OpenSSL 3, ECDSA P-256), plus
 * random tokens for client credentials (their hashes: nq/hash.h).
 *
 * nq_certs_ensure() lets a fresh server start with TLS and no operator steps: clients are given
 * ca.pem and verify the server against it (docs/tls.md).
 */
#ifndef NQ_CERTS_H
#define NQ_CERTS_H

#include <stddef.h>

#define NQ_CERTS_CA_CERT "ca.pem"
#define NQ_CERTS_CA_KEY "ca.key"
#define NQ_CERTS_SERVER_CERT "server.pem"
#define NQ_CERTS_SERVER_KEY "server.key"

/* Make sure dir (which must exist) holds ca.pem, ca.key, server.pem and server.key, creating
 * what is missing and never touching a file that exists, with one exception:
 *   - server.pem + server.key both present: nothing is made (the operator may have brought a
 *     certificate from elsewhere; inventing a CA that did not sign it would mislead), except that
 *     a server.pem that lacks one of the names below and was issued by this directory's CA is
 *     issued again (same key, its old names plus the missing ones) and replaced atomically, with
 *     a log line; one from elsewhere that lacks a name gets a warning naming it;
 *   - a missing key is generated; a missing certificate is issued for the existing key;
 *   - the server certificate is signed by the CA and names DNS:localhost, IP:127.0.0.1 and each
 *     of extra_names (NULL-terminated, may be NULL): IP literals as IP entries, others as DNS.
 * Keys are written with mode 0600, certificates 0644, each atomically (temp file + link).
 * Returns 0; NQ_EINVAL for a bad name, or a certificate present without its key when that key
 * is needed; NQ_EIO for file errors; NQ_ETLS if OpenSSL fails; NQ_ENOMEM. */
int nq_certs_ensure(const char *dir, const char *const *extra_names);

/* Does the certificate in the PEM file cert_path name host (a DNS name, or an IP literal)? The
 * names it carries go to names[len] (nq_tls_cert_names). Returns 1 (it does), 0 (it does not), or
 * NQ_EIO when the file cannot be read as a certificate. */
int nq_certs_file_names(const char *cert_path, const char *host, char *names, size_t len);

/* Write `bytes` random bytes from the CSPRNG as lowercase hex into buf, which must hold
 * 2 * bytes + 1 characters. Returns 0, NQ_EINVAL or NQ_EIO. */
int nq_random_token(char *buf, size_t bytes);

#endif
