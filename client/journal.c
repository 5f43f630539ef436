/* nq-client: the on-disk journal of finished results, the list of received assignments and the
 * stored token. See journal.h for the layout and the crash-safety argument. */
#include "journal.h"

#include "nq/files.h"
#include "nq/frame.h"
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
  if (!j->dir || !j->results_dir || !j->assigned_dir) {
    cli_journal_close(j);
    return NQ_ENOMEM;
  }
  const char *dirs[3] = {j->dir, j->results_dir, j->assigned_dir};
  for (int i = 0; i < 3; i++) {
    if (nq_mkdir_p(dirs[i], 0700) != 0) {
      nq_log(NQ_LOG_ERROR, "cannot create state directory %s: %s", dirs[i], strerror(errno));
      cli_journal_close(j);
      return NQ_EIO;
    }
  }
  sweep_tmp(j->results_dir);
  sweep_tmp(j->assigned_dir);
  sweep_tmp(j->dir);
  return 0;
}

void cli_journal_close(cli_journal_t *j) {
  free(j->dir);
  free(j->results_dir);
  free(j->assigned_dir);
  memset(j, 0, sizeof *j);
}

/* ---- generic entries: one JSON object per id ---- */

static void entry_name(int64_t id, char *buf, size_t len) {
  snprintf(buf, len, "%" PRId64 ".json", id);
}

static int entry_put(const char *dir, int64_t id, json_t *o) {
  if (!o) return NQ_ENOMEM;
  char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(o);
  if (!s) return NQ_ENOMEM;
  char name[64];
  entry_name(id, name, sizeof name);
  size_t len = strlen(s);
  s[len] = '\n'; /* replaces the terminator; the length below includes it */
  int rc = nq_file_replace(dir, name, s, len + 1, 0600);
  free(s);
  return rc;
}

static int entry_remove(const char *dir, int64_t id) {
  char name[64];
  entry_name(id, name, sizeof name);
  char *p = path_join(dir, name);
  if (!p) return NQ_ENOMEM;
  int rc = 0;
  if (unlink(p) != 0) rc = errno == ENOENT ? NQ_ENOTFOUND : NQ_EIO;
  free(p);
  /* The unlink need not be durable at once: an entry that comes back after a crash is only
   * re-sent (and answered "duplicate") or re-run, never lost. */
  return rc;
}

/* Parse "<digits>.json" into an id; 0 for names that are not entries. */
static int entry_id(const char *name, int64_t *id) {
  size_t l = strlen(name);
  if (l < 6 || l > 25 || strcmp(name + l - 5, ".json") != 0) return 0;
  int64_t v = 0;
  for (size_t i = 0; i < l - 5; i++) {
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
    if (!entry_id(e->d_name, &id)) continue;
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

json_t *cli_result_to_json(const cli_result_t *r) {
  return json_pack("{s:s, s:I, s:s, s:I, s:I, s:I, s:I, s:f, s:s}", "type", "result", "id",
                   (json_int_t)r->id, "unit", r->unit, "c2", (json_int_t)r->counts.c2, "c4",
                   (json_int_t)r->counts.c4, "c8", (json_int_t)r->counts.c8, "nodes",
                   (json_int_t)r->counts.nodes, "seconds", r->seconds, "solver", r->solver);
}

int cli_result_from_json(const json_t *o, cli_result_t *r) {
  memset(r, 0, sizeof *r);
  const char *unit, *solver;
  int64_t id, c2, c4, c8, nodes;
  int rc;
  if ((rc = nq_msg_get_int(o, "id", 1, INT64_MAX, &id)) ||
      (rc = nq_msg_get_str(o, "unit", &unit)) ||
      (rc = nq_msg_get_int(o, "c2", 0, INT64_MAX, &c2)) ||
      (rc = nq_msg_get_int(o, "c4", 0, INT64_MAX, &c4)) ||
      (rc = nq_msg_get_int(o, "c8", 0, INT64_MAX, &c8)) ||
      (rc = nq_msg_get_int(o, "nodes", 0, INT64_MAX, &nodes)) ||
      (rc = nq_msg_get_str(o, "solver", &solver)))
    return rc;
  json_t *sec = json_object_get(o, "seconds");
  if (!json_is_number(sec) || json_number_value(sec) < 0) return NQ_EPROTO;
  if (strlen(unit) >= sizeof r->unit || strlen(solver) >= sizeof r->solver || !*unit ||
      !*solver)
    return NQ_ERANGE;
  r->id = id;
  strcpy(r->unit, unit);
  strcpy(r->solver, solver);
  r->counts.c2 = (uint64_t)c2;
  r->counts.c4 = (uint64_t)c4;
  r->counts.c8 = (uint64_t)c8;
  r->counts.nodes = (uint64_t)nodes;
  r->seconds = json_number_value(sec);
  return 0;
}

static int result_parse(const json_t *o, int64_t id, void *slot) {
  cli_result_t *r = slot;
  int rc = cli_result_from_json(o, r);
  if (rc) return rc;
  return r->id == id ? 0 : NQ_EPROTO; /* the name must agree with the content */
}

int cli_journal_put(cli_journal_t *j, const cli_result_t *r) {
  return entry_put(j->results_dir, r->id, cli_result_to_json(r));
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

int cli_journal_list(cli_journal_t *j, cli_result_t **out, size_t *n, size_t *corrupt) {
  void *v;
  int rc = entry_list(j->results_dir, "journal", sizeof(cli_result_t), result_parse, &v, n,
                      corrupt);
  *out = v;
  return rc;
}

/* ---- assignments ---- */

static int assign_parse(const json_t *o, int64_t id, void *slot) {
  cli_assign_t *a = slot;
  memset(a, 0, sizeof *a);
  const char *unit;
  int rc;
  if ((rc = nq_msg_get_int(o, "id", 1, INT64_MAX, &a->id)) ||
      (rc = nq_msg_get_str(o, "unit", &unit)) ||
      (rc = nq_msg_opt_int(o, "deadline", 0, INT64_MAX, 0, &a->deadline)))
    return rc;
  if (!*unit || strlen(unit) >= sizeof a->unit) return NQ_ERANGE;
  strcpy(a->unit, unit);
  return a->id == id ? 0 : NQ_EPROTO;
}

int cli_assigned_put(cli_journal_t *j, const cli_assign_t *a) {
  return entry_put(j->assigned_dir, a->id,
                   json_pack("{s:I, s:s, s:I}", "id", (json_int_t)a->id, "unit", a->unit,
                             "deadline", (json_int_t)a->deadline));
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
