/* nq: private CA + server certificate generation, tokens and hashing (OpenSSL 3 APIs only). */
#include "nq/certs.h"
#include "nq/files.h"
#include "nq/hash.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/tls.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Ten years: nq_certs_ensure never renews, and an expired certificate on a long-running
 * volunteer project would stop every client at once. Rotation is deleting the files. */
#define CERT_DAYS 3650L

/* ---- small helpers ---- */

static int exists(const char *path) {
  return access(path, F_OK) == 0;
}

static int tls_fail(const char *what) {
  char e[200];
  nq_log(NQ_LOG_ERROR, "certs: %s: %s", what, nq_tls_errors(e, sizeof e));
  return NQ_ETLS;
}

static int gen_key(EVP_PKEY **out) {
  ERR_clear_error();
  *out = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
  return *out ? 0 : tls_fail("key generation");
}

/* Read one PEM object from path: a private key when key is given, else a certificate. */
static int load_pem(const char *path, EVP_PKEY **key, X509 **cert) {
  FILE *f = fopen(path, "r");
  if (!f) return NQ_EIO;
  ERR_clear_error();
  int ok = key ? (*key = PEM_read_PrivateKey(f, NULL, NULL, NULL)) != NULL
               : (*cert = PEM_read_X509(f, NULL, NULL, NULL)) != NULL;
  fclose(f);
  if (!ok) {
    tls_fail(path);
    return NQ_EIO;
  }
  return 0;
}

/* Write a PEM object (key, else cert) to dir/name through the durable create-new writer, which
 * never exposes a partial file, never clobbers an existing one, and gives the file exactly `mode`
 * from the start. A key is encoded into OpenSSL's secure-memory BIO, cleansed when freed. */
static int pem_out(const char *dir, const char *name, mode_t mode, EVP_PKEY *key, X509 *cert,
                   int replace) {
  ERR_clear_error();
  BIO *b = BIO_new(key ? BIO_s_secmem() : BIO_s_mem());
  if (!b) return tls_fail(name);
  int r;
  int ok = key ? PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL)
               : PEM_write_bio_X509(b, cert);
  char *data = NULL;
  long len = ok ? BIO_get_mem_data(b, &data) : 0;
  if (!ok || len <= 0) {
    r = tls_fail(name);
    goto out;
  }
  r = replace ? nq_file_replace(dir, name, data, (size_t)len, mode)
              : nq_file_create(dir, name, data, (size_t)len, mode);
  if (r == NQ_EEXIST) nq_log(NQ_LOG_ERROR, "certs: create %s/%s: it exists already", dir, name);
out:
  BIO_free(b);
  return r;
}

static int write_pem(const char *dir, const char *name, mode_t mode, EVP_PKEY *key, X509 *cert) {
  return pem_out(dir, name, mode, key, cert, 0);
}

/* A certificate (never a key) replacing the file of that name atomically. */
static int write_pem_replace(const char *dir, const char *name, X509 *cert) {
  return pem_out(dir, name, 0644, NULL, cert, 1);
}

/* ---- names ---- */

static int dns_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 253) return 0;
  if (s[0] == '*' && s[1] == '.') s += 2; /* one leading wildcard label */
  size_t label = 0;
  for (const char *p = s; *p; p++) {
    char ch = *p;
    if (ch == '.') {
      if (label == 0) return 0;
      label = 0;
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               ch == '-') {
      if (++label > 63) return 0;
    } else {
      return 0;
    }
  }
  return label > 0;
}

static int san_add(GENERAL_NAMES *gens, const char *name) {
  GENERAL_NAME *g = GENERAL_NAME_new();
  if (!g) return NQ_ENOMEM;
  ERR_clear_error();
  ASN1_OCTET_STRING *ip = a2i_IPADDRESS(name);
  ERR_clear_error();
  if (ip) {
    GENERAL_NAME_set0_value(g, GEN_IPADD, ip);
  } else {
    ASN1_IA5STRING *dns = ASN1_IA5STRING_new();
    if (!dns || !ASN1_STRING_set(dns, name, -1)) {
      ASN1_IA5STRING_free(dns);
      GENERAL_NAME_free(g);
      return NQ_ENOMEM;
    }
    GENERAL_NAME_set0_value(g, GEN_DNS, dns);
  }
  if (!sk_GENERAL_NAME_push(gens, g)) {
    GENERAL_NAME_free(g);
    return NQ_ENOMEM;
  }
  return 0;
}

/* SubjectAltNames of the server certificate. Every name is validated here, before anything is
 * generated, so bad input never leaves half a set of files behind. */
