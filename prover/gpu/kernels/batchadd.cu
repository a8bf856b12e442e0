// batchadd.cu: one level of the batch addition of batchadd.cuh on the
// GPU, for G1 (batch_add_level) or, compiled with -DBATCH_G2, for G2
// (batch_add_level_g2). The host (prover/gpu/msm, batchadd.go) runs the
// levels: the first gathers the bases of the chosen wires through their
// indices, each later one halves the previous output, ping-ponging between
// two device buffers, until few enough points are left to add on the host.
//
// Thread t of the grid takes the pairs t, t + T, t + 2T, ... (T threads in
// all), so neighbouring threads read neighbouring points and each thread's
// batch shares one inversion.
#ifndef FF_PTX_ADDSUB
#define FF_PTX_ADDSUB 1
#endif
#include "batchadd.cuh"

#ifdef BATCH_G2
typedef ec::g2_affine batch_affine;
typedef ff::fp2_t batch_field;
#define BATCH_KERNEL(name) name##_g2
#else
typedef ec::g1_affine batch_affine;
typedef ff::fp_t batch_field;
#define BATCH_KERNEL(name) name
#endif

// in: m points (or the bases that idx, when not null, picks m of); out:
// (m+1)/2 points. The grid's threads share the pairs as above.
extern "C" __global__ void __launch_bounds__(128)
    BATCH_KERNEL(batch_add_level)(const batch_affine *in, const unsigned *idx, long long m, batch_affine *out) {
  long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  ec::batch_add_pairs<batch_field>(in, idx, (long)m, out, (long)t, (long)stride);
}
