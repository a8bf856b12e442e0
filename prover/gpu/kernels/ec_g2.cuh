// ec_g2.cuh: the group G2 of BLS12-381 (the twist y² = x³ + 4(1 + u) over
// Fp2), for CUDA kernels (nvcc and NVRTC) and for plain C++ on the host (the
// hostec2 package compiles this same header with g++ and tests it against
// gnark-crypto's G2Jac). It mirrors ec.cuh's G1 code function for function,
// in namespace ec2, so ec.cuh and ec_g2.cuh can be included together.
//
// Three representations, all over ff::fp2_t (fp2.cuh) in Montgomery form:
//   g2_affine  (x, y): gnark-crypto's G2Affine byte for byte (192 bytes), so
//              a []G2Affine uploads without a conversion pass. The point at
//              infinity is (0, 0), as in gnark-crypto; (0, 0) is not on the
//              curve (0 ≠ 4(1 + u)), so the encoding is unambiguous.
//   g2_jac     (X, Y, Z): gnark-crypto's G2Jac (x = X/Z², y = Y/Z³);
//              infinity has Z = 0.
//   g2_xyzz    (X, Y, ZZ, ZZZ): extended Jacobian coordinates with
//              x = X/ZZ, y = Y/ZZZ and ZZ³ = ZZZ²; infinity has ZZ = 0
//              (gnark-crypto's g2JacExtended, for Pippenger's buckets).
//
// Formulas: Explicit-Formulas Database, "Short Weierstrass curves,
// XYZZ coordinates" (Sutherland 2008; add-2008-s, madd-2008-s, dbl-2008-s-1,
// mdbl-2008-s-1), with a = 0; they hold over any field, so they are
// ec.cuh's with fp2_t for fp_t. They are incomplete (P + P and P + (−P)
// divide by zero); every function below tests for both cases and for
// infinity on either side, so every function is total.
#ifndef OTELCUZK_EC_G2_CUH
#define OTELCUZK_EC_G2_CUH

#include "fp2.cuh"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define EC2_HD __host__ __device__ __forceinline__
// Called, not inlined, on the device unless EC_INLINE_ALL is defined (the
// same switch as ec.cuh): a G2 addition holds about thirty inlined Fp
// multiplications, three times a G1 one.
#ifdef EC_INLINE_ALL
#define EC2_HD_CALL __host__ __device__ __forceinline__
#else
#define EC2_HD_CALL static __host__ __device__ __noinline__
#endif
#else
#define EC2_HD inline
#define EC2_HD_CALL inline
#endif

