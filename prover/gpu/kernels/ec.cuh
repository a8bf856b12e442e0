// ec.cuh: the groups G1 (y² = x³ + 4 over Fp) and G2 (the twist
// y² = x³ + 4(1 + u) over Fp2) of BLS12-381, for CUDA kernels (nvcc and
// NVRTC) and for plain C++ on the host (the hostec package
// compiles this same header with g++ and test it against gnark-crypto's
// G1Jac and G2Jac).
//
// The point code is written once, as templates over the coordinate field F
// (ff::fp_t for G1, ff::fp2_t for G2); the formulas hold over any field.
// Three representations, all in Montgomery form:
//   affine_t<F>  (x, y): gnark-crypto's G1Affine (96 bytes) or G2Affine
//                (192 bytes) byte for byte, so a []G1Affine or []G2Affine
//                uploads without a conversion pass. The point at infinity
//                is (0, 0), as in gnark-crypto; (0, 0) is on neither curve
//                (0 ≠ b), so the encoding is unambiguous.
//   jac_t<F>     (X, Y, Z): gnark-crypto's G1Jac / G2Jac (x = X/Z²,
//                y = Y/Z³); infinity has Z = 0.
//   xyzz_t<F>    (X, Y, ZZ, ZZZ): extended Jacobian coordinates with
//                x = X/ZZ, y = Y/ZZZ and ZZ³ = ZZZ²; infinity has ZZ = 0
//                (gnark-crypto's g1JacExtended / g2JacExtended). Pippenger's
//                bucket sums live in this form: a mixed addition costs
//                8M + 2S and needs no Z² or Z³ of its own.
// g1_affine, g1_jac, g1_xyzz and g2_affine, g2_jac, g2_xyzz name them.
//
// Formulas: Explicit-Formulas Database, "Short Weierstrass curves,
// XYZZ coordinates" (Sutherland 2008; add-2008-s, madd-2008-s, dbl-2008-s-1,
// mdbl-2008-s-1), with a = 0. Those formulas are incomplete: adding P to P
// or to −P divides by zero. The functions below test for both cases and for
// infinity on either side, so every function is total.
#ifndef OTELCUZK_EC_CUH
#define OTELCUZK_EC_CUH

#include "ff.cuh"
#include "fp2.cuh"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define EC_HD __host__ __device__ __forceinline__
// The point additions and doublings are called, not inlined, on the device
// unless EC_INLINE_ALL is defined: each holds ten or more inlined field
// multiplications (thirty Fp multiplications for G2), and one copy per call
// site made NVRTC and ptxas take minutes over msm.cu.
#ifdef EC_INLINE_ALL
#define EC_HD_CALL __host__ __device__ __forceinline__
#else
#define EC_HD_CALL static __host__ __device__ __noinline__
#endif
#else
#define EC_HD inline
#define EC_HD_CALL inline
#endif

