/* nq: TLS contexts on OpenSSL 3. */
#include "nq/tls.h"
#include "nq/files.h"
#include "nq/log.h"
#include "nq/nq.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct nq_tls_ctx_s {
  SSL_CTX *ssl;
  int is_server;
};

char *nq_tls_errors(char *buf, size_t len) {
  if (len == 0) return buf;
  buf[0] = '\0';
  unsigned long e = ERR_get_error();
  if (e) ERR_error_string_n(e, buf, len);
  /* The first error is the root cause; the rest only say which layers it went through. */
  ERR_clear_error();
  return buf;
}

/* Append "sep name" to buf (used so far: *n) if it fits with room for ", ..." after it; else
 * mark the list cut. Returns 0 while names still fit. */
static int names_add(char *buf, size_t len, size_t *n, const char *name, size_t nlen) {
  size_t sep = *n ? 2 : 0;
  if (*n + sep + nlen + 6 > len) {
    snprintf(buf + *n, len - *n, "%s...", *n ? ", " : "");
    *n = len;
    return -1;
  }
  snprintf(buf + *n, len - *n, "%s%.*s", sep ? ", " : "", (int)nlen, name);
  *n += sep + nlen;
  return 0;
}

char *nq_tls_cert_names(const struct x509_st *cert, char *buf, size_t len) {
  if (!buf || len < 16) return buf;
  buf[0] = '\0';
  if (!cert) return buf;
  size_t n = 0;
  GENERAL_NAMES *gens = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
  for (int i = 0; i < sk_GENERAL_NAME_num(gens) && n < len; i++) {
    const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
    char ip[64];
    if (g->type == GEN_DNS) {
      const ASN1_STRING *s = g->d.dNSName;
      names_add(buf, len, &n, (const char *)ASN1_STRING_get0_data(s),
                (size_t)ASN1_STRING_length(s));
    } else if (g->type == GEN_IPADD) {
      const ASN1_STRING *s = g->d.iPAddress;
      int al = ASN1_STRING_length(s);
      int fam = al == 4 ? AF_INET : al == 16 ? AF_INET6 : 0;
      if (fam && inet_ntop(fam, ASN1_STRING_get0_data(s), ip, sizeof ip))
        names_add(buf, len, &n, ip, strlen(ip));
    }
  }
  GENERAL_NAMES_free(gens);
  if (n == 0) {
    char cn[256];
    X509_NAME *subj = X509_get_subject_name(cert);
    int got = subj ? X509_NAME_get_text_by_NID(subj, NID_commonName, cn, sizeof cn) : -1;
    snprintf(buf, len, "%s", got > 0 ? cn : "(none)");
  }
  ERR_clear_error();
  return buf;
}

