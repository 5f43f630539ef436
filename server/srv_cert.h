/* nq-server: the server certificate -- loaded at start, re-read on SIGHUP and when its files
 * change, its expiry watched (docs/tls.md, "A certificate from a public CA").
 *
 * The certificate is --cert/--key when given (a chain from a public CA, e.g. an ACME client's),
 * else the data directory's server.pem/server.key from its private CA. A reload builds a new TLS
 * context from the files and swaps it in for connections accepted from then on; connections
 * already open keep the context they were made with (each holds its own reference), so nothing
 * is dropped. A reload that fails (a half-written file, a key that does not match) keeps the old
 * context and says why in the log.
 *
 * Expiry. The leaf's notAfter is recorded in the store's meta (SRV_META_TLS_CERT, admin_api.h), so that
 * `nq-admin status` shows it in both modes, and /metrics reads it as a gauge. A certificate that
 * expires within --cert-warn-days is a WARN at load and once a day after.
 */
#ifndef SRV_CERT_H
#define SRV_CERT_H

#include <stddef.h>
#include <stdint.h>


typedef struct srv_s srv_t;
typedef struct srv_cert_s srv_cert_t;

/* Build s->tls from the certificate files, record its expiry, and start the file watch and (when
 * the server handles signals) SIGHUP. 0, or NQ_EIO / NQ_ETLS / NQ_ENOMEM with errbuf saying
 * why. */
int srv_cert_start(srv_t *s, char *errbuf, size_t errlen);
/* Read the files again now (`why` goes into the log line). 0 when the new certificate is in
 * use; else the old one stays and the error code is returned. */
int srv_cert_reload(srv_t *s, const char *why);
/* The certificate in use: its expiry (Unix seconds; 0 when unknown). */
int64_t srv_cert_not_after(const srv_t *s);
/* Close the timer and the signal handler (the context itself is srv_free's). */
void srv_cert_stop(srv_t *s);

#endif
