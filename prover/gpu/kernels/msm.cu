// msm.cu: Pippenger multi-scalar multiplication on G1 or G2 of BLS12-381
// (msm.cuh gives the method and its parameters). Compiled at run time by
// NVRTC through cudaspans (prover/gpu/msm), as several modules (Parts
// below). Kernels are extern "C" so their names are stable for
// cuModuleGetFunction and for the kernel spans.
//
// One source, two modules: compiled as it is, the point kernels work on G1
// (ec::g1_*, names as below); compiled with -DMSM_G2 they work on G2
// (ec::g2_*, names with the suffix _g2, e.g. msm_bucket_accumulate_g2).
// The scalar kernels (digits, scan, scatter) are the same in both.
//
// Device buffers of one MSM of n points with window c, W windows and
// B = 2^(c−1) buckets per window (all indices are 32-bit: n < 2^31):
//   scalars   n fr_t          gnark's Montgomery form in, canonical after
//                             msm_digits_count
//   bases     n affine        gnark's G1Affine or G2Affine, Montgomery form
//   counts    W·B u32         points per bucket
//   bucket_off W·B u32        start of each bucket in its window's run
//   cursor    W·B u32         scatter cursors (a copy of bucket_off)
//   seg_off   W·(B+1) u32     first segment of each bucket; [B] = total
//   sorted    W·n u32         point index | MSM_NEG_FLAG, grouped by bucket
//   partials  W·seg_cap xyzz  one sum per segment; after the merge passes
//                             the first segment of each bucket holds the
//                             bucket's sum
//   seg_bucket W·seg_cap u32  the bucket of each segment
//   parts     W·(B/m) xyzz    one value per reduction slice
//   wsums     W xyzz          one value per window, combined on the host
//                             (W·c doublings are microseconds on a CPU and
//                             milliseconds on one GPU thread)
// The field additions use ff.cuh's PTX carry-chain add and sub, as the NTT
// does: 224.5 -> 217.9 ms for a G1 MSM of 2^24 on an H200 (bench/msm.md).
#ifndef FF_PTX_ADDSUB
#define FF_PTX_ADDSUB 1
#endif
#include "ec.cuh"
#include "msm.cuh"
#include "msmaffine.cuh"

#ifdef MSM_G2
typedef ec::g2_affine msm_affine;
typedef ec::g2_xyzz msm_xyzz;
typedef ff::fp2_t msm_field;
#define MSM_POINT_KERNEL(name) name##_g2
#else
typedef ec::g1_affine msm_affine;
typedef ec::g1_xyzz msm_xyzz;
typedef ff::fp_t msm_field;
#define MSM_POINT_KERNEL(name) name
#endif

typedef unsigned int msm_u32;
typedef unsigned long long msm_u64;

// Parts. Compiled with -DMSM_PART=k, the module holds only part k's
// kernels, so the MSM compiles as several small modules in parallel
// (ptxas works on one module on one core; the G2 module as a whole took
// 71 s on the H200 host):
//   1 the scalar kernels: fill, digits, scan, scatter (the same for G1
//     and G2, compiled once)
//   2 accumulate   3 segment merge   4 bucket reduce   5 window sum
//   6 the affine bucket sums (msmaffine.cuh), in place of 2 and 3
// Without MSM_PART every kernel is built (one module, for experiments).
#define MSM_PART_SCALAR 1
#define MSM_PART_ACCUMULATE 2
#define MSM_PART_MERGE 3
#define MSM_PART_REDUCE 4
#define MSM_PART_WINDOW_SUM 5
#define MSM_PART_AFFINE 6
#ifdef MSM_PART
#define MSM_HAS(p) (MSM_PART == (p))
#else
#define MSM_HAS(p) 1
#endif

// The c-bit field of the canonical scalar s starting at bit lo (0 above
// bit 255).
__device__ __forceinline__ msm_u32 msm_bits(const msm_u64 s[4], msm_u32 lo, msm_u32 c) {
  msm_u32 limb = lo >> 6, sh = lo & 63;
  if (limb >= 4) return 0;
  msm_u64 v = s[limb] >> sh;
  if (sh + c > 64 && limb + 1 < 4) v |= s[limb + 1] << (64 - sh);
  return (msm_u32)(v & ((1ull << c) - 1));
}

