// A CUDA program in plain C: the driver API and NVRTC through dlopen, no
// toolkit needed to build, no cudaspans (see foreign.h).
#include "foreign.h"
#include "nvtxlite.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;
typedef unsigned long long CUdeviceptr;

static struct {
	void *lib;
	CUresult (*cuInit)(unsigned);
	CUresult (*cuDeviceGet)(int *, int);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, int);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuCtxSynchronize)(void);
	CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
	CUresult (*cuMemFree)(CUdeviceptr);
	CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*cuModuleLoadData)(CUmodule *, const void *);
	CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	                           unsigned, CUstream, void **, void **);
	CUcontext ctx;
	CUfunction scale, saxpy;
} D;

static const char *kernels =
    "extern \"C\" __global__ void scale(float *x, float a, unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] = x[i] * a;\n"
    "}\n"
    "extern \"C\" __global__ void saxpy(float *y, const float *x, float a, unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

static int fail(foreign_args *a, const char *what, int r) {
	snprintf(a->err, sizeof a->err, "%s failed (%d)", what, r);
	a->rc = -1;
	return -1;
}

static void *open_first(const char *const *names) {
	for (; *names; names++) {
		void *h = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
		if (h) return h;
	}
	return NULL;
}

// compile returns the PTX of the kernels (malloc'd), by NVRTC.
static char *compile(foreign_args *a) {
	static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so.13",
	                                    "/usr/local/cuda/lib64/libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so", NULL};
	void *h = open_first(names);
	if (!h) {
		snprintf(a->err, sizeof a->err, "no libnvrtc (tried libnvrtc.so.13, .so.12 and /usr/local/cuda/lib64)");
		return NULL;
	}
	int (*create)(void **, const char *, const char *, int, const char *const *, const char *const *) = dlsym(h, "nvrtcCreateProgram");
	int (*comp)(void *, int, const char *const *) = dlsym(h, "nvrtcCompileProgram");
	int (*ptxsize)(void *, size_t *) = dlsym(h, "nvrtcGetPTXSize");
	int (*ptx)(void *, char *) = dlsym(h, "nvrtcGetPTX");
	int (*destroy)(void **) = dlsym(h, "nvrtcDestroyProgram");
	if (!create || !comp || !ptxsize || !ptx || !destroy) {
		snprintf(a->err, sizeof a->err, "libnvrtc lacks an entry point");
		return NULL;
	}
	void *prog = NULL;
	size_t n = 0;
	char *out = NULL;
	if (create(&prog, kernels, "foreign.cu", 0, NULL, NULL) == 0 && comp(prog, 0, NULL) == 0 && ptxsize(prog, &n) == 0 &&
	    (out = malloc(n)) != NULL && ptx(prog, out) == 0) {
		destroy(&prog);
		return out;
	}
	free(out);
	if (prog) destroy(&prog);
	snprintf(a->err, sizeof a->err, "NVRTC could not compile the kernels");
	return NULL;
}

#define SYM(f, name) if (!(*(void **)&D.f = dlsym(D.lib, name))) { snprintf(a->err, sizeof a->err, "libcuda lacks %s", name); return -1; }

static int setup(foreign_args *a) {
	if (D.scale) return 0;
	static const char *const names[] = {"libcuda.so.1", NULL};
	if (!(D.lib = open_first(names))) {
		snprintf(a->err, sizeof a->err, "no libcuda.so.1 (no NVIDIA driver)");
		return -1;
	}
	SYM(cuInit, "cuInit");
	SYM(cuDeviceGet, "cuDeviceGet");
	SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
	SYM(cuCtxSynchronize, "cuCtxSynchronize");
	SYM(cuMemAlloc, "cuMemAlloc_v2");
	SYM(cuMemFree, "cuMemFree_v2");
	SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
	SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
	SYM(cuMemsetD8, "cuMemsetD8_v2");
	SYM(cuModuleLoadData, "cuModuleLoadData");
	SYM(cuModuleGetFunction, "cuModuleGetFunction");
	SYM(cuLaunchKernel, "cuLaunchKernel");
	int r, dev;
	if ((r = D.cuInit(0))) return fail(a, "cuInit", r);
	if ((r = D.cuDeviceGet(&dev, 0))) return fail(a, "cuDeviceGet", r);
	if ((r = D.cuDevicePrimaryCtxRetain(&D.ctx, dev))) return fail(a, "cuDevicePrimaryCtxRetain", r);
	if ((r = D.cuCtxSetCurrent(D.ctx))) return fail(a, "cuCtxSetCurrent", r);
	char *ptx = compile(a);
	if (!ptx) return -1;
	CUmodule m;
	r = D.cuModuleLoadData(&m, ptx);
	free(ptx);
	if (r) return fail(a, "cuModuleLoadData", r);
	if ((r = D.cuModuleGetFunction(&D.scale, m, "scale"))) return fail(a, "cuModuleGetFunction(scale)", r);
	if ((r = D.cuModuleGetFunction(&D.saxpy, m, "saxpy"))) return fail(a, "cuModuleGetFunction(saxpy)", r);
	return 0;
}

