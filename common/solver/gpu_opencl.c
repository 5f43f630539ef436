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
  const char *fa = getenv("NQ_GPU_FAIL_AFTER"), *co = getenv("NQ_GPU_CORRUPT");
  if (fa && *fa && !o.fail_after) o.fail_after = (unsigned)strtoul(fa, NULL, 10);
  if (co && !strcmp(co, "1")) o.corrupt = 1;
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

#else /* NQ_HAVE_OPENCL */

/* <CL/cl.h>, its functions called through the loader opened at run time. */
#include "ocl_load.h"

/* The kernel's source, made from gpu_kernel.cl by the build (CMakeLists.txt). */
extern const char nq_gpu_kernel_src[];

#define REC 32             /* bytes of a subtree record (gpu_kernel.cl) */
#define GROUP 64           /* work-items of a work-group (NQ_GROUP in gpu_kernel.cl) */
#define SLOT_WORDS (5 + 32 + 4 * NQ_GPU_ROWS_MAX) /* a slot's saved search (NQ_SLOT) */
#define SLOTS_PER_CU 2048  /* slots per compute unit: a GPU's resident threads */
#define SLOTS_MIN 1024
#define SLOTS_MAX (1u << 19)
#define SPLIT_ONE_BY_ONE 16 /* at a tail, more running slots than this are read back at once */
#define BUDGET_FIRST 4096  /* nodes a work-item may visit in the first launch */
#define BUDGET_MIN 256
#define BUDGET_MAX (1u << 24)
enum { S_EMPTY = 0, S_FRESH, S_RUNNING, S_DONE }; /* NQ_EMPTY.. in gpu_kernel.cl */

struct nq_gpu_s {
  nq_gpu_info_t info;
  char label[160];
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  cl_program prog;
  cl_kernel k;
  cl_mem recs, stat, save, out; /* the slots: record, state, saved search, counts */
  size_t nslots;
  unsigned char *h_recs;  /* host copies of recs, stat and out */
  cl_uint *h_stat;
  cl_ulong *h_out;
  uint32_t *owner;        /* the unit (of the solve) each slot's subtree is below */
  unsigned budget;        /* nodes a work-item visits per launch (adapted to launch_s) */
  int budget_fixed;       /* nq_gpu_opts_t.budget was given */
  double launch_s;
  unsigned fail_after, launches;
  int failed;
  char why[256];
  uint64_t nodes, splits;
  double busy;
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
static int slots_alloc(nq_gpu_t *g) {
  size_t n = (size_t)g->info.compute_units * SLOTS_PER_CU;
  n = n < SLOTS_MIN ? SLOTS_MIN : n > SLOTS_MAX ? SLOTS_MAX : n;
  n = (n + GROUP - 1) / GROUP * GROUP;
  cl_int e[4];
  g->recs = clCreateBuffer(g->ctx, CL_MEM_READ_ONLY, n * REC, NULL, &e[0]);
  g->stat = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, n * sizeof(cl_uint), NULL, &e[1]);
  g->save = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, n * SLOT_WORDS * sizeof(cl_uint), NULL, &e[2]);
  g->out = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, n * 4 * sizeof(cl_ulong), NULL, &e[3]);
  for (int i = 0; i < 4; i++)
    if (e[i] != CL_SUCCESS) return fail(g, "cannot allocate device memory", e[i]);
  g->h_recs = calloc(n, REC);
  g->h_stat = calloc(n, sizeof *g->h_stat);
  g->h_out = calloc(n * 4, sizeof *g->h_out);
  g->owner = calloc(n, sizeof *g->owner);
  if (!g->h_recs || !g->h_stat || !g->h_out || !g->owner) return NQ_ENOMEM;
  g->nslots = n;
  return 0;
}

/* ---- the host's expansion ------------------------------------------------------------------ */

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
 * subtrees, down to NQ_GPU_ROWS_MIN. The expanded nodes are added to out[owner].nodes. */
