// ntt.cu: CUDA kernels of the GPU NTT and of groth16's compute_h. Compiled at
// run time by NVRTC (prover/gpu embeds it with ff.cuh and ntt.cuh); names are
// extern "C" so the module exports them unmangled. All pointers are device
// pointers to gnark-crypto fr.Element arrays (Montgomery form, 32 bytes each).
// The NTT's field additions use the PTX carry-chain add and sub of ff.cuh
// (opt-in there, so other modules keep the portable code): measured faster
// here (bench/ntt.md).
#ifndef FF_PTX_ADDSUB
#define FF_PTX_ADDSUB 1
#endif
#include "ntt.cuh"

using ntt::fr_t;

// One pass of t radix-2 stages (ntt::pass_block). Launch with
// n / 2^pass_log_tile(logn) blocks, any block size (256 suits), and
// 2^pass_log_tile(logn) * 32 bytes of dynamic shared memory.
// NTT_MIN_BLOCKS: resident blocks of 256 threads per multiprocessor that the
// register allocation must allow (__launch_bounds__). 4 (at most 64
// registers) hides the latency of the Montgomery carry chains best on the
// H200: 2^24 forward NTT 8.0 ms against 11.6 ms with 1 (bench/ntt.md).
#ifndef NTT_MIN_BLOCKS
#define NTT_MIN_BLOCKS 4
#endif
extern "C" __global__ void __launch_bounds__(256, NTT_MIN_BLOCKS) ntt_pass(fr_t *data, const fr_t *tw, ntt::PassParams p,
                                    const fr_t *in_table, fr_t in_c, const fr_t *out_table,
                                    fr_t out_c) {
  extern __shared__ fr_t ntt_tile[];
  ntt::pass_block(data, tw, p, in_table, in_c, out_table, out_c, blockIdx.x, threadIdx.x,
                  blockDim.x, ntt_tile);
}

// out[i] = first·base^i for i in [0, count): twiddle and coset tables. One
// thread per ntt::POWERS_CHUNK elements, grid-stride; any grid.
extern "C" __global__ void ntt_powers(fr_t *out, fr_t base, fr_t first, unsigned count) {
  unsigned chunks = (count + ntt::POWERS_CHUNK - 1) / ntt::POWERS_CHUNK;
  for (unsigned c = blockIdx.x * blockDim.x + threadIdx.x; c < chunks;
       c += gridDim.x * blockDim.x) {
    ntt::powers_chunk(out, base, first, count, c);
  }
}

// a[i] = (a[i]·b[i] − c[i])·den for i in [0, n): grid-stride.
extern "C" __global__ void groth16_pointwise(fr_t *a, const fr_t *b, const fr_t *c, fr_t den,
                                             unsigned n) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    a[i] = ntt::pointwise(a[i], b[i], c[i], den);
  }
}