// The signed digit of window w given the carry from window w−1; returns
// the digit's bucket + 1 (0 for digit 0) and sets neg and carry.
__device__ __forceinline__ msm_u32 msm_digit(const msm_u64 s[4], msm_u32 w, msm_u32 c, msm_u32 &carry,
                                             bool &neg) {
  msm_u32 d = msm_bits(s, w * c, c) + carry;
  msm_u32 half = 1u << (c - 1);
  if (d > half) {  // d − 2^c < 0: negative digit, carry into the next window
    carry = 1;
    neg = true;
    return (1u << c) - d;
  }
  carry = 0;
  neg = false;
  return d;
}

// Calls visit(w, key, neg, peers) for each window w < nwin of the
// canonical scalar s, in order (the carry runs from window to window):
// key is the bucket of w's signed digit (w·2^(c−1) + |digit| − 1, or
// MSM_NO_BUCKET for digit 0), neg its sign, and peers the lanes of the
// warp with the same key (__match_any_sync: every lane of the warp calls
// this for the same nwin). The digit count and the scatter walk the digits
// through it, so they agree on every bucket's size. (Visitors are structs,
// not lambdas: NVRTC before CUDA 12 parses these modules as C++03.)
template <class Visit>
__device__ __forceinline__ void msm_each_digit(const ff::fr_t &s, msm_u32 c, msm_u32 nwin, Visit &visit) {
  msm_u32 nb = 1u << (c - 1);
  msm_u32 carry = 0;
  for (msm_u32 w = 0; w < nwin; w++) {
    bool neg;
    msm_u32 d = msm_digit(s.limb, w, c, carry, neg);
    msm_u32 key = d ? w * nb + d - 1 : MSM_NO_BUCKET;
    visit(w, key, neg, __match_any_sync(__activemask(), key));
  }
}

// msm_digits_count's visitor: one count per non-zero digit. Lanes with
// the same bucket add once (all scalars equal would otherwise serialise n
// atomics on one address).
struct msm_count_digit {
  msm_u32 *counts;
  msm_u32 lane;
  __device__ __forceinline__ void operator()(msm_u32, msm_u32 key, bool, msm_u32 peers) {
    if (key != MSM_NO_BUCKET && lane == (msm_u32)(__ffs(peers) - 1)) atomicAdd(&counts[key], (msm_u32)__popc(peers));
  }
};

// msm_scatter's visitor: the leader of each group of peers takes their
// places in the bucket (one atomic), each lane writes its point's index
// (with MSM_NEG_FLAG for a negative digit) at its own place.
struct msm_scatter_digit {
  msm_u32 *cursor, *sorted;
  msm_u32 n, i, lane;
  __device__ __forceinline__ void operator()(msm_u32 w, msm_u32 key, bool neg, msm_u32 peers) {
    msm_u32 leader = (msm_u32)(__ffs(peers) - 1);
    msm_u32 pos = 0;
    if (key != MSM_NO_BUCKET && lane == leader) pos = atomicAdd(&cursor[key], (msm_u32)__popc(peers));
    pos = __shfl_sync(peers, pos, leader);
    if (key == MSM_NO_BUCKET) return;
    pos += __popc(peers & ((1u << lane) - 1));
    sorted[(msm_u64)w * n + pos] = i | (neg ? MSM_NEG_FLAG : 0u);
  }
};

#if MSM_HAS(MSM_PART_SCALAR)
// Window blockIdx.x's nb counts in a (window-major), and the buckets
// [b0, b1) of them that thread threadIdx.x of a scan block
// (MSM_SCAN_THREADS) sums: consecutive runs of equal length.
__device__ __forceinline__ const msm_u32 *msm_scan_run(const msm_u32 *a, msm_u32 nb, msm_u32 &b0, msm_u32 &b1) {
  msm_u32 per = (nb + MSM_SCAN_THREADS - 1) / MSM_SCAN_THREADS;
  b0 = threadIdx.x * per;
  b1 = min(b0 + per, nb);
  return a + (msm_u64)blockIdx.x * nb;
}