static int expand(const nq_unit_t *units, size_t n, size_t want, nq_counts_t *out, subs_t *res) {
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
        out[cur.owner[i]].nodes++;
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

/* ---- launches ------------------------------------------------------------------------------ */

/* One launch over the first `used` slots; then the slots' states and counts are read back. */
static int launch(nq_gpu_t *g, size_t used, cl_int n) {
  if (g->fail_after && ++g->launches > g->fail_after)
    return fail(g, "injected device failure (NQ_GPU_FAIL_AFTER)", CL_DEVICE_NOT_AVAILABLE);
  cl_uint ns = (cl_uint)used, budget = g->budget;
  cl_int look = nq_unit_look(n); /* the blocked test's rows: the one rule, nq/unit.h's */
  cl_int e = clEnqueueWriteBuffer(g->q, g->recs, CL_FALSE, 0, used * REC, g->h_recs, 0, NULL,
                                  NULL);
  if (e == CL_SUCCESS)
    e = clEnqueueWriteBuffer(g->q, g->stat, CL_FALSE, 0, used * sizeof(cl_uint), g->h_stat, 0,
                             NULL, NULL);
  if (e != CL_SUCCESS) return fail(g, "cannot copy the subtrees to the device", e);
  cl_mem args[4] = {g->recs, g->stat, g->save, g->out};
  for (cl_uint i = 0; i < 4 && e == CL_SUCCESS; i++) e = clSetKernelArg(g->k, i, sizeof(cl_mem), &args[i]);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 4, sizeof(cl_uint), &ns);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 5, sizeof(cl_int), &n);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 6, sizeof(cl_uint), &budget);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 7, sizeof(cl_int), &look);
  if (e != CL_SUCCESS) return fail(g, "cannot set the kernel's arguments", e);
  /* Work-groups of 64 (two warps, one wavefront): the kernel's stacks are sized for them. */
  size_t local = GROUP, global = (used + GROUP - 1) / GROUP * GROUP;
  e = clEnqueueNDRangeKernel(g->q, g->k, 1, NULL, &global, &local, 0, NULL, NULL);
  if (e != CL_SUCCESS) return fail(g, "kernel launch failed", e);
  e = clEnqueueReadBuffer(g->q, g->stat, CL_FALSE, 0, used * sizeof(cl_uint), g->h_stat, 0, NULL,
                          NULL);
  if (e == CL_SUCCESS)
    e = clEnqueueReadBuffer(g->q, g->out, CL_TRUE, 0, used * 4 * sizeof(cl_ulong), g->h_out, 0,
                            NULL, NULL);
  return e == CL_SUCCESS ? 0 : fail(g, "kernel launch failed", e);
}

/* A slot's search stopped at a launch's end, split into what it has left (a few dozen subtrees
 * as a rule): the node it was to visit next, and each candidate left on its stack. Its counts so
 * far go to its unit; the slot is emptied. The saved search is `saved` (SLOT_WORDS words), or
 * read from the device when that is NULL. */
static int split(nq_gpu_t *g, size_t slot, int n, nq_counts_t *out, subs_t *q,
                 const cl_uint *saved) {
  cl_uint own[SLOT_WORDS];
  const cl_uint *sv = saved;
  if (!sv) { /* one slot: read its saved search alone */
    cl_int e = clEnqueueReadBuffer(g->q, g->save, CL_TRUE, slot * sizeof own, sizeof own, own, 0,
                                   NULL, NULL);
    if (e != CL_SUCCESS) return fail(g, "cannot read a saved search back", e);
    sv = own;
  }
  const unsigned char *t = g->h_recs + slot * REC;
  int depth = t[0], y = (int)sv[0];
  if (y < depth || y > n - 1) return fail(g, "a saved search is out of range", CL_INVALID_VALUE);
  nq_unit_t u;
  memset(&u, 0, sizeof u);
  u.n = n;
  for (int i = 0; i < y; i++) u.prefix[i] = (uint8_t)__builtin_ctz(sv[5 + i]);
  u.part = u.prefix[0] == 0 ? NQ_PART_CORNER : NQ_PART_SIDE;
  u.bound1 = u.part == NQ_PART_CORNER ? u.prefix[1] : u.prefix[0];
  q->cur = g->owner[slot];
  u.depth = y; /* the node it was to visit next */
  int rc = subs_push(&u, q);
  for (int k = 0; rc == 0 && k < y - depth; k++) { /* the candidates left on row depth + k */
    for (uint32_t left = sv[5 + 32 + 4 * k]; rc == 0 && left; left &= left - 1) {
      u.depth = depth + k + 1;
      u.prefix[depth + k] = (uint8_t)__builtin_ctz(left);
      rc = subs_push(&u, q);
    }
    u.prefix[depth + k] = (uint8_t)__builtin_ctz(sv[5 + depth + k]); /* back to the path */
  }
  const cl_ulong *o = g->h_out + 4 * slot;
  nq_counts_t *c = &out[g->owner[slot]];
  c->c2 += o[0], c->c4 += o[1], c->c8 += o[2], c->nodes += o[3];
  g->h_stat[slot] = S_EMPTY;
  g->splits++;
  return rc;
}

