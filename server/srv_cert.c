/* nq-server: the server certificate's reloads and expiry (see srv_cert.h). */
#include "srv_cert.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "admin_api.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/tls.h"
#include "srv.h"

#define DAY 86400

/* What a file looked like: a change of any of these is a change of the file (an ACME client
 * renews by writing new files and moving a symlink; stat follows it). */
typedef struct file_sig_s {
  dev_t dev;
  ino_t ino;
  off_t size;
  int64_t mtime_ns;
  int ok; /* stat succeeded */
} file_sig_t;

struct srv_cert_s {
  srv_t *srv;
  uv_timer_t timer;
  uv_signal_t sighup;
  int open;             /* handles not yet closed; freed when it reaches 0 after stop */
  int stopped;
  const char *cert, *key;
  file_sig_t cert_sig, key_sig;
  int64_t not_after;
  int64_t warned_at;    /* when the last expiry WARN was logged (0: never) */
};

static void sig_of(const char *path, file_sig_t *out) {
  struct stat st;
  memset(out, 0, sizeof *out);
  if (stat(path, &st) != 0) return;
  out->ok = 1;
  out->dev = st.st_dev;
  out->ino = st.st_ino;
  out->size = st.st_size;
  out->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

static int sig_same(const file_sig_t *a, const file_sig_t *b) {
  return a->ok == b->ok && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime_ns == b->mtime_ns;
}

/* The expiry WARN: at load, and then at most once a day while it stays close. */
static void warn_expiry(srv_cert_t *c, int64_t now) {
  int64_t left = c->not_after - now;
  if (left >= (int64_t)c->srv->cfg.cert_warn_days * DAY) return;
  if (c->warned_at && now - c->warned_at < DAY) return;
  c->warned_at = now;
  if (left <= 0)
    nq_log(NQ_LOG_WARN, "certificate %s EXPIRED %lld day(s) ago: clients refuse it; renew it "
           "and send the server SIGHUP", c->cert, (long long)(-left / DAY));
  else
    nq_log(NQ_LOG_WARN, "certificate %s expires in %lld day(s) (%.1f): renew it (an ACME client "
           "such as certbot does) and the server re-reads it", c->cert, (long long)(left / DAY),
           (double)left / DAY);
}

/* Record the certificate in use for `nq-admin status` (both modes read the store). */
static void record(srv_cert_t *c, const char *names) {
  srv_t *s = c->srv;
  char v[SRV_DATADIR_PATH_MAX + 64];
  snprintf(v, sizeof v, "%lld %d %s", (long long)c->not_after, s->cfg.cert_warn_days, c->cert);
  if (srv_store_in_tx(s->store) || srv_meta_set(s->store, SRV_META_TLS_CERT, v) != 0 ||
      srv_meta_set(s->store, SRV_META_TLS_CERT_NAMES, names) != 0)
    nq_log(NQ_LOG_WARN, "recording the certificate's expiry: %s", srv_store_errmsg(s->store));
}

/* A new context from the files; on success it replaces s->tls. */
static int load(srv_cert_t *c, char *errbuf, size_t errlen) {
  srv_t *s = c->srv;
  nq_tls_ctx_t *t = NULL;
  char names[512];
  int64_t not_after = 0;
  /* Signatures first: a file that changes while it is read is read again next time. */
  sig_of(c->cert, &c->cert_sig);
  sig_of(c->key, &c->key_sig);
  int rc = nq_tls_ctx_server_new(c->cert, c->key, &t);
  if (rc == 0) rc = nq_tls_ctx_leaf(t, &not_after, names, sizeof names);
  if (rc != 0) {
    snprintf(errbuf, errlen, "TLS context from %s and %s: %s", c->cert, c->key,
             nq_strerror(rc));
    nq_tls_ctx_free(t);
    return rc;
  }
  nq_tls_ctx_free(s->tls); /* open connections keep their own reference (tls.h) */
  s->tls = t;
  c->not_after = not_after;
  c->warned_at = 0;
  record(c, names);
  int64_t now = nq_now_wall();
  nq_log(NQ_LOG_INFO, "certificate %s: names %s; expires in %lld day(s)", c->cert, names,
         (long long)((not_after - now) / DAY));
  warn_expiry(c, now);
  return 0;
}

int srv_cert_reload(srv_t *s, const char *why) {
  srv_cert_t *c = s->cert;
  char err[SRV_DATADIR_PATH_MAX * 2 + 64];
  if (!c) return NQ_EINVAL;
  int rc = load(c, err, sizeof err);
  if (rc == 0)
    nq_log(NQ_LOG_INFO, "certificate reloaded (%s): new connections get it, open ones keep "
           "theirs", why);
  else
    nq_log(NQ_LOG_ERROR, "certificate reload (%s) failed, the old one stays in use: %s", why,
           err);
  return rc;
}

static void on_timer(uv_timer_t *t) {
  srv_cert_t *c = t->data;
  file_sig_t a, b;
  sig_of(c->cert, &a);
  sig_of(c->key, &b);
  if (!sig_same(&a, &c->cert_sig) || !sig_same(&b, &c->key_sig))
    srv_cert_reload(c->srv, "the files changed");
  else
    warn_expiry(c, nq_now_wall());
}

static void on_hup(uv_signal_t *h, int signum) {
  (void)signum;
  srv_cert_t *c = h->data;
  srv_cert_reload(c->srv, "SIGHUP");
}

static void on_closed(uv_handle_t *h) {
  srv_cert_t *c = h->data;
  if (--c->open == 0) free(c);
}

int srv_cert_start(srv_t *s, char *errbuf, size_t errlen) {
  srv_cert_t *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(errbuf, errlen, "out of memory");
    return NQ_ENOMEM;
  }
  c->srv = s;
  c->cert = s->cfg.cert_file ? s->cfg.cert_file : s->dd.server_cert;
  c->key = s->cfg.key_file ? s->cfg.key_file : s->dd.server_key;
  int rc = load(c, errbuf, errlen);
  if (rc != 0) {
    free(c);
    return rc;
  }
  s->cert = c;
  uv_timer_init(s->loop, &c->timer);
  c->timer.data = c;
  c->open++;
  uint64_t every = (uint64_t)s->cfg.cert_check * 1000;
  uv_timer_start(&c->timer, on_timer, every, every);
  if (s->cfg.handle_signals) {
    uv_signal_init(s->loop, &c->sighup);
    c->sighup.data = c;
    c->open++;
    int r = uv_signal_start(&c->sighup, on_hup, SIGHUP);
    if (r != 0) nq_log(NQ_LOG_WARN, "SIGHUP handler: %s", uv_strerror(r));
  }
  return 0;
}

int64_t srv_cert_not_after(const srv_t *s) {
  return s->cert ? s->cert->not_after : 0;
}

void srv_cert_stop(srv_t *s) {
  srv_cert_t *c = s->cert;
  if (!c) return;
  s->cert = NULL;
  uv_close((uv_handle_t *)&c->timer, on_closed);
  if (s->cfg.handle_signals) uv_close((uv_handle_t *)&c->sighup, on_closed);
}