static int build_san(const char *const *extra, GENERAL_NAMES **out) {
  *out = NULL;
  GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
  if (!gens) return NQ_ENOMEM;
  int r = san_add(gens, "localhost");
  if (r == 0) r = san_add(gens, "127.0.0.1");
  for (size_t i = 0; r == 0 && extra && extra[i]; i++) {
    const char *name = extra[i];
    ERR_clear_error();
    ASN1_OCTET_STRING *ip = a2i_IPADDRESS(name);
    ERR_clear_error();
    int is_ip = ip != NULL;
    ASN1_OCTET_STRING_free(ip);
    if (!is_ip && !dns_name_ok(name)) {
      nq_log(NQ_LOG_ERROR, "certs: invalid host name '%s'", name);
      r = NQ_EINVAL;
      break;
    }
    int dup = !strcasecmp(name, "localhost") || !strcmp(name, "127.0.0.1");
    for (size_t j = 0; j < i && !dup; j++) dup = !strcasecmp(name, extra[j]);
    if (!dup) r = san_add(gens, name);
  }
  if (r < 0) {
    GENERAL_NAMES_free(gens);
    return r;
  }
  *out = gens;
  return 0;
}

/* ---- certificates ---- */

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
  X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
  if (!ex) return 0;
  int ok = X509_add_ext(cert, ex, -1);
  X509_EXTENSION_free(ex);
  return ok;
}

static int set_serial(X509 *x) {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) return 0;
  b[0] &= 0x7f; /* positive, as RFC 5280 requires */
  b[0] |= 0x40; /* and full length */
  BIGNUM *bn = BN_bin2bn(b, sizeof b, NULL);
  int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
  BN_free(bn);
  return ok;
}

/* Issue a certificate for `key`. With issuer == NULL it is a self-signed CA; otherwise a server
 * certificate signed by issuer/issuer_key and carrying `san`. */
static int make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key,
                     GENERAL_NAMES *san, X509 **out) {
  *out = NULL;
  ERR_clear_error();
  X509 *x = X509_new();
  if (!x) return NQ_ENOMEM;
  int ok = X509_set_version(x, X509_VERSION_3) && set_serial(x) &&
           X509_gmtime_adj(X509_getm_notBefore(x), -3600) && /* tolerate clock skew */
           X509_gmtime_adj(X509_getm_notAfter(x), CERT_DAYS * 86400) &&
           X509_set_pubkey(x, key);
  X509_NAME *name = X509_get_subject_name(x);
  ok = ok &&
       X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"nq", -1, -1,
                                  0) &&
       X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
  ok = ok && X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
  if (!issuer) {
    ok = ok && add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
         add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") &&
         add_ext(x, x, NID_subject_key_identifier, "hash");
  } else {
    ok = ok && add_ext(x, issuer, NID_basic_constraints, "critical,CA:FALSE") &&
         add_ext(x, issuer, NID_key_usage, "critical,digitalSignature") &&
         add_ext(x, issuer, NID_ext_key_usage, "serverAuth") &&
         add_ext(x, issuer, NID_subject_key_identifier, "hash") &&
         add_ext(x, issuer, NID_authority_key_identifier, "keyid:always") &&
         X509_add1_ext_i2d(x, NID_subject_alt_name, san, 0, X509V3_ADD_DEFAULT) == 1;
  }
  ok = ok && X509_sign(x, issuer ? issuer_key : key, EVP_sha256()) > 0;
  if (!ok) {
    X509_free(x);
    return tls_fail(issuer ? "issue server certificate" : "issue CA certificate");
  }
  *out = x;
  return 0;
}

/* Does the certificate carry this SAN entry (a DNS name without regard to case, or an IP)? */
static int cert_has_name(X509 *cert, const GENERAL_NAME *g) {
  int type;
  const ASN1_STRING *v = GENERAL_NAME_get0_value(g, &type);
  if (type == GEN_DNS)
    return X509_check_host(cert, (const char *)ASN1_STRING_get0_data(v),
                           (size_t)ASN1_STRING_length(v), X509_CHECK_FLAG_NO_WILDCARDS,
                           NULL) == 1;
  return X509_check_ip(cert, ASN1_STRING_get0_data(v), (size_t)ASN1_STRING_length(v), 0) == 1;
}

