/* nq: the GPU backend on OpenCL 1.2 (nq/gpu.h): devices, the kernel's build and self-test, the
 * host's expansion of units into subtrees, and launches bounded in time.
 */
#include "nq/gpu.h"

#include "nq/log.h"
#include "nq/nq.h"
#include "nq/throttle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- --gpu values (no OpenCL needed) ------------------------------------------------------- */

int nq_gpu_select(const char *spec, const nq_gpu_info_t *devs, int ndevs, int *idx, int max,
                  int *count, char *err, size_t errlen) {
  *count = 0;
  if (!spec || !*spec) return nq_errorf(err, errlen, NQ_EINVAL, "empty --gpu value");
  if (!strcmp(spec, "off")) return 0;
  int all = !strcmp(spec, "all");
  if (all || !strcmp(spec, "auto")) {
    for (int i = 0; i < ndevs && *count < max; i++)
      if (all || devs[i].is_gpu) idx[(*count)++] = devs[i].index;
    return 0;
  }
  const char *p = spec;
  while (*p) {
    if (*p < '0' || *p > '9')
      return nq_errorf(err, errlen, NQ_EINVAL,
                       "--gpu takes auto, off, all or device indexes such as 0,1 (not '%s')", spec);
    long v = 0;
    while (*p >= '0' && *p <= '9' && v < 1000) v = v * 10 + (*p++ - '0');
    if (*p == ',' && p[1]) p++;
    else if (*p) return nq_errorf(err, errlen, NQ_EINVAL, "--gpu '%s': expected 0,1,...", spec);
    int found = 0;
    for (int i = 0; i < ndevs; i++) found |= devs[i].index == v;
    if (!found)
      return nq_errorf(err, errlen, NQ_EINVAL, "--gpu: no OpenCL device %ld (%d found; "
                       "nq-solve --gpu-list shows them)", v, ndevs);
    for (int i = 0; i < *count; i++)
      if (idx[i] == v) return nq_errorf(err, errlen, NQ_EINVAL, "--gpu: device %ld twice", v);
    if (*count >= max) return nq_errorf(err, errlen, NQ_EINVAL, "--gpu: too many devices");
    idx[(*count)++] = (int)v;
  }
  return 0;
}

int nq_gpu_open_spec(const char *spec, const nq_gpu_opts_t *opts, nq_gpu_t **out, int max,
                     int *count, char *err, size_t errlen) {
  *count = 0;
  if (spec && !strcmp(spec, "off")) return 0;
  nq_gpu_info_t devs[NQ_GPU_MAX_DEVICES];
  int ndev = 0, idx[NQ_GPU_MAX_DEVICES], nsel = 0;
  if (nq_gpu_list(devs, NQ_GPU_MAX_DEVICES, &ndev) != 0) {
    char why[400];
    nq_gpu_available(why, sizeof why);
    if (spec && !strcmp(spec, "auto")) { /* nothing to use, nothing asked for by name */
      nq_log(NQ_LOG_INFO, "no GPU: %s; the CPU only", why);
      return 0;
    }
    return nq_errorf(err, errlen, NQ_ENODEV, "--gpu %s: %s", spec, why);
  }
  int rc = nq_gpu_select(spec, devs, ndev, idx, NQ_GPU_MAX_DEVICES, &nsel, err, errlen);
  if (rc) return rc;
  nq_gpu_opts_t o = {0};
  if (opts) o = *opts;
  for (int i = 0; i < nsel && *count < max; i++) {
    char why[1024];
    nq_gpu_t *g;
    int r = nq_gpu_open(idx[i], &o, &g, why, sizeof why);
    if (r) {
      nq_log(NQ_LOG_ERROR, "OpenCL device %d (%s) refused, the CPU goes on without it: %s", idx[i],
             devs[idx[i]].name, why);
      continue;
    }
    nq_log(NQ_LOG_INFO, "OpenCL device %d: %s (%s, driver %s, %u compute units) passed its "
           "self-test", idx[i], devs[idx[i]].name, devs[idx[i]].platform, devs[idx[i]].driver,
           devs[idx[i]].compute_units);
    out[(*count)++] = g;
  }
  return 0;
}

void nq_backend_label(nq_gpu_t *const *gpus, int ngpus, const uint64_t *before, int cpu, char *buf,
                      size_t len) {
  size_t off = 0;
  if (len) buf[0] = '\0';
  for (int i = 0; i < ngpus; i++) {
    uint64_t nodes;
    double secs;
    nq_gpu_rate(gpus[i], &nodes, &secs);
    const char *l = nq_gpu_label(gpus[i]);
    if (nodes != (before ? before[i] : 0) && off + strlen(l) + 1 < len)
      off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "+" : "", l);
  }
  const char *k = nq_fast_kernel_in_use();
  if ((cpu || !off) && off + strlen(k) + 1 < len)
    snprintf(buf + off, len - off, "%s%s", off ? "+" : "", k);
}

/* ---- the host's expansion (no OpenCL needed: any thread may run it) ----------------------- */

#define REC 32 /* bytes of a subtree record (NQ_REC in gpu_kernel.cl) */

/* A subtree as a queue record (REC bytes: the depth, the prefix's columns). */
static void pack(const nq_unit_t *u, unsigned char *r) {
  memset(r, 0, REC);
  r[0] = (unsigned char)u->depth;
  memcpy(r + 1, u->prefix, (size_t)u->depth);
}

typedef struct subs_s {
  nq_unit_t *v;
  uint32_t *owner;       /* the index of the unit (of the solve) each subtree is below */
  size_t len, cap;
  uint32_t cur;          /* the owner of the children being pushed */
} subs_t;

static int subs_push(const nq_unit_t *u, void *arg) {
  subs_t *s = arg;
  if (s->len == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    nq_unit_t *v = realloc(s->v, cap * sizeof *v);
    if (v) s->v = v;
    uint32_t *o = v ? realloc(s->owner, cap * sizeof *o) : NULL;
    if (!o) return NQ_ENOMEM;
    s->owner = o;
    s->cap = cap;
  }
  s->owner[s->len] = s->cur;
  s->v[s->len++] = *u;
  return 0;
}

static void subs_free(subs_t *s) {
  free(s->v);
  free(s->owner);
  memset(s, 0, sizeof *s);
}

static int rows_below(const nq_unit_t *u) { return u->n - 1 - u->depth; }

