/* nq-server: the data directory -- database, certificates and the two operator secrets.
 *
 * Layout (created on first start, the directory with mode 0700):
 *   nq.db                       the SQLite store
 *   ca.pem ca.key               the private CA (nq_certs_ensure); clients get ca.pem
 *   server.pem server.key       the server certificate and key
 *   enrol.key                   the enrolment key (mode 0600): volunteers enrol with it
 *   admin.token                 the admin token (mode 0600): nq-admin authenticates with it
 *   nq-server.lock              locked (flock) by the server that owns the directory; holds its pid
 * Secrets are random hex made once and kept; the database holds only their SHA-256
 * (meta keys SRV_META_ENROL_HASH and SRV_META_ADMIN_HASH), refreshed from the files on each start.
 */
#ifndef SRV_DATADIR_H
#define SRV_DATADIR_H

#include <stddef.h>

#include "store_api.h"

#define SRV_DATADIR_PATH_MAX 1024
#define SRV_SECRET_BYTES 32 /* random bytes per secret: 64 hex characters */
#define SRV_ENROL_FILE "enrol.key"
#define SRV_ADMIN_FILE "admin.token"
#define SRV_DB_FILE "nq.db"
#define SRV_LOCK_FILE "nq-server.lock"
#define SRV_META_ENROL_HASH "enrol_key_hash"
#define SRV_META_ADMIN_HASH "admin_token_hash"

typedef struct srv_datadir_s {
  char dir[SRV_DATADIR_PATH_MAX];
  char db[SRV_DATADIR_PATH_MAX];
  char ca_cert[SRV_DATADIR_PATH_MAX];
  char server_cert[SRV_DATADIR_PATH_MAX];
  char server_key[SRV_DATADIR_PATH_MAX];
  char enrol_key[SRV_DATADIR_PATH_MAX];
  char admin_token[SRV_DATADIR_PATH_MAX];
  char enrol_hash[65]; /* SHA-256 hex of the enrolment key */
  char admin_hash[65]; /* SHA-256 hex of the admin token */
  int created;         /* the directory did not exist before */
  int lock_fd;         /* holds SRV_LOCK_FILE's lock; -1 when not held */
} srv_datadir_t;

/* Create dir (mode 0700) if missing, or take group/other permissions off an existing one
 * (0700; the database, its -wal/-shm, the keys and secrets 0600; each change is logged as a
 * warning), take its lock (a second server on the same directory gets NQ_EBUSY with a
 * message naming the holder's pid), make the certificates (server cert naming localhost,
 * 127.0.0.1 and extra_names, NULL-terminated or NULL) and the secrets if missing, and fill dd.
 * Returns 0, NQ_EINVAL (path too long, bad name), NQ_EIO, NQ_ETLS; errbuf says why. */
int srv_datadir_init(srv_datadir_t *dd, const char *dir, const char *const *extra_names,
                     char *errbuf, size_t errlen);

/* Before srv_datadir_init: a data directory whose database has enrolled clients but lacks its
 * CA (ca.pem or ca.key) -- a backup restored without them -- would get a new CA, which every
 * client refuses (it pins the old one): NQ_EINVAL, errbuf naming the files to put back, unless
 * new_ca (nq-server --new-ca). 0 otherwise (no database, no client, or the CA is there). */
int srv_datadir_ca_check(const char *dir, int new_ca, char *errbuf, size_t errlen);

/* Release the directory's lock (when held). */
void srv_datadir_close(srv_datadir_t *dd);

/* Take the lock of data directory `dir` (nq-admin, before it rewrites a job without a server):
 * 0 and *fd to close later; NQ_EBUSY (a server runs on it: errbuf names its pid), NQ_EIO. */
int srv_datadir_lock(const char *dir, int *fd, char *errbuf, size_t errlen);

/* Store the secrets' hashes in the database's meta table. */
int srv_datadir_store_hashes(const srv_datadir_t *dd, srv_store_t *st);

#endif