/* Append to dst a copy of each name of src (may be NULL) that dst does not hold yet. */
static int names_append(GENERAL_NAMES *dst, const GENERAL_NAMES *src) {
  for (int i = 0; i < sk_GENERAL_NAME_num(src); i++) {
    GENERAL_NAME *g = sk_GENERAL_NAME_value(src, i);
    int dup = 0;
    for (int j = 0; j < sk_GENERAL_NAME_num(dst) && !dup; j++)
      dup = GENERAL_NAME_cmp(g, sk_GENERAL_NAME_value(dst, j)) == 0;
    if (dup) continue;
    GENERAL_NAME *copy = GENERAL_NAME_dup(g);
    if (!copy || !sk_GENERAL_NAME_push(dst, copy)) {
      GENERAL_NAME_free(copy);
      return NQ_ENOMEM;
    }
  }
  return 0;
}

/* The server certificate at p_sc exists with its key. When it lacks one of the names in `want`
 * (the defaults and --hostname's) and this directory's CA issued it, issue it again for the same
 * key with its old names plus the missing ones, and replace it atomically: `--hostname` on an
 * existing data directory then does what it says. A certificate from elsewhere is left alone,
 * with a warning naming what it lacks. Returns 0 or a negative NQ_E* code. */
static int names_ensure(const char *dir, const char *p_sc, const char *p_sk, const char *p_cac,
                        const char *p_cak, GENERAL_NAMES *want) {
  X509 *cert = NULL, *ca_cert = NULL, *fresh = NULL;
  EVP_PKEY *ca_key = NULL, *key = NULL;
  GENERAL_NAMES *names = NULL;
  char missing[256] = "", have[256], now[512];
  size_t mlen = 0;
  int r = load_pem(p_sc, NULL, &cert);
  if (r < 0) goto out;
  for (int i = 0; i < sk_GENERAL_NAME_num(want); i++) {
    const GENERAL_NAME *g = sk_GENERAL_NAME_value(want, i);
    if (cert_has_name(cert, g)) continue;
    int type;
    const ASN1_STRING *v = GENERAL_NAME_get0_value(g, &type);
    char ip[64];
    const char *nm = (const char *)ASN1_STRING_get0_data(v);
    if (type == GEN_IPADD) {
      int fam = ASN1_STRING_length(v) == 4 ? AF_INET : AF_INET6;
      nm = inet_ntop(fam, ASN1_STRING_get0_data(v), ip, sizeof ip) ? ip : "?";
    }
    if (mlen < sizeof missing)
      mlen += (size_t)snprintf(missing + mlen, sizeof missing - mlen, "%s%s", mlen ? ", " : "",
                               nm);
  }
  ERR_clear_error();
  if (!missing[0]) goto out; /* r == 0: every name is there */
  nq_tls_cert_names(cert, have, sizeof have);
  if (!exists(p_cak) || !exists(p_cac) || load_pem(p_cac, NULL, &ca_cert) < 0 ||
      load_pem(p_cak, &ca_key, NULL) < 0 || X509_check_private_key(ca_cert, ca_key) != 1 ||
      X509_verify(cert, ca_key) != 1) {
    ERR_clear_error();
    nq_log(NQ_LOG_WARN, "certs: %s lacks %s (it names %s) but was not issued by this data "
           "directory's CA, so it is not re-issued: replace it by one that names them",
           p_sc, missing, have);
    r = 0;
    goto out;
  }
  /* The new certificate names what the old one did, then what is missing (in the order asked):
   * clients that dial an old name keep working. */
  names = sk_GENERAL_NAME_new_null();
  GENERAL_NAMES *old = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
  if (names && (names_append(names, old) < 0 || names_append(names, want) < 0)) {
    GENERAL_NAMES_free(names);
    names = NULL;
  }
  GENERAL_NAMES_free(old);
  r = NQ_ENOMEM;
  if (!names) goto out;
  if ((r = load_pem(p_sk, &key, NULL)) < 0) goto out;
  if ((r = make_cert(key, "nq server", ca_cert, ca_key, names, &fresh)) < 0) goto out;
  if ((r = write_pem_replace(dir, NQ_CERTS_SERVER_CERT, fresh)) < 0) goto out;
  nq_log(NQ_LOG_INFO, "certs: re-issued %s from the CA in %s: it lacked %s; it now names %s",
         p_sc, dir, missing, nq_tls_cert_names(fresh, now, sizeof now));
out:
  X509_free(fresh);
  EVP_PKEY_free(key);
  GENERAL_NAMES_free(names);
  EVP_PKEY_free(ca_key);
  X509_free(ca_cert);
  X509_free(cert);
  return r;
}

