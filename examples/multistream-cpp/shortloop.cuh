// shortloop.cuh: the short-kernel loop's kernel and its start, shared by
// multistream.cu's --loop and bench/cuptibench/cuptimatrix.cu (which times
// CUPTI's own cost, configuration by configuration, on exactly this loop).
// The includer defines CHECK(call).
#pragma once
#include <cuda_runtime.h>

// iters multiply-adds on each of n floats: a kernel of about a microsecond
// at iters 16 on an H200 (bench/cupti.md).
__global__ void short_kernel(float *x, unsigned n, int iters) {
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float v = x[i];
		for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f;
		x[i] = v;
	}
}

// The loop's elems floats, zeroed, on a new stream *s, after 2000 launches
// of warm-up (the clocks up) and a sync.
static void short_loop_start(unsigned elems, int iters, float **x, cudaStream_t *s) {
	CHECK(cudaStreamCreate(s));
	CHECK(cudaMalloc(x, elems * sizeof(float)));
	CHECK(cudaMemset(*x, 0, elems * sizeof(float)));
	for (int i = 0; i < 2000; i++) short_kernel<<<elems / 256, 256, 0, *s>>>(*x, elems, iters);
	CHECK(cudaStreamSynchronize(*s));
}
