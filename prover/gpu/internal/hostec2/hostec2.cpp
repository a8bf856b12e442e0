// C entry points over fp2.cuh and ec.cuh (its G2 instances) for the Go tests: the kernels'
// Fp2 and G2 arithmetic compiled as plain C++ on the host. The headers are
// included through links named *.h (kernels_*.h -> ../../kernels/*.cuh):
// go hashes a package's .h files, so an edit to a kernel header rebuilds
// this package instead of reusing a cached test result.
#include "kernels_ff.h"
#include "kernels_fp2.h"
#include "kernels_ec.h"

#include "hostec2.h"

using ec::g2_affine;
using ec::g2_jac;
using ec::g2_xyzz;
using ff::fp2_t;
using ff::fp_t;
typedef unsigned long long u64;

// gnark-crypto's sizes: E2 96 bytes, G2Affine 192, G2Jac 288, g2JacExtended 384.
static_assert(sizeof(fp2_t) == 96, "fp2_t is not gnark's E2");
static_assert(sizeof(g2_affine) == 192, "g2_affine is not gnark's G2Affine");
static_assert(sizeof(g2_jac) == 288, "g2_jac is not gnark's G2Jac");
static_assert(sizeof(g2_xyzz) == 384, "g2_xyzz is not gnark's g2JacExtended");

static const fp2_t *E(const u64 *p) { return reinterpret_cast<const fp2_t *>(p); }
static const fp_t *F(const u64 *p) { return reinterpret_cast<const fp_t *>(p); }
static const g2_xyzz *X(const u64 *p) { return reinterpret_cast<const g2_xyzz *>(p); }
static const g2_affine *A(const u64 *p) { return reinterpret_cast<const g2_affine *>(p); }
static g2_jac *J(u64 *p) { return reinterpret_cast<g2_jac *>(p); }

static fp2_t flag(bool b) {
  fp2_t r = fp2_t::zero();
  r.a0.limb[0] = b ? 1 : 0;
  return r;
}

extern "C" int h2_fp2(int op, const u64 *a, const u64 *b, u64 *z, long n) {
  fp2_t *out = reinterpret_cast<fp2_t *>(z);
  for (long i = 0; i < n; i++) {
    const fp2_t &x = E(a)[i];
    const fp2_t &y = E(b)[i];
    switch (op) {
      case H2_ADD: out[i] = fp2_t::add(x, y); break;
      case H2_SUB: out[i] = fp2_t::sub(x, y); break;
      case H2_MUL: out[i] = fp2_t::mul(x, y); break;
      case H2_SQR: out[i] = fp2_t::sqr(x); break;
      case H2_NEG: out[i] = fp2_t::neg(x); break;
      case H2_DBL: out[i] = fp2_t::dbl(x); break;
      case H2_CONJ: out[i] = fp2_t::conjugate(x); break;
      case H2_INV: out[i] = fp2_t::inverse(x); break;
      case H2_EQ: out[i] = flag(fp2_t::eq(x, y)); break;
      case H2_ONE: out[i] = fp2_t::one(); break;
      case H2_ZERO: out[i] = fp2_t::zero(); break;
      case H2_ISZERO: out[i] = flag(fp2_t::is_zero(x)); break;
      default: return -1;
    }
  }
  return 0;
}

extern "C" void h2_fp2_mul_fp(const u64 *a, const u64 *f, u64 *z, long n) {
  fp2_t *out = reinterpret_cast<fp2_t *>(z);
  for (long i = 0; i < n; i++) out[i] = fp2_t::mul_fp(E(a)[i], F(f)[i]);
}
extern "C" void h2_fp2_norm(const u64 *a, u64 *z, long n) {
  fp_t *out = reinterpret_cast<fp_t *>(z);
  for (long i = 0; i < n; i++) out[i] = fp2_t::norm(E(a)[i]);
}

extern "C" void h2_add_affine(const u64 *p, const u64 *a, u64 *out, long n) {
  for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_add_affine(X(p)[i], A(a)[i]));
}
extern "C" void h2_add(const u64 *p, const u64 *q, u64 *out, long n) {
  for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_add(X(p)[i], X(q)[i]));
}
extern "C" void h2_dbl(const u64 *p, u64 *out, long n) {
  for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_dbl(X(p)[i]));
}
extern "C" void h2_neg(const u64 *p, u64 *out, long n) {
  for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_neg(X(p)[i]));
}
extern "C" void h2_mul_u32(const u64 *p, const unsigned *k, u64 *out, long n) {
  for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_mul_u32(X(p)[i], k[i]));
}
extern "C" void h2_from_affine(const u64 *a, u64 *out, long n) {
  for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_from_affine(A(a)[i]));
}
extern "C" void h2_eq_affine(const u64 *p, const u64 *a, int *out, long n) {
  for (long i = 0; i < n; i++) out[i] = ec::xyzz_eq_affine(X(p)[i], A(a)[i]) ? 1 : 0;
}
extern "C" void h2_on_curve(const u64 *a, int *out, long n) {
  for (long i = 0; i < n; i++) out[i] = ec::affine_is_on_curve(A(a)[i]) ? 1 : 0;
}
extern "C" void h2_bucket_sum(const u64 *a, const unsigned char *neg, u64 *out, long n) {
  g2_xyzz acc = ec::xyzz_inf<fp2_t>();
  for (long i = 0; i < n; i++) {
    g2_affine pt = neg[i] ? ec::affine_neg(A(a)[i]) : A(a)[i];
    acc = ec::xyzz_add_affine_inline(acc, pt);
  }
  J(out)[0] = ec::xyzz_to_jac(acc);
}
extern "C" void h2_sizes(long *out) {
  out[0] = sizeof(fp2_t);
  out[1] = sizeof(g2_affine);
  out[2] = sizeof(g2_jac);
  out[3] = sizeof(g2_xyzz);
}
