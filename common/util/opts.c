/* nq: command-line options from one table (nq/opts.h). */
#include "nq/opts.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nq/nq.h"

/* getopt_long values: option i of the groups is KEY_BASE + i; the built-in ones follow. */
enum { KEY_BASE = 0x100, KEY_HELP = KEY_BASE + NQ_OPTS_MAX, KEY_VERSION, KEY_MAN };

#define HELP_COL 24   /* where the help text of an option starts */
#define HELP_WIDTH 79 /* the longest line --help writes */

static const nq_opt_t builtin_help = {NQ_OPT_FLAG, "help", 'h', .help = "this text"};
static const nq_opt_t builtin_version = {NQ_OPT_FLAG, "version",
                                         .help = "the software and protocol versions"};

/* Walk every option (sections skipped) of every group in order: the i-th, or NULL past the
 * end; *base gets its group's struct. */
static const nq_opt_t *nth(const nq_opts_t *o, int i, void **base) {
  for (int g = 0; g < NQ_OPTS_GROUPS && o->group[g].opts; g++)
    for (const nq_opt_t *p = o->group[g].opts; p->type != NQ_OPT_END; p++) {
      if (p->type == NQ_OPT_SECTION) continue;
      if (i-- == 0) {
        if (base) *base = o->group[g].base;
        return p;
      }
    }
  return NULL;
}

static int index_of(const nq_opts_t *o, const char *name, int letter) {
  const nq_opt_t *p;
  for (int i = 0; (p = nth(o, i, NULL)) != NULL; i++)
    if ((name && !strcmp(p->name, name)) || (letter && p->letter == letter)) return i;
  return -1;
}

static int takes_value(const nq_opt_t *p) {
  return p->type != NQ_OPT_FLAG;
}

/* ---- values ------------------------------------------------------------------------------- */

/* A whole decimal integer: no sign games, no blanks, no trailing text, no overflow. */
static int parse_ll(const char *v, long long *out) {
  char *end;
  if (!*v || isspace((unsigned char)*v)) return NQ_EINVAL;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || *end) return NQ_EINVAL;
  *out = x;
  return 0;
}

static int parse_ull(const char *v, unsigned long long *out) {
  char *end;
  if (!isdigit((unsigned char)*v)) return NQ_EINVAL;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (errno || *end) return NQ_EINVAL;
  *out = x;
  return 0;
}

static int parse_double(const char *v, double *out) {
  char *end;
  if (!*v || isspace((unsigned char)*v)) return NQ_EINVAL;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || *end || isnan(x)) return NQ_EINVAL;
  *out = x;
  return 0;
}

/* A bound as a person writes it: 86400, not 8.64e+04. */
static void fmt_num(char *buf, size_t len, double x) {
  if (x == floor(x) && fabs(x) < 1e15) snprintf(buf, len, "%.0f", x);
  else snprintf(buf, len, "%g", x);
}

/* "a, b or c" from "a|b|c". */
static void choice_list(const char *choices, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = 0;
  for (const char *p = choices; *p && n + 1 < len;) {
    const char *bar = strchr(p, '|');
    size_t w = bar ? (size_t)(bar - p) : strlen(p);
    const char *sep = p == choices ? "" : strchr(p, '|') ? ", " : " or ";
    n += (size_t)snprintf(buf + n, len - n, "%s%.*s", sep, (int)w, p);
    if (n >= len) n = len - 1;
    p += w + (bar != NULL);
  }
}

static int choice_index(const char *choices, const char *v) {
  int i = 0;
  size_t vl = strlen(v);
  for (const char *p = choices; *p; i++) {
    const char *bar = strchr(p, '|');
    size_t w = bar ? (size_t)(bar - p) : strlen(p);
    if (w == vl && !strncmp(p, v, w)) return i;
    if (!bar) break;
    p = bar + 1;
  }
  return -1;
}

