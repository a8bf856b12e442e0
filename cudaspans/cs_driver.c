// Internal to package cudaspans: run-time loading of libcuda and NVRTC.
#include "cs_driver.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The ABI version of the declarations in cs_driver.h. cuGetProcAddress
// returns, for a base name such as "cuMemAlloc", the entry point with the
// signature that CUDA version had (cuMemAlloc_v2), also on a CUDA 13 driver
// where a name may since have changed its signature (cuCtxCreate became
// cuCtxCreate_v4 in 13.0).
#define CS_ABI 12000

static int resolve(cs_driver *d, const char *name, const char *fallback, int version, void **fn,
                   int required, char *err, size_t errlen) {
	void *p = NULL;
	int status = 0;
	if (d->cuGetProcAddress_v2(name, &p, version, 0 /* CU_GET_PROC_ADDRESS_DEFAULT */, &status) != 0 || status != 0)
		p = NULL;
	if (p == NULL && fallback != NULL)
		p = dlsym(d->lib, fallback);
	if (p == NULL && required) {
		snprintf(err, errlen, "libcuda has no entry point %s (driver too old?)", name);
		return -1;
	}
	*fn = p;
	return 0;
}

// dlopen_error writes why dlopen(path) failed into err: "dlopen PATH:
// REASON", with dlerror's text as REASON; that text names the library it
// was given ("libcuda.so.1: cannot open shared object file: ..."), so then
// the name is not said twice.
static void dlopen_error(const char *path, char *err, size_t errlen) {
	const char *e = dlerror();
	size_t n = strlen(path);
	if (e == NULL)
		snprintf(err, errlen, "dlopen %s: unknown error", path);
	else if (strncmp(e, path, n) == 0 && e[n] == ':')
		snprintf(err, errlen, "dlopen %s", e);
	else
		snprintf(err, errlen, "dlopen %s: %s", path, e);
}

// lib_open allocates a zeroed struct of size bytes whose first member is
// the library's handle (cs_driver, cs_nvrtc) and dlopens path into it; NULL
// with err filled when either fails.
_Static_assert(offsetof(cs_driver, lib) == 0, "cs_driver.lib is not first");
_Static_assert(offsetof(cs_nvrtc, lib) == 0, "cs_nvrtc.lib is not first");
static void *lib_open(const char *path, size_t size, char *err, size_t errlen) {
	void **s = calloc(1, size);
	if (s == NULL) {
		snprintf(err, errlen, "out of host memory");
		return NULL;
	}
	*s = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (*s == NULL) {
		dlopen_error(path, err, errlen);
		free(s);
		return NULL;
	}
	return s;
}

