// ec.cuh: the group G1 of BLS12-381 (y² = x³ + 4 over Fp), for CUDA kernels
// (nvcc and NVRTC) and for plain C++ on the host (the hostec package compiles
// this same header with g++ and tests it against gnark-crypto's G1Jac).
//
// Three representations, all over ff::fp_t in Montgomery form:
//   g1_affine  (x, y): gnark-crypto's G1Affine byte for byte (96 bytes), so
//              a []G1Affine uploads without a conversion pass. The point at
//              infinity is (0, 0), as in gnark-crypto; (0, 0) is not on the
//              curve (0 ≠ 4), so the encoding is unambiguous.
//   g1_jac     (X, Y, Z): gnark-crypto's G1Jac (x = X/Z², y = Y/Z³);
//              infinity has Z = 0.
//   g1_xyzz    (X, Y, ZZ, ZZZ): extended Jacobian coordinates with
//              x = X/ZZ, y = Y/ZZZ and ZZ³ = ZZZ²; infinity has ZZ = 0.
//              Pippenger's bucket sums live in this form: a mixed addition
//              costs 8M + 2S and needs no Z² or Z³ of its own.
//
// Formulas: Explicit-Formulas Database, "Short Weierstrass curves,
// XYZZ coordinates" (Sutherland 2008; add-2008-s, madd-2008-s, dbl-2008-s-1,
// mdbl-2008-s-1), with a = 0. Those formulas are incomplete: adding P to P
// or to −P divides by zero. The functions below test for both cases and for
// infinity on either side, so every function is total.
#ifndef OTELCUZK_EC_CUH
#define OTELCUZK_EC_CUH

#include "ff.cuh"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define EC_HD __host__ __device__ __forceinline__
// The point additions and doublings are called, not inlined, on the device
// unless EC_INLINE_ALL is defined: each holds ten or more inlined field
// multiplications, and one copy per call site made NVRTC and ptxas take
// minutes over msm.cu.
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

struct g1_affine {
  fp_t x, y;
};

struct g1_jac {
  fp_t X, Y, Z;
};

struct g1_xyzz {
  fp_t X, Y, ZZ, ZZZ;
};

EC_HD bool affine_is_inf(const g1_affine &p) { return fp_t::is_zero(p.x) && fp_t::is_zero(p.y); }

EC_HD g1_affine affine_neg(const g1_affine &p) {
  g1_affine r;
  r.x = p.x;
  r.y = fp_t::neg(p.y);  // neg(0) = 0 keeps (0, 0) at infinity
  return r;
}

EC_HD g1_xyzz xyzz_inf() {
  g1_xyzz r;
  r.X = fp_t::one();
  r.Y = fp_t::one();
  r.ZZ = fp_t::zero();
  r.ZZZ = fp_t::zero();
  return r;
}

EC_HD bool xyzz_is_inf(const g1_xyzz &p) { return fp_t::is_zero(p.ZZ); }

EC_HD g1_xyzz xyzz_from_affine(const g1_affine &a) {
  if (affine_is_inf(a)) return xyzz_inf();
  g1_xyzz r;
  r.X = a.x;
  r.Y = a.y;
  r.ZZ = fp_t::one();
  r.ZZZ = fp_t::one();
  return r;
}

EC_HD g1_xyzz xyzz_neg(const g1_xyzz &p) {
  g1_xyzz r = p;
  r.Y = fp_t::neg(p.Y);
  return r;
}

// 2·p, dbl-2008-s-1. Infinity doubles to infinity (ZZ stays 0).
EC_HD_CALL g1_xyzz xyzz_dbl(const g1_xyzz &p) {
  fp_t U = fp_t::dbl(p.Y);
  fp_t V = fp_t::sqr(U);
  fp_t W = fp_t::mul(U, V);
  fp_t S = fp_t::mul(p.X, V);
  fp_t XX = fp_t::sqr(p.X);
  fp_t M = fp_t::add(fp_t::dbl(XX), XX);
  g1_xyzz r;
  r.X = fp_t::sub(fp_t::sqr(M), fp_t::dbl(S));
  r.Y = fp_t::sub(fp_t::mul(M, fp_t::sub(S, r.X)), fp_t::mul(W, p.Y));
  r.ZZ = fp_t::mul(V, p.ZZ);
  r.ZZZ = fp_t::mul(W, p.ZZZ);
  return r;
}

// 2·a for affine a (not at infinity), mdbl-2008-s-1.
EC_HD_CALL g1_xyzz xyzz_dbl_affine(const g1_affine &a) {
  fp_t U = fp_t::dbl(a.y);
  fp_t V = fp_t::sqr(U);
  fp_t W = fp_t::mul(U, V);
  fp_t S = fp_t::mul(a.x, V);
  fp_t XX = fp_t::sqr(a.x);
  fp_t M = fp_t::add(fp_t::dbl(XX), XX);
  g1_xyzz r;
  r.X = fp_t::sub(fp_t::sqr(M), fp_t::dbl(S));
  r.Y = fp_t::sub(fp_t::mul(M, fp_t::sub(S, r.X)), fp_t::mul(W, a.y));
  r.ZZ = V;
  r.ZZZ = W;
  return r;
}