/* Set p from v; label names the source in errors ("--threads", "NQ_THREADS"). */
static int set_labeled(const nq_opt_t *p, void *base, const char *v, const char *label, char *err,
                       size_t errlen) {
  char *dst = (char *)base + p->off;
  if (p->set) {
    char why[256] = "";
    int rc = p->set(base, p, v, why, sizeof why);
    if (rc != 0) return nq_errorf(err, errlen, rc < 0 ? rc : NQ_EINVAL, "%s: %s", label, why);
    return 0;
  }
  switch (p->type) {
  case NQ_OPT_FLAG: *(int *)(void *)dst = 1; return 0;
  case NQ_OPT_INT:
  case NQ_OPT_INT64: {
    long long x;
    if (parse_ll(v, &x) != 0 || x < p->lo || x > p->hi)
      return nq_errorf(err, errlen, NQ_ERANGE, "%s: expected an integer %lld..%lld, got '%s'",
                       label, p->lo, p->hi, v);
    if (p->type == NQ_OPT_INT) *(int *)(void *)dst = (int)x;
    else *(int64_t *)(void *)dst = (int64_t)x;
    return 0;
  }
  case NQ_OPT_UINT64: {
    unsigned long long x, hi = p->hi ? (unsigned long long)p->hi : UINT64_MAX;
    if (parse_ull(v, &x) != 0 || x < (unsigned long long)p->lo || x > hi)
      return nq_errorf(err, errlen, NQ_ERANGE, "%s: expected an integer %lld..%llu, got '%s'",
                       label, p->lo, hi, v);
    *(uint64_t *)(void *)dst = (uint64_t)x;
    return 0;
  }
  case NQ_OPT_DOUBLE: {
    double x;
    if (parse_double(v, &x) != 0 || x < p->dlo || x > p->dhi) {
      char lo[32], hi[32];
      fmt_num(lo, sizeof lo, p->dlo);
      fmt_num(hi, sizeof hi, p->dhi);
      return nq_errorf(err, errlen, NQ_ERANGE, "%s: expected a number %s..%s, got '%s'", label,
                       lo, hi, v);
    }
    *(double *)(void *)dst = x;
    return 0;
  }
  case NQ_OPT_STRING:
    if (!*v && !(p->flags & NQ_OPTF_EMPTY_OK))
      return nq_errorf(err, errlen, NQ_EINVAL, "%s: expected a value, got ''", label);
    *(const char **)(void *)dst = v;
    return 0;
  case NQ_OPT_ENUM: {
    int i = choice_index(p->choices, v);
    if (i < 0) {
      char list[256];
      choice_list(p->choices, list, sizeof list);
      return nq_errorf(err, errlen, NQ_EINVAL, "%s: expected %s, got '%s'", label, list, v);
    }
    *(int *)(void *)dst = i;
    return 0;
  }
  default: return nq_errorf(err, errlen, NQ_EINVAL, "%s: not an option", label);
  }
}

int nq_opt_set(const nq_opt_t *opt, void *base, const char *value, char *err, size_t errlen) {
  char label[80];
  snprintf(label, sizeof label, "--%s", opt->name);
  return set_labeled(opt, base, value, label, err, errlen);
}

int nq_opts_table_defaults(const nq_opt_t *table, void *base, char *err, size_t errlen) {
  for (const nq_opt_t *p = table; p->type != NQ_OPT_END; p++) {
    if (p->type == NQ_OPT_SECTION || !p->def) continue;
    int rc = nq_opt_set(p, base, p->def, err, errlen);
    if (rc != 0) return rc;
  }
  return 0;
}

int nq_opts_defaults(const nq_opts_t *o, char *err, size_t errlen) {
  const nq_opt_t *p;
  void *base;
  for (int i = 0; (p = nth(o, i, &base)) != NULL; i++) {
    if (!p->def) continue;
    int rc = nq_opt_set(p, base, p->def, err, errlen);
    if (rc != 0) return rc;
  }
  return 0;
}

const nq_opt_t *nq_opts_find(const nq_opts_t *o, const char *name) {
  int i = index_of(o, name, 0);
  return i < 0 ? NULL : nth(o, i, NULL);
}

int nq_opts_given(const nq_opts_t *o, const char *name) {
  int i = index_of(o, name, 0);
  return i < 0 ? 0 : o->given[i];
}

/* ---- the table's own check ---------------------------------------------------------------- */

