/* nq-client: the on-disk journal of finished results, the list of received assignments and the
 * stored token. See journal.h for the layout and the crash-safety argument. */
#include "journal.h"

#include "nq/files.h"
#include "nq/frame.h"
#include "nq/proto.h"
#include "nq/log.h"
#include "nq/nq.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FILE_MAX 8192 /* no journal file is anywhere near this; bigger ones are corrupt */

/* A new malloc'd "a/b" (entries are listed and removed by name). */
static char *path_join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *p = malloc(n);
  if (p && nq_path_join(p, n, a, b) != 0) {
    free(p);
    p = NULL;
  }
  return p;
}

/* Remove dot-files ending in ".tmp" left by a crash between open and rename. */
static void sweep_tmp(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (e->d_name[0] == '.' && l > 5 && !strcmp(e->d_name + l - 4, ".tmp")) {
      char *p = path_join(dir, e->d_name);
      if (p && unlink(p) == 0) nq_log(NQ_LOG_INFO, "removed torn temporary file %s", p);
      free(p);
    }
  }
  closedir(d);
}

int cli_journal_open(const char *state_dir, cli_journal_t *j) {
  memset(j, 0, sizeof *j);
  if (!state_dir || !*state_dir) return NQ_EINVAL;
  j->dir = strdup(state_dir);
  j->results_dir = path_join(state_dir, "journal");
  j->assigned_dir = path_join(state_dir, "assigned");
  j->ckpt_dir = path_join(state_dir, "checkpoint");
  if (!j->dir || !j->results_dir || !j->assigned_dir || !j->ckpt_dir) {
    cli_journal_close(j);
    return NQ_ENOMEM;
  }
  const char *dirs[4] = {j->dir, j->results_dir, j->assigned_dir, j->ckpt_dir};
  for (int i = 0; i < 4; i++) {
    if (nq_mkdir_p(dirs[i], 0700) != 0) {
      nq_log(NQ_LOG_ERROR, "cannot create state directory %s: %s", dirs[i], strerror(errno));
      cli_journal_close(j);
      return NQ_EIO;
    }
  }
  /* Two clients on one directory would run each other's assignments and journal. */
  long holder = 0;
  int rc = nq_dir_lock(j->dir, CLI_LOCK_FILE, &j->lock_fd, &holder);
  if (rc) {
    if (rc == NQ_EBUSY)
      nq_log(NQ_LOG_ERROR, "state directory %s is in use by another nq-client (pid %ld; lock "
             "%s/%s)", j->dir, holder, j->dir, CLI_LOCK_FILE);
    cli_journal_close(j);
    return rc == NQ_EBUSY ? rc : NQ_EIO;
  }
  j->locked = 1;
  sweep_tmp(j->results_dir);
  sweep_tmp(j->assigned_dir);
  sweep_tmp(j->ckpt_dir);
  sweep_tmp(j->dir);
  return 0;
}

void cli_journal_close(cli_journal_t *j) {
  if (j->locked) close(j->lock_fd);
  free(j->dir);
  free(j->results_dir);
  free(j->assigned_dir);
  free(j->ckpt_dir);
  memset(j, 0, sizeof *j);
}

/* ---- generic entries: one JSON object per id ---- */

static void entry_name(int64_t id, char *buf, size_t len) {
  snprintf(buf, len, "%" PRId64 ".json", id);
}

static void ckpt_name(int64_t id, char *buf, size_t len) {
  snprintf(buf, len, "%" PRId64 ".ckpt", id);
}

static int entry_put(const char *dir, int64_t id, json_t *o, int durable) {
  if (!o) return NQ_ENOMEM;
  char *s = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  if (!s) return NQ_ENOMEM;
  char name[64];
  entry_name(id, name, sizeof name);
  size_t len = strlen(s);
  s[len] = '\n'; /* replaces the terminator; the length below includes it */
  int rc = durable ? nq_file_replace(dir, name, s, len + 1, 0600)
                   : nq_file_replace_volatile(dir, name, s, len + 1, 0600);
  free(s);
  return rc;
}