// Hillis-Steele inclusive scan over the block: thread t's x (and y, when
// sy is not null) into sx[t] (sy[t]), each the sum over threads 0..t.
// Every thread of the block (MSM_SCAN_THREADS) calls it; the two arrays
// share the barriers.
__device__ __forceinline__ void msm_block_scan(msm_u32 *sx, msm_u32 *sy, msm_u32 x, msm_u32 y) {
  msm_u32 t = threadIdx.x;
  sx[t] = x;
  if (sy) sy[t] = y;
  __syncthreads();
  for (msm_u32 off = 1; off < MSM_SCAN_THREADS; off <<= 1) {
    msm_u32 a = t >= off ? sx[t - off] : 0;
    msm_u32 b = sy && t >= off ? sy[t - off] : 0;
    __syncthreads();
    sx[t] += a;
    if (sy) sy[t] += b;
    __syncthreads();
  }
}

extern "C" __global__ void msm_fill_u32(msm_u32 *p, msm_u32 v, msm_u32 n) {
  msm_u32 i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}

// Montgomery to canonical (on the GPU, so the host never touches the
// scalars), then one count per non-zero digit. counts must be zero.
extern "C" __global__ void msm_digits_count(ff::fr_t *scalars, msm_u32 n, msm_u32 c, msm_u32 nwin,
                                            msm_u32 *counts) {
  msm_u32 i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  ff::fr_t s = ff::fr_t::from_mont(scalars[i]);
  scalars[i] = s;
  msm_count_digit visit = {counts, threadIdx.x & 31};
  msm_each_digit(s, c, nwin, visit);
}

// Exclusive prefix sums of the bucket counts and of the segments per
// bucket, one block of MSM_SCAN_THREADS threads per window (blockIdx.x).
extern "C" __global__ void msm_bucket_scan(const msm_u32 *counts, msm_u32 nb, msm_u32 *bucket_off,
                                           msm_u32 *cursor, msm_u32 *seg_off) {
  __shared__ msm_u32 sc[MSM_SCAN_THREADS], ss[MSM_SCAN_THREADS];
  msm_u32 w = blockIdx.x, t = threadIdx.x, b0, b1;
  const msm_u32 *cnt = msm_scan_run(counts, nb, b0, b1);
  msm_u32 csum = 0, ssum = 0;
  for (msm_u32 b = b0; b < b1; b++) {
    msm_u32 k = cnt[b];
    csum += k;
    ssum += (k + MSM_SEGMENT - 1) / MSM_SEGMENT;
  }
  msm_block_scan(sc, ss, csum, ssum);
  msm_u32 crun = sc[t] - csum, srun = ss[t] - ssum;
  msm_u32 *bo = bucket_off + (msm_u64)w * nb, *cu = cursor + (msm_u64)w * nb;
  msm_u32 *so = seg_off + (msm_u64)w * (nb + 1);
  for (msm_u32 b = b0; b < b1; b++) {
    msm_u32 k = cnt[b];
    bo[b] = crun;
    cu[b] = crun;
    so[b] = srun;
    crun += k;
    srun += (k + MSM_SEGMENT - 1) / MSM_SEGMENT;
  }
  if (t == MSM_SCAN_THREADS - 1) so[nb] = ss[t];
}

// Counting sort, second pass: each (point, sign) goes to its bucket's next
// free slot. The order inside a bucket depends on the scheduling; the sum
// does not.
extern "C" __global__ void msm_scatter(const ff::fr_t *scalars, msm_u32 n, msm_u32 c, msm_u32 nwin,
                                       msm_u32 *cursor, msm_u32 *sorted) {
  msm_u32 i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  msm_scatter_digit visit = {cursor, sorted, n, i, threadIdx.x & 31};
  msm_each_digit(scalars[i], c, nwin, visit);
}

