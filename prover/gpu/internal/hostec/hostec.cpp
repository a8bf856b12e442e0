// C entry points over ec.cuh (G1 and G2, one template over the coordinate
// field, Fp or fp2.cuh's Fp2) for the Go tests: the kernels' point
// arithmetic compiled as plain C++ on the host (the field arithmetic is
// hostarith's). The headers are included
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