/* Remove dir/name; NQ_ENOTFOUND if it is not there. */
static int file_remove(const char *dir, const char *name) {
  char *p = path_join(dir, name);
  if (!p) return NQ_ENOMEM;
  int rc = 0;
  if (unlink(p) != 0) rc = errno == ENOENT ? NQ_ENOTFOUND : NQ_EIO;
  free(p);
  /* The unlink need not be durable at once: an entry that comes back after a crash is only
   * re-sent (and answered "duplicate") or re-run, never lost. */
  return rc;
}

static int entry_remove(const char *dir, int64_t id) {
  char name[64];
  entry_name(id, name, sizeof name);
  return file_remove(dir, name);
}

/* Parse "<digits><ext>" (ext ".json" or ".ckpt") into an id; 0 for names that are not that. */
static int name_id(const char *name, const char *ext, int64_t *id) {
  size_t l = strlen(name), e = strlen(ext);
  if (l < e + 1 || l > e + 20 || strcmp(name + l - e, ext) != 0) return 0;
  int64_t v = 0;
  for (size_t i = 0; i < l - e; i++) {
    if (name[i] < '0' || name[i] > '9') return 0;
    if (v > (INT64_MAX - 9) / 10) return 0;
    v = v * 10 + (name[i] - '0');
  }
  *id = v;
  return 1;
}

typedef int (*entry_parse_fn)(const json_t *o, int64_t id, void *slot);

/* Read every entry of dir, parse it into slots of elem_size bytes via parse, sorted by the file
 * name's id. Corrupt files are logged, renamed "<name>.bad" and counted. */
static int entry_list(const char *dir, const char *what, size_t elem_size, entry_parse_fn parse,
                      void **out, size_t *n_out, size_t *corrupt) {
  *out = NULL;
  *n_out = 0;
  if (corrupt) *corrupt = 0;
  DIR *d = opendir(dir);
  if (!d) {
    nq_log(NQ_LOG_ERROR, "cannot read %s: %s", dir, strerror(errno));
    return NQ_EIO;
  }
  int rc = 0;
  char *v = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int64_t id;
    if (!name_id(e->d_name, ".json", &id)) continue;
    char *p = path_join(dir, e->d_name);
    if (!p) {
      rc = NQ_ENOMEM;
      break;
    }
    char *text = NULL;
    size_t len = 0;
    json_t *o = NULL;
    int r = nq_file_read(p, FILE_MAX, &text, &len);
    if (r == NQ_ENOTFOUND) { /* removed meanwhile */
      free(p);
      continue;
    }
    if (r == 0) {
      while (len > 0 && text[len - 1] == '\n') len--;
      r = nq_frame_decode(text, len, &o);
    }
    if (r == 0) {
      if (n == cap) {
        size_t nc = cap ? cap * 2 : 16;
        char *nv = realloc(v, nc * elem_size);
        if (!nv) {
          rc = NQ_ENOMEM;
        } else {
          v = nv;
          cap = nc;
        }
      }
      if (!rc) r = parse(o, id, v + n * elem_size);
    }
    if (!rc && r == 0) {
      n++;
    } else if (!rc) {
      nq_log(NQ_LOG_WARN, "corrupt %s file %s (%s): set aside as .bad", what, p, nq_strerror(r));
      if (corrupt) (*corrupt)++;
      char bad[4200];
      snprintf(bad, sizeof bad, "%s.bad", p);
      if (rename(p, bad) != 0) unlink(p);
    }
    json_decref(o);
    free(text);
    free(p);
    if (rc) break;
  }
  closedir(d);
  if (rc) {
    free(v);
    return rc;
  }
  /* Sort by id (insertion sort: journals hold a handful of entries). The id is the first field of
   * both entry types. */
  char *tmp = elem_size ? malloc(elem_size) : NULL;
  if (n > 1 && !tmp) {
    free(v);
    return NQ_ENOMEM;
  }
  for (size_t i = 1; i < n; i++) {
    memcpy(tmp, v + i * elem_size, elem_size);
    int64_t key;
    memcpy(&key, tmp, sizeof key);
    size_t k = i;
    while (k > 0) {
      int64_t prev;
      memcpy(&prev, v + (k - 1) * elem_size, sizeof prev);
      if (prev <= key) break;
      memcpy(v + k * elem_size, v + (k - 1) * elem_size, elem_size);
      k--;
    }
    memcpy(v + k * elem_size, tmp, elem_size);
  }
  free(tmp);
  if (n == 0) {
    free(v);
    v = NULL;
  }
  *out = v;
  *n_out = n;
  return 0;
}

