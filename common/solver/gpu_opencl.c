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
    if (spec && !strcmp(spec, "auto")) return 0; /* nothing to use, nothing asked for by name */
    return nq_errorf(err, errlen, NQ_ENODEV, "--gpu %s: this build has no OpenCL backend", spec);
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

#ifndef NQ_HAVE_OPENCL

int nq_gpu_built(void) { return 0; }
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

#else /* NQ_HAVE_OPENCL */


#include <CL/cl.h>

/* The kernel's source, made from gpu_kernel.cl by the build (CMakeLists.txt). */
extern const char nq_gpu_kernel_src[];

#define REC 32             /* bytes of a subtree record (gpu_kernel.cl) */
#define GROUP 64           /* work-items of a work-group (NQ_GROUP in gpu_kernel.cl) */
#define CHUNK_MIN 64
#define CHUNK_MAX (1u << 22)
#define CHUNK_FIRST 4096   /* the first launch: small, since the speed is not known yet */

struct nq_gpu_s {
  nq_gpu_info_t info;
  char label[160];
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  cl_program prog;
  cl_kernel k;
  cl_mem recs, out;
  size_t cap;            /* subtrees the two buffers hold */
  size_t chunk;          /* work-items of the next launch */
  double launch_s;
  unsigned fail_after, launches;
  int failed;
  char why[256];
  uint64_t nodes;
  double busy;
};

int nq_gpu_built(void) { return 1; }