namespace ec2 {

typedef ff::fp_t fp_t;
typedef ff::fp2_t fp2_t;

struct g2_affine {
  fp2_t x, y;
};

struct g2_jac {
  fp2_t X, Y, Z;
};

struct g2_xyzz {
  fp2_t X, Y, ZZ, ZZZ;
};

EC2_HD bool affine_is_inf(const g2_affine &p) { return fp2_t::is_zero(p.x) && fp2_t::is_zero(p.y); }

// The twist's constant b' = 4(1 + u), in Montgomery form.
EC2_HD fp2_t twist_b() {
  fp_t four = fp_t::dbl(fp_t::dbl(fp_t::one()));
  return fp2_t::make(four, four);
}

// Whether y² = x³ + 4(1 + u); infinity, (0, 0), counts as on the curve, as
// in gnark-crypto's G2Affine.IsOnCurve. This says nothing of the subgroup.
EC2_HD bool affine_is_on_curve(const g2_affine &p) {
  if (affine_is_inf(p)) return true;
  fp2_t rhs = fp2_t::add(fp2_t::mul(fp2_t::sqr(p.x), p.x), twist_b());
  return fp2_t::eq(fp2_t::sqr(p.y), rhs);
}

EC2_HD g2_affine affine_neg(const g2_affine &p) {
  g2_affine r;
  r.x = p.x;
  r.y = fp2_t::neg(p.y);  // neg(0) = 0 keeps (0, 0) at infinity
  return r;
}

EC2_HD g2_xyzz xyzz_inf() {
  g2_xyzz r;
  r.X = fp2_t::one();
  r.Y = fp2_t::one();
  r.ZZ = fp2_t::zero();
  r.ZZZ = fp2_t::zero();
  return r;
}

EC2_HD bool xyzz_is_inf(const g2_xyzz &p) { return fp2_t::is_zero(p.ZZ); }

EC2_HD g2_xyzz xyzz_from_affine(const g2_affine &a) {
  if (affine_is_inf(a)) return xyzz_inf();
  g2_xyzz r;
  r.X = a.x;
  r.Y = a.y;
  r.ZZ = fp2_t::one();
  r.ZZZ = fp2_t::one();
  return r;
}

EC2_HD g2_xyzz xyzz_neg(const g2_xyzz &p) {
  g2_xyzz r = p;
  r.Y = fp2_t::neg(p.Y);
  return r;
}

// 2·p, dbl-2008-s-1. Infinity doubles to infinity (ZZ stays 0); so does a
// point with y = 0, which G2 of BLS12-381 has none of (no 2-torsion).
EC2_HD_CALL g2_xyzz xyzz_dbl(const g2_xyzz &p) {
  fp2_t U = fp2_t::dbl(p.Y);
  fp2_t V = fp2_t::sqr(U);
  fp2_t W = fp2_t::mul(U, V);
  fp2_t S = fp2_t::mul(p.X, V);
  fp2_t XX = fp2_t::sqr(p.X);
  fp2_t M = fp2_t::add(fp2_t::dbl(XX), XX);
  g2_xyzz r;
  r.X = fp2_t::sub(fp2_t::sqr(M), fp2_t::dbl(S));
  r.Y = fp2_t::sub(fp2_t::mul(M, fp2_t::sub(S, r.X)), fp2_t::mul(W, p.Y));
  r.ZZ = fp2_t::mul(V, p.ZZ);
  r.ZZZ = fp2_t::mul(W, p.ZZZ);
  return r;
}

// 2·a for affine a (not at infinity), mdbl-2008-s-1.
EC2_HD_CALL g2_xyzz xyzz_dbl_affine(const g2_affine &a) {
  fp2_t U = fp2_t::dbl(a.y);
  fp2_t V = fp2_t::sqr(U);
  fp2_t W = fp2_t::mul(U, V);
  fp2_t S = fp2_t::mul(a.x, V);
  fp2_t XX = fp2_t::sqr(a.x);
  fp2_t M = fp2_t::add(fp2_t::dbl(XX), XX);
  g2_xyzz r;
  r.X = fp2_t::sub(fp2_t::sqr(M), fp2_t::dbl(S));
  r.Y = fp2_t::sub(fp2_t::mul(M, fp2_t::sub(S, r.X)), fp2_t::mul(W, a.y));
  r.ZZ = V;
  r.ZZZ = W;
  return r;
}

// p + a for affine a, madd-2008-s; total (infinity on either side, a = p,
// a = −p). Always inlined, for a bucket accumulation's inner loop, as
// ec.cuh's xyzz_add_affine_inline; xyzz_add_affine below is the called one.
EC2_HD g2_xyzz xyzz_add_affine_inline(const g2_xyzz &p, const g2_affine &a) {
  if (affine_is_inf(a)) return p;
  if (xyzz_is_inf(p)) return xyzz_from_affine(a);
  fp2_t U2 = fp2_t::mul(a.x, p.ZZ);
  fp2_t S2 = fp2_t::mul(a.y, p.ZZZ);
  fp2_t P = fp2_t::sub(U2, p.X);
  fp2_t R = fp2_t::sub(S2, p.Y);
  if (fp2_t::is_zero(P)) {
    if (fp2_t::is_zero(R)) return xyzz_dbl_affine(a);  // p = a
    return xyzz_inf();                                  // p = −a
  }
  fp2_t PP = fp2_t::sqr(P);
  fp2_t PPP = fp2_t::mul(P, PP);
  fp2_t Q = fp2_t::mul(p.X, PP);
  g2_xyzz r;
  r.X = fp2_t::sub(fp2_t::sub(fp2_t::sqr(R), PPP), fp2_t::dbl(Q));
  r.Y = fp2_t::sub(fp2_t::mul(R, fp2_t::sub(Q, r.X)), fp2_t::mul(p.Y, PPP));
  r.ZZ = fp2_t::mul(p.ZZ, PP);
  r.ZZZ = fp2_t::mul(p.ZZZ, PPP);
  return r;
}

EC2_HD_CALL g2_xyzz xyzz_add_affine(const g2_xyzz &p, const g2_affine &a) { return xyzz_add_affine_inline(p, a); }

// p + q, add-2008-s; total.
EC2_HD_CALL g2_xyzz xyzz_add(const g2_xyzz &p, const g2_xyzz &q) {
  if (xyzz_is_inf(q)) return p;
  if (xyzz_is_inf(p)) return q;
  fp2_t U1 = fp2_t::mul(p.X, q.ZZ);
  fp2_t U2 = fp2_t::mul(q.X, p.ZZ);
  fp2_t S1 = fp2_t::mul(p.Y, q.ZZZ);
  fp2_t S2 = fp2_t::mul(q.Y, p.ZZZ);
  fp2_t P = fp2_t::sub(U2, U1);
  fp2_t R = fp2_t::sub(S2, S1);
  if (fp2_t::is_zero(P)) {
    if (fp2_t::is_zero(R)) return xyzz_dbl(p);  // p = q
    return xyzz_inf();                          // p = −q
  }
  fp2_t PP = fp2_t::sqr(P);
  fp2_t PPP = fp2_t::mul(P, PP);
  fp2_t Q = fp2_t::mul(U1, PP);
  g2_xyzz r;
  r.X = fp2_t::sub(fp2_t::sub(fp2_t::sqr(R), PPP), fp2_t::dbl(Q));
  r.Y = fp2_t::sub(fp2_t::mul(R, fp2_t::sub(Q, r.X)), fp2_t::mul(S1, PPP));
  r.ZZ = fp2_t::mul(fp2_t::mul(p.ZZ, q.ZZ), PP);
  r.ZZZ = fp2_t::mul(fp2_t::mul(p.ZZZ, q.ZZZ), PPP);
  return r;
}

// k·p for a small k (k < 2^32), left-to-right double-and-add, as ec.cuh's
// xyzz_mul_u32 (the offsets of a parallel bucket reduction).
EC2_HD_CALL g2_xyzz xyzz_mul_u32(const g2_xyzz &p, unsigned int k) {
  if (k == 0) return xyzz_inf();
  int top = 31;
  while (((k >> top) & 1u) == 0) top--;
  g2_xyzz r = p;
  for (int bit = top - 1; bit >= 0; bit--) {
    r = xyzz_dbl(r);
    if ((k >> bit) & 1u) r = xyzz_add(r, p);
  }
  return r;
}

// The same point in gnark-crypto's Jacobian coordinates, without an
// inversion: with Z = ZZ·ZZZ, X = x·Z² = X·ZZ·ZZZ² and Y = y·Z³ = Y·ZZ³·ZZZ².
// Infinity maps to gnark's (1, 1, 0).
EC2_HD g2_jac xyzz_to_jac(const g2_xyzz &p) {
  g2_jac r;
  if (xyzz_is_inf(p)) {
    r.X = fp2_t::one();
    r.Y = fp2_t::one();
    r.Z = fp2_t::zero();
    return r;
  }
  fp2_t ZZZ2 = fp2_t::sqr(p.ZZZ);
  fp2_t ZZ3 = fp2_t::mul(fp2_t::sqr(p.ZZ), p.ZZ);
  r.X = fp2_t::mul(fp2_t::mul(p.X, p.ZZ), ZZZ2);
  r.Y = fp2_t::mul(fp2_t::mul(p.Y, ZZ3), ZZZ2);
  r.Z = fp2_t::mul(p.ZZ, p.ZZZ);
  return r;
}

// Whether p (XYZZ) and a (affine, gnark's encoding) are the same point, by
// cross-multiplication (no inversion).
EC2_HD bool xyzz_eq_affine(const g2_xyzz &p, const g2_affine &a) {
  if (affine_is_inf(a)) return xyzz_is_inf(p);
  if (xyzz_is_inf(p)) return false;
  return fp2_t::eq(fp2_t::mul(a.x, p.ZZ), p.X) && fp2_t::eq(fp2_t::mul(a.y, p.ZZZ), p.Y);
}

}  // namespace ec2

#endif  // OTELCUZK_EC_G2_CUH
