// C entry points over ff.cuh for the Go tests: the kernels' field arithmetic
// compiled as plain C++ on the host. Each call works on n elements laid out
// as gnark-crypto lays out []fr.Element / []fp.Element.
#include "kernels_ff.h"  // links to ff.cuh: go hashes .h files, so edits to the kernels rebuild this package
#include "hostarith.h"

namespace {
template <class F>
void binop(int op, const ff_u64 *a, const ff_u64 *b, ff_u64 *z, long n) {
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
      case HA_TOMONT: out[i] = F::to_mont(x[i]); break;
      case HA_FROMMONT: out[i] = F::from_mont(x[i]); break;
      case HA_INV: out[i] = F::inverse(x[i]); break;
      case HA_EQ: {
        F r = F::zero();
        r.limb[0] = F::eq(x[i], y[i]) ? 1 : 0;
        out[i] = r;
        break;
      }
      case HA_ONE: out[i] = F::one(); break;
      case HA_ZERO: out[i] = F::zero(); break;
      case HA_MUL_EVENODD: out[i] = F::mul_evenodd(x[i], y[i]); break;
      case HA_MUL_PTX: out[i] = F::mul_ptx(x[i], y[i]); break;
      case HA_ADD_PTX: out[i] = F::add_ptx(x[i], y[i]); break;
      case HA_SUB_PTX: out[i] = F::sub_ptx(x[i], y[i]); break;
    }
  }
}
}  // namespace

extern "C" void ha_fr(int op, const ff_u64 *a, const ff_u64 *b, ff_u64 *z, long n) {
  binop<ff::fr_t>(op, a, b, z, n);
}
extern "C" void ha_fp(int op, const ff_u64 *a, const ff_u64 *b, ff_u64 *z, long n) {
  binop<ff::fp_t>(op, a, b, z, n);
}
extern "C" void ha_fr_pow(const ff_u64 *a, const ff_u64 *e, int nlimbs, ff_u64 *z) {
  *reinterpret_cast<ff::fr_t *>(z) = ff::fr_t::pow(*reinterpret_cast<const ff::fr_t *>(a), e, nlimbs);
}