/* ---- results ---- */

/* A journal entry is the result message as it is sent (nq_result_pack); it is read back with the
 * protocol's parser, plus what the client needs of its own entries. */
static int result_parse(const json_t *o, int64_t id, void *slot) {
  nq_result_t *r = slot;
  if (nq_msg_type(o, NULL) != NQ_MSG_RESULT || nq_result_parse(o, r, NULL) != 0) {
    memset(r, 0, sizeof *r);
    return NQ_EPROTO;
  }
  if (r->id < 1 || !r->unit[0] || !r->solver[0]) return NQ_ERANGE;
  return r->id == id ? 0 : NQ_EPROTO; /* the name must agree with the content */
}

int cli_journal_put(cli_journal_t *j, const nq_result_t *r) {
  /* Two fsyncs cost about as much as a millisecond unit: a result that took less than
   * CLI_JOURNAL_SYNC_SECONDS to solve is cheaper to solve again after a power loss (the server
   * re-sends the lease) than to make durable. A crash of the process alone loses nothing. */
  return entry_put(j->results_dir, r->id, nq_result_pack(r),
                   !(r->seconds >= 0 && r->seconds < CLI_JOURNAL_SYNC_SECONDS));
}

int cli_journal_remove(cli_journal_t *j, int64_t id) {
  return entry_remove(j->results_dir, id);
}

int cli_journal_has(cli_journal_t *j, int64_t id) {
  char name[64];
  entry_name(id, name, sizeof name);
  char *p = path_join(j->results_dir, name);
  if (!p) return 0;
  int has = access(p, F_OK) == 0;
  free(p);
  return has;
}

int cli_journal_list(cli_journal_t *j, nq_result_t **out, size_t *n, size_t *corrupt) {
  void *v;
  int rc = entry_list(j->results_dir, "journal", sizeof(nq_result_t), result_parse, &v, n,
                      corrupt);
  *out = v;
  return rc;
}

/* ---- assignments ---- */

/* An assignment entry is a `work` message holding that one assignment, its deadline on this
 * machine's clock (see cli_assign_t) and its lease what was left of it when it was written. */
static int assign_parse(const json_t *o, int64_t id, void *slot) {
  cli_assign_t *a = slot;
  nq_work_t w;
  memset(a, 0, sizeof *a);
  if (nq_msg_type(o, NULL) != NQ_MSG_WORK || nq_work_parse(o, &w, NULL) != 0 || w.n != 1)
    return NQ_EPROTO;
  if (w.a[0].id < 1) return NQ_ERANGE;
  a->id = w.a[0].id;
  snprintf(a->unit, sizeof a->unit, "%s", w.a[0].unit);
  a->deadline = w.a[0].deadline;
  snprintf(a->kernel, sizeof a->kernel, "%s", w.a[0].kernel ? w.a[0].kernel : "");
  return a->id == id ? 0 : NQ_EPROTO;
}