int nq_opts_check(const nq_opts_t *o, char *err, size_t errlen) {
  const nq_opt_t *p, *q;
  int n = 0;
  for (; (p = nth(o, n, NULL)) != NULL; n++) {
    if (!p->name || !*p->name || p->name[0] == '-')
      return nq_errorf(err, errlen, NQ_EINVAL, "option %d has no name", n);
    if (!strcmp(p->name, "help") || !strcmp(p->name, "man") ||
        (o->version && !strcmp(p->name, "version")) || p->letter == 'h')
      return nq_errorf(err, errlen, NQ_EINVAL, "--%s: help, version, man and -h are built in",
                       p->name);
    if (p->letter && (!isalnum(p->letter) || p->letter > 127))
      return nq_errorf(err, errlen, NQ_EINVAL, "--%s: a short letter must be a letter or digit",
                       p->name);
    for (int j = 0; j < n; j++) {
      q = nth(o, j, NULL);
      if (!strcmp(p->name, q->name))
        return nq_errorf(err, errlen, NQ_EINVAL, "--%s is declared twice", p->name);
      if (p->letter && p->letter == q->letter)
        return nq_errorf(err, errlen, NQ_EINVAL, "-%c is declared twice (--%s, --%s)", p->letter,
                         q->name, p->name);
    }
    if ((p->type == NQ_OPT_INT || p->type == NQ_OPT_INT64 ||
         (p->type == NQ_OPT_UINT64 && p->hi)) && !p->set && p->lo > p->hi)
      return nq_errorf(err, errlen, NQ_EINVAL, "--%s: bounds %lld > %lld", p->name, p->lo, p->hi);
    if (p->type == NQ_OPT_INT && !p->set && (p->lo < -2147483647LL - 1 || p->hi > 2147483647LL))
      return nq_errorf(err, errlen, NQ_EINVAL, "--%s: bounds wider than an int", p->name);
    if (p->type == NQ_OPT_UINT64 && !p->set && p->lo < 0)
      return nq_errorf(err, errlen, NQ_EINVAL, "--%s: a negative bound", p->name);
    if (p->type == NQ_OPT_DOUBLE && !p->set && !(p->dlo <= p->dhi))
      return nq_errorf(err, errlen, NQ_EINVAL, "--%s: bounds out of order", p->name);
    if (p->type == NQ_OPT_ENUM && !p->set && (!p->choices || !*p->choices))
      return nq_errorf(err, errlen, NQ_EINVAL, "--%s: an enum without choices", p->name);
    if (!p->help || !*p->help)
      return nq_errorf(err, errlen, NQ_EINVAL, "--%s has no help", p->name);
  }
  if (n > NQ_OPTS_MAX)
    return nq_errorf(err, errlen, NQ_EINVAL, "%d options, more than NQ_OPTS_MAX", n);
  char why[256];
  if (nq_opts_defaults(o, why, sizeof why) != 0)
    return nq_errorf(err, errlen, NQ_EINVAL, "a default is refused: %s", why);
  return 0;
}

/* ---- parsing ------------------------------------------------------------------------------ */

/* What the getopt value c stands for, as the user wrote it. */
static void key_name(const nq_opts_t *o, int c, char *buf, size_t len) {
  const nq_opt_t *p = c >= KEY_BASE && c < KEY_HELP ? nth(o, c - KEY_BASE, NULL) : NULL;
  if (!p && c > 0 && c < KEY_BASE) {
    int i = index_of(o, NULL, c);
    p = i >= 0 ? nth(o, i, NULL) : NULL;
  }
  if (p) snprintf(buf, len, "--%s", p->name);
  else if (c >= KEY_HELP) snprintf(buf, len, "--%s", c == KEY_HELP ? "help" : c == KEY_VERSION
                                                                                 ? "version" : "man");
  else snprintf(buf, len, "-%c", c);
}

/* The getopt_long tables of o: opts (room for NQ_OPTS_MAX + 4) and the short letters. */
static void getopt_tables(const nq_opts_t *o, struct option *opts, char *shorts) {
  const nq_opt_t *p;
  int n = 0, s = 0;
  shorts[s++] = ':'; /* a missing value is ':' rather than '?' */
  shorts[s++] = 'h';
  for (int i = 0; (p = nth(o, i, NULL)) != NULL && i < NQ_OPTS_MAX; i++) {
    opts[n++] = (struct option){p->name, takes_value(p) ? required_argument : no_argument, NULL,
                                KEY_BASE + i};
    if (p->letter) {
      shorts[s++] = (char)p->letter;
      if (takes_value(p)) shorts[s++] = ':';
    }
  }
  opts[n++] = (struct option){"help", no_argument, NULL, KEY_HELP};
  if (o->version) opts[n++] = (struct option){"version", no_argument, NULL, KEY_VERSION};
  opts[n++] = (struct option){"man", no_argument, NULL, KEY_MAN};
  opts[n] = (struct option){NULL, 0, NULL, 0};
  shorts[s] = 0;
}