/* Expand units into subtrees (see nq/gpu.h): every subtree has at most `rows` rows below it,
 * `rows` starting at NQ_GPU_ROWS_MAX and lowered while the batch holds fewer than `want`
 * subtrees, down to NQ_GPU_ROWS_MIN. The expanded nodes are added to host[owner]. */
static int expand(const nq_unit_t *units, size_t n, size_t want, uint64_t *host, subs_t *res) {
  subs_t cur = {0};
  int rc = 0, rows = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    cur.cur = (uint32_t)i;
    rc = subs_push(&units[i], &cur);
    if (rows_below(&units[i]) > rows) rows = rows_below(&units[i]);
  }
  if (rows > NQ_GPU_ROWS_MAX) rows = NQ_GPU_ROWS_MAX;
  for (;;) {
    int deeper = 0;
    for (size_t i = 0; i < cur.len && !deeper; i++) deeper = rows_below(&cur.v[i]) > rows;
    if (!deeper) {
      if (cur.len >= want || rows <= NQ_GPU_ROWS_MIN) break;
      rows--;
      continue;
    }
    subs_t next = {0};
    for (size_t i = 0; i < cur.len && rc == 0; i++) {
      next.cur = cur.owner[i];
      if (rows_below(&cur.v[i]) <= rows) {
        rc = subs_push(&cur.v[i], &next);
      } else {
        host[cur.owner[i]]++;
        rc = nq_unit_children(&cur.v[i], subs_push, &next);
      }
    }
    subs_free(&cur);
    cur = next;
    if (rc) break;
  }
  if (rc) subs_free(&cur);
  *res = cur;
  return rc;
}

struct nq_gpu_batch_s {
  size_t n;       /* units */
  int bn;         /* their N */
  int used;       /* solved (or being solved): its host counts have the splits taken off */
  int started;    /* started on a device at the tail of the batch before (nq_gpu_solve_batch) */
  size_t base;    /* on the device its units are the owners base..base+n-1 */
  size_t len;     /* its subtrees: as queue records (rec, REC bytes each) and the index of the
                     unit each is below (own), packed here, off the device's thread */
  unsigned char *rec;
  uint32_t *own;
  uint64_t *host; /* per unit: the nodes of its rows expanded here, less one for each subtree
                     split off a search (counted on the stack and again as a first node) */
};

int nq_gpu_batch_expand(const nq_unit_t *units, size_t n, size_t want, nq_gpu_batch_t **out) {
  *out = NULL;
  if (n > NQ_GPU_BATCH_UNITS_MAX) return NQ_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (units[i].n != units[0].n || nq_unit_validate(&units[i], NULL, 0)) return NQ_EINVAL;
  nq_gpu_batch_t *b = calloc(1, sizeof *b);
  if (!b) return NQ_ENOMEM;
  b->n = n;
  b->bn = n ? units[0].n : 0;
  b->host = calloc(n ? n : 1, sizeof *b->host);
  subs_t q = {0};
  int rc = b->host ? expand(units, n, want ? want : NQ_GPU_SUBTREES, b->host, &q) : NQ_ENOMEM;
  if (rc == 0) {
    b->len = q.len;
    b->rec = malloc((q.len ? q.len : 1) * REC);
    b->own = malloc((q.len ? q.len : 1) * sizeof *b->own);
    if (!b->rec || !b->own) rc = NQ_ENOMEM;
    for (size_t i = 0; rc == 0 && i < q.len; i++) {
      pack(&q.v[i], b->rec + i * REC);
      b->own[i] = q.owner[i];
    }
  }
  subs_free(&q);
  if (rc) {
    nq_gpu_batch_free(b);
    return rc;
  }
  *out = b;
  return 0;
}

void nq_gpu_batch_free(nq_gpu_batch_t *b) {
  if (!b) return;
  free(b->rec);
  free(b->own);
  free(b->host);
  free(b);
}

size_t nq_gpu_batch_subtrees(const nq_gpu_batch_t *b) { return b->len; }

#ifndef NQ_HAVE_OPENCL

int nq_gpu_built(void) { return 0; }
int nq_gpu_available(char *why, size_t whylen) {
  return nq_errorf(why, whylen, NQ_ENODEV, "this build has no OpenCL backend (NQ_OPENCL=OFF)");
}
int nq_gpu_list(nq_gpu_info_t *out, int max, int *count) {
  (void)out, (void)max;
  *count = 0;
  return NQ_ENODEV;
}
int nq_gpu_open(int index, const nq_gpu_opts_t *opts, nq_gpu_t **out, char *err, size_t errlen) {
  (void)index, (void)opts;
  *out = NULL;
  return nq_errorf(err, errlen, NQ_ENODEV, "this build has no OpenCL backend (NQ_OPENCL=OFF)");
}
void nq_gpu_close(nq_gpu_t *g) { (void)g; }
const char *nq_gpu_label(const nq_gpu_t *g) { return (void)g, "opencl:none"; }
const nq_gpu_info_t *nq_gpu_info(const nq_gpu_t *g) { return (void)g, NULL; }
int nq_gpu_solve(nq_gpu_t *g, const nq_unit_t *units, size_t n, nq_counts_t *out,
                 const nq_gpu_ctl_t *ctl) {
  (void)g, (void)units, (void)n, (void)out, (void)ctl;
  return NQ_ENODEV;
}
int nq_gpu_solve_batch(nq_gpu_t *g, nq_gpu_batch_t *b, const nq_gpu_ahead_t *ahead,
                       nq_counts_t *out, const nq_gpu_ctl_t *ctl) {
  (void)g, (void)b, (void)ahead, (void)out, (void)ctl;
  return NQ_ENODEV;
}
void nq_gpu_rate(const nq_gpu_t *g, uint64_t *nodes, double *seconds) {
  (void)g;
  *nodes = 0;
  *seconds = 0;
}
int nq_gpu_failed(const nq_gpu_t *g, const char **why) {
  (void)g;
  if (why) *why = "no OpenCL backend";
  return 1;
}
uint64_t nq_gpu_splits(const nq_gpu_t *g) { return (void)g, 0; }
uint64_t nq_gpu_launches(const nq_gpu_t *g) { return (void)g, 0; }
uint64_t nq_gpu_ahead(const nq_gpu_t *g) { return (void)g, 0; }
uint64_t nq_gpu_tails(const nq_gpu_t *g) { return (void)g, 0; }