#define R(field, fallback) \
	if (resolve(d, #field, fallback, CS_ABI, (void **)&d->field, 1, err, errlen)) goto fail

cs_driver *cs_load(const char *path, char *err, size_t errlen) {
	cs_driver *d = lib_open(path, sizeof *d, err, errlen);
	if (d == NULL) {
		return NULL;
	}
	d->cuGetProcAddress_v2 = dlsym(d->lib, "cuGetProcAddress_v2");
	if (d->cuGetProcAddress_v2 == NULL) {
		snprintf(err, errlen, "%s has no cuGetProcAddress_v2: driver older than CUDA 12", path);
		goto fail;
	}
	R(cuInit, "cuInit");
	R(cuDriverGetVersion, "cuDriverGetVersion");
	R(cuGetErrorName, "cuGetErrorName");
	R(cuGetErrorString, "cuGetErrorString");
	R(cuDeviceGetCount, "cuDeviceGetCount");
	R(cuDeviceGet, "cuDeviceGet");
	R(cuDeviceGetName, "cuDeviceGetName");
	R(cuDeviceTotalMem, "cuDeviceTotalMem_v2");
	R(cuDeviceGetAttribute, "cuDeviceGetAttribute");
	R(cuDeviceGetUuid, "cuDeviceGetUuid_v2");
	R(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	R(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
	R(cuCtxSetCurrent, "cuCtxSetCurrent");
	R(cuCtxSynchronize, "cuCtxSynchronize");
	R(cuMemGetInfo, "cuMemGetInfo_v2");
	R(cuStreamCreate, "cuStreamCreate");
	R(cuStreamDestroy, "cuStreamDestroy_v2");
	R(cuStreamSynchronize, "cuStreamSynchronize");
	R(cuEventCreate, "cuEventCreate");
	R(cuEventDestroy, "cuEventDestroy_v2");
	R(cuEventRecord, "cuEventRecord");
	R(cuEventSynchronize, "cuEventSynchronize");
	R(cuEventElapsedTime, "cuEventElapsedTime");
	R(cuMemAlloc, "cuMemAlloc_v2");
	R(cuMemFree, "cuMemFree_v2");
	R(cuMemHostAlloc, "cuMemHostAlloc");
	R(cuMemFreeHost, "cuMemFreeHost");
	R(cuMemHostRegister, "cuMemHostRegister_v2");
	R(cuMemHostUnregister, "cuMemHostUnregister");
	R(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
	R(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
	R(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
	R(cuMemsetD8Async, "cuMemsetD8Async");
	R(cuModuleLoadData, "cuModuleLoadData");
	R(cuModuleUnload, "cuModuleUnload");
	R(cuModuleGetFunction, "cuModuleGetFunction");
	R(cuFuncGetAttribute, "cuFuncGetAttribute");
	R(cuFuncSetAttribute, "cuFuncSetAttribute");
	R(cuLaunchKernel, "cuLaunchKernel");
	// Optional: drivers for CUDA 12.4 and later.
	resolve(d, "cuFuncGetParamInfo", "cuFuncGetParamInfo", 12040, (void **)&d->cuFuncGetParamInfo, 0, err, errlen);
	return d;
fail:
	dlclose(d->lib);
	free(d);
	return NULL;
}

CUresult cs_init(cs_driver *d) { return d->cuInit(0); }
CUresult cs_driver_version(cs_driver *d, int *v) { return d->cuDriverGetVersion(v); }
CUresult cs_device_count(cs_driver *d, int *n) { return d->cuDeviceGetCount(n); }

CUresult cs_error_text(cs_driver *d, CUresult r, const char **name, const char **msg) {
	*name = NULL;
	*msg = NULL;
	d->cuGetErrorName(r, name);
	d->cuGetErrorString(r, msg);
	return 0;
}

CUresult cs_device_info(cs_driver *d, int ordinal, char *name, int namelen, size_t *total, int *attrs,
                        int nattrs, const int *attrids, unsigned char *uuid) {
	CUdevice dev;
	CUresult r = d->cuDeviceGet(&dev, ordinal);
	if (r) return r;
	if ((r = d->cuDeviceGetName(name, namelen, dev))) return r;
	if ((r = d->cuDeviceTotalMem(total, dev))) return r;
	for (int i = 0; i < nattrs; i++)
		if ((r = d->cuDeviceGetAttribute(&attrs[i], attrids[i], dev))) return r;
	CUuuid u;
	if ((r = d->cuDeviceGetUuid(&u, dev))) return r;
	memcpy(uuid, u.bytes, 16);
	return 0;
}

CUresult cs_primary_retain(cs_driver *d, int ordinal, uintptr_t *ctx) {
	CUdevice dev;
	CUresult r = d->cuDeviceGet(&dev, ordinal);
	if (r) return r;
	CUcontext c = NULL;
	r = d->cuDevicePrimaryCtxRetain(&c, dev);
	*ctx = (uintptr_t)c;
	return r;
}

CUresult cs_primary_release(cs_driver *d, int ordinal) {
	CUdevice dev;
	CUresult r = d->cuDeviceGet(&dev, ordinal);
	if (r) return r;
	return d->cuDevicePrimaryCtxRelease(dev);
}

// A failure of cuCtxSetCurrent is returned with CS_SETCURRENT_FAILED set, so
// the Go side names that call rather than the one it preceded.
#define CUR(d, ctx) do { CUresult r_ = (d)->cuCtxSetCurrent((CUcontext)(ctx)); if (r_) return r_ | CS_SETCURRENT_FAILED; } while (0)

CUresult cs_mem_info(cs_driver *d, uintptr_t ctx, size_t *free, size_t *total) {
	CUR(d, ctx);
	return d->cuMemGetInfo(free, total);
}

CUresult cs_ctx_sync(cs_driver *d, uintptr_t ctx) {
	CUR(d, ctx);
	return d->cuCtxSynchronize();
}

CUresult cs_stream_create(cs_driver *d, uintptr_t ctx, uintptr_t *s) {
	CUR(d, ctx);
	CUstream st = NULL;
	CUresult r = d->cuStreamCreate(&st, 1 /* CU_STREAM_NON_BLOCKING */);
	*s = (uintptr_t)st;
	return r;
}

CUresult cs_stream_destroy(cs_driver *d, uintptr_t ctx, uintptr_t s) {
	CUR(d, ctx);
	return d->cuStreamDestroy((CUstream)s);
}

CUresult cs_stream_sync(cs_driver *d, uintptr_t ctx, uintptr_t s) {
	CUR(d, ctx);
	return d->cuStreamSynchronize((CUstream)s);
}

CUresult cs_event_create(cs_driver *d, uintptr_t ctx, uintptr_t *e) {
	CUR(d, ctx);
	CUevent ev = NULL;
	CUresult r = d->cuEventCreate(&ev, 0 /* CU_EVENT_DEFAULT: timing on */);
	*e = (uintptr_t)ev;
	return r;
}

CUresult cs_event_destroy(cs_driver *d, uintptr_t ctx, uintptr_t e) {
	CUR(d, ctx);
	return d->cuEventDestroy((CUevent)e);
}

CUresult cs_event_record(cs_driver *d, uintptr_t ctx, uintptr_t e, uintptr_t s) {
	CUR(d, ctx);
	return d->cuEventRecord((CUevent)e, (CUstream)s);
}

CUresult cs_event_sync(cs_driver *d, uintptr_t ctx, uintptr_t e) {
	CUR(d, ctx);
	return d->cuEventSynchronize((CUevent)e);
}

CUresult cs_event_elapsed(cs_driver *d, uintptr_t ctx, uintptr_t a, uintptr_t b, float *ms) {
	CUR(d, ctx);
	return d->cuEventElapsedTime(ms, (CUevent)a, (CUevent)b);
}

CUresult cs_mem_alloc(cs_driver *d, uintptr_t ctx, size_t n, CUdeviceptr *p) {
	CUR(d, ctx);
	return d->cuMemAlloc(p, n);
}

CUresult cs_mem_free(cs_driver *d, uintptr_t ctx, CUdeviceptr p) {
	CUR(d, ctx);
	return d->cuMemFree(p);
}

CUresult cs_host_alloc(cs_driver *d, uintptr_t ctx, size_t n, void **p) {
	CUR(d, ctx);
	return d->cuMemHostAlloc(p, n, 1 /* CU_MEMHOSTALLOC_PORTABLE */);
}

CUresult cs_host_free(cs_driver *d, uintptr_t ctx, void *p) {
	CUR(d, ctx);
	return d->cuMemFreeHost(p);
}

CUresult cs_host_register(cs_driver *d, uintptr_t ctx, void *p, size_t n) {
	CUR(d, ctx);
	return d->cuMemHostRegister(p, n, 1 /* CU_MEMHOSTREGISTER_PORTABLE */);
}

CUresult cs_host_unregister(cs_driver *d, uintptr_t ctx, void *p) {
	CUR(d, ctx);
	return d->cuMemHostUnregister(p);
}

// Launch hooks (cs_set_launch_hooks): cudaspans' own copies and memsets
// are marked with id 1, kernels with their start event, so CUPTI capture
// can tell the work cudaspans already traces.
static void (*volatile launch_push)(uint64_t);
static void (*volatile launch_pop)(void);

void cs_set_launch_hooks(void (*push)(uint64_t), void (*pop)(void)) {
	launch_pop = NULL;
	launch_push = push;
	launch_pop = pop;
}

#define HOOKED(id, call) do { \
	void (*push_)(uint64_t) = launch_push, (*pop_)(void) = launch_pop; \
	if (push_ && pop_) push_(id); \
	CUresult r_ = (call); \
	if (push_ && pop_) pop_(); \
	return r_; \
} while (0)

CUresult cs_htod(cs_driver *d, uintptr_t ctx, CUdeviceptr dst, const void *src, size_t n, uintptr_t s) {
	CUR(d, ctx);
	HOOKED(1, d->cuMemcpyHtoDAsync(dst, src, n, (CUstream)s));
}

CUresult cs_dtoh(cs_driver *d, uintptr_t ctx, void *dst, CUdeviceptr src, size_t n, uintptr_t s) {
	CUR(d, ctx);
	HOOKED(1, d->cuMemcpyDtoHAsync(dst, src, n, (CUstream)s));
}

CUresult cs_dtod(cs_driver *d, uintptr_t ctx, CUdeviceptr dst, CUdeviceptr src, size_t n, uintptr_t s) {
	CUR(d, ctx);
	HOOKED(1, d->cuMemcpyDtoDAsync(dst, src, n, (CUstream)s));
}

CUresult cs_memset8(cs_driver *d, uintptr_t ctx, CUdeviceptr dst, unsigned char v, size_t n, uintptr_t s) {
	CUR(d, ctx);
	HOOKED(1, d->cuMemsetD8Async(dst, v, n, (CUstream)s));
}

CUresult cs_module_load(cs_driver *d, uintptr_t ctx, const void *image, uintptr_t *m) {
	CUR(d, ctx);
	CUmodule mod = NULL;
	CUresult r = d->cuModuleLoadData(&mod, image);
	*m = (uintptr_t)mod;
	return r;
}

CUresult cs_module_unload(cs_driver *d, uintptr_t ctx, uintptr_t m) {
	CUR(d, ctx);
	return d->cuModuleUnload((CUmodule)m);
}

CUresult cs_module_function(cs_driver *d, uintptr_t ctx, uintptr_t m, const char *name, uintptr_t *f) {
	CUR(d, ctx);
	CUfunction fn = NULL;
	CUresult r = d->cuModuleGetFunction(&fn, (CUmodule)m, name);
	*f = (uintptr_t)fn;
	return r;
}

CUresult cs_func_attr(cs_driver *d, uintptr_t ctx, uintptr_t f, int attr, int *v) {
	CUR(d, ctx);
	return d->cuFuncGetAttribute(v, attr, (CUfunction)f);
}

CUresult cs_func_set_attr(cs_driver *d, uintptr_t ctx, uintptr_t f, int attr, int v) {
	CUR(d, ctx);
	return d->cuFuncSetAttribute((CUfunction)f, attr, v);
}

CUresult cs_func_params(cs_driver *d, uintptr_t ctx, uintptr_t f, size_t *offs, size_t *sizes, int max, int *n) {
	*n = -1;
	if (d->cuFuncGetParamInfo == NULL) return 0;
	CUR(d, ctx);
	int i = 0;
	CUresult r = 0;
	for (; i < max; i++) {
		r = d->cuFuncGetParamInfo((CUfunction)f, (size_t)i, &offs[i], &sizes[i]);
		if (r != 0) break;
	}
	// Past the last parameter the driver answers CUDA_ERROR_INVALID_VALUE (1);
	// any other answer means it cannot tell.
	*n = (i < max && r == 1) ? i : -1;
	return 0;
}

// launch_kernel runs cuLaunchKernel with parameter pointers built from
// params and offsets; with bracket set and both hooks present, the launch
// sits between launch_push(tag) and launch_pop() (cupti's correlation of the
// launch with its cudaspans span).
static CUresult launch_kernel(cs_driver *d, uintptr_t f, const unsigned int *dims, unsigned int shared, uintptr_t s,
                              unsigned char *params, const size_t *offsets, int nparams, int bracket, uint64_t tag) {
	void *stackp[64];
	void **kp = stackp;
	if (nparams > 64) {
		kp = malloc(sizeof(void *) * (size_t)nparams);
		if (kp == NULL) return 2; // CUDA_ERROR_OUT_OF_MEMORY
	}
	for (int i = 0; i < nparams; i++) kp[i] = params + offsets[i];
	void (*push)(uint64_t) = launch_push, (*pop)(void) = launch_pop;
	bracket = bracket && push && pop;
	if (bracket) push(tag);
	CUresult r = d->cuLaunchKernel((CUfunction)f, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
	                               shared, (CUstream)s, nparams > 0 ? kp : NULL, NULL);
	if (bracket) pop();
	if (kp != stackp) free(kp);
	return r;
}

CUresult cs_launch(cs_driver *d, uintptr_t ctx, uintptr_t f, const unsigned int *dims, unsigned int shared,
                   uintptr_t s, unsigned char *params, const size_t *offsets, int nparams) {
	CUR(d, ctx);
	return launch_kernel(d, f, dims, shared, s, params, offsets, nparams, 0, 0);
}

CUresult cs_launch_timed(cs_driver *d, uintptr_t ctx, uintptr_t f, const unsigned int *dims, unsigned int shared,
                         uintptr_t s, unsigned char *params, const size_t *offsets, int nparams,
                         uintptr_t start, uintptr_t end, uint64_t launch, int *failed) {
	*failed = 0;
	CUR(d, ctx);
	CUresult r = d->cuEventRecord((CUevent)start, (CUstream)s);
	if (r) return r;
	*failed = 1;
	r = launch_kernel(d, f, dims, shared, s, params, offsets, nparams, 1, launch);
	if (r) return r;
	*failed = 2;
	return d->cuEventRecord((CUevent)end, (CUstream)s);
}

// ---- NVRTC ----

#define N(field) \
	if ((n->field = dlsym(n->lib, #field)) == NULL) { \
		snprintf(err, errlen, "%s has no %s", path, #field); goto fail; }

cs_nvrtc *cs_nvrtc_load(const char *path, char *err, size_t errlen) {
	cs_nvrtc *n = lib_open(path, sizeof *n, err, errlen);
	if (n == NULL) {
		return NULL;
	}
	N(nvrtcVersion);
	N(nvrtcGetErrorString);
	N(nvrtcCreateProgram);
	N(nvrtcDestroyProgram);
	N(nvrtcCompileProgram);
	N(nvrtcGetProgramLogSize);
	N(nvrtcGetProgramLog);
	N(nvrtcGetCUBINSize);
	N(nvrtcGetCUBIN);
	N(nvrtcGetPTXSize);
	N(nvrtcGetPTX);
	return n;
fail:
	dlclose(n->lib);
	free(n);
	return NULL;
}

nvrtcResult cs_nvrtc_compile(cs_nvrtc *n, const char *src, const char *name, int nheaders,
                             const char *const *headers, const char *const *includes, int nopts,
                             const char *const *opts, int want_ptx, char **image, size_t *imagelen,
                             char **log, const char **failed) {
	nvrtcProgram prog = NULL;
	*image = NULL;
	*imagelen = 0;
	*log = NULL;
	*failed = "nvrtcCreateProgram";
	nvrtcResult r = n->nvrtcCreateProgram(&prog, src, name, nheaders, headers, includes);
	if (r) return r;
	*failed = "nvrtcCompileProgram";
	nvrtcResult cr = n->nvrtcCompileProgram(prog, nopts, opts);
	size_t ls = 0;
	if (n->nvrtcGetProgramLogSize(prog, &ls) == 0 && ls > 0) {
		*log = malloc(ls + 1);
		if (*log != NULL && n->nvrtcGetProgramLog(prog, *log) != 0) (*log)[0] = 0;
		if (*log != NULL) (*log)[ls] = 0;
	}
	r = cr;
	if (r == 0) {
		size_t sz = 0;
		*failed = want_ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize";
		r = want_ptx ? n->nvrtcGetPTXSize(prog, &sz) : n->nvrtcGetCUBINSize(prog, &sz);
		if (r == 0) {
			*image = malloc(sz ? sz : 1);
			*failed = want_ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN";
			if (*image == NULL) {
				r = 1; // NVRTC_ERROR_OUT_OF_MEMORY
			} else {
				r = want_ptx ? n->nvrtcGetPTX(prog, *image) : n->nvrtcGetCUBIN(prog, *image);
				*imagelen = sz;
			}
		}
	}
	n->nvrtcDestroyProgram(&prog);
	return r;
}

nvrtcResult cs_nvrtc_version(cs_nvrtc *n, int *major, int *minor) { return n->nvrtcVersion(major, minor); }

const char *cs_nvrtc_error(cs_nvrtc *n, nvrtcResult r) {
	const char *s = n->nvrtcGetErrorString(r);
	return s ? s : "NVRTC_ERROR_UNKNOWN";
}
