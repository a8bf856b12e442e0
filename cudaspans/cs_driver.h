// Internal to package cudaspans: the CUDA driver and NVRTC entry points,
// loaded at run time. The few CUDA types used are declared here, so no
// CUDA toolkit is needed to build (ABI of cuda.h for CUDA 12.0).
#ifndef CUDASPANS_CS_DRIVER_H
#define CUDASPANS_CS_DRIVER_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUmodule;
typedef void *CUfunction;
typedef struct { char bytes[16]; } CUuuid;

typedef struct cs_driver {
	void *lib;
	CUresult (*cuGetProcAddress_v2)(const char *, void **, int, unsigned long long, int *);
	CUresult (*cuInit)(unsigned int);
	CUresult (*cuDriverGetVersion)(int *);
	CUresult (*cuGetErrorName)(CUresult, const char **);
	CUresult (*cuGetErrorString)(CUresult, const char **);
	CUresult (*cuDeviceGetCount)(int *);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDeviceGetName)(char *, int, CUdevice);
	CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
	CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*cuDeviceGetUuid)(CUuuid *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuCtxSynchronize)(void);
	CUresult (*cuMemGetInfo)(size_t *, size_t *);
	CUresult (*cuStreamCreate)(CUstream *, unsigned int);
	CUresult (*cuStreamDestroy)(CUstream);
	CUresult (*cuStreamSynchronize)(CUstream);
	CUresult (*cuEventCreate)(CUevent *, unsigned int);
	CUresult (*cuEventDestroy)(CUevent);
	CUresult (*cuEventRecord)(CUevent, CUstream);
	CUresult (*cuEventSynchronize)(CUevent);
	CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
	CUresult (*cuMemFree)(CUdeviceptr);
	CUresult (*cuMemHostAlloc)(void **, size_t, unsigned int);
	CUresult (*cuMemFreeHost)(void *);
	CUresult (*cuMemHostRegister)(void *, size_t, unsigned int);
	CUresult (*cuMemHostUnregister)(void *);
	CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
	CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*cuModuleLoadData)(CUmodule *, const void *);
	CUresult (*cuModuleUnload)(CUmodule);
	CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*cuFuncGetAttribute)(int *, int, CUfunction);
	CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
	CUresult (*cuFuncGetParamInfo)(CUfunction, size_t, size_t *, size_t *); // CUDA 12.4+, may be NULL
	CUresult (*cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
	                           unsigned int, unsigned int, unsigned int, unsigned int,
	                           CUstream, void **, void **);
} cs_driver;

// cs_load opens the driver library at path and resolves every entry point.
// On failure it returns NULL and writes a one-line reason to err.
cs_driver *cs_load(const char *path, char *err, size_t errlen);

CUresult cs_init(cs_driver *d);
CUresult cs_driver_version(cs_driver *d, int *v);
CUresult cs_device_count(cs_driver *d, int *n);

#define CS_SETCURRENT_FAILED 0x40000000