void foreign_run(foreign_args *a) {
	a->rc = 0;
	a->err[0] = 0;
	if (setup(a)) {
		a->rc = -1;
		return;
	}
	int r, depth = 0;
	unsigned n = (unsigned)a->elems;
	size_t bytes = (size_t)n * sizeof(float);
	float two = 2.0f, one = 1.0f;
	unsigned grid = (n + 255) / 256;
	CUdeviceptr x = 0, y = 0;
	void *dom = NULL;
	float *h = malloc(bytes);
	if (!h) {
		snprintf(a->err, sizeof a->err, "out of host memory");
		a->rc = -1;
		return;
	}
	for (unsigned i = 0; i < n; i++) h[i] = 1.0f;
	D.cuCtxSetCurrent(D.ctx);
	nvtxlite_push(a->label ? a->label : "foreign.run");
	depth++;

	nvtxlite_push("upload");
	depth++;
	if ((r = D.cuMemAlloc(&x, bytes)) || (r = D.cuMemAlloc(&y, bytes))) { fail(a, "cuMemAlloc", r); goto out; }
	if ((r = D.cuMemcpyHtoD(x, h, bytes))) { fail(a, "cuMemcpyHtoD", r); goto out; }
	if ((r = D.cuMemsetD8(y, 0, bytes))) { fail(a, "cuMemsetD8", r); goto out; }
	nvtxlite_pop();
	depth--;

	nvtxlite_attr at;
	nvtxlite_ascii(&at, "compute");
	at.category = 7;
	at.payloadType = 5; // NVTX_PAYLOAD_TYPE_INT32
	at.payload = (uint64_t)(uint32_t)a->iters;
	nvtxlite_push_ex(&at);
	depth++;
	for (int i = 0; i < a->iters; i++) {
		void *p1[] = {&x, &two, &n};
		if ((r = D.cuLaunchKernel(D.scale, grid, 1, 1, 256, 1, 1, 0, NULL, p1, NULL))) { fail(a, "cuLaunchKernel(scale)", r); goto out; }
		void *p2[] = {&y, &x, &one, &n};
		if ((r = D.cuLaunchKernel(D.saxpy, grid, 1, 1, 256, 1, 1, 0, NULL, p2, NULL))) { fail(a, "cuLaunchKernel(saxpy)", r); goto out; }
	}
	if ((r = D.cuCtxSynchronize())) { fail(a, "cuCtxSynchronize", r); goto out; }
	nvtxlite_pop();
	depth--;

	nvtxlite_push("download");
	depth++;
	if ((r = D.cuMemcpyDtoH(h, y, bytes))) { fail(a, "cuMemcpyDtoH", r); goto out; }
	nvtxlite_pop();
	depth--;

	// y = sum over i of 2^(i+1): check a few elements.
	uint64_t check = nvtxlite_start("foreign.check");
	double want = 0;
	for (int i = 0; i < a->iters; i++) want += pow(2.0, i + 1);
	for (unsigned i = 0; i < n; i += n / 8 + 1)
		if (fabs(h[i] - want) > 1e-3 * want) {
			snprintf(a->err, sizeof a->err, "wrong result: y[%u] = %g, want %g", i, h[i], want);
			a->rc = -1;
			break;
		}
	nvtxlite_end(check);

	dom = nvtxlite_domain("foreign");
	nvtxlite_attr da;
	nvtxlite_ascii(&da, "foreign.free");
	nvtxlite_domain_push(dom, &da);
	if (x) D.cuMemFree(x);
	if (y) D.cuMemFree(y);
	x = y = 0;
	nvtxlite_domain_pop(dom);
out:
	if (x) D.cuMemFree(x);
	if (y) D.cuMemFree(y);
	for (; depth > 0; depth--) nvtxlite_pop();
	free(h);
}

void foreign_run_cb(void *a) { foreign_run((foreign_args *)a); }