#else /* NQ_HAVE_OPENCL */

/* <CL/cl.h>, its functions called through the loader opened at run time. */
#include "ocl_load.h"

/* The kernel's source, made from gpu_kernel.cl by the build (CMakeLists.txt). */
extern const char nq_gpu_kernel_src[];

#define GROUP 64           /* work-items of a work-group (NQ_GROUP in gpu_kernel.cl) */
#define SV_REC 3           /* a slot's saved search (NQ_SLOT, SV_* in gpu_kernel.cl) */
#define SV_STACK 11
#define SLOT_WORDS (SV_STACK + 4 * NQ_GPU_ROWS_MAX)
#define SLOTS_PER_CU 2048  /* slots per compute unit: a GPU's resident threads */
#define SLOTS_MIN 1024
#define SLOTS_MAX (1u << 19)
#define SPLIT_ONE_BY_ONE 16 /* at a tail, more running slots than this are read back at once */
#define BUDGET_FIRST 4096  /* iterations a work-item may make in the first launch */
#define BUDGET_MIN 256
#define BUDGET_MAX (1u << 24)
enum { S_EMPTY = 0, S_RUNNING = 2 }; /* NQ_EMPTY, NQ_RUNNING in gpu_kernel.cl */

struct nq_gpu_s {
  nq_gpu_info_t info;
  char label[160];
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  cl_program prog;
  cl_kernel k;
  cl_mem stat, save;      /* the slots: state and saved search */
  cl_mem recs, qown, qhead; /* the queue of subtrees (records, owners) and its atomic index */
  cl_mem tot;             /* per owner: c2, c4, c8, nodes as 64-bit totals (two words each) */
  size_t nslots, qcap, totcap;
  cl_uint *h_stat;
  unsigned char *h_recs;  /* host copies of the queue */
  cl_uint *h_qown, *h_tot;
  unsigned budget;        /* iterations a work-item makes per launch (adapted to launch_s) */
  int budget_fixed;       /* nq_gpu_opts_t.budget was given */
  double launch_s;
  unsigned fail_after, launches;
  uint32_t tot_bias;      /* nq_gpu_opts_t.tot_bias */
  int failed;
  char why[256];
  uint64_t nodes, splits, nlaunch, nahead, ntail;
  double busy;
  /* The queue on the device now: qlen records (host copies h_recs, h_qown), the first `taken`
   * of them taken; `chain`, the batch a solve started at its batch's tail and left running
   * (its owners from chain->base), which the next solve continues, or NULL. */
  size_t qlen, taken;
  nq_gpu_batch_t *chain;
};

int nq_gpu_built(void) { return 1; }
int nq_gpu_available(char *why, size_t whylen) { return nq_ocl_load(why, whylen); }

/* Every device in platform order; devs may be NULL to count. */
static int enum_devices(cl_device_id *ids, nq_gpu_info_t *info, int max) {
  cl_platform_id plats[16];
  cl_uint np = 0;
  if (nq_ocl_load(NULL, 0) != 0) return 0; /* no loader: no devices */
  if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) return 0; /* no ICD: no devices */
  int k = 0;
  for (cl_uint p = 0; p < np && p < 16; p++) {
    cl_device_id d[NQ_GPU_MAX_DEVICES];
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, NQ_GPU_MAX_DEVICES, d, &nd) != CL_SUCCESS)
      continue;
    char pname[128] = "";
    clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
    for (cl_uint i = 0; i < nd && i < NQ_GPU_MAX_DEVICES && k < max; i++, k++) {
      if (ids) ids[k] = d[i];
      if (!info) continue;
      nq_gpu_info_t *f = &info[k];
      memset(f, 0, sizeof *f);
      f->index = k;
      cl_device_type t = 0;
      cl_uint cu = 0;
      cl_ulong mem = 0;
      clGetDeviceInfo(d[i], CL_DEVICE_TYPE, sizeof t, &t, NULL);
      clGetDeviceInfo(d[i], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
      clGetDeviceInfo(d[i], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
      clGetDeviceInfo(d[i], CL_DEVICE_NAME, sizeof f->name - 1, f->name, NULL);
      clGetDeviceInfo(d[i], CL_DEVICE_VENDOR, sizeof f->vendor - 1, f->vendor, NULL);
      clGetDeviceInfo(d[i], CL_DRIVER_VERSION, sizeof f->driver - 1, f->driver, NULL);
      clGetDeviceInfo(d[i], CL_DEVICE_VERSION, sizeof f->version - 1, f->version, NULL);
      snprintf(f->platform, sizeof f->platform, "%s", pname);
      f->is_gpu = (t & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)) != 0;
      f->compute_units = cu;
      f->global_mem = mem;
    }
  }
  return k;
}

int nq_gpu_list(nq_gpu_info_t *out, int max, int *count) {
  *count = 0;
  if (nq_ocl_load(NULL, 0) != 0) return NQ_ENODEV;
  *count = enum_devices(NULL, out, max);
  return 0;
}

const char *nq_gpu_label(const nq_gpu_t *g) { return g->label; }
const nq_gpu_info_t *nq_gpu_info(const nq_gpu_t *g) { return &g->info; }

void nq_gpu_rate(const nq_gpu_t *g, uint64_t *nodes, double *seconds) {
  *nodes = g->nodes;
  *seconds = g->busy;
}

int nq_gpu_failed(const nq_gpu_t *g, const char **why) {
  if (why) *why = g->why;
  return g->failed;
}

uint64_t nq_gpu_splits(const nq_gpu_t *g) { return g->splits; }
uint64_t nq_gpu_launches(const nq_gpu_t *g) { return g->nlaunch; }
uint64_t nq_gpu_ahead(const nq_gpu_t *g) { return g->nahead; }
uint64_t nq_gpu_tails(const nq_gpu_t *g) { return g->ntail; }

/* Mark the device failed (every later solve answers NQ_EDEVICE) and say why on the log. */
static int fail(nq_gpu_t *g, const char *what, cl_int code) {
  if (!g->failed)
    nq_log(NQ_LOG_ERROR, "GPU %s: %s (OpenCL error %d); its work goes back to the CPU",
           g->label, what, (int)code);
  g->failed = 1;
  snprintf(g->why, sizeof g->why, "%s (OpenCL error %d)", what, (int)code);
  return NQ_EDEVICE;
}