namespace ec {

typedef ff::fp_t fp_t;
typedef ff::fp2_t fp2_t;

template <class F>
struct affine_t {
  F x, y;
};

template <class F>
struct jac_t {
  F X, Y, Z;
};

template <class F>
struct xyzz_t {
  F X, Y, ZZ, ZZZ;
};

typedef affine_t<fp_t> g1_affine;
typedef jac_t<fp_t> g1_jac;
typedef xyzz_t<fp_t> g1_xyzz;
typedef affine_t<fp2_t> g2_affine;
typedef jac_t<fp2_t> g2_jac;
typedef xyzz_t<fp2_t> g2_xyzz;

// The curve's constant b: 4 for G1, the twist's 4(1 + u) for G2.
template <class F>
EC_HD F curve_b();
template <>
EC_HD fp_t curve_b<fp_t>() {
  return fp_t::dbl(fp_t::dbl(fp_t::one()));
}
template <>
EC_HD fp2_t curve_b<fp2_t>() {
  fp_t four = fp_t::dbl(fp_t::dbl(fp_t::one()));
  return fp2_t::make(four, four);
}

template <class F>
EC_HD bool affine_is_inf(const affine_t<F> &p) {
  return F::is_zero(p.x) && F::is_zero(p.y);
}

// Whether y² = x³ + b; infinity, (0, 0), counts as on the curve, as in
// gnark-crypto's IsOnCurve. This says nothing of the subgroup.
template <class F>
EC_HD bool affine_is_on_curve(const affine_t<F> &p) {
  if (affine_is_inf(p)) return true;
  F rhs = F::add(F::mul(F::sqr(p.x), p.x), curve_b<F>());
  return F::eq(F::sqr(p.y), rhs);
}

template <class F>
EC_HD affine_t<F> affine_neg(const affine_t<F> &p) {
  affine_t<F> r;
  r.x = p.x;
  r.y = F::neg(p.y);  // neg(0) = 0 keeps (0, 0) at infinity
  return r;
}

template <class F>
EC_HD xyzz_t<F> xyzz_inf() {
  xyzz_t<F> r;
  r.X = F::one();
  r.Y = F::one();
  r.ZZ = F::zero();
  r.ZZZ = F::zero();
  return r;
}

template <class F>
EC_HD bool xyzz_is_inf(const xyzz_t<F> &p) {
  return F::is_zero(p.ZZ);
}

template <class F>
EC_HD xyzz_t<F> xyzz_from_affine(const affine_t<F> &a) {
  if (affine_is_inf(a)) return xyzz_inf<F>();
  xyzz_t<F> r;
  r.X = a.x;
  r.Y = a.y;
  r.ZZ = F::one();
  r.ZZZ = F::one();
  return r;
}

template <class F>
EC_HD xyzz_t<F> xyzz_neg(const xyzz_t<F> &p) {
  xyzz_t<F> r = p;
  r.Y = F::neg(p.Y);
  return r;
}

// X and Y of 2·(x, y) in XYZZ (dbl-2008-s-1 and mdbl-2008-s-1 share
// them), with V = (2y)^2 and W = (2y)^3, the factors of ZZ and ZZZ.
template <class F>
EC_HD xyzz_t<F> xyzz_dbl_xy(const F &x, const F &y, F &V, F &W) {
  F U = F::dbl(y);
  V = F::sqr(U);
  W = F::mul(U, V);
  F S = F::mul(x, V);
  F XX = F::sqr(x);
  F M = F::add(F::dbl(XX), XX);
  xyzz_t<F> r;
  r.X = F::sub(F::sqr(M), F::dbl(S));
  r.Y = F::sub(F::mul(M, F::sub(S, r.X)), F::mul(W, y));
  return r;
}

// 2·p, dbl-2008-s-1. Infinity doubles to infinity (ZZ stays 0); so would a
// point with y = 0, which neither group has (no 2-torsion).
template <class F>
EC_HD_CALL xyzz_t<F> xyzz_dbl(const xyzz_t<F> &p) {
  F V, W;
  xyzz_t<F> r = xyzz_dbl_xy(p.X, p.Y, V, W);
  r.ZZ = F::mul(V, p.ZZ);
  r.ZZZ = F::mul(W, p.ZZZ);
  return r;
}

// 2·a for affine a (not at infinity), mdbl-2008-s-1.
template <class F>
EC_HD_CALL xyzz_t<F> xyzz_dbl_affine(const affine_t<F> &a) {
  F V, W;
  xyzz_t<F> r = xyzz_dbl_xy(a.x, a.y, V, W);
  r.ZZ = V;
  r.ZZZ = W;
  return r;
}

// p + a for affine a, madd-2008-s; total (infinity on either side, a = p,
// a = −p). This copy is always inlined, for the bucket accumulation's inner
// loop (a call there cost 18% of the G1 MSM on an H200, bench/msm.md);
// xyzz_add_affine below is the called one.
template <class F>
EC_HD xyzz_t<F> xyzz_add_affine_inline(const xyzz_t<F> &p, const affine_t<F> &a) {
  if (affine_is_inf(a)) return p;
  if (xyzz_is_inf(p)) return xyzz_from_affine(a);
  F U2 = F::mul(a.x, p.ZZ);
  F S2 = F::mul(a.y, p.ZZZ);
  F P = F::sub(U2, p.X);
  F R = F::sub(S2, p.Y);
  if (F::is_zero(P)) {
    if (F::is_zero(R)) return xyzz_dbl_affine(a);  // p = a
    return xyzz_inf<F>();                           // p = −a
  }
  F PP = F::sqr(P);
  F PPP = F::mul(P, PP);
  F Q = F::mul(p.X, PP);
  xyzz_t<F> r;
  r.X = F::sub(F::sub(F::sqr(R), PPP), F::dbl(Q));
  r.Y = F::sub(F::mul(R, F::sub(Q, r.X)), F::mul(p.Y, PPP));
  r.ZZ = F::mul(p.ZZ, PP);
  r.ZZZ = F::mul(p.ZZZ, PPP);
  return r;
}

template <class F>
EC_HD_CALL xyzz_t<F> xyzz_add_affine(const xyzz_t<F> &p, const affine_t<F> &a) {
  return xyzz_add_affine_inline(p, a);
}

// p + q, add-2008-s; total.
template <class F>
EC_HD_CALL xyzz_t<F> xyzz_add(const xyzz_t<F> &p, const xyzz_t<F> &q) {
  if (xyzz_is_inf(q)) return p;
  if (xyzz_is_inf(p)) return q;
  F U1 = F::mul(p.X, q.ZZ);
  F U2 = F::mul(q.X, p.ZZ);
  F S1 = F::mul(p.Y, q.ZZZ);
  F S2 = F::mul(q.Y, p.ZZZ);
  F P = F::sub(U2, U1);
  F R = F::sub(S2, S1);
  if (F::is_zero(P)) {
    if (F::is_zero(R)) return xyzz_dbl(p);  // p = q
    return xyzz_inf<F>();                    // p = −q
  }
  F PP = F::sqr(P);
  F PPP = F::mul(P, PP);
  F Q = F::mul(U1, PP);
  xyzz_t<F> r;
  r.X = F::sub(F::sub(F::sqr(R), PPP), F::dbl(Q));
  r.Y = F::sub(F::mul(R, F::sub(Q, r.X)), F::mul(S1, PPP));
  r.ZZ = F::mul(F::mul(p.ZZ, q.ZZ), PP);
  r.ZZZ = F::mul(F::mul(p.ZZZ, q.ZZZ), PPP);
  return r;
}

// k·p for a small k (k < 2^32), left-to-right double-and-add. Used for the
// offsets of the parallel bucket reduction, where k is a bucket index.
template <class F>
EC_HD_CALL xyzz_t<F> xyzz_mul_u32(const xyzz_t<F> &p, unsigned int k) {
  if (k == 0) return xyzz_inf<F>();
  int top = 31;
  while (((k >> top) & 1u) == 0) top--;
  xyzz_t<F> r = p;
  for (int bit = top - 1; bit >= 0; bit--) {
    r = xyzz_dbl(r);
    if ((k >> bit) & 1u) r = xyzz_add(r, p);
  }
  return r;
}

// The same point in gnark-crypto's Jacobian coordinates, without an
// inversion: with Z = ZZ·ZZZ, X = x·Z² = X·ZZ·ZZZ² and Y = y·Z³ = Y·ZZ³·ZZZ².
// Infinity maps to gnark's (1, 1, 0).
template <class F>
EC_HD jac_t<F> xyzz_to_jac(const xyzz_t<F> &p) {
  jac_t<F> r;
  if (xyzz_is_inf(p)) {
    r.X = F::one();
    r.Y = F::one();
    r.Z = F::zero();
    return r;
  }
  F ZZZ2 = F::sqr(p.ZZZ);
  F ZZ3 = F::mul(F::sqr(p.ZZ), p.ZZ);
  r.X = F::mul(F::mul(p.X, p.ZZ), ZZZ2);
  r.Y = F::mul(F::mul(p.Y, ZZ3), ZZZ2);
  r.Z = F::mul(p.ZZ, p.ZZZ);
  return r;
}

// Whether p (XYZZ) and a (affine, gnark's encoding) are the same point, by
// cross-multiplication (no inversion).
template <class F>
EC_HD bool xyzz_eq_affine(const xyzz_t<F> &p, const affine_t<F> &a) {
  if (affine_is_inf(a)) return xyzz_is_inf(p);
  if (xyzz_is_inf(p)) return false;
  return F::eq(F::mul(a.x, p.ZZ), p.X) && F::eq(F::mul(a.y, p.ZZZ), p.Y);
}

// Batched affine addition (Montgomery's trick; batchadd.cuh's tree and
// msmaffine.cuh's bucket levels): a forward walk classifies each pair
// p + q with affine_pair_kind and multiplies its slope's denominator into
// a running product, one inversion inverts the product, and a backward
// walk sums each pair with affine_pair_sum, peeling its denominator's
// inverse off the running inverse.

// How one pair p + q is summed.
enum affine_pair { PAIR_LEFT = 0, PAIR_RIGHT = 1, PAIR_INF = 2, PAIR_ADD = 3, PAIR_DBL = 4 };

// affine_pair_kind classifies p + q and sets den to the slope's
// denominator for PAIR_ADD (q.x − p.x) and PAIR_DBL (2·p.y).
template <class F>
EC_HD int affine_pair_kind(const affine_t<F> &p, const affine_t<F> &q, F &den) {
  if (affine_is_inf(q)) return PAIR_LEFT;
  if (affine_is_inf(p)) return PAIR_RIGHT;
  if (F::eq(p.x, q.x)) {
    if (F::eq(p.y, q.y)) {
      den = F::dbl(p.y);  // y ≠ 0: neither group has 2-torsion
      return PAIR_DBL;
    }
    return PAIR_INF;  // q = −p
  }
  den = F::sub(q.x, p.x);
  return PAIR_ADD;
}

// affine_pair_sum returns p + q for a pair of kind k (affine_pair_kind)
// with denominator den. For PAIR_ADD and PAIR_DBL, inv is the inverse of
// the product of the denominators up to and including this pair's and
// before the product of those before it: 1/den is inv·before, and inv
// becomes inv·den, the inverse for the pair walked next. The other kinds
// need no denominator and leave inv as it is.
template <class F>
EC_HD affine_t<F> affine_pair_sum(int k, const affine_t<F> &p, const affine_t<F> &q, const F &den, const F &before,
                                  F &inv) {
  affine_t<F> r;
  switch (k) {
    case PAIR_LEFT:
      r = p;
      break;
    case PAIR_RIGHT:
      r = q;
      break;
    case PAIR_INF:
      r.x = F::zero();
      r.y = F::zero();
      break;
    default: {
      F dinv = F::mul(inv, before);  // 1/den
      inv = F::mul(inv, den);        // 1/(product before this pair)
      F num;
      if (k == PAIR_ADD) {
        num = F::sub(q.y, p.y);
      } else {
        F xx = F::sqr(p.x);
        num = F::add(F::dbl(xx), xx);  // 3x², a = 0
      }
      F l = F::mul(num, dinv);
      r.x = F::sub(F::sub(F::sqr(l), p.x), q.x);
      r.y = F::sub(F::mul(l, F::sub(p.x, r.x)), p.y);
    }
  }
  return r;
}

}  // namespace ec

#endif  // OTELCUZK_EC_CUH
