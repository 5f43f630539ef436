/* nq: command-line options declared once (docs/style.md, "Options and messages"; as tmux's
 * options table and redis's config do).
 *
 * A program declares each option once, in a table of nq_opt_t: its long name, short letter,
 * type, bounds, default, help text, environment variable and where its value goes (an offset
 * into a struct the caller names when it parses). Everything else comes from that table:
 *   - parsing (getopt_long underneath), with checked numbers: the whole string, errno, the
 *     bounds ("--threads: expected an integer 1..1024, got '0'");
 *   - the defaults, written as a value would be and applied through the same parser;
 *   - environment variables, read for options the command line does not give;
 *   - --help (one aligned, wrapped entry per option, bounds, default and variable appended);
 *   - the man page (--man, a hidden option: packaging/install.cmake writes each page with it).
 *
 * A program may parse several tables into several structs at once (nq-server: the job options
 * of nq/job_opts.h into an nq_jobopts_t, its own into srv_config_t): one nq_opt_group_t each.
 *
 * Order of precedence: the program's own initialisation, then the table's defaults, then the
 * environment, then the command line (the last occurrence of an option wins, except for
 * NQ_OPTF_REPEAT options, whose setter sees every one).
 */
#ifndef NQ_OPTS_H
#define NQ_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum nq_opt_type_e {
  NQ_OPT_END = 0, /* ends a table ({0}) */
  NQ_OPT_SECTION, /* not an option: a heading in --help and the man page (help = its text) */
  NQ_OPT_FLAG,    /* no value: the int at off becomes 1 */
  NQ_OPT_INT,     /* int within [lo, hi] */
  NQ_OPT_INT64,   /* int64_t within [lo, hi] */
  NQ_OPT_UINT64,  /* uint64_t within [lo, hi], hi 0 meaning no bound (UINT64_MAX); no sign */
  NQ_OPT_DOUBLE,  /* double within [dlo, dhi] (NaN refused) */
  NQ_OPT_STRING,  /* const char *: the argument itself (argv's, the environment's or def);
                     refused when empty, unless NQ_OPTF_EMPTY_OK */
  NQ_OPT_ENUM,    /* int: the index of the value among choices ("idle|low|normal") */
} nq_opt_type_t;

/* Flags of an option. */
#define NQ_OPTF_HIDDEN 1u   /* parsed, but left out of --help and the man page */
#define NQ_OPTF_REPEAT 2u   /* may be given many times; the setter sees each one */
#define NQ_OPTF_EMPTY_OK 4u /* NQ_OPT_STRING: an empty value is a value */
#define NQ_OPTF_NOFACTS 8u  /* --help appends no bounds or default: the help text says them */
#define NQ_OPTF_SHOWDEF 16u /* def NULL: --help shows the field's value as the default (the
                               program's own initialisation, e.g. a config_default function) */

typedef struct nq_opt_s nq_opt_t;

/* A program's own parse of a value, instead of storing it by type. base is the group's struct;
 * value the text (never NULL; "1" for a flag). Returns 0, or a negative NQ_E* code with the
 * reason in err (the caller prefixes it with the option's name). */
typedef int (*nq_opt_set_fn)(void *base, const nq_opt_t *o, const char *value, char *err,
                             size_t errlen);

struct nq_opt_s {
  nq_opt_type_t type;
  const char *name;    /* long name without "--" */
  int letter;          /* short letter (-t), 0 for none */
  size_t off;          /* where the value goes: offsetof(the group's struct, field) */
  const char *arg;     /* the value's name in --help ("N", "HOST:PORT"); ENUM: NULL = choices */
  long long lo, hi;    /* INT, INT64: inclusive bounds */
  double dlo, dhi;     /* DOUBLE: inclusive bounds */
  const char *choices; /* ENUM: the values, '|'-separated */
  const char *def;     /* the default, as it would be written; NULL: the program's own */
  const char *env;     /* environment variable read when the option is not given, or NULL */
  nq_opt_set_fn set;   /* the program's parse (then off is unused), or NULL */
  unsigned flags;      /* NQ_OPTF_* */
  const char *help;    /* prose; the printer wraps it ('\n' forces a break) and appends the
                          bounds, the default and the variable */
};

