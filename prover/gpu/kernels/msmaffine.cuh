// msmaffine.cuh: the MSM's bucket sums by levels of pairwise affine
// additions whose slope denominators share one inversion per thread
// (Montgomery's trick), in place of XYZZ mixed additions (msm.cu's
// accumulate and merge). Plain templates over the coordinate field, host
// and device: msm.cu's part MSM_PART_AFFINE wraps them in kernels, and
// prover/gpu/internal/hostmsm compiles them with g++ to test them against
// gnark-crypto.
//
// After the counting sort a window's points are grouped by bucket: bucket
// b holds k_b points. One level turns every bucket of k points into one of
// ceil(k/2): output j of bucket b is input 2j + input 2j+1 (input 2j alone
// when k is odd and j is the last). msm_affine_scan_window (below) gives
// each bucket's output count and offset within its window and the
// window's total; a thread then takes the outputs [t·per, t·per + per) of
// its window (contiguous, so a heavy bucket spreads over many threads and
// a thread walks over many small buckets), keeps the running product of
// its denominators in its output slots' x (free until the sum is written;
// this forward walk reads only x coordinates where they decide the pair),
// inverts the product once and walks back: 3 multiplications per pair for
// the trick, 1 for the slope, 1 squaring and 1 multiplication for the sum,
// against 8M + 2S for a mixed XYZZ addition. Level 0 reads the points
// through the sorted entries (bases[index], negated when MSM_NEG_FLAG is
// set); later levels read the previous level's output. When no bucket has
// more than MSM_AFFINE_TAIL points left, msm_affine_finish_bucket sums
// each bucket's rest in XYZZ, as the window reduction wants it.
//
// Total: infinity ((0, 0)) on either side, P + P (a doubling, slope
// 3x²/2y) and P + (−P) (infinity, no denominator) are handled per pair.
#ifndef OTELCUZK_MSMAFFINE_CUH
#define OTELCUZK_MSMAFFINE_CUH

#include "ec.cuh"
#include "msm.cuh"

namespace msmaff {

typedef unsigned int u32;
typedef unsigned long long u64;

// The last b < n with off[b] <= x, for off non-decreasing and off[0] <= x:
// the bucket whose run of a prefix-summed layout holds position x.
EC_HD u32 last_at_or_below(const u32 *off, u32 n, u32 x) {
  u32 lo = 0, hi = n;  // off[lo] <= x < off[hi] (off[n] taken as past x)
  while (hi - lo > 1) {
    u32 mid = (lo + hi) >> 1;
    if (off[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// Where a level's input points come from: level 0 gathers the bases
// through the window's sorted entries; later levels read in.
template <class F>
struct source {
  const ec::affine_t<F> *bases;  // level 0
  const u32 *sorted;             // level 0: the window's entries; null after
  const ec::affine_t<F> *in;     // later levels: the window's points

  EC_HD ec::affine_t<F> at(u64 pos) const {
    if (sorted) {
      u32 e = sorted[pos];
      ec::affine_t<F> a = bases[e & ~MSM_NEG_FLAG];
      if (e & MSM_NEG_FLAG) a.y = F::neg(a.y);  // neg(0) = 0: infinity stays
      return a;
    }
    return in[pos];
  }

  // x_at is at(pos).x, reading only the x coordinate.
  EC_HD F x_at(u64 pos) const {
    if (sorted) return bases[sorted[pos] & ~MSM_NEG_FLAG].x;
    return in[pos].x;
  }
};

// scan_window computes, for the nb buckets of one window, the output
// count ocnt[b] = ceil(icnt[b]/2) and the exclusive prefix sums ooff, and
// returns the window's total. The device kernel does the same with a
// block of threads; this is the host's reference and the tests'.
EC_HD u32 scan_window(const u32 *icnt, u32 nb, u32 *ocnt, u32 *ooff) {
  u32 run = 0;
  for (u32 b = 0; b < nb; b++) {
    u32 k = (icnt[b] + 1) / 2;
    ocnt[b] = k;
    ooff[b] = run;
    run += k;
  }
  return run;
}

// level_thread computes the outputs [j0, j1) of one window's level (j1 ≤
// the window's total tot): for output j of bucket b (ooff[b] ≤ j <
// ooff[b] + ocnt[b], r = j − ooff[b]) the sum of inputs ioff[b] + 2r and
// ioff[b] + 2r + 1 (the latter only when 2r + 1 < icnt[b]) of src, written
// to out[j]. ooff, ocnt, icnt, ioff are the window's nb buckets.
template <class F>
EC_HD void level_thread(const source<F> &src, const u32 *icnt, const u32 *ioff, const u32 *ooff, u32 nb, u32 tot,
                        u32 j0, u32 j1, ec::affine_t<F> *out) {
  if (j0 >= j1) return;
  // The bucket of j0 (it is not empty: an empty bucket has the offset of
  // the next).
  u32 lo = last_at_or_below(ooff, nb, j0);
  ec::affine_t<F> inf;
  inf.x = F::zero();
  inf.y = F::zero();
  u32 b = lo;
  u32 bstart = ooff[b];
  u32 bend = b + 1 < nb ? ooff[b + 1] : tot;
  // Forward: out[j].x holds the product of the denominators before j.
  F acc = F::one();
  for (u32 j = j0; j < j1; j++) {
    while (j >= bend) {
      b++;
      bstart = bend;
      bend = b + 1 < nb ? ooff[b + 1] : tot;
    }
    u32 r = j - bstart;
    out[j].x = acc;
    if (2 * r + 1 >= icnt[b]) continue;  // a lone point: no denominator
    u64 pos = (u64)ioff[b] + 2 * (u64)r;
    // The x coordinates decide most pairs (distinct and neither 0, which
    // infinity's is): the y coordinates are read only when they do not.
    F px = src.x_at(pos), qx = src.x_at(pos + 1);
    F den;
    if (!F::eq(px, qx) && !F::is_zero(px) && !F::is_zero(qx)) {
      den = F::sub(qx, px);
    } else if (ec::affine_pair_kind(src.at(pos), src.at(pos + 1), den) < ec::PAIR_ADD) {
      continue;
    }
    acc = F::mul(acc, den);
  }
  F inv = F::inverse(acc);
  // Back, from j1 − 1 (bucket b) down to j0.
  for (u32 j = j1; j-- > j0;) {
    while (j < bstart) {
      b--;
      bstart = ooff[b];
    }
    u32 r = j - bstart;
    u64 pos = (u64)ioff[b] + 2 * (u64)r;
    ec::affine_t<F> p = src.at(pos);
    ec::affine_t<F> q = 2 * r + 1 < icnt[b] ? src.at(pos + 1) : inf;
    F den;
    int k = ec::affine_pair_kind(p, q, den);
    out[j] = ec::affine_pair_sum(k, p, q, den, out[j].x, inv);
  }
}

// finish_bucket sums the k points ioff .. ioff + k − 1 of src in XYZZ
// (mixed additions; k ≤ MSM_AFFINE_TAIL after the levels).
template <class F>
EC_HD ec::xyzz_t<F> finish_bucket(const source<F> &src, u32 ioff, u32 k) {
  ec::xyzz_t<F> acc = ec::xyzz_inf<F>();
  for (u32 i = 0; i < k; i++) acc = ec::xyzz_add_affine(acc, src.at((u64)ioff + i));
  return acc;
}

}  // namespace msmaff

#endif  // OTELCUZK_MSMAFFINE_CUH