/* Every device in platform order; devs may be NULL to count. */
static int enum_devices(cl_device_id *ids, nq_gpu_info_t *info, int max) {
  cl_platform_id plats[16];
  cl_uint np = 0;
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

/* Mark the device failed (every later solve answers NQ_EDEVICE) and say why on the log. */
static int fail(nq_gpu_t *g, const char *what, cl_int code) {
  if (!g->failed)
    nq_log(NQ_LOG_ERROR, "GPU %s: %s (OpenCL error %d); its work goes back to the CPU",
           g->label, what, (int)code);
  g->failed = 1;
  snprintf(g->why, sizeof g->why, "%s (OpenCL error %d)", what, (int)code);
  return NQ_EDEVICE;
}

/* Room for `n` subtrees in the device buffers. */
static int reserve(nq_gpu_t *g, size_t n) {
  if (n <= g->cap) return 0;
  size_t cap = g->cap ? g->cap : 1u << 16;
  while (cap < n) cap *= 2;
  if (g->recs) clReleaseMemObject(g->recs);
  if (g->out) clReleaseMemObject(g->out);
  g->recs = g->out = NULL;
  g->cap = 0;
  cl_int e1, e2;
  g->recs = clCreateBuffer(g->ctx, CL_MEM_READ_ONLY, cap * REC, NULL, &e1);
  g->out = clCreateBuffer(g->ctx, CL_MEM_WRITE_ONLY, cap * 4 * sizeof(cl_ulong), NULL, &e2);
  if (e1 != CL_SUCCESS || e2 != CL_SUCCESS) return fail(g, "cannot allocate device memory", e1 ? e1 : e2);
  g->cap = cap;
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
 * `rows` starting at NQ_GPU_ROWS_MAX and lowered while the batch holds fewer than
 * NQ_GPU_SUBTREES subtrees, down to NQ_GPU_ROWS_MIN. The expanded nodes are added to
 * out[owner].nodes. */
static int expand(const nq_unit_t *units, size_t n, nq_counts_t *out, subs_t *res) {
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
      if (cur.len >= NQ_GPU_SUBTREES || rows <= NQ_GPU_ROWS_MIN) break;
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

static int launch(nq_gpu_t *g, size_t off, size_t count, cl_uint total, cl_int n) {
  if (g->fail_after && ++g->launches > g->fail_after)
    return fail(g, "injected device failure (NQ_GPU_FAIL_AFTER)", CL_DEVICE_NOT_AVAILABLE);
  cl_int e = clSetKernelArg(g->k, 0, sizeof(cl_mem), &g->recs);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 1, sizeof(cl_uint), &total);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 2, sizeof(cl_int), &n);
  if (e == CL_SUCCESS) e = clSetKernelArg(g->k, 3, sizeof(cl_mem), &g->out);
  if (e != CL_SUCCESS) return fail(g, "cannot set the kernel's arguments", e);
  /* Work-groups of 64 (two warps, one wavefront): the kernel's stacks are sized for them. */
  size_t local = GROUP, global = (count + local - 1) / local * local, offset = off;
  e = clEnqueueNDRangeKernel(g->q, g->k, 1, &offset, &global, &local, 0, NULL, NULL);
  if (e == CL_SUCCESS) e = clFinish(g->q);
  return e == CL_SUCCESS ? 0 : fail(g, "kernel launch failed", e);
}

int nq_gpu_solve(nq_gpu_t *g, const nq_unit_t *units, size_t n, nq_counts_t *out,
                 const nq_gpu_ctl_t *ctl) {
  if (g->failed) return NQ_EDEVICE;
  memset(out, 0, n * sizeof *out);
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++)
    if (units[i].n != units[0].n || nq_unit_validate(&units[i], NULL, 0)) return NQ_EINVAL;
  subs_t s;
  int rc = expand(units, n, out, &s);
  if (rc) return rc;
  unsigned char *recs = calloc(s.len ? s.len : 1, REC);
  cl_ulong *res = malloc((s.len ? s.len : 1) * 4 * sizeof *res);
  if (!recs || !res) rc = NQ_ENOMEM;
  for (size_t i = 0; rc == 0 && i < s.len; i++) {
    unsigned char *r = recs + i * REC;
    r[0] = (unsigned char)s.v[i].depth;
    memcpy(r + 1, s.v[i].prefix, (size_t)s.v[i].depth);
  }
  if (rc == 0 && s.len) rc = reserve(g, s.len);
  if (rc == 0 && s.len) {
    cl_int e = clEnqueueWriteBuffer(g->q, g->recs, CL_TRUE, 0, s.len * REC, recs, 0, NULL, NULL);
    if (e != CL_SUCCESS) rc = fail(g, "cannot copy the subtrees to the device", e);
  }
  /* Launches of about launch_s each, between which the solve can be stopped or paused. */
  for (size_t off = 0; rc == 0 && off < s.len;) {
    if (ctl && ctl->cancel && __atomic_load_n(ctl->cancel, __ATOMIC_RELAXED)) {
      rc = NQ_ECANCELED;
      break;
    }
    if (ctl && ctl->throttle) nq_throttle_wait(ctl->throttle, ctl->th, ctl->cancel);
    size_t count = s.len - off < g->chunk ? s.len - off : g->chunk;
    double t0 = nq_now_mono();
    rc = launch(g, off, count, (cl_uint)(off + count), units[0].n);
    double dt = nq_now_mono() - t0;
    g->busy += dt;
    off += count;
    if (rc == 0 && count == g->chunk) { /* a full launch says how fast the device is */
      double f = dt > 1e-6 ? g->launch_s / dt : 4.0;
      f = f > 4.0 ? 4.0 : f < 0.25 ? 0.25 : f;
      size_t c = (size_t)((double)g->chunk * f);
      g->chunk = c < CHUNK_MIN ? CHUNK_MIN : c > CHUNK_MAX ? CHUNK_MAX : c;
    }
  }
  if (rc == 0 && s.len) {
    cl_int e = clEnqueueReadBuffer(g->q, g->out, CL_TRUE, 0, s.len * 4 * sizeof(cl_ulong), res, 0,
                                   NULL, NULL);
    if (e != CL_SUCCESS) rc = fail(g, "cannot read the results back", e);
  }
  for (size_t i = 0; rc == 0 && i < s.len; i++) {
    nq_counts_t *o = &out[s.owner[i]];
    const cl_ulong *r = res + 4 * i;
    o->c2 += r[0];
    o->c4 += r[1];
    o->c8 += r[2];
    o->nodes += r[3];
  }
  for (size_t i = 0; rc == 0 && i < n; i++) g->nodes += out[i].nodes; /* the host's rows too */
  free(recs);
  free(res);
  subs_free(&s);
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
  g->k = clCreateKernel(g->prog, "nq_solve", &e);
  if (e != CL_SUCCESS) return nq_errorf(err, errlen, NQ_EDEVICE, "GPU %s: no kernel nq_solve "
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
  g->chunk = CHUNK_FIRST;
  g->launch_s = opts && opts->launch_seconds > 0 ? opts->launch_seconds : 0.1;
  int rc = build(g, opts, err, errlen);
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
  if (g->recs) clReleaseMemObject(g->recs);
  if (g->out) clReleaseMemObject(g->out);
  if (g->k) clReleaseKernel(g->k);
  if (g->prog) clReleaseProgram(g->prog);
  if (g->q) clReleaseCommandQueue(g->q);
  if (g->ctx) clReleaseContext(g->ctx);
  free(g);
}

#endif /* NQ_HAVE_OPENCL */
