/* nq-client: the status file and `nq-client status` (see status.h). */
#include "status.h"

#include "cli_opts.h"

#include "journal.h"
#include "receipts.h"

#include "nq/checkpoint.h"
#include "nq/files.h"
#include "nq/json.h"
#include "nq/nq.h"
#include "nq/sys.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- the status file: one view (status.h), read by the pack and the parse alike ---- */

#define NQV_T nq_view_cli_status_t
NQ_VIEW_DEFINE(cli_status, CLI_STATUS_VIEW)
#undef NQV_T

json_t *cli_status_pack(const cli_status_t *s) { return nq_view_cli_status_pack(s); }

/* The view holds no arrays and copies its strings: nothing to release, nothing borrowed. */
int cli_status_parse(const json_t *o, cli_status_t *out, char *err, size_t errlen) {
  return nq_view_cli_status_parse(o, out, err, errlen);
}

int cli_status_write(const char *state_dir, const cli_status_t *s) {
  json_t *o = cli_status_pack(s);
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (!text) return NQ_ENOMEM;
  size_t len = strlen(text);
  int rc = nq_file_replace_volatile(state_dir, CLI_STATUS_FILE, text, len, 0644);
  free(text);
  return rc;
}

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

int cli_status_read(const char *state_dir, cli_status_t *out, char *err, size_t errlen) {
  char *path = join(state_dir, CLI_STATUS_FILE), *text = NULL;
  size_t len = 0;
  if (!path) return NQ_ENOMEM;
  int rc = nq_file_read(path, 1 << 16, &text, &len);
  free(path);
  if (rc) return rc;
  json_error_t je;
  json_t *o = json_loadb(text, len, 0, &je);
  free(text);
  if (!json_is_object(o)) {
    if (errlen) snprintf(err, errlen, "not a JSON object: %s", o ? "" : je.text);
    json_decref(o);
    return NQ_EPROTO;
  }
  rc = cli_status_parse(o, out, err, errlen);
  json_decref(o);
  return rc;
}

/* ---- the view: the status file and the directory ---- */

/* Alive: the process exists (under another user too; nq/sys.h). */
static int alive(int64_t pid) {
  return nq_sys_pid_alive(pid);
}

/* The entries of dir/sub named <id><suffix> (not dot-files, not .bad): their ids, or count only
 * (ids NULL). Returns the count; a missing directory has none. */
static size_t list_ids(const char *dir, const char *sub, const char *suffix, int64_t **ids) {
  char *p = join(dir, sub);
  DIR *d = p ? opendir(p) : NULL;
  free(p);
  size_t n = 0, cap = 0;
  if (ids) *ids = NULL;
  if (!d) return 0;
  struct dirent *e;
  size_t sl = strlen(suffix);
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    char *end;
    if (e->d_name[0] == '.' || l <= sl || strcmp(e->d_name + l - sl, suffix) != 0) continue;
    long long id = strtoll(e->d_name, &end, 10);
    if (end != e->d_name + l - sl) continue;
    if (ids) {
      if (n == cap) {
        int64_t *v = realloc(*ids, (cap = cap ? 2 * cap : 8) * sizeof *v);
        if (!v) break;
        *ids = v;
      }
      (*ids)[n] = id;
    }
    n++;
  }
  closedir(d);
  return n;
}