/* Settings shared by both sides. */
static int ctx_common(SSL_CTX *ssl) {
  if (!SSL_CTX_set_min_proto_version(ssl, TLS1_2_VERSION)) return NQ_ETLS;
  /* TLS 1.2 suites: ECDHE only (forward secrecy) with AEAD ciphers. TLS 1.3 defaults are fine. */
  if (!SSL_CTX_set_cipher_list(ssl, "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!eNULL")) return NQ_ETLS;
  /* Renegotiation is a needless DoS surface with nothing to gain for us, and compression
   * leaks plaintext lengths (CRIME). */
  SSL_CTX_set_options(ssl, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  return 0;
}

static int ctx_new(int is_server, nq_tls_ctx_t **out) {
  *out = NULL;
  nq_tls_ctx_t *c = calloc(1, sizeof *c);
  if (!c) return NQ_ENOMEM;
  ERR_clear_error();
  c->ssl = SSL_CTX_new(is_server ? TLS_server_method() : TLS_client_method());
  if (!c->ssl) {
    free(c);
    return NQ_ETLS;
  }
  c->is_server = is_server;
  int r = ctx_common(c->ssl);
  if (r < 0) {
    nq_tls_ctx_free(c);
    return r;
  }
  *out = c;
  return 0;
}

int nq_tls_ctx_server_new(const char *cert_pem_path, const char *key_pem_path,
                          nq_tls_ctx_t **out) {
  if (!out) return NQ_EINVAL;
  *out = NULL;
  if (!cert_pem_path || !key_pem_path) return NQ_EINVAL;
  nq_tls_ctx_t *c = NULL;
  char err[256];
  int r = ctx_new(1, &c);
  if (r < 0) goto out;

  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(c->ssl, cert_pem_path) != 1) {
    nq_log(NQ_LOG_ERROR, "tls: cannot load certificate %s: %s", cert_pem_path,
           nq_tls_errors(err, sizeof err));
    r = NQ_EIO;
    goto out;
  }
  if (SSL_CTX_use_PrivateKey_file(c->ssl, key_pem_path, SSL_FILETYPE_PEM) != 1) {
    /* OpenSSL checks the key against the certificate while loading it. */
    int mismatch = ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH;
    nq_log(NQ_LOG_ERROR, "tls: cannot use private key %s: %s", key_pem_path,
           nq_tls_errors(err, sizeof err));
    r = mismatch ? NQ_ETLS : NQ_EIO;
    goto out;
  }
  if (SSL_CTX_check_private_key(c->ssl) != 1) {
    nq_log(NQ_LOG_ERROR, "tls: key %s does not match certificate %s", key_pem_path,
           cert_pem_path);
    ERR_clear_error();
    r = NQ_ETLS;
    goto out;
  }
  /* Clients do not resume sessions (each connection is long-lived), so tickets and the session
   * cache would only cost memory. */
  SSL_CTX_set_session_cache_mode(c->ssl, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(c->ssl, 0);
  /* TLS 1.2 resumes through tickets too, whatever the cache mode: refuse them (docs/tls.md). */
  SSL_CTX_set_options(c->ssl, SSL_OP_NO_TICKET);
  /* OpenSSL's record buffers (about 34 KiB) are given back whenever they are empty: most
   * connections are idle most of the time, and memory per connection is bounded. */
  SSL_CTX_set_mode(c->ssl, SSL_MODE_RELEASE_BUFFERS);
  *out = c;
  c = NULL;
  r = 0;
out:
  nq_tls_ctx_free(c);
  return r;
}

#define CA_FILE_MAX (4 << 20) /* a bundle of every public CA is about 200 KiB */

/* Is the CA file there, readable and PEM? OpenSSL's answer to a DER file, a key or a text file
 * is "no certificate or crl found", which tells a volunteer nothing; this says which it is. */
static int ca_file_check(const char *path) {
  char *text = NULL;
  size_t len = 0;
  int rc = nq_file_read(path, CA_FILE_MAX, &text, &len);
  if (rc == NQ_ENOTFOUND) {
    nq_log(NQ_LOG_ERROR, "tls: CA file %s does not exist", path);
  } else if (rc) {
    nq_log(NQ_LOG_ERROR, "tls: cannot read CA file %s: %s", path,
           rc == NQ_ETOOBIG ? "it is over 4 MiB, not a CA certificate" : nq_strerror(rc));
    rc = rc == NQ_ENOMEM ? rc : NQ_EIO;
  } else if (!strstr(text, "-----BEGIN CERTIFICATE-----")) {
    const unsigned char *u = (const unsigned char *)text;
    const char *what = len >= 2 && u[0] == 0x30 && (u[1] == 0x82 || u[1] == 0x81)
                           ? "it looks like a DER (binary) certificate: convert it with "
                             "'openssl x509 -inform der -in FILE -out ca.pem'"
                       : strstr(text, "PRIVATE KEY-----") ? "it holds a private key, not a certificate"
                       : len == 0 ? "it is empty"
                                  : "it has no '-----BEGIN CERTIFICATE-----' line";
    nq_log(NQ_LOG_ERROR, "tls: CA file %s is not a PEM certificate: %s", path, what);
    rc = NQ_EINVAL;
  }
  free(text);
  return rc;
}

int nq_tls_ctx_client_new(const char *ca_pem_path, nq_tls_ctx_t **out) {
  if (!out) return NQ_EINVAL;
  *out = NULL;
  nq_tls_ctx_t *c = NULL;
  char err[256];
  int r = ca_pem_path ? ca_file_check(ca_pem_path) : 0;
  if (r < 0 || (r = ctx_new(0, &c)) < 0) goto out;

  ERR_clear_error();
  int ok = ca_pem_path ? SSL_CTX_load_verify_locations(c->ssl, ca_pem_path, NULL)
                       : SSL_CTX_set_default_verify_paths(c->ssl);
  if (ok != 1) {
    nq_log(NQ_LOG_ERROR, "tls: cannot load CA %s: %s", ca_pem_path ? ca_pem_path : "(default)",
           nq_tls_errors(err, sizeof err));
    r = NQ_ETLS;
    goto out;
  }
  /* Verification is never optional: the host name is pinned per connection. */
  SSL_CTX_set_verify(c->ssl, SSL_VERIFY_PEER, NULL);
  SSL_CTX_set_session_cache_mode(c->ssl, SSL_SESS_CACHE_OFF);
  *out = c;
  c = NULL;
  r = 0;
out:
  nq_tls_ctx_free(c);
  return r;
}

void nq_tls_ctx_free(nq_tls_ctx_t *ctx) {
  if (!ctx) return;
  SSL_CTX_free(ctx->ssl);
  free(ctx);
}

int nq_tls_ctx_is_server(const nq_tls_ctx_t *ctx) {
  return ctx && ctx->is_server;
}

struct ssl_ctx_st *nq_tls_ctx_ssl(const nq_tls_ctx_t *ctx) {
  return ctx ? ctx->ssl : NULL;
}

int nq_tls_ctx_leaf(const nq_tls_ctx_t *ctx, int64_t *not_after, char *names, size_t len) {
  if (names && len) names[0] = '\0';
  if (!ctx || !ctx->is_server || !not_after) return NQ_EINVAL;
  X509 *leaf = SSL_CTX_get0_certificate(ctx->ssl);
  if (!leaf) return NQ_ENOTFOUND;
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  ERR_clear_error();
  if (ASN1_TIME_to_tm(X509_get0_notAfter(leaf), &tm) != 1) {
    ERR_clear_error();
    return NQ_ETLS;
  }
  *not_after = (int64_t)timegm(&tm);
  if (names && len >= 16) nq_tls_cert_names(leaf, names, len);
  return 0;
}
/* ---- pinning a client connection to the server's name ---------------------------------------- */

/* A certificate refused for its name is kept on its SSL (ex_data, freed with it): a failed
 * handshake leaves no peer certificate to ask, and the error should list the names it does carry. */
static int mismatch_idx = -1;

static void mismatch_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
                          void *argp) {
  (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
  X509_free(ptr);
}

static int mismatch_index(void) {
  /* First use is on the caller's thread before any handshake; OpenSSL's index allocation is
   * itself locked, so two first uses at once only waste an index. */
  if (mismatch_idx < 0)
    mismatch_idx = SSL_get_ex_new_index(0, "nq: name-mismatched leaf", NULL, NULL, mismatch_free);
  return mismatch_idx;
}

/* OpenSSL's verification, unchanged, except that a certificate refused for the name is kept. */
static int pin_verify_cb(int ok, X509_STORE_CTX *x) {
  int e = X509_STORE_CTX_get_error(x);
  if (ok || (e != X509_V_ERR_HOSTNAME_MISMATCH && e != X509_V_ERR_IP_ADDRESS_MISMATCH)) return ok;
  SSL *ssl = X509_STORE_CTX_get_ex_data(x, SSL_get_ex_data_X509_STORE_CTX_idx());
  X509 *leaf = X509_STORE_CTX_get0_cert(x);
  int idx = mismatch_index();
  if (ssl && idx >= 0 && !SSL_get_ex_data(ssl, idx) && leaf && X509_up_ref(leaf) &&
      !SSL_set_ex_data(ssl, idx, leaf))
    X509_free(leaf);
  return ok;
}

int nq_tls_pin_peer(struct ssl_st *ssl, const char *hostname) {
  unsigned char ip[16];
  ERR_clear_error();
  if (mismatch_index() < 0) return NQ_ETLS;
  if (inet_pton(AF_INET, hostname, ip) == 1 || inet_pton(AF_INET6, hostname, ip) == 1) {
    if (!X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), hostname)) return NQ_ETLS;
  } else {
    if (!SSL_set_tlsext_host_name(ssl, hostname)) return NQ_ETLS;
    if (!SSL_set1_host(ssl, hostname)) return NQ_ETLS;
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  }
  SSL_set_verify(ssl, SSL_VERIFY_PEER, pin_verify_cb);
  return 0;
}

char *nq_tls_handshake_error(const struct ssl_st *ssl, char *buf, size_t len) {
  long vr = SSL_get_verify_result(ssl);
  if (vr == X509_V_ERR_HOSTNAME_MISMATCH || vr == X509_V_ERR_IP_ADDRESS_MISMATCH) {
    /* Say which names the certificate does carry: the operator's fix is to add one, or the
     * volunteer's to dial one of these. */
    char names[200];
    const X509 *leaf = mismatch_idx >= 0 ? SSL_get_ex_data(ssl, mismatch_idx) : NULL;
    snprintf(buf, len, "certificate verify failed: %s (the certificate names: %s)",
             X509_verify_cert_error_string(vr), nq_tls_cert_names(leaf, names, sizeof names));
    ERR_clear_error();
  } else if (vr != X509_V_OK) {
    snprintf(buf, len, "certificate verify failed: %s", X509_verify_cert_error_string(vr));
    ERR_clear_error();
  } else {
    nq_tls_errors(buf, len);
  }
  return buf;
}
