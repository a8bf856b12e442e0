// rate.cu: throughput probes for the compute floor of the NTT and MSM
// (bench/nttbench, prover/gpu/rate.go). Each thread runs RATE_CHAINS
// independent dependency chains, so the scheduler always has independent
// work and the kernels measure issue throughput, not latency.
#include "ff.cuh"

#define RATE_CHAINS 4

// iters rounds of RATE_CHAINS Montgomery multiplications in the field F
// (ff.cuh's device mul) by thread; v[i] keeps the results alive.
template <class F>
__device__ __forceinline__ void rate_mul(F *v, unsigned iters) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  F a = v[i], b = v[i ^ 1];
  F x[RATE_CHAINS];
#pragma unroll
  for (int k = 0; k < RATE_CHAINS; k++) x[k] = k & 1 ? b : a;
  for (unsigned r = 0; r < iters; r++) {
#pragma unroll
    for (int k = 0; k < RATE_CHAINS; k++) x[k] = F::mul(x[k], k & 1 ? a : b);
  }
  F s = x[0];
#pragma unroll
  for (int k = 1; k < RATE_CHAINS; k++) s = F::add(s, x[k]);
  v[i] = s;
}

// The scalar field (the NTT's multiplications).
extern "C" __global__ void __launch_bounds__(256) rate_fr_mul(ff::fr_t *v, unsigned iters) { rate_mul(v, iters); }

// The base field (the MSM's point arithmetic).
extern "C" __global__ void __launch_bounds__(256) rate_fp_mul(ff::fp_t *v, unsigned iters) { rate_mul(v, iters); }

// iters rounds of op (a PTX multiply-add, "mad.lo.u32" or "mad.hi.u32")
// on each of x0..x7, x_k = op(x_k, a) + b: one asm block a round, so the
// compiler can neither fold nor reorder the chains.
#define RATE_IMAD_ROUNDS(op)                                                              \
  for (unsigned r = 0; r < iters; r++)                                                    \
  asm volatile(op " %0, %0, %8, %9;\n\t" op " %1, %1, %8, %9;\n\t" op " %2, %2, %8, %9;\n\t" \
               op " %3, %3, %8, %9;\n\t" op " %4, %4, %8, %9;\n\t" op " %5, %5, %8, %9;\n\t" \
               op " %6, %6, %8, %9;\n\t" op " %7, %7, %8, %9;"                            \
               : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3), "+r"(x4), "+r"(x5), "+r"(x6), "+r"(x7) \
               : "r"(a), "r"(b))

// iters rounds of 8 independent 32-bit multiply-adds per thread: the
// integer multiply rate the field multiplications are built from. hi
// selects mad.hi.u32 (the high word) instead of mad.lo.u32.
extern "C" __global__ void __launch_bounds__(256) rate_imad(unsigned *v, unsigned iters, int hi) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned a = v[i] | 1, b = v[i ^ 1];
  unsigned x0 = a, x1 = b, x2 = a ^ 3, x3 = b ^ 5, x4 = a ^ 7, x5 = b ^ 9, x6 = a ^ 11, x7 = b ^ 13;
  if (hi)
    RATE_IMAD_ROUNDS("mad.hi.u32");
  else
    RATE_IMAD_ROUNDS("mad.lo.u32");
  v[i] = x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7;
}