// One level of the affine bucket sums (msmaffine.cuh), its counts: for
// each bucket of window blockIdx.x, ocnt = ceil(icnt/2) and ooff their
// exclusive prefix sums in the window; otot[w] the window's total. With
// maxcnt not null, the largest icnt of all windows is atomicMax'ed into
// *maxcnt (the host picks the number of levels from it). One block of
// MSM_SCAN_THREADS threads per window.
extern "C" __global__ void msm_affine_scan(const msm_u32 *icnt, msm_u32 nb, msm_u32 *ocnt, msm_u32 *ooff,
                                           msm_u32 *otot, msm_u32 *maxcnt) {
  __shared__ msm_u32 sc[MSM_SCAN_THREADS];
  msm_u32 w = blockIdx.x, t = threadIdx.x, b0, b1;
  const msm_u32 *ic = msm_scan_run(icnt, nb, b0, b1);
  msm_u32 sum = 0, top = 0;
  for (msm_u32 b = b0; b < b1; b++) {
    msm_u32 k = ic[b];
    sum += (k + 1) / 2;
    top = max(top, k);
  }
  if (maxcnt) {
    // The warp's largest, then one atomic per warp.
    for (int off = 16; off > 0; off >>= 1) top = max(top, __shfl_down_sync(0xffffffffu, top, off));
    if ((t & 31) == 0 && top) atomicMax(maxcnt, top);
  }
  msm_block_scan(sc, (msm_u32 *)0, sum, 0);
  msm_u32 run = sc[t] - sum;
  msm_u32 *oc = ocnt + (msm_u64)w * nb, *oo = ooff + (msm_u64)w * nb;
  for (msm_u32 b = b0; b < b1; b++) {
    msm_u32 k = (ic[b] + 1) / 2;
    oc[b] = k;
    oo[b] = run;
    run += k;
  }
  if (t == MSM_SCAN_THREADS - 1) otot[w] = sc[t];
}
#endif  // MSM_PART_SCALAR

// Variants of the accumulation for experiments (bench/msmbench -variants);
// the defaults are what bench/msm.md measured.
//   MSM_ACCUM_MIN_BLOCKS  blocks of 128 threads per SM to ask ptxas for
//                         (fewer registers, more warps in flight)
//   MSM_ACCUM_CALL        call xyzz_add_affine instead of inlining it
//                         (the default for G2, whose inlined addition
//                         holds thirty Fp multiplications; MSM_ACCUM_INLINE
//                         inlines it there too)
#if defined(MSM_G2) && !defined(MSM_ACCUM_INLINE) && !defined(MSM_ACCUM_CALL)
#define MSM_ACCUM_CALL
#endif
#ifdef MSM_ACCUM_MIN_BLOCKS
#define MSM_ACCUM_BOUNDS __launch_bounds__(128, MSM_ACCUM_MIN_BLOCKS)
#else
#define MSM_ACCUM_BOUNDS __launch_bounds__(128)
#endif

#if MSM_HAS(MSM_PART_ACCUMULATE)
// One thread per segment (blockIdx.y is the window): the sum of at most
// MSM_SEGMENT points of one bucket, in XYZZ, written to partials.
extern "C" __global__ void MSM_ACCUM_BOUNDS MSM_POINT_KERNEL(msm_bucket_accumulate)(
    const msm_affine *bases, const msm_u32 *sorted, const msm_u32 *counts, const msm_u32 *bucket_off,
    const msm_u32 *seg_off, msm_u32 n, msm_u32 nb, msm_u32 seg_cap, msm_xyzz *partials,
    msm_u32 *seg_bucket) {
  msm_u32 w = blockIdx.y;
  msm_u32 idx = blockIdx.x * blockDim.x + threadIdx.x;
  const msm_u32 *so = seg_off + (msm_u64)w * (nb + 1);
  if (idx >= so[nb]) return;
  // The bucket whose segments contain idx.
  msm_u32 b = msmaff::last_at_or_below(so, nb, idx);
  msm_u32 s = idx - so[b];
  msm_u32 base = bucket_off[(msm_u64)w * nb + b];
  msm_u32 end = base + counts[(msm_u64)w * nb + b];
  msm_u32 start = base + s * MSM_SEGMENT;
  if (start + MSM_SEGMENT < end) end = start + MSM_SEGMENT;
  const msm_u32 *run = sorted + (msm_u64)w * n;
  msm_xyzz acc = ec::xyzz_inf<msm_field>();
  for (msm_u32 k = start; k < end; k++) {
    msm_u32 e = run[k];
    msm_affine a = bases[e & ~MSM_NEG_FLAG];
    if (e & MSM_NEG_FLAG) a.y = msm_field::neg(a.y);
#ifdef MSM_ACCUM_CALL
    acc = ec::xyzz_add_affine(acc, a);
#else
    acc = ec::xyzz_add_affine_inline(acc, a);
#endif
  }
  partials[(msm_u64)w * seg_cap + idx] = acc;
  seg_bucket[(msm_u64)w * seg_cap + idx] = b;
}
#endif  // MSM_PART_ACCUMULATE

