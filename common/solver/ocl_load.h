/* nq: the OpenCL loader opened at run time (private to common/solver: gpu_opencl.c).
 *
 * No binary links the OpenCL loader. The first time the GPU backend needs it, nq_ocl_load opens
 * the platform's loader -- libOpenCL.so.1 (then libOpenCL.so) with dlopen on Linux, OpenCL.dll
 * from the system folder with LoadLibraryEx on Windows (every vendor's driver installs it there)
 * -- and looks each entry point of NQ_OCL_FUNCS up by name. So one binary runs with or without
 * OpenCL: a machine with no loader (or one that lacks an entry point) has no OpenCL device, and
 * the reason is kept for `nq-solve --gpu-list` and the client's log.
 *
 * The functions are called by their usual names: this header, included instead of <CL/cl.h>,
 * maps each clXxx of the list onto the table's pointer of the same name. An OpenCL function the
 * backend starts to use must be added to NQ_OCL_FUNCS and to the #defines below (a call to one
 * that is not fails to link: no binary links libOpenCL).
 *
 * The table is process-wide (there is one loader per process, as there is one dynamic linker);
 * it is filled once, under a once-flag, and never changed or unloaded after.
 */
#ifndef NQ_OCL_LOAD_H
#define NQ_OCL_LOAD_H

#include <stddef.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

/* Every entry point the backend may call: OpenCL 1.2 core, which every loader exports. */
#define NQ_OCL_FUNCS(X)                                                                          \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo)                  \
  X(clCreateContext) X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue)        \
  X(clCreateBuffer) X(clReleaseMemObject) X(clCreateProgramWithSource) X(clBuildProgram)         \
  X(clGetProgramBuildInfo) X(clGetProgramInfo) X(clReleaseProgram) X(clCreateKernel)             \
  X(clReleaseKernel) X(clSetKernelArg) X(clGetKernelWorkGroupInfo) X(clEnqueueNDRangeKernel)    \
  X(clEnqueueReadBuffer) X(clEnqueueWriteBuffer) X(clEnqueueCopyBuffer) X(clEnqueueFillBuffer)   \
  X(clEnqueueMapBuffer) X(clEnqueueUnmapMemObject) X(clFlush) X(clFinish) X(clWaitForEvents)     \
  X(clGetEventInfo) X(clGetEventProfilingInfo) X(clRetainEvent) X(clReleaseEvent)

/* One pointer per entry point, of the type <CL/cl.h> declares it with (calling convention
 * included). */
typedef struct nq_ocl_s {
#define NQ_OCL_FIELD(f) __typeof__(&f) f;
  NQ_OCL_FUNCS(NQ_OCL_FIELD)
#undef NQ_OCL_FIELD
} nq_ocl_t;

extern nq_ocl_t nq_ocl;

/* Open the loader and fill nq_ocl, once per process (thread-safe; later calls return the first
 * call's answer). Returns 0, or NQ_ENODEV with the reason in why (when why is given): the
 * loader's name and the system's error, or the first entry point it lacks. */
int nq_ocl_load(char *why, size_t whylen);

/* ocl_load.c itself fills the table by field name, so it goes without the mapping. */
#ifndef NQ_OCL_LOADER
#define clGetPlatformIDs nq_ocl.clGetPlatformIDs
#define clGetPlatformInfo nq_ocl.clGetPlatformInfo
#define clGetDeviceIDs nq_ocl.clGetDeviceIDs
#define clGetDeviceInfo nq_ocl.clGetDeviceInfo
#define clCreateContext nq_ocl.clCreateContext
#define clReleaseContext nq_ocl.clReleaseContext
#define clCreateCommandQueue nq_ocl.clCreateCommandQueue
#define clReleaseCommandQueue nq_ocl.clReleaseCommandQueue
#define clCreateBuffer nq_ocl.clCreateBuffer
#define clReleaseMemObject nq_ocl.clReleaseMemObject
#define clCreateProgramWithSource nq_ocl.clCreateProgramWithSource
#define clBuildProgram nq_ocl.clBuildProgram
#define clGetProgramBuildInfo nq_ocl.clGetProgramBuildInfo
#define clGetProgramInfo nq_ocl.clGetProgramInfo
#define clReleaseProgram nq_ocl.clReleaseProgram
#define clCreateKernel nq_ocl.clCreateKernel
#define clReleaseKernel nq_ocl.clReleaseKernel
#define clSetKernelArg nq_ocl.clSetKernelArg
#define clGetKernelWorkGroupInfo nq_ocl.clGetKernelWorkGroupInfo
#define clEnqueueNDRangeKernel nq_ocl.clEnqueueNDRangeKernel
#define clEnqueueReadBuffer nq_ocl.clEnqueueReadBuffer
#define clEnqueueWriteBuffer nq_ocl.clEnqueueWriteBuffer
#define clEnqueueCopyBuffer nq_ocl.clEnqueueCopyBuffer
#define clEnqueueFillBuffer nq_ocl.clEnqueueFillBuffer
#define clEnqueueMapBuffer nq_ocl.clEnqueueMapBuffer
#define clEnqueueUnmapMemObject nq_ocl.clEnqueueUnmapMemObject
#define clFlush nq_ocl.clFlush
#define clFinish nq_ocl.clFinish
#define clWaitForEvents nq_ocl.clWaitForEvents
#define clGetEventInfo nq_ocl.clGetEventInfo
#define clGetEventProfilingInfo nq_ocl.clGetEventProfilingInfo
#define clRetainEvent nq_ocl.clRetainEvent
#define clReleaseEvent nq_ocl.clReleaseEvent
#endif

#endif