/* The environment, for every option with a variable that the command line left alone. */
static int read_env(nq_opts_t *o, char *err, size_t errlen) {
  const nq_opt_t *p;
  void *base;
  for (int i = 0; (p = nth(o, i, &base)) != NULL; i++) {
    const char *v = p->env && !o->given[i] ? getenv(p->env) : NULL;
    if (!v || !*v) continue;
    int rc = set_labeled(p, base, v, p->env, err, errlen);
    if (rc != 0) return rc;
  }
  return 0;
}

int nq_opts_parse(nq_opts_t *o, int argc, char **argv, char *err, size_t errlen) {
  struct option opts[NQ_OPTS_MAX + 4];
  char shorts[2 * NQ_OPTS_MAX + 4];
  int rc = nq_opts_check(o, err, errlen); /* also applies the defaults */
  if (rc != 0) return rc;
  memset(o->given, 0, sizeof o->given);
  getopt_tables(o, opts, shorts);
  optind = 0; /* a fresh scan, even of another argv (glibc and musl) */
  opterr = 0;
  int c;
  char name[80];
  while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
    if (c == ':' || c == '?') {
      key_name(o, optopt, name, sizeof name);
      if (c == ':') return nq_errorf(err, errlen, NQ_EINVAL, "%s: needs a value", name);
      if (optopt) /* a known long option given a value it does not take, or an unknown -x */
        return nq_errorf(err, errlen, NQ_EINVAL, optopt >= KEY_BASE ? "%s: takes no value"
                                                                    : "unknown option '%s'", name);
      return nq_errorf(err, errlen, NQ_EINVAL, "unknown option '%s'", argv[optind - 1]);
    }
    if (c == KEY_HELP || c == 'h') {
      (o->help ? o->help : nq_opts_help)(o, stdout);
      return NQ_OPTS_DONE;
    }
    if (c == KEY_VERSION) {
      o->version(o->prog);
      return NQ_OPTS_DONE;
    }
    if (c == KEY_MAN) {
      nq_opts_man(o, stdout);
      return NQ_OPTS_DONE;
    }
    int i = c >= KEY_BASE ? c - KEY_BASE : index_of(o, NULL, c);
    void *base;
    const nq_opt_t *p = nth(o, i, &base);
    if (!p) return nq_errorf(err, errlen, NQ_EINVAL, "unknown option '%s'", argv[optind - 1]);
    if (o->given[i] < 255) o->given[i]++;
    key_name(o, c, name, sizeof name);
    if ((rc = set_labeled(p, base, optarg ? optarg : "1", name, err, errlen)) != 0) return rc;
  }
  o->optind = optind;
  return read_env(o, err, errlen);
}

int nq_opts_main(nq_opts_t *o, int argc, char **argv, int usage_status) {
  char err[512];
  int rc = nq_opts_parse(o, argc, argv, err, sizeof err);
  if (rc == NQ_OPTS_DONE) return 0;
  if (rc == 0) return -1;
  fprintf(stderr, "%s: %s (%s --help lists the options)\n", o->prog, err, o->prog);
  return usage_status;
}

/* ---- --help ------------------------------------------------------------------------------- */

/* choices' i-th value into buf. */
static void choice_at(const char *choices, int i, char *buf, size_t len) {
  const char *p = choices;
  for (; i > 0 && p; i--) p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL;
  snprintf(buf, len, "%.*s", p ? (int)strcspn(p, "|") : 0, p ? p : "");
}

/* An option's default for --help: def, or with NQ_OPTF_SHOWDEF the field's value in base. */
static int default_text(const nq_opt_t *p, const void *base, char *buf, size_t len) {
  if (p->def) return snprintf(buf, len, "%s", p->def), 1;
  if (!(p->flags & NQ_OPTF_SHOWDEF) || !base || p->set) return 0;
  const char *v = (const char *)base + p->off;
  switch (p->type) {
  case NQ_OPT_INT: snprintf(buf, len, "%d", *(const int *)(const void *)v); return 1;
  case NQ_OPT_INT64:
    snprintf(buf, len, "%lld", (long long)*(const int64_t *)(const void *)v);
    return 1;
  case NQ_OPT_UINT64:
    snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)(const void *)v);
    return 1;
  case NQ_OPT_DOUBLE: fmt_num(buf, len, *(const double *)(const void *)v); return 1;
  case NQ_OPT_ENUM: choice_at(p->choices, *(const int *)(const void *)v, buf, len); return 1;
  case NQ_OPT_STRING: {
    const char *str = *(const char *const *)(const void *)v;
    if (!str) return 0;
    snprintf(buf, len, "%s", str);
    return 1;
  }
  default: return 0;
  }
}

