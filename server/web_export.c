/* nq-server: /api/export's writer thread (contracts in web_export.h). */
#include "web_export.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "store_api.h"

static atomic_int streams; /* writers running */

typedef struct {
  char path[1024];
  int64_t job_id, now;
  nq_ev_distinct_t distinct;
  int names; /* real names, not pseudonyms */
  int fd;    /* the pipe's write end */
} ex_job_t;

static void *writer_main(void *arg) {
  ex_job_t *j = arg;
  /* A reader that leaves closes the pipe: the write fails with EPIPE instead of a signal that
   * would stop the server (the signal is directed at this thread, which blocks it). */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  char err[512] = "";
  srv_store_t *st = NULL;
  FILE *f = fdopen(j->fd, "w");
  int rc = f ? srv_store_open(&st, j->path, NULL, err, sizeof err) : NQ_EIO;
  if (rc == 0) {
    nq_admin_export_t info;
    rc = srv_export_write(st, j->job_id, j->distinct, j->names, j->now, f, &info, err, sizeof err);
    if (rc == 0)
      nq_log(NQ_LOG_INFO, "http /api/export: N=%d, %llu units sent", info.n,
             (unsigned long long)info.units);
  }
  if (rc != 0)
    nq_log(NQ_LOG_WARN, "http /api/export stopped: %s", err[0] ? err : nq_strerror(rc));
  if (f) fclose(f);
  else close(j->fd);
  srv_store_close(st);
  free(j);
  atomic_fetch_sub(&streams, 1);
  return NULL;
}

int srv_web_export_start(const char *db_path, int64_t job_id, nq_ev_distinct_t distinct,
                         int names, int64_t now, int *fd, char *err, size_t errlen) {
  if (atomic_fetch_add(&streams, 1) >= SRV_EXPORT_STREAMS) {
    atomic_fetch_sub(&streams, 1);
    snprintf(err, errlen, "%d exports are being sent already", SRV_EXPORT_STREAMS);
    return NQ_EBUSY;
  }
  int p[2] = {-1, -1}, rc = NQ_EIO;
  ex_job_t *j = calloc(1, sizeof *j);
  if (!j) {
    snprintf(err, errlen, "out of memory");
    rc = NQ_ENOMEM;
    goto fail;
  }
  snprintf(j->path, sizeof j->path, "%s", db_path);
  j->job_id = job_id;
  j->now = now;
  j->distinct = distinct;
  j->names = names;
  if (pipe(p) != 0) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    goto fail;
  }
  j->fd = p[1];
  pthread_t t;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  int e = pthread_create(&t, &at, writer_main, j);
  pthread_attr_destroy(&at);
  if (e != 0) {
    snprintf(err, errlen, "thread: %s", strerror(e));
    goto fail;
  }
  *fd = p[0];
  return 0;
fail:
  if (p[0] >= 0) close(p[0]);
  if (p[1] >= 0) close(p[1]);
  free(j);
  atomic_fetch_sub(&streams, 1);
  return rc;
}