/* The slots: nslots of each buffer on the device and the host copies. */
static int slots_alloc(nq_gpu_t *g, unsigned slots) {
  size_t n = (size_t)g->info.compute_units * SLOTS_PER_CU;
  n = n < SLOTS_MIN ? SLOTS_MIN : n > SLOTS_MAX ? SLOTS_MAX : n;
  if (slots) n = slots < SLOTS_MAX ? slots : SLOTS_MAX; /* a test's (nq_gpu_opts_t.slots) */
  n = (n + GROUP - 1) / GROUP * GROUP;
  cl_int e[3];
  g->stat = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, n * sizeof(cl_uint), NULL, &e[0]);
  g->save =
      clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, n * SLOT_WORDS * sizeof(cl_uint), NULL, &e[1]);
  g->qhead = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, sizeof(cl_uint), NULL, &e[2]);
  for (int i = 0; i < 3; i++)
    if (e[i] != CL_SUCCESS) return fail(g, "cannot allocate device memory", e[i]);
  g->h_stat = calloc(n, sizeof *g->h_stat);
  if (!g->h_stat) return NQ_ENOMEM;
  g->nslots = n;
  return 0;
}

/* The totals for at least `owners` owners (grown by doubling), the first `keep` owners' kept. */
static int tot_reserve(nq_gpu_t *g, size_t owners, size_t keep) {
  if (owners <= g->totcap) return 0;
  cl_int e = CL_SUCCESS;
  size_t cap = g->totcap ? g->totcap : 64;
  while (cap < owners) cap *= 2;
  cl_mem t = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, cap * 8 * sizeof(cl_uint), NULL, &e);
  if (e != CL_SUCCESS) return fail(g, "cannot allocate device memory", e);
  if (keep && g->tot)
    e = clEnqueueCopyBuffer(g->q, g->tot, t, 0, 0, keep * 8 * sizeof(cl_uint), 0, NULL, NULL);
  if (e == CL_SUCCESS) e = clFinish(g->q);
  if (e != CL_SUCCESS) {
    clReleaseMemObject(t);
    return fail(g, "cannot copy the totals", e);
  }
  if (g->tot) clReleaseMemObject(g->tot);
  g->tot = t;
  g->totcap = 0;
  cl_uint *h = realloc(g->h_tot, cap * 8 * sizeof *h);
  if (!h) return NQ_ENOMEM;
  g->h_tot = h;
  g->totcap = cap;
  return 0;
}

/* ---- launches ------------------------------------------------------------------------------ */

/* The subtrees of q as queue records at r, o (their owners + base). */
static void pack_subs(const subs_t *q, size_t base, unsigned char *r, cl_uint *o) {
  for (size_t i = 0; i < q->len; i++) {
    pack(&q->v[i], r + i * REC);
    o[i] = (cl_uint)(base + q->owner[i]);
  }
}

/* The host copies' records at..at+n-1 written to the device's queue. */
static cl_int queue_write(nq_gpu_t *g, size_t at, size_t n) {
  if (n == 0) return CL_SUCCESS;
  cl_int e = clEnqueueWriteBuffer(g->q, g->recs, CL_FALSE, at * REC, n * REC,
                                  g->h_recs + at * REC, 0, NULL, NULL);
  if (e == CL_SUCCESS)
    e = clEnqueueWriteBuffer(g->q, g->qown, CL_FALSE, at * sizeof(cl_uint), n * sizeof(cl_uint),
                             g->h_qown + at, 0, NULL, NULL);
  return e;
}

/* The device's queue made of the subtrees of `front` (owners + fbase), then the records of the
 * queue not yet taken, then the subtrees of `back` (owners + bbase), then the records of batch
 * `fresh` (owners + its base); any of the three may be NULL. Without back and fresh, front's
 * records go just before the untaken ones when the taken ones leave them room, and only they
 * are copied (a batch's last searches, split at each launch's end once the next batch has
 * started behind them, are few; the untaken records, that batch's, are many); else the queue is
 * written anew from position 0 (its buffers grown by doubling). The queue's index then points
 * at front's first record. */
static int queue_rebuild(nq_gpu_t *g, const subs_t *front, size_t fbase, const subs_t *back,
                         size_t bbase, const nq_gpu_batch_t *fresh) {
  const size_t nf = front ? front->len : 0, nb = back ? back->len : 0;
  const size_t nr = fresh ? fresh->len : 0, keep = g->qlen - g->taken;
  cl_int e = CL_SUCCESS;
  cl_uint h = 0;
  if (nb == 0 && nr == 0 && nf <= g->taken) {
    const size_t at = g->taken - nf;
    if (nf) pack_subs(front, fbase, g->h_recs + at * REC, g->h_qown + at);
    e = queue_write(g, at, nf);
    h = (cl_uint)at;
  } else {
    const size_t len = nf + keep + nb + nr;
    size_t cap = g->qcap ? g->qcap : 4096;
    while (cap < len) cap *= 2;
    /* New host arrays, unless the old ones are large enough and nothing of theirs is kept (the
     * queue used up, as when a batch starts behind another): no fresh pages to fault in. */
    const int reuse = keep == 0 && cap == g->qcap && g->h_recs && g->h_qown;
    unsigned char *r = reuse ? g->h_recs : malloc(cap * REC);
    cl_uint *o = reuse ? g->h_qown : malloc(cap * sizeof *o);
    if (!r || !o) {
      free(r);
      free(o);
      return NQ_ENOMEM;
    }
    if (nf) pack_subs(front, fbase, r, o);
    size_t at = nf;
    if (keep) {
      memcpy(r + at * REC, g->h_recs + g->taken * REC, keep * REC);
      memcpy(o + at, g->h_qown + g->taken, keep * sizeof *o);
      at += keep;
    }
    if (nb) pack_subs(back, bbase, r + at * REC, o + at);
    at += nb;
    if (nr) {
      memcpy(r + at * REC, fresh->rec, nr * REC);
      for (size_t i = 0; i < nr; i++) o[at + i] = (cl_uint)(fresh->base + fresh->own[i]);
    }
    if (!reuse) {
      free(g->h_recs);
      free(g->h_qown);
      g->h_recs = r;
      g->h_qown = o;
    }
    if (cap > g->qcap) { /* larger device buffers */
      if (g->recs) clReleaseMemObject(g->recs);
      if (g->qown) clReleaseMemObject(g->qown);
      g->recs = g->qown = NULL;
      g->qcap = 0;
      g->recs = clCreateBuffer(g->ctx, CL_MEM_READ_ONLY, cap * REC, NULL, &e);
      if (e == CL_SUCCESS)
        g->qown = clCreateBuffer(g->ctx, CL_MEM_READ_ONLY, cap * sizeof(cl_uint), NULL, &e);
      if (e != CL_SUCCESS) return fail(g, "cannot allocate device memory", e);
      g->qcap = cap;
    }
    e = queue_write(g, 0, len);
    g->qlen = len;
  }
  if (e == CL_SUCCESS)
    e = clEnqueueWriteBuffer(g->q, g->qhead, CL_TRUE, 0, sizeof h, &h, 0, NULL, NULL);
  g->taken = h;
  return e == CL_SUCCESS ? 0 : fail(g, "cannot copy the subtrees to the device", e);
}