// Each wrapper makes ctx current on the calling thread, then calls the driver.
CUresult cs_error_text(cs_driver *d, CUresult r, const char **name, const char **msg);
CUresult cs_device_info(cs_driver *d, int ordinal, char *name, int namelen, size_t *total, int *attrs, int nattrs, const int *attrids, unsigned char *uuid);
CUresult cs_primary_retain(cs_driver *d, int ordinal, uintptr_t *ctx);
CUresult cs_primary_release(cs_driver *d, int ordinal);
CUresult cs_mem_info(cs_driver *d, uintptr_t ctx, size_t *free, size_t *total);
CUresult cs_ctx_sync(cs_driver *d, uintptr_t ctx);
CUresult cs_stream_create(cs_driver *d, uintptr_t ctx, uintptr_t *s);
CUresult cs_stream_destroy(cs_driver *d, uintptr_t ctx, uintptr_t s);
CUresult cs_stream_sync(cs_driver *d, uintptr_t ctx, uintptr_t s);
CUresult cs_event_create(cs_driver *d, uintptr_t ctx, uintptr_t *e);
CUresult cs_event_destroy(cs_driver *d, uintptr_t ctx, uintptr_t e);
CUresult cs_event_record(cs_driver *d, uintptr_t ctx, uintptr_t e, uintptr_t s);
CUresult cs_event_sync(cs_driver *d, uintptr_t ctx, uintptr_t e);
CUresult cs_event_elapsed(cs_driver *d, uintptr_t ctx, uintptr_t a, uintptr_t b, float *ms);
CUresult cs_mem_alloc(cs_driver *d, uintptr_t ctx, size_t n, CUdeviceptr *p);
CUresult cs_mem_free(cs_driver *d, uintptr_t ctx, CUdeviceptr p);
CUresult cs_host_alloc(cs_driver *d, uintptr_t ctx, size_t n, void **p);
CUresult cs_host_free(cs_driver *d, uintptr_t ctx, void *p);
CUresult cs_host_register(cs_driver *d, uintptr_t ctx, void *p, size_t n);
CUresult cs_host_unregister(cs_driver *d, uintptr_t ctx, void *p);
CUresult cs_htod(cs_driver *d, uintptr_t ctx, CUdeviceptr dst, const void *src, size_t n, uintptr_t s);
CUresult cs_dtoh(cs_driver *d, uintptr_t ctx, void *dst, CUdeviceptr src, size_t n, uintptr_t s);
CUresult cs_dtod(cs_driver *d, uintptr_t ctx, CUdeviceptr dst, CUdeviceptr src, size_t n, uintptr_t s);
CUresult cs_memset8(cs_driver *d, uintptr_t ctx, CUdeviceptr dst, unsigned char v, size_t n, uintptr_t s);
CUresult cs_module_load(cs_driver *d, uintptr_t ctx, const void *image, uintptr_t *m);
CUresult cs_module_unload(cs_driver *d, uintptr_t ctx, uintptr_t m);
CUresult cs_module_function(cs_driver *d, uintptr_t ctx, uintptr_t m, const char *name, uintptr_t *f);
CUresult cs_func_attr(cs_driver *d, uintptr_t ctx, uintptr_t f, int attr, int *v);
CUresult cs_func_set_attr(cs_driver *d, uintptr_t ctx, uintptr_t f, int attr, int v);
// cs_func_params fills up to max (offset, size) pairs; *n is the count,
// -1 when the driver cannot tell.
CUresult cs_func_params(cs_driver *d, uintptr_t ctx, uintptr_t f, size_t *offs, size_t *sizes, int max, int *n);
CUresult cs_launch(cs_driver *d, uintptr_t ctx, uintptr_t f, const unsigned int *dims, unsigned int shared,
                   uintptr_t s, unsigned char *params, const size_t *offsets, int nparams);
// cs_launch_timed records start, launches and records end on stream s: one
// call for the three, with a failure reported as the call that failed
// (*failed: 0 record start, 1 launch, 2 record end). launch is the
// launch's id, handed to the launch hook.
CUresult cs_launch_timed(cs_driver *d, uintptr_t ctx, uintptr_t f, const unsigned int *dims, unsigned int shared,
                         uintptr_t s, unsigned char *params, const size_t *offsets, int nparams,
                         uintptr_t start, uintptr_t end, uint64_t launch, int *failed);

// Launch hooks (package cupti): called on the calling thread right before
// and after cuLaunchKernel in cs_launch_timed (id: the launch's id, never
// reused in the process) and the async copies and memsets (id: 1). NULL:
// none.
void cs_set_launch_hooks(void (*push)(uint64_t), void (*pop)(void));

// NVRTC, loaded at run time.
typedef int nvrtcResult;
typedef void *nvrtcProgram;
typedef struct cs_nvrtc {
	void *lib;
	nvrtcResult (*nvrtcVersion)(int *, int *);
	const char *(*nvrtcGetErrorString)(nvrtcResult);
	nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
	nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram *);
	nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char *const *);
	nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t *);
	nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char *);
	nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t *);
	nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char *);
	nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t *);
	nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char *);
} cs_nvrtc;

cs_nvrtc *cs_nvrtc_load(const char *path, char *err, size_t errlen);
nvrtcResult cs_nvrtc_version(cs_nvrtc *n, int *major, int *minor);
const char *cs_nvrtc_error(cs_nvrtc *n, nvrtcResult r);

// cs_nvrtc_compile compiles src; on success *image (malloc'd, *imagelen
// bytes) holds the cubin, or the PTX when want_ptx. *log (malloc'd) always
// holds the compile log. *failed names the failing call.
nvrtcResult cs_nvrtc_compile(cs_nvrtc *n, const char *src, const char *name, int nheaders,
                             const char *const *headers, const char *const *includes, int nopts,
                             const char *const *opts, int want_ptx, char **image, size_t *imagelen,
                             char **log, const char **failed);

#endif