/* The appended facts: "LO..HI, default D; $ENV too", or "" when there are none. */
static void facts(const nq_opt_t *p, const void *base, char *buf, size_t len) {
  char range[96] = "", lo[32], hi[32], def[256];
  buf[0] = 0;
  if (p->flags & NQ_OPTF_NOFACTS) return;
  if (!p->set && (p->type == NQ_OPT_INT || p->type == NQ_OPT_INT64))
    snprintf(range, sizeof range, "%lld..%lld", p->lo, p->hi);
  else if (!p->set && p->type == NQ_OPT_UINT64 && p->hi)
    snprintf(range, sizeof range, "%lld..%lld", p->lo, p->hi);
  else if (!p->set && p->type == NQ_OPT_DOUBLE) {
    fmt_num(lo, sizeof lo, p->dlo);
    fmt_num(hi, sizeof hi, p->dhi);
    snprintf(range, sizeof range, "%s..%s", lo, hi);
  }
  size_t n = 0;
  if (range[0]) n += (size_t)snprintf(buf + n, len - n, "%s", range);
  if (default_text(p, base, def, sizeof def) && n < len)
    n += (size_t)snprintf(buf + n, len - n, "%sdefault %s", n ? ", " : "", def);
  if (p->env && n < len) snprintf(buf + n, len - n, "%s$%s too", n ? "; " : "", p->env);
}

/* Write text wrapped at HELP_WIDTH, each line after the first indented by col (the first one
 * starts at column *at). '\n' in text forces a break. */
static void wrap(FILE *f, const char *text, int col, int at) {
  for (const char *p = text; *p;) {
    if (*p == '\n') {
      fprintf(f, "\n%*s", col, "");
      at = col;
      p++;
      continue;
    }
    size_t w = strcspn(p, " \n");
    if (at > col && at + 1 + (int)w > HELP_WIDTH) {
      fprintf(f, "\n%*s", col, "");
      at = col;
    } else if (at > col) {
      fputc(' ', f);
      at++;
    }
    fprintf(f, "%.*s", (int)w, p);
    at += (int)w;
    p += w;
    while (*p == ' ') p++;
  }
  fputc('\n', f);
}

static void arg_name(const nq_opt_t *p, char *buf, size_t len) {
  if (!takes_value(p)) buf[0] = 0;
  else if (p->arg) snprintf(buf, len, " %s", p->arg);
  else if (p->type == NQ_OPT_ENUM) snprintf(buf, len, " %s", p->choices);
  else snprintf(buf, len, " VALUE");
}

static void help_one(const nq_opt_t *p, const void *base, FILE *f) {
  char head[256], arg[128], text[1024], fx[256];
  arg_name(p, arg, sizeof arg);
  if (p->letter) snprintf(head, sizeof head, "  -%c, --%s%s", p->letter, p->name, arg);
  else snprintf(head, sizeof head, "  --%s%s", p->name, arg);
  facts(p, base, fx, sizeof fx);
  snprintf(text, sizeof text, fx[0] ? "%s (%s)" : "%s", p->help, fx);
  int at = fprintf(f, "%s", head);
  if (at >= HELP_COL) {
    fputc('\n', f);
    at = 0;
  }
  fprintf(f, "%*s", HELP_COL - at, "");
  wrap(f, text, HELP_COL, HELP_COL);
}

void nq_opts_help_table(const nq_opt_t *table, const void *base, FILE *f) {
  for (const nq_opt_t *p = table; p->type != NQ_OPT_END; p++) {
    if (p->type == NQ_OPT_SECTION) fprintf(f, "%s\n", p->help);
    else if (!(p->flags & NQ_OPTF_HIDDEN)) help_one(p, base, f);
  }
}