/* A batch's totals on the device set to zero (tot_bias in their low words: the tests' carry). */
static int tot_init(nq_gpu_t *g, const nq_gpu_batch_t *b) {
  if (b->n == 0) return 0; /* (a write of no bytes is an error before OpenCL 2.1) */
  for (size_t i = 0; i < b->n * 8; i++) g->h_tot[b->base * 8 + i] = i % 2 ? 0 : g->tot_bias;
  cl_int e = clEnqueueWriteBuffer(g->q, g->tot, CL_TRUE, b->base * 8 * sizeof(cl_uint),
                                  b->n * 8 * sizeof(cl_uint), g->h_tot + b->base * 8, 0, NULL,
                                  NULL);
  return e == CL_SUCCESS ? 0 : fail(g, "cannot copy the totals to the device", e);
}

/* One launch over every slot with the queue's first qlen records; then the slots' states and
 * the queue's index are read back (g->taken: records taken so far, at most qlen). */
static int launch(nq_gpu_t *g, cl_int n) {
  if (g->fail_after && ++g->launches > g->fail_after)
    return fail(g, "injected device failure (a test hook: fail_after)", CL_DEVICE_NOT_AVAILABLE);
  cl_uint ql = (cl_uint)g->qlen, ns = (cl_uint)g->nslots, budget = g->budget, h = 0;
  /* The kernel's walk has no blocked test: its rows, N-1-look >= N-6 down, are all inline
   * (rows N-9 down). */
  _Static_assert(NQ_UNIT_LOOK_MAX <= 5, "the blocked test reaches above the kernel's inline rows");
  cl_int look = nq_unit_look(n); /* the blocked test's rows: the one rule, nq/unit.h's */
  /* nq_run(recs, qown, qlen, qhead, stat, save, tot, nslots, n, budget, look) */
  cl_int e = clSetKernelArg(g->k, 0, sizeof(cl_mem), &g->recs);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 1, sizeof(cl_mem), &g->qown);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 2, sizeof(cl_uint), &ql);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 3, sizeof(cl_mem), &g->qhead);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 4, sizeof(cl_mem), &g->stat);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 5, sizeof(cl_mem), &g->save);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 6, sizeof(cl_mem), &g->tot);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 7, sizeof(cl_uint), &ns);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 8, sizeof(cl_int), &n);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 9, sizeof(cl_uint), &budget);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 10, sizeof(cl_int), &look);
  if (e != CL_SUCCESS) return fail(g, "cannot set the kernel's arguments", e);
  /* Work-groups of 64 (two warps, one wavefront): the kernel's stacks are sized for them. */
  size_t local = GROUP, global = g->nslots;
  e = clEnqueueNDRangeKernel(g->q, g->k, 1, NULL, &global, &local, 0, NULL, NULL);
  if (e != CL_SUCCESS) return fail(g, "kernel launch failed", e);
  g->nlaunch++;
  e = clEnqueueReadBuffer(g->q, g->stat, CL_FALSE, 0, g->nslots * sizeof(cl_uint), g->h_stat, 0,
                          NULL, NULL);
  if (e == CL_SUCCESS)
    e = clEnqueueReadBuffer(g->q, g->qhead, CL_TRUE, 0, sizeof h, &h, 0, NULL, NULL);
  g->taken = h < ql ? h : ql;
  return e == CL_SUCCESS ? 0 : fail(g, "kernel launch failed", e);
}

/* Whether batch b (may be NULL) has owner `own`. */
static int owns(const nq_gpu_batch_t *b, size_t own) {
  return b && own >= b->base && own - b->base < b->n;
}

/* A slot's search stopped at a launch's end, split into what it has left: each candidate left
 * on its stack, a subtree of its own (a few dozen as a rule), pushed on `fq` when the search is
 * batch f's, on `bq` when batch k's (owners as the batch's unit indexes). Those candidates were
 * counted as nodes when they were put on the stack, and each subtree's first node is counted
 * again by the kernel: one node less for each, on its unit's host count. The slot is emptied.
 * The saved search is `saved` (SLOT_WORDS words), or read from the device when that is NULL. */
static int split(nq_gpu_t *g, size_t slot, int n, nq_gpu_batch_t *f, subs_t *fq, nq_gpu_batch_t *k,
                 subs_t *bq, const cl_uint *saved) {
  cl_uint own[SLOT_WORDS];
  const cl_uint *sv = saved;
  if (!sv) { /* one slot: read its saved search alone */
    cl_int e = clEnqueueReadBuffer(g->q, g->save, CL_TRUE, slot * sizeof own, sizeof own, own, 0,
                                   NULL, NULL);
    if (e != CL_SUCCESS) return fail(g, "cannot read a saved search back", e);
    sv = own;
  }
  unsigned char t[REC];
  memcpy(t, sv + SV_REC, REC);
  const int depth = t[0];
  const uint32_t owner = sv[0], live = sv[1];
  const cl_uint *stk = sv + SV_STACK;
  int top = live ? 31 - __builtin_clz(live) : -1;
  nq_gpu_batch_t *bt = owns(f, owner) ? f : owns(k, owner) ? k : NULL;
  subs_t *q = bt == f ? fq : bq;
  if (depth < 2 || depth + top + 1 > n - 3 || !bt || !q)
    return fail(g, "a saved search is out of range", CL_INVALID_VALUE);
  nq_unit_t u;
  memset(&u, 0, sizeof u);
  u.n = n;
  memcpy(u.prefix, t + 1, (size_t)depth);
  u.part = u.prefix[0] == 0 ? NQ_PART_CORNER : NQ_PART_SIDE;
  u.bound1 = u.part == NQ_PART_CORNER ? u.prefix[1] : u.prefix[0];
  q->cur = (uint32_t)(owner - bt->base);
  int rc = 0;
  for (int j = 0; rc == 0 && j <= top; j++) { /* the candidates left on row depth + j */
    if (j > 0) /* row depth+j-1's column: the difference of two levels' d masks */
      u.prefix[depth + j - 1] = (uint8_t)__builtin_ctz(stk[4 * j + 2] & ~stk[4 * (j - 1) + 2]);
    if (!(live >> j & 1)) continue;
    for (uint32_t left = stk[4 * j]; rc == 0 && left; left &= left - 1) {
      u.depth = depth + j + 1;
      u.prefix[depth + j] = (uint8_t)__builtin_ctz(left);
      rc = subs_push(&u, q);
      bt->host[q->cur]--; /* counted on the stack, counted again as the subtree's first node */
    }
  }
  g->h_stat[slot] = S_EMPTY;
  g->splits++;
  return rc;
}