#if MSM_HAS(MSM_PART_MERGE)
// One pass of the pairwise sum of each bucket's segments: segment r of a
// bucket (counted from the bucket's first) with r ≡ 0 mod 2·stride takes
// in segment r + stride. After passes with stride 1, 2, 4, ... up to the
// longest bucket's segment count, each bucket's first segment holds its
// sum, in log depth however uneven the buckets are.
extern "C" __global__ void __launch_bounds__(128) MSM_POINT_KERNEL(msm_segment_merge)(msm_xyzz *partials,
                                                                    const msm_u32 *seg_bucket,
                                                                    const msm_u32 *seg_off, msm_u32 nb,
                                                                    msm_u32 seg_cap, msm_u32 stride) {
  msm_u32 w = blockIdx.y;
  msm_u32 idx = blockIdx.x * blockDim.x + threadIdx.x;
  const msm_u32 *so = seg_off + (msm_u64)w * (nb + 1);
  if (idx >= so[nb]) return;
  msm_u32 b = seg_bucket[(msm_u64)w * seg_cap + idx];
  msm_u32 r = idx - so[b], nseg = so[b + 1] - so[b];
  if (r % (2 * stride) != 0 || r + stride >= nseg) return;
  msm_xyzz *pw = partials + (msm_u64)w * seg_cap;
  pw[idx] = ec::xyzz_add(pw[idx], pw[idx + stride]);
}
#endif  // MSM_PART_MERGE

#if MSM_HAS(MSM_PART_REDUCE)
// Window reduction, one thread per slice of m buckets (blockIdx.y is the
// window). With buckets j·m + t, t < m:
//   Σ_t (j·m + t + 1)·B_t = [Σ_t (t+1)·B_t] + j·m·[Σ_t B_t],
// the first term by the running-sum trick from the top bucket down, the
// second by a short double-and-add. parts gets one value per slice.
extern "C" __global__ void __launch_bounds__(128) MSM_POINT_KERNEL(msm_bucket_reduce)(const msm_xyzz *partials,
                                                                    const msm_u32 *seg_off, msm_u32 nb,
                                                                    msm_u32 m, msm_u32 seg_cap,
                                                                    msm_xyzz *parts) {
  msm_u32 w = blockIdx.y;
  msm_u32 nslices = nb / m;
  msm_u32 j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= nslices) return;
  const msm_u32 *so = seg_off + (msm_u64)w * (nb + 1);
  const msm_xyzz *pw = partials + (msm_u64)w * seg_cap;
  msm_xyzz running = ec::xyzz_inf<msm_field>(), total = ec::xyzz_inf<msm_field>();
  for (int t = (int)m - 1; t >= 0; t--) {
    msm_u32 b = j * m + (msm_u32)t;
    if (so[b] < so[b + 1]) running = ec::xyzz_add(running, pw[so[b]]);
    total = ec::xyzz_add(total, running);
  }
  if (j != 0) total = ec::xyzz_add(total, ec::xyzz_mul_u32(running, j * m));
  parts[(msm_u64)w * nslices + j] = total;
}
#endif  // MSM_PART_REDUCE

#if MSM_HAS(MSM_PART_WINDOW_SUM)
// Σ of a window's slice values: one block of MSM_WINDOW_SUM_THREADS per
// window, strided sums then a tree in shared memory.
extern "C" __global__ void __launch_bounds__(MSM_WINDOW_SUM_THREADS)
    MSM_POINT_KERNEL(msm_window_sum)(const msm_xyzz *parts, msm_u32 nslices, msm_xyzz *wsums) {
  __shared__ msm_xyzz sh[MSM_WINDOW_SUM_THREADS];
  msm_u32 w = blockIdx.x, t = threadIdx.x;
  msm_xyzz acc = ec::xyzz_inf<msm_field>();
  for (msm_u32 j = t; j < nslices; j += MSM_WINDOW_SUM_THREADS)
    acc = ec::xyzz_add(acc, parts[(msm_u64)w * nslices + j]);
  sh[t] = acc;
  __syncthreads();
  for (msm_u32 half = MSM_WINDOW_SUM_THREADS / 2; half > 0; half >>= 1) {
    if (t < half) sh[t] = ec::xyzz_add(sh[t], sh[t + half]);
    __syncthreads();
  }
  if (t == 0) wsums[w] = sh[0];
}
#endif  // MSM_PART_WINDOW_SUM

