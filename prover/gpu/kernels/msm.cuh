// msm.cuh: the parameters shared by the Pippenger MSM kernels (msm.cu) and
// their host (prover/gpu/msm/msm.go). Plain C, no device
// code, so both nvcc/NVRTC and a host compiler read it.
//
// Pippenger's bucket method (Pippenger 1976; Bernstein et al., "Faster batch
// forgery identification", 2012, for signed digits) over N points:
//   1. each canonical scalar is cut into W = ceil(256 / c) signed c-bit
//      digits d in [−2^(c−1)+1, 2^(c−1)]; digit d ≠ 0 puts ±P into bucket
//      |d| − 1 of its window, so a window has B = 2^(c−1) buckets;
//   2. the (point, sign) pairs of each window are counting-sorted by bucket;
//   3. each bucket is summed in XYZZ coordinates, a long bucket split into
//      segments of at most MSM_SEGMENT points that run in parallel, the
//      segments then added pairwise in log passes (or, as an option, by
//      levels of batched affine additions: msmaffine.cuh);
//   4. each window is reduced, Σ_b (b+1)·bucket_b, by running sums over
//      slices of MSM_REDUCE_SLICE buckets in parallel;
//   5. windows are combined, Σ_w 2^(c·w)·window_w (Horner), on the host.
#ifndef OTELCUZK_MSM_CUH
#define OTELCUZK_MSM_CUH

// Points per accumulation segment: a bucket of k points becomes
// ceil(k/MSM_SEGMENT) threads, so one heavy bucket (all scalars equal)
// still spreads over the GPU.
#define MSM_SEGMENT 128

// Buckets per thread of the window reduction (at most; fewer when the
// window has fewer than 1024·MSM_REDUCE_SLICE buckets).
#define MSM_REDUCE_SLICE 32

// Threads per block of the window sum (a power of two).
#define MSM_WINDOW_SUM_THREADS 128

// Threads per block of the scan (one block per window).
#define MSM_SCAN_THREADS 1024

// The affine bucket sums (msmaffine.cuh) stop halving the buckets when
// none holds more than this many points; the rest is summed in XYZZ.
#define MSM_AFFINE_TAIL 16

// The key of a zero digit (no bucket).
#define MSM_NO_BUCKET 0xffffffffu

// The flag that marks a negated point in a sorted entry (point index in
// the low 31 bits).
#define MSM_NEG_FLAG 0x80000000u

#endif  // OTELCUZK_MSM_CUH
