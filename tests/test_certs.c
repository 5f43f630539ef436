/* Certificates, tokens and the TLS contexts' settings (common/net/certs.c, common/net/tls.c), and the log
 * levels: what needs no connection. Connections are tests/test_tls.c. */
#include "nq/certs.h"
#include "nq/hash.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/tls.h"
#include "testutil.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- certificates and tokens ---- */

static X509 *read_cert(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
  fclose(f);
  ck_assert_ptr_nonnull(x);
  return x;
}

static mode_t file_mode(const char *dir, const char *name) {
  char path[512];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  ck_assert_int_eq(stat(path, &st), 0);
  return st.st_mode & 0777;
}

START_TEST(certs_ensure) {
  char *dir = tu_tmpdir("certs");
  const char *bad[] = {"ok.example.org", "bad name,DNS:evil", NULL};
  ck_assert_int_eq(nq_certs_ensure(dir, bad), NQ_EINVAL);
  char path[512];
  snprintf(path, sizeof path, "%s/ca.key", dir);
  ck_assert_int_ne(access(path, F_OK), 0); /* nothing was written */

  const char *names[] = {"nq.example.org", "10.1.2.3", "::1", "localhost", NULL};
  ck_assert_int_eq(nq_certs_ensure(dir, names), 0);
  ck_assert_int_eq(file_mode(dir, "ca.key"), 0600);
  ck_assert_int_eq(file_mode(dir, "server.key"), 0600);
  X509 *ca = read_cert(dir, "ca.pem");
  X509 *srv = read_cert(dir, "server.pem");
  ck_assert_int_eq(X509_check_ca(ca), 1);
  ck_assert_int_eq(X509_check_ca(srv), 0);
  EVP_PKEY *capub = X509_get0_pubkey(ca);
  ck_assert_int_eq(X509_verify(srv, capub), 1);
  ck_assert_int_eq(X509_check_host(srv, "localhost", 0, 0, NULL), 1);
  ck_assert_int_eq(X509_check_host(srv, "nq.example.org", 0, 0, NULL), 1);
  ck_assert_int_eq(X509_check_host(srv, "other.example.org", 0, 0, NULL), 0);
  ck_assert_int_eq(X509_check_ip_asc(srv, "127.0.0.1", 0), 1);
  ck_assert_int_eq(X509_check_ip_asc(srv, "10.1.2.3", 0), 1);
  ck_assert_int_eq(X509_check_ip_asc(srv, "::1", 0), 1);
  ck_assert_int_eq(X509_check_ip_asc(srv, "10.1.2.4", 0), 0);

  /* A second run changes nothing. */
  ck_assert_int_eq(nq_certs_ensure(dir, NULL), 0);
  X509 *srv2 = read_cert(dir, "server.pem");
  ck_assert_int_eq(X509_cmp(srv, srv2), 0);
  X509_free(srv2);

  /* A lost server certificate is reissued by the same CA for the existing key. */
  snprintf(path, sizeof path, "%s/server.pem", dir);
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(nq_certs_ensure(dir, NULL), 0);
  srv2 = read_cert(dir, "server.pem");
  ck_assert_int_ne(X509_cmp(srv, srv2), 0);
  ck_assert_int_eq(X509_verify(srv2, capub), 1);
  ck_assert_int_eq(EVP_PKEY_eq(X509_get0_pubkey(srv), X509_get0_pubkey(srv2)), 1);
  X509_free(srv2);

  /* A certificate without its key cannot be completed. */
  snprintf(path, sizeof path, "%s/server.key", dir);
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(nq_certs_ensure(dir, NULL), NQ_EINVAL);

  X509_free(srv);
  X509_free(ca);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* --hostname on an existing directory: a name the server certificate lacks is added by issuing
 * it again from the CA (same key, old names kept); a certificate from elsewhere is left alone. */
START_TEST(certs_names_added_later) {
  char *dir = tu_tmpdir("certnames");
  ck_assert_int_eq(nq_certs_ensure(dir, NULL), 0);
  X509 *ca = read_cert(dir, "ca.pem");
  X509 *srv = read_cert(dir, "server.pem");
  char names[256];
  ck_assert_str_eq(nq_tls_cert_names(srv, names, sizeof names), "localhost, 127.0.0.1");
  ck_assert_int_eq(X509_check_host(srv, "nq.example.org", 0, 0, NULL), 0);

  const char *more[] = {"nq.example.org", "127.0.0.2", NULL};
  ck_assert_int_eq(nq_certs_ensure(dir, more), 0);
  X509 *srv2 = read_cert(dir, "server.pem");
  ck_assert_int_ne(X509_cmp(srv, srv2), 0);
  ck_assert_int_eq(X509_verify(srv2, X509_get0_pubkey(ca)), 1);
  ck_assert_int_eq(EVP_PKEY_eq(X509_get0_pubkey(srv), X509_get0_pubkey(srv2)), 1);
  ck_assert_int_eq(X509_check_host(srv2, "nq.example.org", 0, 0, NULL), 1);
  ck_assert_int_eq(X509_check_ip_asc(srv2, "127.0.0.2", 0), 1);
  ck_assert_int_eq(X509_check_host(srv2, "localhost", 0, 0, NULL), 1);
  ck_assert_str_eq(nq_tls_cert_names(srv2, names, sizeof names),
                   "localhost, 127.0.0.1, nq.example.org, 127.0.0.2");
  ck_assert_int_eq(file_mode(dir, "server.pem"), 0644);

  /* Fewer names later: the old ones stay and nothing is issued. */
  const char *fewer[] = {"127.0.0.2", NULL};
  ck_assert_int_eq(nq_certs_ensure(dir, fewer), 0);
  X509 *srv3 = read_cert(dir, "server.pem");
  ck_assert_int_eq(X509_cmp(srv2, srv3), 0);
  X509_free(srv3);

  /* A short buffer ends the list in "...". */
  char small[24];
  ck_assert_str_eq(nq_tls_cert_names(srv2, small, sizeof small), "localhost, ...");

  /* A certificate (and key) from another CA: kept as it is, whatever names are asked for. */
  char *other = tu_tmpdir("certother");
  ck_assert_int_eq(nq_certs_ensure(other, NULL), 0);
  char from[512], to[512];
  const char *files[] = {"server.pem", "server.key"};
  for (int i = 0; i < 2; i++) {
    snprintf(from, sizeof from, "%s/%s", other, files[i]);
    snprintf(to, sizeof to, "%s/%s", dir, files[i]);
    ck_assert_int_eq(rename(from, to), 0);
  }
  X509 *foreign = read_cert(dir, "server.pem");
  const char *third[] = {"third.example.org", NULL};
  ck_assert_int_eq(nq_certs_ensure(dir, third), 0);
  X509 *kept = read_cert(dir, "server.pem");
  ck_assert_int_eq(X509_cmp(foreign, kept), 0);
  X509_free(kept);
  X509_free(foreign);
  tu_rmtree(other);
  free(other);

  X509_free(srv2);
  X509_free(srv);
  X509_free(ca);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(tokens_and_hashes) {
  char a[65], b[65];
  ck_assert_int_eq(nq_random_token(a, 32), 0);
  ck_assert_int_eq(nq_random_token(b, 32), 0);
  ck_assert_uint_eq(strlen(a), 64);
  ck_assert_uint_eq(strspn(a, "0123456789abcdef"), 64);
  ck_assert_str_ne(a, b);
  ck_assert_int_eq(nq_random_token(a, 0), NQ_EINVAL);

  char h[65];
  ck_assert_int_eq(nq_sha256_hex("abc", h), 0);
  ck_assert_str_eq(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  ck_assert_int_eq(nq_sha256_hex("", h), 0);
  ck_assert_str_eq(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  ck_assert(nq_secure_streq(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  ck_assert(!nq_secure_streq(h, "e3b0"));
  ck_assert(!nq_secure_streq(h, NULL));
}
END_TEST

START_TEST(log_levels) {
  ck_assert_int_eq(nq_log_parse_level("debug"), NQ_LOG_DEBUG);
  ck_assert_int_eq(nq_log_parse_level("WARN"), NQ_LOG_WARN);
  ck_assert_int_eq(nq_log_parse_level("0"), NQ_LOG_ERROR);
  ck_assert_int_eq(nq_log_parse_level("loud"), NQ_EINVAL);
  setenv("NQ_LOG_LEVEL", "error", 1);
  nq_log_init("/some/path/nq-test", NQ_LOG_DEBUG);
  ck_assert_int_eq(nq_log_get_level(), NQ_LOG_ERROR);
  ck_assert(!nq_log_enabled(NQ_LOG_INFO));
  unsetenv("NQ_LOG_LEVEL");
  nq_log_init(NULL, NQ_LOG_INFO);
  ck_assert_int_eq(nq_log_get_level(), NQ_LOG_INFO);
  nq_log(NQ_LOG_INFO, "a line with a newline\nand a tab\tstays one line");
}
END_TEST

/* ---- no session resumption (docs/tls.md) ---- */

/* One handshake between a client SSL and a server SSL joined by a BIO pair, in memory. */
static int pair_handshake(SSL *cl, SSL *sv) {
  BIO *a = NULL, *b = NULL;
  if (!BIO_new_bio_pair(&a, 0, &b, 0)) return -1;
  SSL_set_bio(cl, a, a);
  SSL_set_bio(sv, b, b);
  SSL_set_connect_state(cl);
  SSL_set_accept_state(sv);
  int cdone = 0, sdone = 0;
  for (int i = 0; i < 100 && !(cdone && sdone); i++) {
    if (!cdone) {
      int r = SSL_do_handshake(cl);
      if (r == 1) cdone = 1;
      else if (SSL_get_error(cl, r) != SSL_ERROR_WANT_READ) return -1;
    }
    if (!sdone) {
      int r = SSL_do_handshake(sv);
      if (r == 1) sdone = 1;
      else if (SSL_get_error(sv, r) != SSL_ERROR_WANT_READ) return -1;
    }
  }
  /* TLS 1.3 sends tickets after the handshake: let the client read whatever came. */
  char buf[64];
  SSL_read(cl, buf, sizeof buf);
  ERR_clear_error();
  return cdone && sdone ? 0 : -1;
}

/* A client that caches and offers sessions (unlike ours) connects twice to the server context
 * with protocol version `ver`; the second handshake must be a full one. */
static void no_resumption(int ver) {
  char *dir = tu_tmpdir("resume");
  ck_assert_ptr_nonnull(dir);
  ck_assert_int_eq(nq_certs_ensure(dir, NULL), 0);
  char cert[600], key[600];
  snprintf(cert, sizeof cert, "%s/" NQ_CERTS_SERVER_CERT, dir);
  snprintf(key, sizeof key, "%s/" NQ_CERTS_SERVER_KEY, dir);
  nq_tls_ctx_t *sctx;
  ck_assert_int_eq(nq_tls_ctx_server_new(cert, key, &sctx), 0);
  SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
  ck_assert_ptr_nonnull(cctx);
  SSL_CTX_set_min_proto_version(cctx, ver);
  SSL_CTX_set_max_proto_version(cctx, ver);
  SSL_CTX_set_session_cache_mode(cctx, SSL_SESS_CACHE_CLIENT);
  SSL_SESSION *sess = NULL;
  for (int round = 0; round < 2; round++) {
    SSL *cl = SSL_new(cctx), *sv = SSL_new(nq_tls_ctx_ssl(sctx));
    ck_assert(cl && sv);
    if (sess) ck_assert_int_eq(SSL_set_session(cl, sess), 1);
    ck_assert_msg(pair_handshake(cl, sv) == 0, "handshake %d failed", round);
    ck_assert_int_eq(SSL_version(cl), ver);
    if (round == 0) {
      sess = SSL_get1_session(cl);
      ck_assert_ptr_nonnull(sess);
      ck_assert_msg(!SSL_SESSION_has_ticket(sess), "the server issued a session ticket");
    } else {
      ck_assert_msg(!SSL_session_reused(cl) && !SSL_session_reused(sv),
                    "the server resumed a session");
    }
    SSL_free(cl);
    SSL_free(sv);
  }
  SSL_SESSION_free(sess);
  SSL_CTX_free(cctx);
  nq_tls_ctx_free(sctx);
  tu_rmtree(dir);
  free(dir);
}

START_TEST(no_session_resumption) {
  no_resumption(TLS1_2_VERSION);
  no_resumption(TLS1_3_VERSION);
}
END_TEST

int main(void) {
  nq_log_init("test_certs", NQ_LOG_WARN);
  Suite *s = suite_create("certs");
  TCase *tc = tcase_create("certs");
  tcase_set_timeout(tc, 15);
  tcase_add_test(tc, certs_ensure);
  tcase_add_test(tc, certs_names_added_later);
  tcase_add_test(tc, tokens_and_hashes);
  tcase_add_test(tc, log_levels);
  tcase_add_test(tc, no_session_resumption);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