/* The queue rebuilt after splitting the saved searches of `count` running slots: those of batch
 * f's owners always, those of batch k's too when `kslots` (k may be NULL). In the new queue f's
 * pieces come first, then the records not yet taken, then k's pieces, then the subtrees of
 * batch `fresh` (k, just started; may be NULL); *nfront: how many of f's. */
static int split_slots(nq_gpu_t *g, int n, nq_gpu_batch_t *f, nq_gpu_batch_t *k, int kslots,
                       const nq_gpu_batch_t *fresh, size_t count, size_t *nfront) {
  subs_t fq = {0}, bq = {0};
  int rc = 0;
  /* Many slots to split: one read of every saved search rather than one read a slot. */
  cl_uint *all = count > SPLIT_ONE_BY_ONE ? malloc(g->nslots * SLOT_WORDS * sizeof *all) : NULL;
  if (all) {
    cl_int e = clEnqueueReadBuffer(g->q, g->save, CL_TRUE, 0,
                                   g->nslots * SLOT_WORDS * sizeof *all, all, 0, NULL, NULL);
    if (e != CL_SUCCESS) rc = fail(g, "cannot read the saved searches back", e);
  }
  for (size_t i = 0; rc == 0 && i < g->nslots; i++) {
    const cl_uint st = g->h_stat[i];
    if ((st & 3u) == S_RUNNING && (owns(f, st >> 2) || (kslots && owns(k, st >> 2))))
      rc = split(g, i, n, f, &fq, k, &bq, all ? all + i * SLOT_WORDS : NULL);
  }
  free(all);
  if (rc == 0) rc = queue_rebuild(g, &fq, f->base, &bq, k ? k->base : 0, fresh);
  if (rc == 0) {
    cl_int e = clEnqueueWriteBuffer(g->q, g->stat, CL_TRUE, 0, g->nslots * sizeof(cl_uint),
                                    g->h_stat, 0, NULL, NULL);
    if (e != CL_SUCCESS) rc = fail(g, "cannot copy the slots' states to the device", e);
  }
  *nfront = fq.len;
  subs_free(&fq);
  subs_free(&bq);
  return rc;
}

int nq_gpu_solve(nq_gpu_t *g, const nq_unit_t *units, size_t n, nq_counts_t *out,
                 const nq_gpu_ctl_t *ctl) {
  if (g->failed) return NQ_EDEVICE;
  nq_gpu_batch_t *b;
  int rc = nq_gpu_batch_expand(units, n, 0, &b);
  if (rc) return rc;
  rc = nq_gpu_solve_batch(g, b, NULL, out, ctl);
  nq_gpu_batch_free(b);
  return rc;
}

/* b's subtrees all taken: the batch after it started behind it, when ahead gives one that fits
 * (b's N, units, never solved nor started) -- owners apart from b's, its totals zeroed, b's
 * running_b searches split to the queue's front and its subtrees behind them; *a that batch (or
 * NULL: none) and *bend the queue's records from which on none is b's. */
static int start_ahead(nq_gpu_t *g, int n, nq_gpu_batch_t *b, const nq_gpu_ahead_t *ahead,
                       size_t running_b, nq_gpu_batch_t **a, size_t *bend) {
  nq_gpu_batch_t *x = ahead && ahead->next ? ahead->next(ahead->arg) : NULL;
  *a = NULL;
  if (!x || x->used || x->started || x->n == 0 || x->bn != b->bn) return 0;
  x->base = x->n <= b->base ? 0 : b->base + b->n;
  const size_t top = x->base + x->n > b->base + b->n ? x->base + x->n : b->base + b->n;
  int rc = tot_reserve(g, top, b->base + b->n);
  if (rc == 0) rc = tot_init(g, x);
  if (rc) return rc;
  x->started = 1;
  g->nahead++;
  *a = x;
  size_t nf = 0;
  rc = split_slots(g, n, b, x, 0, x, running_b, &nf);
  *bend = g->taken + nf;
  return rc;
}

