/* nq: the OpenCL loader opened at run time (ocl_load.h). Compiled to nothing in a build without
 * the OpenCL backend (NQ_OPENCL=OFF, or no headers). */
#ifdef NQ_HAVE_OPENCL
#define NQ_OCL_LOADER
#include "ocl_load.h"

#include "nq/nq.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#endif

nq_ocl_t nq_ocl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static char load_why[384];

#ifdef _WIN32
/* The system folder only (LOAD_LIBRARY_SEARCH_SYSTEM32): the drivers install OpenCL.dll there,
 * and a DLL of that name beside the program or in the working folder is not picked up. */
static void *lib_open(const char **name) {
  *name = "OpenCL.dll";
  return (void *)LoadLibraryExA("OpenCL.dll", NULL, LOAD_LIBRARY_SEARCH_SYSTEM32);
}
static void *lib_sym(void *lib, const char *f) {
  return (void *)(intptr_t)GetProcAddress((HMODULE)lib, f);
}
static void lib_close(void *lib) { FreeLibrary((HMODULE)lib); }
static void lib_error(char *buf, size_t len) {
  DWORD e = GetLastError();
  char msg[256] = "";
  FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e, 0, msg,
                 sizeof msg, NULL);
  for (char *p = msg; *p; p++)
    if (*p == '\r' || *p == '\n') *p = ' ';
  snprintf(buf, len, "error %lu: %s", (unsigned long)e, msg);
}
#else
/* The versioned name (what ocl-icd-libopencl1 and every vendor's ICD loader install), found as
 * the dynamic linker finds any library (LD_LIBRARY_PATH, the cache, the system folders). */
static void *lib_open(const char **name) {
  *name = "libOpenCL.so.1";
  return dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
}
static void *lib_sym(void *lib, const char *f) { return dlsym(lib, f); }
static void lib_close(void *lib) { dlclose(lib); }
static void lib_error(char *buf, size_t len) {
  const char *e = dlerror();
  snprintf(buf, len, "%s", e ? e : "not found");
}
#endif

static void load_once(void) {
  const char *name = "";
  void *lib = lib_open(&name);
  if (!lib) {
    char e[320];
    lib_error(e, sizeof e);
    load_rc = nq_errorf(load_why, sizeof load_why, NQ_ENODEV, "no OpenCL loader (%s: %s)", name, e);
    return;
  }
  nq_ocl_t t;
  memset(&t, 0, sizeof t);
  const char *missing = NULL;
  /* A data pointer to a function pointer goes through memcpy: the one conversion ISO C leaves
   * to POSIX (dlsym) and Windows (GetProcAddress) and every compiler accepts. */
#define NQ_OCL_LOOKUP(f)                                                                         \
  if (!missing) {                                                                                \
    void *p = lib_sym(lib, #f);                                                                  \
    if (p) memcpy(&t.f, &p, sizeof p);                                                           \
    else missing = #f;                                                                           \
  }
  NQ_OCL_FUNCS(NQ_OCL_LOOKUP)
#undef NQ_OCL_LOOKUP
  if (missing) {
    load_rc = nq_errorf(load_why, sizeof load_why, NQ_ENODEV,
                        "the OpenCL loader %s lacks %s (not an OpenCL 1.2 loader)", name, missing);
    lib_close(lib);
    return;
  }
  nq_ocl = t; /* the library stays open for the life of the process */
  load_rc = 0;
}

int nq_ocl_load(char *why, size_t whylen) {
  pthread_once(&once, load_once);
  if (load_rc && why && whylen) snprintf(why, whylen, "%s", load_why);
  return load_rc;
}

#endif /* NQ_HAVE_OPENCL */