void nq_opts_help(const nq_opts_t *o, FILE *f) {
  fprintf(f, "usage: %s\n", o->usage);
  if (o->about) fprintf(f, "%s\n", o->about);
  for (int g = 0; g < NQ_OPTS_GROUPS && o->group[g].opts; g++) nq_opts_help_table(o->group[g].opts, o->group[g].base, f);
  help_one(&builtin_help, NULL, f);
  if (o->version) help_one(&builtin_version, NULL, f);
  if (o->epilog) fprintf(f, "%s\n", o->epilog);
}

/* ---- the man page ------------------------------------------------------------------------- */

/* roff text: backslashes and hyphens escaped, no line starting a request. '\n' in text is a
 * line break (br) when br is set, else a space. */
static void roff(FILE *f, const char *text, int br) {
  int bol = 1;
  for (const char *p = text; *p; p++) {
    if (bol && (*p == '.' || *p == '\'')) fputs("\\&", f);
    bol = 0;
    if (*p == '\\') fputs("\\e", f);
    else if (*p == '-') fputs("\\-", f);
    else if (*p == '\n') {
      fputs(br ? "\n.br\n" : "\n", f);
      bol = 1;
    } else fputc(*p, f);
  }
  fputc('\n', f);
}

static void man_one(const nq_opt_t *p, const void *base, FILE *f) {
  char head[256], arg[128], fx[256], text[1024];
  arg_name(p, arg, sizeof arg);
  if (p->letter) snprintf(head, sizeof head, "-%c, --%s%s", p->letter, p->name, arg);
  else snprintf(head, sizeof head, "--%s%s", p->name, arg);
  fputs(".TP\n.B ", f);
  roff(f, head, 0);
  facts(p, base, fx, sizeof fx);
  snprintf(text, sizeof text, fx[0] ? "%s (%s)" : "%s", p->help, fx);
  roff(f, text, 1);
}

void nq_opts_man(const nq_opts_t *o, FILE *f) {
  char up[64], line[512];
  size_t i;
  for (i = 0; o->prog[i] && i + 1 < sizeof up; i++) up[i] = (char)toupper((unsigned char)o->prog[i]);
  up[i] = 0;
  fputs(".TH ", f);
  fprintf(f, "\"%s\" 1 \"\" \"nq %s\" \"nq\"\n", up, NQ_VERSION_STRING);
  fputs(".SH NAME\n", f);
  snprintf(line, sizeof line, "%s - %s", o->prog, o->summary ? o->summary : "");
  roff(f, line, 0);
  fputs(".SH SYNOPSIS\n.nf\n", f);
  roff(f, o->usage, 0);
  fputs(".fi\n", f);
  if (o->about) {
    fputs(".SH DESCRIPTION\n.nf\n", f);
    roff(f, o->about, 0);
    fputs(".fi\n", f);
  }
  fputs(".SH OPTIONS\n", f);
  int env = 0;
  for (int g = 0; g < NQ_OPTS_GROUPS && o->group[g].opts; g++)
    for (const nq_opt_t *p = o->group[g].opts; p->type != NQ_OPT_END; p++) {
      if (p->type == NQ_OPT_SECTION) {
        snprintf(line, sizeof line, "%s", p->help);
        size_t n = strlen(line);
        if (n && line[n - 1] == ':') line[n - 1] = 0;
        fputs(".SS ", f);
        roff(f, line, 0);
      } else if (!(p->flags & NQ_OPTF_HIDDEN)) {
        man_one(p, o->group[g].base, f);
        env += p->env != NULL;
      }
    }
  man_one(&builtin_help, NULL, f);
  if (o->version) man_one(&builtin_version, NULL, f);
  if (env) {
    fputs(".SH ENVIRONMENT\n", f);
    const nq_opt_t *p;
    for (int k = 0; (p = nth(o, k, NULL)) != NULL; k++) {
      if (!p->env || (p->flags & NQ_OPTF_HIDDEN)) continue;
      fputs(".TP\n.B ", f);
      roff(f, p->env, 0);
      snprintf(line, sizeof line, "as --%s, when the command line does not give it", p->name);
      roff(f, line, 0);
    }
  }
  if (o->epilog) {
    fputs(".SH NOTES\n.nf\n", f);
    roff(f, o->epilog, 0);
    fputs(".fi\n", f);
  }
  fputs(".SH SEE ALSO\nThe nq documentation in /usr/share/doc/nq\\-client and "
        "/usr/share/doc/nq\\-server.\n", f);
}