int nq_gpu_solve(nq_gpu_t *g, const nq_unit_t *units, size_t n, nq_counts_t *out,
                 const nq_gpu_ctl_t *ctl) {
  if (g->failed) return NQ_EDEVICE;
  memset(out, 0, n * sizeof *out);
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++)
    if (units[i].n != units[0].n || nq_unit_validate(&units[i], NULL, 0)) return NQ_EINVAL;
  const int bn = units[0].n;
  subs_t q;
  /* NQ_GPU_SUBTREES, not the device's slots: expanding a batch to twice an H200's 270,336 slots
   * made N=17 0.19 -> 0.85 s and N=18 0.39 -> 0.83 s (the host's expansion and the smaller
   * subtrees); the tail's splitting fills the slots instead. */
  int rc = expand(units, n, NQ_GPU_SUBTREES, out, &q);
  if (rc) return rc;
  /* Fill the empty slots from the queue, launch, take the finished ones; when the queue is empty
   * and most slots idle, split the searches still running. Until nothing is left. */
  size_t next = 0;
  for (size_t i = 0; i < g->nslots; i++) g->h_stat[i] = S_EMPTY;
  while (rc == 0) {
    size_t used = 0, active = 0;
    for (size_t i = 0; i < g->nslots; i++) {
      if (g->h_stat[i] == S_EMPTY && next < q.len) {
        unsigned char *r = g->h_recs + i * REC;
        r[0] = (unsigned char)q.v[next].depth;
        memcpy(r + 1, q.v[next].prefix, (size_t)q.v[next].depth);
        g->owner[i] = q.owner[next++];
        g->h_stat[i] = S_FRESH;
      }
      if (g->h_stat[i] != S_EMPTY) used = i + 1, active++;
    }
    if (active == 0) break;
    if (ctl && ctl->cancel && __atomic_load_n(ctl->cancel, __ATOMIC_RELAXED)) {
      rc = NQ_ECANCELED;
      break;
    }
    if (ctl && ctl->throttle) nq_throttle_wait(ctl->throttle, ctl->th, ctl->cancel);
    double t0 = nq_now_mono();
    rc = launch(g, used, bn);
    double dt = nq_now_mono() - t0;
    g->busy += dt;
    if (rc) break;
    /* The next launch's budget: about launch_s at the speed just seen (at most 4x a step). */
    double f = dt > 1e-6 ? g->launch_s / dt : 4.0;
    f = f > 4.0 ? 4.0 : f < 0.25 ? 0.25 : f;
    double b = (double)g->budget * f;
    if (!g->budget_fixed)
      g->budget = b < BUDGET_MIN ? BUDGET_MIN : b > BUDGET_MAX ? BUDGET_MAX : (unsigned)b;
    size_t running = 0;
    for (size_t i = 0; i < used; i++) {
      if (g->h_stat[i] == S_DONE) {
        const cl_ulong *o = g->h_out + 4 * i;
        nq_counts_t *c = &out[g->owner[i]];
        c->c2 += o[0], c->c4 += o[1], c->c8 += o[2], c->nodes += o[3];
        g->h_stat[i] = S_EMPTY;
      } else if (g->h_stat[i] == S_RUNNING) {
        running++;
      } else if (g->h_stat[i] != S_EMPTY) {
        rc = fail(g, "a slot came back in an unknown state", CL_INVALID_VALUE);
      }
    }
    /* The tail: nothing queued and fewer than a quarter of the slots busy. */
    if (rc == 0 && next == q.len && running > 0 && running < g->nslots / 4) {
      /* Many slots to split: one read of every saved search rather than one read a slot. */
      cl_uint *all = running > SPLIT_ONE_BY_ONE ? malloc(used * SLOT_WORDS * sizeof *all) : NULL;
      if (all) {
        cl_int e = clEnqueueReadBuffer(g->q, g->save, CL_TRUE, 0, used * SLOT_WORDS * sizeof *all,
                                       all, 0, NULL, NULL);
        if (e != CL_SUCCESS) rc = fail(g, "cannot read the saved searches back", e);
      }
      for (size_t i = 0; rc == 0 && i < used; i++)
        if (g->h_stat[i] == S_RUNNING)
          rc = split(g, i, bn, out, &q, all ? all + i * SLOT_WORDS : NULL);
      free(all);
    }
  }
  if (rc == 0)
    for (size_t i = 0; i < n; i++) g->nodes += out[i].nodes; /* the host's rows too */
  subs_free(&q);
  return rc;
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
  if (rc == 0 && (rc = slots_alloc(g)) != 0)
    rc = nq_errorf(err, errlen, rc, "GPU %s: %s", g->label, rc == NQ_ENOMEM ? "out of memory" : g->why);
  if (rc == 0) rc = self_test(g, err, errlen);
  if (rc) {
    nq_gpu_close(g);
    return rc;
  }
  g->fail_after = opts ? opts->fail_after : 0;
  g->launches = 0;
  *out = g;
  return 0;
}

void nq_gpu_close(nq_gpu_t *g) {
  if (!g) return;
  cl_mem bufs[4] = {g->recs, g->stat, g->save, g->out};
  for (int i = 0; i < 4; i++)
    if (bufs[i]) clReleaseMemObject(bufs[i]);
  free(g->h_recs);
  free(g->h_stat);
  free(g->h_out);
  free(g->owner);
  if (g->k) clReleaseKernel(g->k);
  if (g->prog) clReleaseProgram(g->prog);
  if (g->q) clReleaseCommandQueue(g->q);
  if (g->ctx) clReleaseContext(g->ctx);
  free(g);
}

#endif /* NQ_HAVE_OPENCL */
