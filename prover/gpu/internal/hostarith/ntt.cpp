// Serial host runs of the NTT kernels' block functions (ntt.cuh): every
// block in turn, one "thread" each, so the Go tests check the kernels' index
// arithmetic and butterflies against gnark-crypto without a GPU.
#include <vector>

#include "kernels_ntt.h"  // links to ntt.cuh (see hostarith.cpp)
#include "hostarith.h"

using ntt::fr_t;

extern "C" void ha_ntt_pass(ff_u64 *data, const ff_u64 *tw, unsigned logn, unsigned log_mmin,
                            unsigned t, int dit, int in_mode, const ff_u64 *in_table,
                            const ff_u64 *in_c, int out_mode, const ff_u64 *out_table,
                            const ff_u64 *out_c) {
  ntt::PassParams p = {logn, log_mmin, t, dit, in_mode, out_mode};
  unsigned log_e = ntt::pass_log_tile(logn);
  std::vector<fr_t> sm(1u << log_e);
  unsigned blocks = 1u << (logn - log_e);
  const fr_t *ic = reinterpret_cast<const fr_t *>(in_c);
  const fr_t *oc = reinterpret_cast<const fr_t *>(out_c);
  for (unsigned blk = 0; blk < blocks; blk++) {
    ntt::pass_block(reinterpret_cast<fr_t *>(data), reinterpret_cast<const fr_t *>(tw), p,
                    reinterpret_cast<const fr_t *>(in_table), *ic,
                    reinterpret_cast<const fr_t *>(out_table), *oc, blk, 0, 1, sm.data());
  }
}

extern "C" void ha_ntt_powers(ff_u64 *out, const ff_u64 *base, const ff_u64 *first,
                              unsigned count) {
  fr_t *o = reinterpret_cast<fr_t *>(out);
  const fr_t &b = *reinterpret_cast<const fr_t *>(base);
  const fr_t &f = *reinterpret_cast<const fr_t *>(first);
  unsigned chunks = (count + ntt::POWERS_CHUNK - 1) / ntt::POWERS_CHUNK;
  for (unsigned c = 0; c < chunks; c++) ntt::powers_chunk(o, b, f, count, c);
}

extern "C" void ha_pointwise(ff_u64 *a, const ff_u64 *b, const ff_u64 *c, const ff_u64 *den,
                             unsigned n) {
  fr_t *x = reinterpret_cast<fr_t *>(a);
  const fr_t *y = reinterpret_cast<const fr_t *>(b);
  const fr_t *z = reinterpret_cast<const fr_t *>(c);
  const fr_t &d = *reinterpret_cast<const fr_t *>(den);
  for (unsigned i = 0; i < n; i++) x[i] = ntt::pointwise(x[i], y[i], z[i], d);
}
