// fixedbase.cu: the fixed-base scalar multiplications of a Groth16 key
// setup on G1 or G2 (fixedbase.cuh gives the method), compiled at run time
// by NVRTC through cudaspans (prover/gpu/fixedbase). As it is, the kernels
// work on G1; with -DFB_G2 on G2 (names with the suffix _g2).
//
// Device buffers of one pass of n scalars:
//   scalars  n fr_t      gnark's Montgomery form
//   table    windows(c)·2^(c−1) affine, the generator's (built on the host)
//   sums     n xyzz      [sᵢ]G before the affine conversion
//   out      n affine    gnark's G1Affine or G2Affine, byte for byte
#ifndef FF_PTX_ADDSUB
#define FF_PTX_ADDSUB 1
#endif
#include "fixedbase.cuh"

#ifdef FB_G2
typedef ec::g2_affine fb_affine;
typedef ec::g2_xyzz fb_xyzz;
typedef ff::fp2_t fb_field;
#define FB_INLINE_ADD false
#define FB_KERNEL(name) name##_g2
#else
typedef ec::g1_affine fb_affine;
typedef ec::g1_xyzz fb_xyzz;
typedef ff::fp_t fb_field;
#define FB_INLINE_ADD true
#define FB_KERNEL(name) name
#endif

// One thread per scalar: sums[i] = [scalars[i]]G.
extern "C" __global__ void FB_KERNEL(fb_scalar_mul)(const ff::fr_t *scalars, unsigned n, const fb_affine *table,
                                                    unsigned c, fb_xyzz *sums) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  ff::fr_t s = ff::fr_t::from_mont(scalars[i]);
  sums[i] = fb::scalar_mul<fb_field, FB_INLINE_ADD>(s, table, c);
}

// One thread per run of group (≤ FB_MAX_GROUP) sums: their affine form
// with one inversion.
extern "C" __global__ void FB_KERNEL(fb_batch_affine)(const fb_xyzz *sums, unsigned n, unsigned group,
                                                      fb_affine *out) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned start = g * group;
  if (start >= n) return;
  unsigned len = n - start < group ? n - start : group;
  fb::batch_affine<fb_field>(sums + start, len, out + start);
}
