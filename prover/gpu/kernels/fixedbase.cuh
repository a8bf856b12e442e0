// fixedbase.cuh: fixed-base scalar multiplication [s]G for a generator G
// known in advance (Groth16's key setup: every key vector is the
// generator times a vector of scalars), in G1 or G2, for CUDA kernels
// (fixedbase.cu) and for plain C++ on the host (the hostfixedbase package
// compiles this header with g++ and tests it against gnark-crypto).
//
// Method: the fixed-base windowed method with signed digits (Brickell,
// Gordon, McCurley, Wilson, "Fast exponentiation with precomputation",
// EUROCRYPT 1992; signed digits as in Pippenger's MSM, msm.cuh). A scalar
// s < r < 2^255 is written as Σ dᵥ·2^(c·w) over W = ⌊255/c⌋ + 1 windows
// with digits dᵥ in [−2^(c−1), 2^(c−1)]; the table holds
// T[w][k−1] = k·2^(c·w)·G for k = 1 … 2^(c−1), so [s]G = Σ ±T[w][|dᵥ|−1]:
// W mixed additions and no doubling. The top window holds 255 mod c < c
// bits, so its digit plus a carry stays ≤ 2^(c−1) and never carries out.
//
// The sums are XYZZ (ec.cuh); fb_batch_affine turns a run of them into
// gnark-crypto's affine points with one field inversion for the run
// (Montgomery's trick over ZZZ; x = X/ZZ and 1/ZZ = (ZZ/ZZZ)², since
// ZZ³ = ZZZ²). Infinity (s = 0) is (0, 0), as gnark-crypto writes it.
#ifndef OTELCUZK_FIXEDBASE_CUH
#define OTELCUZK_FIXEDBASE_CUH

#include "ec.cuh"

namespace fb {

// FB_MAX_GROUP bounds the run length of fb_batch_affine (its prefix
// products live in the caller's thread).
#ifndef FB_MAX_GROUP
#define FB_MAX_GROUP 32
#endif

// The number of c-bit windows of a scalar below 2^255.
EC_HD unsigned windows(unsigned c) { return 255 / c + 1; }

// Bits [c·w, c·w + c) of the canonical scalar s (4 little-endian limbs).
EC_HD unsigned window_bits(const ff::fr_t &s, unsigned w, unsigned c) {
  unsigned bit = w * c;
  unsigned limb = bit / 64, sh = bit % 64;
  if (limb >= 4) return 0;
  unsigned long long v = s.limb[limb] >> sh;
  if (sh + c > 64 && limb + 1 < 4) v |= s.limb[limb + 1] << (64 - sh);
  return (unsigned)(v & ((1ull << c) - 1));
}

// [s]G for the canonical (not Montgomery) scalar s, from the table of G
// for window c (windows(c)·2^(c−1) affine points, T[w·2^(c−1) + k − 1] =
// k·2^(c·w)·G). inline_add picks ec.cuh's inlined mixed addition (G1)
// over the called one (G2, whose inlined copy makes the compile slow).
template <class F, bool inline_add>
EC_HD ec::xyzz_t<F> scalar_mul(const ff::fr_t &s, const ec::affine_t<F> *table, unsigned c) {
  const unsigned half = 1u << (c - 1), W = windows(c);
  ec::xyzz_t<F> acc = ec::xyzz_inf<F>();
  unsigned carry = 0;
  for (unsigned w = 0; w < W; w++) {
    unsigned d = window_bits(s, w, c) + carry;
    bool neg = false;
    carry = 0;
    if (d > half) {  // d − 2^c < 0: subtract, borrow 1 from the next window
      d = (1u << c) - d;
      neg = true;
      carry = 1;
    }
    if (d == 0) continue;
    ec::affine_t<F> p = table[w * half + d - 1];
    if (neg) p = ec::affine_neg(p);
    if (inline_add)
      acc = ec::xyzz_add_affine_inline(acc, p);
    else
      acc = ec::xyzz_add_affine(acc, p);
  }
  return acc;
}

// out[i] = in[i] in affine form for i < n (n ≤ FB_MAX_GROUP), with one
// inversion: the prefix products of the ZZZ of the finite points, the
// inverse of their product, then a backward walk.
template <class F>
EC_HD void batch_affine(const ec::xyzz_t<F> *in, unsigned n, ec::affine_t<F> *out) {
  F prefix[FB_MAX_GROUP];
  F acc = F::one();
  for (unsigned k = 0; k < n; k++) {
    prefix[k] = acc;
    if (!ec::xyzz_is_inf(in[k])) acc = F::mul(acc, in[k].ZZZ);
  }
  F inv = F::inverse(acc);
  for (unsigned k = n; k-- > 0;) {
    const ec::xyzz_t<F> p = in[k];
    if (ec::xyzz_is_inf(p)) {
      out[k].x = F::zero();
      out[k].y = F::zero();
      continue;
    }
    F zzzInv = F::mul(inv, prefix[k]);
    inv = F::mul(inv, p.ZZZ);
    F zzInv = F::sqr(F::mul(p.ZZ, zzzInv));
    out[k].x = F::mul(p.X, zzInv);
    out[k].y = F::mul(p.Y, zzzInv);
  }
}

}  // namespace fb

#endif  // OTELCUZK_FIXEDBASE_CUH