int cli_status_view(const char *state_dir, cli_status_view_t *v, char *err, size_t errlen) {
  memset(v, 0, sizeof *v);
  struct stat st;
  if (stat(state_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (errlen) snprintf(err, errlen, "no state directory %s", state_dir);
    return NQ_ENOTFOUND;
  }
  char why[160] = "";
  int rc = cli_status_read(state_dir, &v->s, why, sizeof why);
  v->has_file = rc == 0;
  if (rc && rc != NQ_ENOTFOUND && errlen)
    snprintf(err, errlen, "%s/%s unreadable: %s", state_dir, CLI_STATUS_FILE,
             why[0] ? why : nq_strerror(rc));
  /* the lock file names the daemon that holds (or last held) the directory */
  char *lp = join(state_dir, CLI_LOCK_FILE), line[32];
  int64_t lock_pid = 0;
  if (lp && nq_file_read_line(lp, line, sizeof line) == 0) lock_pid = strtoll(line, NULL, 10);
  free(lp);
  v->pid = v->has_file ? v->s.pid : lock_pid;
  v->running = alive(v->pid) && (!v->has_file || !v->s.stopped) &&
               (lock_pid == 0 || lock_pid == v->pid);
  v->journal = list_ids(state_dir, "journal", ".json", NULL);
  v->assigned = list_ids(state_dir, "assigned", ".json", NULL);
  int64_t *ids = NULL;
  size_t n = list_ids(state_dir, "checkpoint", ".ckpt", &ids);
  v->ckpt = n ? calloc(n, sizeof *v->ckpt) : NULL;
  for (size_t i = 0; v->ckpt && i < n; i++) {
    char name[64], *p;
    snprintf(name, sizeof name, "checkpoint/%" PRId64 ".ckpt", ids[i]);
    nq_ckpt_t c;
    if (!(p = join(state_dir, name))) break;
    char why2[NQ_CKPT_ERR_MAX];
    int lrc = nq_ckpt_load(p, &c, why2, sizeof why2);
    free(p);
    if (lrc) continue; /* a torn or foreign file: the daemon sets it aside when it needs it */
    cli_status_ckpt_t *k = &v->ckpt[v->nckpt++];
    k->id = ids[i];
    if (c.subject.whole || nq_unit_format(&c.subject.unit, k->unit, sizeof k->unit) < 0)
      snprintf(k->unit, sizeof k->unit, "N=%d", c.subject.n);
    k->ndone = c.ndone;
    k->ntasks = c.ntasks;
    k->nodes = c.sum.nodes;
    k->seconds = c.seconds;
    nq_ckpt_free(&c);
  }
  free(ids);
  return 0;
}

void cli_status_view_free(cli_status_view_t *v) {
  free(v->ckpt);
  memset(v, 0, sizeof *v);
}

/* "12 s ago", "3 min ago", "2.5 h ago", "4 d ago". */
static const char *ago(int64_t now, int64_t t, char *buf, size_t len) {
  int64_t d = now - t;
  if (d < 0) d = 0;
  if (d < 120) snprintf(buf, len, "%" PRId64 " s ago", d);
  else if (d < 7200) snprintf(buf, len, "%" PRId64 " min ago", d / 60);
  else if (d < 172800) snprintf(buf, len, "%.1f h ago", (double)d / 3600);
  else snprintf(buf, len, "%" PRId64 " d ago", d / 86400);
  return buf;
}

static const char *duration(double s, char *buf, size_t len) {
  if (s < 120) snprintf(buf, len, "%.0f s", s);
  else if (s < 7200) snprintf(buf, len, "%.0f min", s / 60);
  else if (s < 172800) snprintf(buf, len, "%.1f h", s / 3600);
  else snprintf(buf, len, "%.1f d", s / 86400);
  return buf;
}

void cli_status_print_text(FILE *f, const cli_status_view_t *v, int64_t now) {
  const cli_status_t *s = &v->s;
  char a[32], b[32];
  if (v->running)
    fprintf(f, "client:     running (pid %" PRId64 ")", v->pid);
  else if (v->has_file)
    fprintf(f, "client:     not running (last seen %s)", ago(now, s->updated, a, sizeof a));
  else
    fprintf(f, "client:     not running");
  if (v->has_file)
    fprintf(f, ", nq-client %s, kernel %s, %d thread(s) at %s priority, CPU limit %d%%",
            s->version, s->kernel, s->threads, s->priority, s->cpu_limit);
  fputc('\n', f);
  if (v->has_file && v->running)
    fprintf(f, "solver:     %s%s%s\n", s->paused ? "paused (" : s->running ? "solving" : "idle",
            s->paused ? s->pause_reason : "", s->paused ? ")" : "");
  if (v->has_file) {
    fprintf(f, "server:     %s", s->server);
    if (v->running && !strcmp(s->conn, "ready"))
      fprintf(f, ", connected");
    else if (v->running && s->down_since > 0)
      fprintf(f, ", out of reach for %s", duration((double)(now - s->down_since), a, sizeof a));
    else if (v->running)
      fprintf(f, ", %s", s->conn);
    if (s->last_contact > 0)
      fprintf(f, "; last contact %s", ago(now, s->last_contact, b, sizeof b));
    else
      fprintf(f, "; never reached");
    if (s->last_outcome[0]) fprintf(f, " (%s)", s->last_outcome);
    fputc('\n', f);
    if (s->client[0] || s->shown_as[0] || s->has_credit) {
      fprintf(f, "volunteer:  client %s", s->client[0] ? s->client : "?");
      if (s->shown_as[0]) fprintf(f, ", shown as %s", s->shown_as);
      if (s->page[0]) fprintf(f, " on %s", s->page);
      if (s->has_credit)
        fprintf(f, ", credit %s nodes (%s)", s->credit, ago(now, s->credit_at, a, sizeof a));
      fputc('\n', f);
    }
  }
  if (v->has_file && v->running && s->running) {
    double rate = s->seconds > 0 ? (double)s->nodes / s->seconds : 0;
    fprintf(f, "unit:       %s (id %" PRId64 "): %.1f%% done, %" PRIu64 " nodes in %.1f s",
            s->unit, s->unit_id, 100.0 * s->fraction, s->nodes, s->seconds);
    if (rate > 0) fprintf(f, " (%.3g nodes/s)", rate);
    if (s->fraction > 0 && s->fraction < 1)
      fprintf(f, ", about %s to go",
              duration(s->seconds * (1 - s->fraction) / s->fraction, a, sizeof a));
    fputc('\n', f);
  }
  for (size_t i = 0; i < v->nckpt; i++) {
    const cli_status_ckpt_t *k = &v->ckpt[i];
    if (v->running && s->running && k->id == s->unit_id) continue; /* shown live above */
    fprintf(f, "checkpoint: %s (id %" PRId64 "): %u of %u tasks (%.1f%%), %" PRIu64
               " nodes in %.1f s\n",
            k->unit, k->id, k->ndone, k->ntasks,
            k->ntasks ? 100.0 * k->ndone / k->ntasks : 0.0, k->nodes, k->seconds);
  }
  if (v->has_file && !v->running && s->stopped && s->exit_reason[0])
    fprintf(f, "left:       %s%s%s\n", s->exit_reason, s->exit_why[0] ? ": " : "", s->exit_why);
  fprintf(f, "work:       %zu assignment(s) held, %zu result(s) waiting for the server\n",
          v->assigned, v->journal);
  if (v->has_file)
    fprintf(f, "this run:   %" PRId64 " unit(s) solved, %" PRIu64 " nodes in %.1f s of solving\n",
            s->units_done, s->nodes_done, s->solve_seconds);
}

/* `nq-client status --json`: the view of the directory, with the status file's record inside. */
#define CLI_CKPT_VIEW(F)                                                                           \
  F(INT, id, REQ, 0)                                                                               \
  F(STR, unit, REQ, 0)                                                                             \
  F(INT, done, REQ, 0)                                                                             \
  F(INT, tasks, REQ, 0)                                                                            \
  F(REAL, seconds, REQ, 0)                                                                         \
  F(U64, nodes, REQ, 0)
NQ_VIEW_STRUCT(cli_ckpt, CLI_CKPT_VIEW)
#define CLI_STATUS_OUT_VIEW(F)                                                                     \
  F(BOOL, running, REQ, 0)                                                                         \
  F(INT, pid, REQ, 0)                                                                              \
  F(OBJ, status, NULL, cli_status)                                                                 \
  F(INT, journal, REQ, 0)                                                                          \
  F(INT, assigned, REQ, 0)                                                                         \
  F(ARR, checkpoints, REQ, cli_ckpt)
NQ_VIEW_STRUCT(cli_status_out, CLI_STATUS_OUT_VIEW)
#define NQV_T nq_view_cli_ckpt_t
NQ_VIEW_DEFINE(cli_ckpt, CLI_CKPT_VIEW)
#undef NQV_T
#define NQV_T nq_view_cli_status_out_t
NQ_VIEW_DEFINE(cli_status_out, CLI_STATUS_OUT_VIEW)
#undef NQV_T

json_t *cli_status_view_json(const cli_status_view_t *v) {
  nq_view_cli_ckpt_t *ck = v->nckpt ? calloc(v->nckpt, sizeof *ck) : NULL;
  if (v->nckpt && !ck) return NULL;
  for (size_t i = 0; i < v->nckpt; i++) {
    const cli_status_ckpt_t *k = &v->ckpt[i];
    ck[i] = (nq_view_cli_ckpt_t){k->id, k->unit, k->ndone, k->ntasks, k->seconds, k->nodes};
  }
  nq_view_cli_status_out_t out = {.running = v->running,
                                  .pid = v->pid,
                                  .status = v->s,
                                  .has_status = v->has_file,
                                  .journal = (int64_t)v->journal,
                                  .assigned = (int64_t)v->assigned,
                                  .checkpoints = ck,
                                  .n_checkpoints = v->nckpt};
  json_t *o = nq_view_cli_status_out_pack(&out);
  free(ck);
  return o;
}

int cli_status_main(int argc, char **argv, const char *default_state) {
  nq_opts_t opts;
  cli_status_args_t a;
  cli_status_opts_init(&opts, &a, default_state);
  int rc = nq_opts_main(&opts, argc, argv, 2);
  if (rc >= 0) return rc;
  const char *state = a.state;
  int as_json = a.json;
  if (opts.optind < argc || !state || !*state) {
    fprintf(stderr, "usage: nq-client status [--state DIR] [--json] [--receipts FILE [--root HEX]]\n");
    return 2;
  }
  if (a.receipts) return cli_receipts_check(state, a.receipts, a.root, as_json, stdout, stderr);
  cli_status_view_t v;
  char err[300] = "";
  if (cli_status_view(state, &v, err, sizeof err) != 0) {
    fprintf(stderr, "nq-client status: %s\n", err);
    return 3;
  }
  if (err[0]) fprintf(stderr, "nq-client status: %s\n", err);
  if (as_json) {
    json_t *o = cli_status_view_json(&v);
    char *t = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
    if (t) puts(t);
    free(t);
    json_decref(o);
  } else {
    cli_status_print_text(stdout, &v, (int64_t)time(NULL));
  }
  cli_status_view_free(&v);
  return 0;
}