int nq_certs_ensure(const char *dir, const char *const *extra_names) {
  if (!dir || !*dir) return NQ_EINVAL;
  char p_cac[4096], p_cak[4096], p_sc[4096], p_sk[4096];
  if (nq_path_join(p_cac, sizeof p_cac, dir, NQ_CERTS_CA_CERT) < 0 ||
      nq_path_join(p_cak, sizeof p_cak, dir, NQ_CERTS_CA_KEY) < 0 ||
      nq_path_join(p_sc, sizeof p_sc, dir, NQ_CERTS_SERVER_CERT) < 0 ||
      nq_path_join(p_sk, sizeof p_sk, dir, NQ_CERTS_SERVER_KEY) < 0)
    return NQ_EINVAL;

  GENERAL_NAMES *san = NULL;
  EVP_PKEY *ca_key = NULL, *srv_key = NULL;
  X509 *ca_cert = NULL, *srv_cert = NULL;
  int r = build_san(extra_names, &san);
  if (r < 0) goto out;

  if (exists(p_sc) && exists(p_sk)) {
    /* A complete server identity: kept, unless it lacks a name asked for and our CA made it. */
    r = names_ensure(dir, p_sc, p_sk, p_cac, p_cak, san);
    goto out;
  }
  r = NQ_EINVAL;
  if (exists(p_sc)) {
    nq_log(NQ_LOG_ERROR, "certs: %s exists without %s; remove it or supply the key", p_sc, p_sk);
    goto out;
  }
  if (!exists(p_cak) && exists(p_cac)) {
    nq_log(NQ_LOG_ERROR, "certs: %s exists without %s, cannot sign", p_cac, p_cak);
    goto out;
  }

  /* Keys are written before their certificates: a crash in between leaves a key without a
   * certificate, which the next run completes, never a certificate without its key. */
  if (exists(p_cak)) r = load_pem(p_cak, &ca_key, NULL);
  else if ((r = gen_key(&ca_key)) == 0) r = write_pem(dir, NQ_CERTS_CA_KEY, 0600, ca_key, NULL);
  if (r < 0) goto out;

  if (exists(p_cac)) {
    if ((r = load_pem(p_cac, NULL, &ca_cert)) < 0) goto out;
    if (X509_check_private_key(ca_cert, ca_key) != 1) {
      ERR_clear_error();
      nq_log(NQ_LOG_ERROR, "certs: %s does not match %s", p_cak, p_cac);
      r = NQ_EINVAL;
      goto out;
    }
  } else {
    if ((r = make_cert(ca_key, "nq CA", NULL, NULL, NULL, &ca_cert)) < 0) goto out;
    if ((r = write_pem(dir, NQ_CERTS_CA_CERT, 0644, NULL, ca_cert)) < 0) goto out;
  }

  if (exists(p_sk)) r = load_pem(p_sk, &srv_key, NULL);
  else if ((r = gen_key(&srv_key)) == 0)
    r = write_pem(dir, NQ_CERTS_SERVER_KEY, 0600, srv_key, NULL);
  if (r < 0) goto out;
  if ((r = make_cert(srv_key, "nq server", ca_cert, ca_key, san, &srv_cert)) < 0) goto out;
  if ((r = write_pem(dir, NQ_CERTS_SERVER_CERT, 0644, NULL, srv_cert)) < 0) goto out;
  nq_log(NQ_LOG_INFO, "certs: created server certificate in %s", dir);
  r = 0;
out:
  X509_free(srv_cert);
  EVP_PKEY_free(srv_key);
  X509_free(ca_cert);
  EVP_PKEY_free(ca_key);
  GENERAL_NAMES_free(san);
  return r;
}

int nq_certs_file_names(const char *cert_path, const char *host, char *names, size_t len) {
  X509 *cert = NULL;
  if (names && len) names[0] = '\0';
  if (!cert_path || !host || load_pem(cert_path, NULL, &cert) < 0) return NQ_EIO;
  if (names && len >= 16) nq_tls_cert_names(cert, names, len);
  ERR_clear_error();
  int ok = X509_check_ip_asc(cert, host, 0) == 1 ||
           X509_check_host(cert, host, 0, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS, NULL) == 1;
  ERR_clear_error();
  X509_free(cert);
  return ok;
}

/* ---- tokens ---- */

int nq_random_token(char *buf, size_t bytes) {
  if (!buf || bytes == 0 || bytes > 4096) return NQ_EINVAL;
  unsigned char raw[4096];
  if (RAND_bytes(raw, (int)bytes) != 1) {
    ERR_clear_error();
    return NQ_EIO;
  }
  nq_hex_encode(raw, bytes, buf);
  OPENSSL_cleanse(raw, bytes);
  return 0;
}