int cli_assigned_put(cli_journal_t *j, const cli_assign_t *a) {
  nq_work_t w;
  int64_t left = a->deadline - (int64_t)time(NULL);
  w.n = 1;
  w.a[0] = (nq_assignment_t){a->id, a->unit, a->deadline,
                             a->deadline <= 0 || left < 0 ? 0
                             : left > NQ_PROTO_LEASE_MAX ? NQ_PROTO_LEASE_MAX
                                                         : left,
                             a->kernel[0] ? a->kernel : NULL};
  /* Not durable (two fsyncs less per unit): after a power loss the server re-sends every lease
   * the client still holds, at its first get_work; a torn file is set aside like any other. */
  return entry_put(j->assigned_dir, a->id, nq_work_pack(&w), 0);
}

int cli_assigned_remove(cli_journal_t *j, int64_t id) {
  return entry_remove(j->assigned_dir, id);
}

int cli_assigned_list(cli_journal_t *j, cli_assign_t **out, size_t *n, size_t *corrupt) {
  void *v;
  int rc = entry_list(j->assigned_dir, "assignment", sizeof(cli_assign_t), assign_parse, &v, n,
                      corrupt);
  *out = v;
  return rc;
}

/* ---- checkpoints ---- */

int cli_ckpt_put(cli_journal_t *j, int64_t id, const nq_ckpt_t *c) {
  char name[64];
  ckpt_name(id, name, sizeof name);
  return nq_ckpt_save(j->ckpt_dir, name, c);
}

int cli_ckpt_get(cli_journal_t *j, int64_t id, nq_ckpt_t *c, char *err, size_t errlen) {
  char name[64];
  ckpt_name(id, name, sizeof name);
  char *p = path_join(j->ckpt_dir, name);
  if (!p) return NQ_ENOMEM;
  int rc = nq_ckpt_load(p, c, err, errlen);
  free(p);
  return rc;
}

int cli_ckpt_remove(cli_journal_t *j, int64_t id) {
  char name[64];
  ckpt_name(id, name, sizeof name);
  return file_remove(j->ckpt_dir, name);
}

void cli_ckpt_set_aside(cli_journal_t *j, int64_t id) {
  char name[64];
  ckpt_name(id, name, sizeof name);
  char *p = path_join(j->ckpt_dir, name);
  if (!p) return;
  char bad[4200];
  snprintf(bad, sizeof bad, "%s.bad", p);
  if (rename(p, bad) != 0) unlink(p);
  free(p);
}

static int cmp_id(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

int cli_ckpt_list(cli_journal_t *j, int64_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  DIR *d = opendir(j->ckpt_dir);
  if (!d) {
    nq_log(NQ_LOG_ERROR, "cannot read %s: %s", j->ckpt_dir, strerror(errno));
    return NQ_EIO;
  }
  int rc = 0;
  size_t cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int64_t id;
    if (!name_id(e->d_name, ".ckpt", &id)) continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 8;
      int64_t *v = realloc(*out, cap * sizeof *v);
      if (!v) {
        rc = NQ_ENOMEM;
        break;
      }
      *out = v;
    }
    (*out)[(*n)++] = id;
  }
  closedir(d);
  if (rc) {
    free(*out);
    *out = NULL;
    *n = 0;
    return rc;
  }
  if (*n > 1) qsort(*out, *n, sizeof **out, cmp_id);
  return 0;
}

/* ---- token ---- */

int cli_token_load(cli_journal_t *j, char *buf, size_t len) {
  char *p = path_join(j->dir, "token");
  if (!p) return NQ_ENOMEM;
  int rc = nq_file_read_line(p, buf, len);
  free(p);
  return rc == NQ_ETOOBIG ? NQ_EINVAL : rc;
}

int cli_token_store(cli_journal_t *j, const char *token) {
  size_t n = strlen(token);
  char *s = malloc(n + 2);
  if (!s) return NQ_ENOMEM;
  memcpy(s, token, n);
  s[n] = '\n';
  s[n + 1] = '\0';
  int rc = nq_file_replace(j->dir, "token", s, n + 1, 0600);
  memset(s, 0, n);
  free(s);
  return rc;
}
