// C entry points over ec.cuh (G1 and G2, one template over the coordinate
// field) and fp2.cuh for the Go tests: the kernels' point and Fp2
// arithmetic compiled as plain C++ on the host. The headers are included
// through links named *.h (kernels_*.h -> ../../kernels/*.cuh): go hashes
// a package's .h files, so an edit to a kernel header reruns these tests
// (prover/gpu's TestHostPackagesLinkEveryKernelHeaderTheyInclude checks
// every include).
#include "kernels_ff.h"
#include "kernels_fp2.h"
#include "kernels_ec.h"
#include "hostec.h"

using ff::fp2_t;
using ff::fp_t;
typedef unsigned long long u64;

// gnark-crypto's sizes: E2 96 bytes, G2Affine 192, G2Jac 288, g2JacExtended 384.
static_assert(sizeof(fp2_t) == 96, "fp2_t is not gnark's E2");
static_assert(sizeof(ec::g2_affine) == 192, "g2_affine is not gnark's G2Affine");
static_assert(sizeof(ec::g2_jac) == 288, "g2_jac is not gnark's G2Jac");
static_assert(sizeof(ec::g2_xyzz) == 384, "g2_xyzz is not gnark's g2JacExtended");

namespace {
template <class F>
struct pts {
  typedef ec::affine_t<F> affine;
  typedef ec::jac_t<F> jac;
  typedef ec::xyzz_t<F> xyzz;
  static const xyzz *X(const u64 *p) { return reinterpret_cast<const xyzz *>(p); }
  static const affine *A(const u64 *p) { return reinterpret_cast<const affine *>(p); }
  static jac *J(u64 *p) { return reinterpret_cast<jac *>(p); }

  static void add_affine(const u64 *p, const u64 *a, u64 *out, long n) {
    for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_add_affine(X(p)[i], A(a)[i]));
  }
  static void add(const u64 *p, const u64 *q, u64 *out, long n) {
    for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_add(X(p)[i], X(q)[i]));
  }
  static void dbl(const u64 *p, u64 *out, long n) {
    for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_dbl(X(p)[i]));
  }
  static void neg(const u64 *p, u64 *out, long n) {
    for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_neg(X(p)[i]));
  }
  static void mul_u32(const u64 *p, const unsigned *k, u64 *out, long n) {
    for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_mul_u32(X(p)[i], k[i]));
  }
  static void from_affine(const u64 *a, u64 *out, long n) {
    for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_from_affine(A(a)[i]));
  }
  static void eq_affine(const u64 *p, const u64 *a, int *out, long n) {
    for (long i = 0; i < n; i++) out[i] = ec::xyzz_eq_affine(X(p)[i], A(a)[i]) ? 1 : 0;
  }
  static void on_curve(const u64 *a, int *out, long n) {
    for (long i = 0; i < n; i++) out[i] = ec::affine_is_on_curve(A(a)[i]) ? 1 : 0;
  }
  // As a Pippenger bucket is summed (msm.cu's accumulate loop).
  static void bucket_sum(const u64 *a, const unsigned char *neg, u64 *out, long n) {
    xyzz acc = ec::xyzz_inf<F>();
    for (long i = 0; i < n; i++) {
      affine pt = neg[i] ? ec::affine_neg(A(a)[i]) : A(a)[i];
      acc = ec::xyzz_add_affine_inline(acc, pt);
    }
    J(out)[0] = ec::xyzz_to_jac(acc);
  }
};
typedef pts<fp_t> g1;
typedef pts<fp2_t> g2;

fp2_t flag(bool b) {
  fp2_t r = fp2_t::zero();
  r.a0.limb[0] = b ? 1 : 0;
  return r;
}
}  // namespace

#define HEC_DISPATCH(g2flag, fn, ...) \
  do {                                \
    if (g2flag)                       \
      g2::fn(__VA_ARGS__);            \
    else                              \
      g1::fn(__VA_ARGS__);            \
  } while (0)

