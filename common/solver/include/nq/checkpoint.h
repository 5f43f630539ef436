/* nq: checkpoints -- a solve in progress, saved so that it can be resumed (docs/client.md,
 * "Checkpoints").
 *
 * A solve is cut into tasks (solver_pool.h: the subject expanded to one depth, in the generator's
 * order). Every task is solved by the pure function nq_fast_solve_unit, so a task is either
 * finished, with exact counts, or not started; a checkpoint records which tasks are finished and
 * the sum of their counts (c2, c4, c8, nodes). A resumed solve re-makes the same cut, skips the
 * finished tasks and adds their sum: its result equals an uninterrupted solve bit for bit, node
 * count included.
 *
 * What a checkpoint holds: the subject (one unit, or all of N), the solver version, the cut (its
 * depth, its number of tasks, the SHA-256 of its task list), the finished tasks (a bitmap), their
 * summed counts, and the solve time spent so far (all runs together).
 *
 * The file (untrusted input: it may be truncated by a full disk, flipped by bad memory, copied
 * from another machine or written by an older version) is two lines:
 *
 *   {"format":"nq-checkpoint-1","solver":"nq-solver-4","unit":"18:c:5:0,5,12",
 *    "cut":{"depth":7,"tasks":4096,"hash":"<64 hex>"},"done":{"tasks":12,"c2":0,"c4":0,
 *    "c8":1234,"nodes":567890},"seconds":12.5,"finished":"<hex bitmap>"}
 *   sha256 <64 hex: the SHA-256 of the first line's bytes>
 *
 * (the first line is one line; a whole-N subject has "n" and "depth" instead of "unit"). The
 * decoder checks the checksum first, then every field: the format and solver version, the subject,
 * ranges, the bitmap's length and padding, that the number of its set bits is `done.tasks`, and
 * that the sums are possible. Anything doubtful is refused with a reason; the caller then starts
 * the unit from zero. Never a wrong count: a checkpoint that passes here is also matched against
 * the re-made cut (solver_pool.h) before it is used.
 */
#ifndef NQ_CHECKPOINT_H
#define NQ_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "nq/solver.h"
#include "nq/unit.h"

#define NQ_CKPT_FORMAT "nq-checkpoint-1"
#define NQ_CKPT_TASKS_MAX (1u << 17) /* most tasks a cut may have */
#define NQ_CKPT_FILE_MAX (96 * 1024) /* a bigger file is not a checkpoint */
#define NQ_CKPT_HASH_LEN 32          /* SHA-256 */
#define NQ_CKPT_ERR_MAX 160          /* a refusal's reason */

/* What a solve counts: one unit, or all of N (its depth-2 units, tasks at least `depth` deep,
 * as nq_solve_n). */
typedef struct nq_subject_s {
  int whole;      /* 1: all of N; 0: one unit */
  int n;          /* the board */
  int depth;      /* one unit: its prefix length; all of N: the least task depth (effective) */
  nq_unit_t unit; /* one unit */
} nq_subject_t;

/* A subject for one unit (validated: NQ_EINVAL/NQ_ERANGE as nq_unit_validate). */
int nq_subject_unit(nq_subject_t *s, const nq_unit_t *u);
/* A subject for all of N (NQ_UNIT_MIN_N..NQ_MAX_N) with tasks at least nq_unit_effective_depth(n,
 * depth) deep (depth >= 2). NQ_ERANGE outside those. */
int nq_subject_whole(nq_subject_t *s, int n, int depth);
/* 1 if a and b name the same solve. */
int nq_subject_equal(const nq_subject_t *a, const nq_subject_t *b);
/* "18:c:5:0,5,12" or "N=18 (depth 3)"; returns buf. */
char *nq_subject_str(const nq_subject_t *s, char *buf, size_t len);

typedef struct nq_ckpt_s {
  nq_subject_t subject;
  int cut_depth;                        /* every task's depth */
  uint32_t ntasks;                      /* 1..NQ_CKPT_TASKS_MAX, or 0 for an empty cut */
  uint8_t cut_hash[NQ_CKPT_HASH_LEN];   /* SHA-256 of the task list (solver_pool.c) */
  uint8_t *done;                        /* (ntasks + 7) / 8 bytes; bit i%8 of byte i/8: task i */
  uint32_t ndone;                       /* set bits in done */
  nq_counts_t sum;                      /* the finished tasks' counts, summed (count1 is 0) */
  double seconds;                       /* solve time spent on it so far, every run together */
} nq_ckpt_t;

/* An empty checkpoint (nothing finished) for a cut; c->done is allocated. 0, NQ_ERANGE (too many
 * tasks), NQ_ENOMEM. Release with nq_ckpt_free. */
int nq_ckpt_init(nq_ckpt_t *c, const nq_subject_t *s, int cut_depth, uint32_t ntasks,
                 const uint8_t hash[NQ_CKPT_HASH_LEN]);
void nq_ckpt_free(nq_ckpt_t *c);
/* 1 if task i is finished. */
int nq_ckpt_task_done(const nq_ckpt_t *c, uint32_t i);

/* The fraction done, 0..1: the finished tasks' share of est_nodes (the subject's estimated node
 * count) when an estimate is given, else their share of the tasks. Only a checkpoint with every
 * task finished says 1. */
double nq_ckpt_fraction(const nq_ckpt_t *c, uint64_t est_nodes);

/* The file's bytes (both lines, "\n"-terminated) in a new buffer (*out, caller frees; *len).
 * 0, NQ_ENOMEM, NQ_ETLS (the hash failed). */
int nq_ckpt_encode(const nq_ckpt_t *c, char **out, size_t *len);
/* Parse and check a file's bytes (see above) into *c (caller frees with nq_ckpt_free; nothing to
 * free on failure). Returns 0, or NQ_EINVAL with a one-line reason in err (when given): bad
 * checksum, truncated, another format or solver version, a malformed or impossible field. */
int nq_ckpt_decode(const char *buf, size_t len, nq_ckpt_t *c, char *err, size_t errlen);

/* Write c to dir/name with nq_file_replace (mode 0600: temporary file, fsync, rename, fsync of
 * the directory). 0, NQ_ENOMEM, NQ_EINVAL, NQ_EIO. */
int nq_ckpt_save(const char *dir, const char *name, const nq_ckpt_t *c);
/* Read and decode the file at path. 0; NQ_ENOTFOUND when there is none; NQ_EINVAL (the reason
 * in err) for a file that is no valid checkpoint, too big ones included; NQ_EIO, NQ_ENOMEM. */
int nq_ckpt_load(const char *path, nq_ckpt_t *c, char *err, size_t errlen);

#endif