int nq_gpu_solve_batch(nq_gpu_t *g, nq_gpu_batch_t *b, const nq_gpu_ahead_t *ahead,
                       nq_counts_t *out, const nq_gpu_ctl_t *ctl) {
  if (g->failed) return NQ_EDEVICE;
  const int continued = b->started && g->chain == b; /* (a batch not started is new here, even
                                                        at the address of one freed) */
  if (b->used || (b->started && !continued)) return NQ_EINVAL;
  b->used = 1;
  const size_t n = b->n;
  const int bn = b->bn;
  int rc = 0;
  if (!continued) {
    /* A solve of its own: nothing of it on the device (a batch a stopped solve left running
     * there is dropped: its caller finishes it elsewhere). The batch was expanded to
     * NQ_GPU_SUBTREES, not to the device's slots: expanding to twice an H200's 270,336 slots
     * made N=17 0.19 -> 0.85 s and N=18 0.39 -> 0.83 s (the host's expansion and the smaller
     * subtrees); the tail's splitting fills the slots instead. */
    b->base = 0;
    g->qlen = g->taken = 0;
    memset(g->h_stat, 0, g->nslots * sizeof *g->h_stat);
    cl_int e = clEnqueueWriteBuffer(g->q, g->stat, CL_FALSE, 0, g->nslots * sizeof(cl_uint),
                                    g->h_stat, 0, NULL, NULL);
    if (e != CL_SUCCESS) rc = fail(g, "cannot copy the slots' states to the device", e);
    if (rc == 0) rc = tot_reserve(g, n ? n : 1, 0);
    if (rc == 0) rc = tot_init(g, b);
    if (rc == 0) rc = queue_rebuild(g, NULL, 0, NULL, 0, b);
  }
  g->chain = NULL;
  /* The queue holds b's subtrees; each launch's work-items take them in order (a finished one
   * takes the next), so nothing waits for a launch's end but the searches stopped by the budget.
   * Once b's are all taken, the batch after it (ahead's) starts behind them: the slots that b's
   * searches leave take its subtrees, and b's searches still running are split at each launch's
   * end into subtrees at the queue's front, so that b ends soon and the device does not run dry
   * between two batches. Without a batch after it, once b's are all taken and most slots idle,
   * the searches still running are split into subtrees at the queue's end (the tail). Until
   * nothing of b's is left; bend: the queue's records from which on none is b's. */
  nq_gpu_batch_t *a = NULL;
  int asked = 0;
  size_t bend = g->qlen, running = 0, running_b = 0;
  for (size_t i = 0; i < g->nslots; i++) /* a continued batch: its searches still running */
    running_b += (g->h_stat[i] & 3u) == S_RUNNING && owns(b, g->h_stat[i] >> 2);
  if (rc == 0 && g->taken == g->qlen && running_b > 0) {
    /* continued with its subtrees all taken: the batch after it starts at once */
    asked = 1;
    rc = start_ahead(g, bn, b, ahead, running_b, &a, &bend);
  }
  while (rc == 0 && (g->taken < bend || running_b > 0)) {
    if (ctl && ctl->cancel && __atomic_load_n(ctl->cancel, __ATOMIC_RELAXED)) {
      rc = NQ_ECANCELED;
      break;
    }
    if (ctl && ctl->throttle) nq_throttle_wait(ctl->throttle, ctl->th, ctl->cancel);
    double t0 = nq_now_mono();
    rc = launch(g, bn);
    double dt = nq_now_mono() - t0;
    g->busy += dt;
    if (rc) break;
    /* The next launch's budget: about launch_s at the speed just seen (at most 4x a step). */
    double f = dt > 1e-6 ? g->launch_s / dt : 4.0;
    f = f > 4.0 ? 4.0 : f < 0.25 ? 0.25 : f;
    double nb = (double)g->budget * f;
    if (!g->budget_fixed)
      g->budget = nb < BUDGET_MIN ? BUDGET_MIN : nb > BUDGET_MAX ? BUDGET_MAX : (unsigned)nb;
    running = running_b = 0;
    for (size_t i = 0; i < g->nslots && rc == 0; i++) {
      const cl_uint st = g->h_stat[i];
      if ((st & 3u) == S_RUNNING && (owns(b, st >> 2) || owns(a, st >> 2))) {
        running++;
        running_b += owns(b, st >> 2);
      } else if (st != S_EMPTY) {
        rc = fail(g, "a slot came back in an unknown state", CL_INVALID_VALUE);
      }
    }
    if (rc || (g->taken >= bend && running_b == 0)) break; /* b is done */
    const int used_up = g->taken == g->qlen, tail = used_up && running < g->nslots / 4;
    if (!a && used_up && !asked) { /* b's subtrees all taken: start the next batch */
      asked = 1;
      rc = start_ahead(g, bn, b, ahead, running_b, &a, &bend);
      if (rc || a) continue;
    }
    if (a && running_b > 0) { /* b's last searches, split to the front (a's too at a tail) */
      const size_t left = bend > g->taken ? bend - g->taken : 0; /* b's pieces not yet taken */
      size_t nf = 0;
      rc = split_slots(g, bn, b, a, tail, NULL, tail ? running : running_b, &nf);
      bend = g->taken + nf + left; /* the new pieces, then those: then a's */
    } else if (!a && tail) { /* the tail, with no batch behind b */
      size_t nf = 0;
      g->ntail++;
      rc = split_slots(g, bn, b, NULL, 0, NULL, running, &nf);
      bend = g->qlen;
    }
  }
  if (rc == 0 && n) { /* b's totals */
    cl_int e = clEnqueueReadBuffer(g->q, g->tot, CL_TRUE, b->base * 8 * sizeof(cl_uint),
                                   n * 8 * sizeof(cl_uint), g->h_tot, 0, NULL, NULL);
    if (e != CL_SUCCESS) rc = fail(g, "cannot read the counts back", e);
  }
  if (rc) return rc; /* a batch started behind b is dropped with it */
  memset(out, 0, n * sizeof *out);
  for (size_t i = 0; i < n; i++) {
    const cl_uint *t = g->h_tot + 8 * i;
    uint64_t v[4];
    for (int k = 0; k < 4; k++)
      v[k] = ((uint64_t)t[2 * k] | (uint64_t)t[2 * k + 1] << 32) - g->tot_bias;
    out[i].c2 = v[0], out[i].c4 = v[1], out[i].c8 = v[2], out[i].nodes = b->host[i] + v[3];
    g->nodes += out[i].nodes; /* the host's rows too */
  }
  g->chain = a; /* the next solve continues it */
  return 0;
}

/* ---- opening a device ---------------------------------------------------------------------- */

typedef struct units_s {
  nq_unit_t v[4096];
  size_t len;
} units_t;

static int units_push(const nq_unit_t *u, void *arg) {
  units_t *s = arg;
  if (s->len == sizeof s->v / sizeof s->v[0]) return NQ_ERANGE;
  s->v[s->len++] = *u;
  return 0;
}