// p + a for affine a, madd-2008-s; total (infinity on either side, a = p,
// a = −p). This copy is always inlined, for the bucket accumulation's inner
// loop (a call there cost 18% of the MSM on an H200, bench/msm.md);
// xyzz_add_affine below is the called one.
EC_HD g1_xyzz xyzz_add_affine_inline(const g1_xyzz &p, const g1_affine &a) {
  if (affine_is_inf(a)) return p;
  if (xyzz_is_inf(p)) return xyzz_from_affine(a);
  fp_t U2 = fp_t::mul(a.x, p.ZZ);
  fp_t S2 = fp_t::mul(a.y, p.ZZZ);
  fp_t P = fp_t::sub(U2, p.X);
  fp_t R = fp_t::sub(S2, p.Y);
  if (fp_t::is_zero(P)) {
    if (fp_t::is_zero(R)) return xyzz_dbl_affine(a);  // p = a
    return xyzz_inf();                                 // p = −a
  }
  fp_t PP = fp_t::sqr(P);
  fp_t PPP = fp_t::mul(P, PP);
  fp_t Q = fp_t::mul(p.X, PP);
  g1_xyzz r;
  r.X = fp_t::sub(fp_t::sub(fp_t::sqr(R), PPP), fp_t::dbl(Q));
  r.Y = fp_t::sub(fp_t::mul(R, fp_t::sub(Q, r.X)), fp_t::mul(p.Y, PPP));
  r.ZZ = fp_t::mul(p.ZZ, PP);
  r.ZZZ = fp_t::mul(p.ZZZ, PPP);
  return r;
}

EC_HD_CALL g1_xyzz xyzz_add_affine(const g1_xyzz &p, const g1_affine &a) { return xyzz_add_affine_inline(p, a); }

// p + q, add-2008-s; total.
EC_HD_CALL g1_xyzz xyzz_add(const g1_xyzz &p, const g1_xyzz &q) {
  if (xyzz_is_inf(q)) return p;
  if (xyzz_is_inf(p)) return q;
  fp_t U1 = fp_t::mul(p.X, q.ZZ);
  fp_t U2 = fp_t::mul(q.X, p.ZZ);
  fp_t S1 = fp_t::mul(p.Y, q.ZZZ);
  fp_t S2 = fp_t::mul(q.Y, p.ZZZ);
  fp_t P = fp_t::sub(U2, U1);
  fp_t R = fp_t::sub(S2, S1);
  if (fp_t::is_zero(P)) {
    if (fp_t::is_zero(R)) return xyzz_dbl(p);  // p = q
    return xyzz_inf();                         // p = −q
  }
  fp_t PP = fp_t::sqr(P);
  fp_t PPP = fp_t::mul(P, PP);
  fp_t Q = fp_t::mul(U1, PP);
  g1_xyzz r;
  r.X = fp_t::sub(fp_t::sub(fp_t::sqr(R), PPP), fp_t::dbl(Q));
  r.Y = fp_t::sub(fp_t::mul(R, fp_t::sub(Q, r.X)), fp_t::mul(S1, PPP));
  r.ZZ = fp_t::mul(fp_t::mul(p.ZZ, q.ZZ), PP);
  r.ZZZ = fp_t::mul(fp_t::mul(p.ZZZ, q.ZZZ), PPP);
  return r;
}

// k·p for a small k (k < 2^32), left-to-right double-and-add. Used for the
// offsets of the parallel bucket reduction, where k is a bucket index.
EC_HD_CALL g1_xyzz xyzz_mul_u32(const g1_xyzz &p, unsigned int k) {
  if (k == 0) return xyzz_inf();
  int top = 31;
  while (((k >> top) & 1u) == 0) top--;
  g1_xyzz r = p;
  for (int bit = top - 1; bit >= 0; bit--) {
    r = xyzz_dbl(r);
    if ((k >> bit) & 1u) r = xyzz_add(r, p);
  }
  return r;
}

// The same point in gnark-crypto's Jacobian coordinates, without an
// inversion: with Z = ZZ·ZZZ, X = x·Z² = X·ZZ·ZZZ² and Y = y·Z³ = Y·ZZ³·ZZZ².
// Infinity maps to gnark's (1, 1, 0).
EC_HD g1_jac xyzz_to_jac(const g1_xyzz &p) {
  g1_jac r;
  if (xyzz_is_inf(p)) {
    r.X = fp_t::one();
    r.Y = fp_t::one();
    r.Z = fp_t::zero();
    return r;
  }
  fp_t ZZZ2 = fp_t::sqr(p.ZZZ);
  fp_t ZZ3 = fp_t::mul(fp_t::sqr(p.ZZ), p.ZZ);
  r.X = fp_t::mul(fp_t::mul(p.X, p.ZZ), ZZZ2);
  r.Y = fp_t::mul(fp_t::mul(p.Y, ZZ3), ZZZ2);
  r.Z = fp_t::mul(p.ZZ, p.ZZZ);
  return r;
}

// Whether p (XYZZ) and a (affine, gnark's encoding) are the same point, by
// cross-multiplication (no inversion).
EC_HD bool xyzz_eq_affine(const g1_xyzz &p, const g1_affine &a) {
  if (affine_is_inf(a)) return xyzz_is_inf(p);
  if (xyzz_is_inf(p)) return false;
  return fp_t::eq(fp_t::mul(a.x, p.ZZ), p.X) && fp_t::eq(fp_t::mul(a.y, p.ZZZ), p.Y);
}

}  // namespace ec

#endif  // OTELCUZK_EC_CUH