/* A macro's value as a string literal, for defaults and help: NQ_STR(NQ_MAX_N) is "32". */
#define NQ_STR_(x) #x
#define NQ_STR(x) NQ_STR_(x)

/* One table and the struct its offsets point into. */
typedef struct nq_opt_group_s {
  const nq_opt_t *opts; /* ends with an NQ_OPT_END entry */
  void *base;
} nq_opt_group_t;

#define NQ_OPTS_MAX 96    /* options in all the groups of one program */
#define NQ_OPTS_GROUPS 4

/* A program's (or a subcommand's) command line. */
typedef struct nq_opts_s {
  const char *prog;     /* "nq-server", "nq-client status": messages and --help */
  const char *summary;  /* one line for the man page's NAME */
  const char *usage;    /* the synopsis: lines after "usage: " (the first starts with prog) */
  const char *about;    /* what the program does, before the options */
  const char *epilog;   /* after the options: exit statuses and the like */
  void (*version)(const char *prog); /* --version's printer (nq_print_version), or NULL */
  /* --help's printer, when the program prints its own (nq-admin's commands); NULL:
   * nq_opts_help. data is the program's, for it. */
  void (*help)(const struct nq_opts_s *o, FILE *f);
  const void *data;
  nq_opt_group_t group[NQ_OPTS_GROUPS]; /* the tables, in --help order; opts NULL ends */
  /* Filled by nq_opts_parse: */
  unsigned char given[NQ_OPTS_MAX]; /* times each option (all groups, in order) was given */
  int optind;                       /* the first operand in the permuted argv */
} nq_opts_t;

/* nq_opts_parse's positive answer: --help, --version or --man was printed; exit 0. */
#define NQ_OPTS_DONE 1

/* Parse argv (argv[0] the program) into the groups: the defaults, the environment, then the
 * options. Operands stay in argv from o->optind on (getopt_long permutes them there). Returns
 * 0; NQ_OPTS_DONE after --help, --version or --man (printed to stdout); or a negative NQ_E*
 * code with one line in err ("--threads: expected an integer 0..1024, got 'x'", "unknown
 * option '--thread'", "--threads: needs a value"). Not reentrant (getopt). */
int nq_opts_parse(nq_opts_t *o, int argc, char **argv, char *err, size_t errlen);

/* nq_opts_parse for a main(): an error is printed as "PROG: why" with a hint to --help.
 * Returns -1 to go on, 0 after --help/--version/--man, or usage_status after an error. */
int nq_opts_main(nq_opts_t *o, int argc, char **argv, int usage_status);

/* Set one option from text, as the command line would (for a program's own table walks and
 * tests): 0, or a negative code with "--NAME: why" in err. A refused value changes nothing. */
int nq_opt_set(const nq_opt_t *opt, void *base, const char *value, char *err, size_t errlen);

/* Apply every default of the groups (what nq_opts_parse does first). 0 or as nq_opt_set. */
int nq_opts_defaults(const nq_opts_t *o, char *err, size_t errlen);

/* The defaults of one table into base (a program's config_default function): 0 or as
 * nq_opt_set. The defaults are declared in the table, so this is their one home. */
int nq_opts_table_defaults(const nq_opt_t *table, void *base, char *err, size_t errlen);

/* The option named name (without "--") in the groups, and how often it was given. */
const nq_opt_t *nq_opts_find(const nq_opts_t *o, const char *name);
int nq_opts_given(const nq_opts_t *o, const char *name);

/* --help to f: "usage: " + usage, about, each section and option, epilog. */
void nq_opts_help(const nq_opts_t *o, FILE *f);
/* The --help lines of one table (sections included), as nq_opts_help writes them. */
void nq_opts_help_table(const nq_opt_t *table, const void *base, FILE *f);
/* The man page (roff) to f: NAME, SYNOPSIS, DESCRIPTION, OPTIONS, ENVIRONMENT, the epilog. */
void nq_opts_man(const nq_opts_t *o, FILE *f);

/* The table's own consistency: no name or letter twice (help, version and man included), each
 * default accepted by its own option, bounds in order, choices for an enum. 0, or NQ_EINVAL
 * naming the first fault in err. nq_opts_parse asserts it in debug builds. */
int nq_opts_check(const nq_opts_t *o, char *err, size_t errlen);

#endif
