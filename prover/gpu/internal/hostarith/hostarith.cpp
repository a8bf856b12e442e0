// C entry points over ff.cuh and fp2.cuh for the Go tests: the kernels'
// field arithmetic compiled as plain C++ on the host. Each call works on n
// elements laid out as gnark-crypto lays out []fr.Element, []fp.Element
// and []bls12381.E2.
#include <type_traits>

#include "kernels_ff.h"  // links to ff.cuh: go hashes .h files, so edits to the kernels rebuild this package
#include "kernels_fp2.h"
#include "hostarith.h"

namespace {
// flag is 1 or 0 (not in Montgomery form) in F's lowest limb, the rest 0.
template <class F>
F flag(bool b) {
  F r = F::zero();
  reinterpret_cast<ff_u64 *>(&r)[0] = b ? 1 : 0;
  return r;
}

// binop runs op on n elements of F; -1 for an op F lacks (fp2_t has no
// Montgomery conversions or PTX variants, fr_t and fp_t no conjugate).
template <class F>
int binop(int op, const ff_u64 *a, const ff_u64 *b, ff_u64 *z, long n) {
  constexpr bool ext = std::is_same<F, ff::fp2_t>::value;
  const F *x = reinterpret_cast<const F *>(a);
  const F *y = reinterpret_cast<const F *>(b);
  F *out = reinterpret_cast<F *>(z);
  for (long i = 0; i < n; i++) {
    switch (op) {
      case HA_ADD: out[i] = F::add(x[i], y[i]); break;
      case HA_SUB: out[i] = F::sub(x[i], y[i]); break;
      case HA_MUL: out[i] = F::mul(x[i], y[i]); break;
      case HA_SQR: out[i] = F::sqr(x[i]); break;
      case HA_NEG: out[i] = F::neg(x[i]); break;
      case HA_DBL: out[i] = F::dbl(x[i]); break;
      case HA_INV: out[i] = F::inverse(x[i]); break;
      case HA_EQ: out[i] = flag<F>(F::eq(x[i], y[i])); break;
      case HA_ONE: out[i] = F::one(); break;
      case HA_ZERO: out[i] = F::zero(); break;
      default:
        if constexpr (ext) {
          switch (op) {
            case HA_CONJ: out[i] = F::conjugate(x[i]); break;
            case HA_ISZERO: out[i] = flag<F>(F::is_zero(x[i])); break;
            default: return -1;
          }
        } else {
          switch (op) {
            case HA_TOMONT: out[i] = F::to_mont(x[i]); break;
            case HA_FROMMONT: out[i] = F::from_mont(x[i]); break;
            case HA_MUL_EVENODD: out[i] = F::mul_evenodd(x[i], y[i]); break;
            case HA_MUL_PTX: out[i] = F::mul_ptx(x[i], y[i]); break;
            case HA_ADD_PTX: out[i] = F::add_ptx(x[i], y[i]); break;
            case HA_SUB_PTX: out[i] = F::sub_ptx(x[i], y[i]); break;
            default: return -1;
          }
        }
    }
  }
  return 0;
}
}  // namespace

extern "C" int ha_fr(int op, const ff_u64 *a, const ff_u64 *b, ff_u64 *z, long n) {
  return binop<ff::fr_t>(op, a, b, z, n);
}
extern "C" int ha_fp(int op, const ff_u64 *a, const ff_u64 *b, ff_u64 *z, long n) {
  return binop<ff::fp_t>(op, a, b, z, n);
}
extern "C" int ha_fp2(int op, const ff_u64 *a, const ff_u64 *b, ff_u64 *z, long n) {
  return binop<ff::fp2_t>(op, a, b, z, n);
}
extern "C" void ha_fp2_mul_fp(const ff_u64 *a, const ff_u64 *f, ff_u64 *z, long n) {
  const ff::fp2_t *x = reinterpret_cast<const ff::fp2_t *>(a);
  const ff::fp_t *y = reinterpret_cast<const ff::fp_t *>(f);
  ff::fp2_t *out = reinterpret_cast<ff::fp2_t *>(z);
  for (long i = 0; i < n; i++) out[i] = ff::fp2_t::mul_fp(x[i], y[i]);
}
extern "C" void ha_fp2_norm(const ff_u64 *a, ff_u64 *z, long n) {
  const ff::fp2_t *x = reinterpret_cast<const ff::fp2_t *>(a);
  ff::fp_t *out = reinterpret_cast<ff::fp_t *>(z);
  for (long i = 0; i < n; i++) out[i] = ff::fp2_t::norm(x[i]);
}
extern "C" void ha_fr_pow(const ff_u64 *a, const ff_u64 *e, int nlimbs, ff_u64 *z) {
  *reinterpret_cast<ff::fr_t *>(z) = ff::fr_t::pow(*reinterpret_cast<const ff::fr_t *>(a), e, nlimbs);
}