/* The self-test of nq/gpu.h: the device against the reference, unit by unit. */
static int self_test(nq_gpu_t *g, char *err, size_t errlen) {
  static const int sets[][2] = {{11, 3}, {12, 4}};
  units_t *u = malloc(sizeof *u);
  nq_counts_t *got = malloc(sizeof u->v / sizeof u->v[0] * sizeof *got);
  int rc = u && got ? 0 : NQ_ENOMEM;
  for (size_t s = 0; rc == 0 && s < sizeof sets / sizeof sets[0]; s++) {
    u->len = 0;
    rc = nq_units_generate(sets[s][0], sets[s][1], units_push, u);
    if (rc == 0) rc = nq_gpu_solve(g, u->v, u->len, got, NULL);
    if (rc) {
      rc = nq_errorf(err, errlen, NQ_EDEVICE, "GPU %s failed its self-test: %s", g->label,
                     g->failed ? g->why : nq_strerror(rc));
      break;
    }
    for (size_t i = 0; i < u->len; i++) {
      nq_counts_t want;
      char t[NQ_UNIT_TEXT_MAX];
      nq_ref_solve_unit(&u->v[i], &want);
      if (want.c2 == got[i].c2 && want.c4 == got[i].c4 && want.c8 == got[i].c8 &&
          want.nodes == got[i].nodes)
        continue;
      nq_unit_format(&u->v[i], t, sizeof t);
      rc = nq_errorf(err, errlen, NQ_EDEVICE,
                     "GPU %s (%s, driver %s) failed its self-test: unit %s gave c2=%llu c4=%llu "
                     "c8=%llu nodes=%llu, the reference c2=%llu c4=%llu c8=%llu nodes=%llu",
                     g->label, g->info.platform, g->info.driver, t, (unsigned long long)got[i].c2,
                     (unsigned long long)got[i].c4, (unsigned long long)got[i].c8,
                     (unsigned long long)got[i].nodes, (unsigned long long)want.c2,
                     (unsigned long long)want.c4, (unsigned long long)want.c8,
                     (unsigned long long)want.nodes);
      break;
    }
  }
  free(u);
  free(got);
  return rc;
}

static int build(nq_gpu_t *g, const nq_gpu_opts_t *o, char *err, size_t errlen) {
  cl_int e;
  const char *src = nq_gpu_kernel_src;
  g->ctx = clCreateContext(NULL, 1, &g->dev, NULL, NULL, &e);
  if (e != CL_SUCCESS) return nq_errorf(err, errlen, NQ_EDEVICE, "GPU %s: no context (OpenCL "
                                        "error %d)", g->label, (int)e);
  g->q = clCreateCommandQueue(g->ctx, g->dev, 0, &e);
  if (e != CL_SUCCESS) return nq_errorf(err, errlen, NQ_EDEVICE, "GPU %s: no command queue "
                                        "(OpenCL error %d)", g->label, (int)e);
  g->prog = clCreateProgramWithSource(g->ctx, 1, &src, NULL, &e);
  if (e != CL_SUCCESS) return nq_errorf(err, errlen, NQ_EDEVICE, "GPU %s: cannot load the kernel "
                                        "(OpenCL error %d)", g->label, (int)e);
  /* NQ_ROWS: the most rows a subtree has below it (expand() keeps to NQ_GPU_ROWS_MAX). */
  char opts[96];
  snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DNQ_ROWS=%d%s", NQ_GPU_ROWS_MAX,
           o && o->corrupt ? " -DNQ_CORRUPT=1" : "");
  e = clBuildProgram(g->prog, 1, &g->dev, opts, NULL, NULL);
  if (e != CL_SUCCESS) {
    char log[512] = "";
    clGetProgramBuildInfo(g->prog, g->dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    for (char *p = log; *p; p++)
      if (*p == '\n') *p = ' ';
    return nq_errorf(err, errlen, NQ_EDEVICE, "GPU %s: the kernel does not build (OpenCL error "
                     "%d): %.300s", g->label, (int)e, log);
  }
  g->k = clCreateKernel(g->prog, "nq_run", &e);
  if (e != CL_SUCCESS) return nq_errorf(err, errlen, NQ_EDEVICE, "GPU %s: no kernel nq_run "
                                        "(OpenCL error %d)", g->label, (int)e);
  return 0;
}

int nq_gpu_open(int index, const nq_gpu_opts_t *opts, nq_gpu_t **out, char *err, size_t errlen) {
  *out = NULL;
  cl_device_id ids[NQ_GPU_MAX_DEVICES];
  nq_gpu_info_t info[NQ_GPU_MAX_DEVICES];
  int n = enum_devices(ids, info, NQ_GPU_MAX_DEVICES);
  if (index < 0 || index >= n)
    return nq_errorf(err, errlen, NQ_ENODEV, "no OpenCL device %d (%d found)", index, n);
  nq_gpu_t *g = calloc(1, sizeof *g);
  if (!g) return NQ_ENOMEM;
  g->info = info[index];
  g->dev = ids[index];
  snprintf(g->label, sizeof g->label, "opencl:%s", g->info.name);
  g->budget = opts && opts->budget ? opts->budget : BUDGET_FIRST;
  g->budget_fixed = opts && opts->budget;
  g->launch_s = opts && opts->launch_seconds > 0 ? opts->launch_seconds : 0.1;
  int rc = build(g, opts, err, errlen);
  if (rc == 0 && (rc = slots_alloc(g, opts ? opts->slots : 0)) != 0)
    rc = nq_errorf(err, errlen, rc, "GPU %s: %s", g->label, rc == NQ_ENOMEM ? "out of memory" : g->why);
  if (rc == 0) rc = self_test(g, err, errlen);
  if (rc) {
    nq_gpu_close(g);
    return rc;
  }
  g->fail_after = opts ? opts->fail_after : 0;
  g->tot_bias = opts ? opts->tot_bias : 0;
  g->launches = 0;
  g->nodes = 0; /* nq_gpu_rate and the counts: the work taken, not the self-test's */
  g->busy = 0;
  g->nlaunch = g->splits = g->nahead = g->ntail = 0;
  *out = g;
  return 0;
}

void nq_gpu_close(nq_gpu_t *g) {
  if (!g) return;
  cl_mem bufs[6] = {g->recs, g->qown, g->qhead, g->stat, g->save, g->tot};
  for (int i = 0; i < 6; i++)
    if (bufs[i]) clReleaseMemObject(bufs[i]);
  free(g->h_recs);
  free(g->h_qown);
  free(g->h_tot);
  free(g->h_stat);
  if (g->k) clReleaseKernel(g->k);
  if (g->prog) clReleaseProgram(g->prog);
  if (g->q) clReleaseCommandQueue(g->q);
  if (g->ctx) clReleaseContext(g->ctx);
  free(g);
}

#endif /* NQ_HAVE_OPENCL */
