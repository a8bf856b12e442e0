// fp2.cuh: the quadratic extension Fp2 = Fp[u]/(u² + 1) of the BLS12-381
// base field, the field of G2's coordinates, for CUDA kernels (nvcc and
// NVRTC) and for plain C++ on the host (the hostec package compiles this
// same header with g++ and tests it against gnark-crypto's E2).
//
// An element a0 + a1·u is two ff::fp_t in Montgomery form, a0 first:
// exactly gnark-crypto's bls12381.E2 {A0, A1 fp.Element} (96 bytes), so a
// []E2 or a []G2Affine copies to the device byte for byte. As in ff.cuh,
// every value produced is fully reduced and every input must be.
//
// Formulas (Beuchat et al., "High-Speed Software Implementation of the
// Optimal Ate Pairing over Barreto-Naehrig Curves", eprint 2010/354, the
// ones gnark-crypto's fptower uses): Karatsuba multiplication (3 Fp
// multiplications), complex squaring (2 multiplications, algorithm 22)
// and inversion through the norm a0² + a1² (algorithm 8).
//
// API (all static, __host__ __device__), mirroring ff.cuh's Field:
//   fp2_t::zero(), fp2_t::one()
//   fp2_t::add(a,b), sub(a,b), neg(a), dbl(a), conjugate(a) (a0 − a1·u)
//   fp2_t::mul(a,b), sqr(a), mul_fp(a, f) (f in Fp), norm(a) (a0² + a1², in Fp)
//   fp2_t::inverse(a) (inverse(0) = 0, as in gnark-crypto)
//   fp2_t::eq(a,b), is_zero(a); operators + - * == != on fp2_t values.
#ifndef OTELCUZK_FP2_CUH
#define OTELCUZK_FP2_CUH

#include "ff.cuh"

// FP2_MUL_CALL=1 (the default) makes mul and sqr calls rather than inlined
// copies on the device: NVVM spends most of the G2 modules' compile on the
// inlined Fp multiplications (the G2 window sum alone: 4.2 MB of PTX, 18 of
// its 29 s of compile CPU time with NVRTC 11.8). Measured on the H200 in
// one run (msmbench -log2 22 -g2-log2 22 -variants 'default;FP2_MUL_CALL=1',
// empty kernel cache): compile and checks 37.3 s inlined against 2.8 s with
// calls, and the G2 MSM at 2^22 199.7 ms inlined against 172.3 ms with
// calls (G1, which does not use Fp2, 73.5 against 69.4 ms), both equal to
// gnark-crypto. FP2_MUL_CALL=0 inlines them again.
#ifndef FP2_MUL_CALL
#define FP2_MUL_CALL 1
#endif
#if (defined(__CUDACC__) || defined(__CUDACC_RTC__)) && defined(FP2_MUL_CALL) && FP2_MUL_CALL
#define FP2_MUL_HD __host__ __device__ __noinline__
#else
#define FP2_MUL_HD FF_HD
#endif

namespace ff {

struct fp2_t {
  fp_t a0, a1;  // a0 + a1·u

  static FF_HD fp2_t make(const fp_t &a0, const fp_t &a1) {
    fp2_t r;
    r.a0 = a0;
    r.a1 = a1;
    return r;
  }
  static FF_HD fp2_t zero() { return make(fp_t::zero(), fp_t::zero()); }
  static FF_HD fp2_t one() { return make(fp_t::one(), fp_t::zero()); }

  static FF_HD bool eq(const fp2_t &a, const fp2_t &b) { return fp_t::eq(a.a0, b.a0) && fp_t::eq(a.a1, b.a1); }
  static FF_HD bool is_zero(const fp2_t &a) { return fp_t::is_zero(a.a0) && fp_t::is_zero(a.a1); }

  static FF_HD fp2_t add(const fp2_t &a, const fp2_t &b) { return make(fp_t::add(a.a0, b.a0), fp_t::add(a.a1, b.a1)); }
  static FF_HD fp2_t sub(const fp2_t &a, const fp2_t &b) { return make(fp_t::sub(a.a0, b.a0), fp_t::sub(a.a1, b.a1)); }
  static FF_HD fp2_t dbl(const fp2_t &a) { return make(fp_t::dbl(a.a0), fp_t::dbl(a.a1)); }
  static FF_HD fp2_t neg(const fp2_t &a) { return make(fp_t::neg(a.a0), fp_t::neg(a.a1)); }
  static FF_HD fp2_t conjugate(const fp2_t &a) { return make(a.a0, fp_t::neg(a.a1)); }

  // (a0 + a1·u)(b0 + b1·u) = (a0·b0 − a1·b1) + ((a0 + a1)(b0 + b1) − a0·b0 − a1·b1)·u,
  // Karatsuba: three Fp multiplications instead of four.
  static FP2_MUL_HD fp2_t mul(const fp2_t &a, const fp2_t &b) {
    fp_t t0 = fp_t::mul(a.a0, b.a0);
    fp_t t1 = fp_t::mul(a.a1, b.a1);
    fp_t s = fp_t::mul(fp_t::add(a.a0, a.a1), fp_t::add(b.a0, b.a1));
    return make(fp_t::sub(t0, t1), fp_t::sub(fp_t::sub(s, t0), t1));
  }

  // (a0 + a1·u)² = (a0 + a1)(a0 − a1) + 2·a0·a1·u: two Fp multiplications.
  static FP2_MUL_HD fp2_t sqr(const fp2_t &a) {
    fp_t r0 = fp_t::mul(fp_t::add(a.a0, a.a1), fp_t::sub(a.a0, a.a1));
    fp_t r1 = fp_t::mul(a.a0, a.a1);
    return make(r0, fp_t::dbl(r1));
  }

  static FF_HD fp2_t mul_fp(const fp2_t &a, const fp_t &f) { return make(fp_t::mul(a.a0, f), fp_t::mul(a.a1, f)); }

  // a·conjugate(a) = a0² + a1², an element of Fp; zero only for a = 0
  // (−1 is not a square mod p, as p ≡ 3 mod 4).
  static FF_HD fp_t norm(const fp2_t &a) { return fp_t::add(fp_t::sqr(a.a0), fp_t::sqr(a.a1)); }

  // 1/a = conjugate(a) / norm(a): one Fp inversion. inverse(0) = 0, since
  // fp_t::inverse(0) = 0.
  static FF_HD fp2_t inverse(const fp2_t &a) {
    fp_t t = fp_t::inverse(norm(a));
    return make(fp_t::mul(a.a0, t), fp_t::neg(fp_t::mul(a.a1, t)));
  }

  FF_HD fp2_t operator+(const fp2_t &b) const { return add(*this, b); }
  FF_HD fp2_t operator-(const fp2_t &b) const { return sub(*this, b); }
  FF_HD fp2_t operator*(const fp2_t &b) const { return mul(*this, b); }
  FF_HD bool operator==(const fp2_t &b) const { return eq(*this, b); }
  FF_HD bool operator!=(const fp2_t &b) const { return !eq(*this, b); }
};

}  // namespace ff

#endif  // OTELCUZK_FP2_CUH