extern "C" void hec_add_affine(int g, const u64 *p, const u64 *a, u64 *out, long n) { HEC_DISPATCH(g, add_affine, p, a, out, n); }
extern "C" void hec_add(int g, const u64 *p, const u64 *q, u64 *out, long n) { HEC_DISPATCH(g, add, p, q, out, n); }
extern "C" void hec_dbl(int g, const u64 *p, u64 *out, long n) { HEC_DISPATCH(g, dbl, p, out, n); }
extern "C" void hec_neg(int g, const u64 *p, u64 *out, long n) { HEC_DISPATCH(g, neg, p, out, n); }
extern "C" void hec_mul_u32(int g, const u64 *p, const unsigned *k, u64 *out, long n) { HEC_DISPATCH(g, mul_u32, p, k, out, n); }
extern "C" void hec_from_affine(int g, const u64 *a, u64 *out, long n) { HEC_DISPATCH(g, from_affine, a, out, n); }
extern "C" void hec_eq_affine(int g, const u64 *p, const u64 *a, int *out, long n) { HEC_DISPATCH(g, eq_affine, p, a, out, n); }
extern "C" void hec_on_curve(int g, const u64 *a, int *out, long n) { HEC_DISPATCH(g, on_curve, a, out, n); }
extern "C" void hec_bucket_sum(int g, const u64 *a, const unsigned char *neg, u64 *out, long n) { HEC_DISPATCH(g, bucket_sum, a, neg, out, n); }
extern "C" void hec_sizes(long *out) {
  out[0] = sizeof(fp2_t);
  out[1] = sizeof(ec::g2_affine);
  out[2] = sizeof(ec::g2_jac);
  out[3] = sizeof(ec::g2_xyzz);
  out[4] = sizeof(ec::g1_affine);
  out[5] = sizeof(ec::g1_jac);
  out[6] = sizeof(ec::g1_xyzz);
}

extern "C" int h2_fp2(int op, const u64 *a, const u64 *b, u64 *z, long n) {
  const fp2_t *x = reinterpret_cast<const fp2_t *>(a), *y = reinterpret_cast<const fp2_t *>(b);
  fp2_t *out = reinterpret_cast<fp2_t *>(z);
  for (long i = 0; i < n; i++) {
    switch (op) {
      case H2_ADD: out[i] = fp2_t::add(x[i], y[i]); break;
      case H2_SUB: out[i] = fp2_t::sub(x[i], y[i]); break;
      case H2_MUL: out[i] = fp2_t::mul(x[i], y[i]); break;
      case H2_SQR: out[i] = fp2_t::sqr(x[i]); break;
      case H2_NEG: out[i] = fp2_t::neg(x[i]); break;
      case H2_DBL: out[i] = fp2_t::dbl(x[i]); break;
      case H2_CONJ: out[i] = fp2_t::conjugate(x[i]); break;
      case H2_INV: out[i] = fp2_t::inverse(x[i]); break;
      case H2_EQ: out[i] = flag(fp2_t::eq(x[i], y[i])); break;
      case H2_ONE: out[i] = fp2_t::one(); break;
      case H2_ZERO: out[i] = fp2_t::zero(); break;
      case H2_ISZERO: out[i] = flag(fp2_t::is_zero(x[i])); break;
      default: return -1;
    }
  }
  return 0;
}

extern "C" void h2_fp2_mul_fp(const u64 *a, const u64 *f, u64 *z, long n) {
  const fp2_t *x = reinterpret_cast<const fp2_t *>(a);
  const fp_t *y = reinterpret_cast<const fp_t *>(f);
  fp2_t *out = reinterpret_cast<fp2_t *>(z);
  for (long i = 0; i < n; i++) out[i] = fp2_t::mul_fp(x[i], y[i]);
}
extern "C" void h2_fp2_norm(const u64 *a, u64 *z, long n) {
  const fp2_t *x = reinterpret_cast<const fp2_t *>(a);
  fp_t *out = reinterpret_cast<fp_t *>(z);
  for (long i = 0; i < n; i++) out[i] = fp2_t::norm(x[i]);
}