#if MSM_HAS(MSM_PART_AFFINE)
// MSM_AFFINE_MIN_BLOCKS (a variant, bench/msmbench): blocks of 128 threads
// per SM to ask ptxas for in the level kernel.
#ifdef MSM_AFFINE_MIN_BLOCKS
#define MSM_AFFINE_BOUNDS __launch_bounds__(128, MSM_AFFINE_MIN_BLOCKS)
#else
#define MSM_AFFINE_BOUNDS __launch_bounds__(128)
#endif

// One level of the affine bucket sums (msmaffine.cuh) over window
// blockIdx.y: thread t computes the window's outputs [t·per, t·per + per)
// below otot[w] into out + w·out_stride. Level 0 (sorted not null) reads
// the bases through the window's sorted entries (sorted + w·n); later
// levels read in + w·in_stride. icnt, ioff, ooff: W·nb per bucket.
extern "C" __global__ void MSM_AFFINE_BOUNDS MSM_POINT_KERNEL(msm_affine_level)(
    const msm_affine *bases, const msm_u32 *sorted, msm_u32 n, const msm_affine *in, msm_u64 in_stride,
    const msm_u32 *icnt, const msm_u32 *ioff, const msm_u32 *ooff, const msm_u32 *otot, msm_u32 nb, msm_u32 per,
    msm_affine *out, msm_u64 out_stride) {
  msm_u32 w = blockIdx.y;
  msm_u64 t = (msm_u64)blockIdx.x * blockDim.x + threadIdx.x;
  msm_u32 tot = otot[w];
  if (t * per >= tot) return;
  msm_u32 j0 = (msm_u32)(t * per);
  msm_u32 j1 = min(j0 + per, tot);
  msmaff::source<msm_field> src;
  src.bases = bases;
  src.sorted = sorted ? sorted + (msm_u64)w * n : 0;
  src.in = in ? in + (msm_u64)w * in_stride : 0;
  msm_u64 wb = (msm_u64)w * nb;
  msmaff::level_thread<msm_field>(src, icnt + wb, ioff + wb, ooff + wb, nb, tot, j0, j1, out + (msm_u64)w * out_stride);
}

// After the levels: bucket blockIdx.x·blockDim.x + threadIdx.x of window
// blockIdx.y, its icnt points (at most MSM_AFFINE_TAIL) summed in XYZZ
// into the bucket's first segment of partials (where msm_bucket_reduce
// reads it). Sources as msm_affine_level's.
extern "C" __global__ void __launch_bounds__(128) MSM_POINT_KERNEL(msm_affine_finish)(
    const msm_affine *bases, const msm_u32 *sorted, msm_u32 n, const msm_affine *in, msm_u64 in_stride,
    const msm_u32 *icnt, const msm_u32 *ioff, const msm_u32 *seg_off, msm_u32 nb, msm_u32 seg_cap,
    msm_xyzz *partials) {
  msm_u32 w = blockIdx.y;
  msm_u32 b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= nb) return;
  msm_u64 wb = (msm_u64)w * nb;
  msm_u32 k = icnt[wb + b];
  if (k == 0) return;
  msmaff::source<msm_field> src;
  src.bases = bases;
  src.sorted = sorted ? sorted + (msm_u64)w * n : 0;
  src.in = in ? in + (msm_u64)w * in_stride : 0;
  const msm_u32 *so = seg_off + (msm_u64)w * (nb + 1);
  partials[(msm_u64)w * seg_cap + so[b]] = msmaff::finish_bucket<msm_field>(src, ioff[wb + b], k);
}
#endif  // MSM_PART_AFFINE
