// C entry point over fixedbase.cuh for the Go tests: the kernels'
// fixed-base multiplication and batch affine conversion compiled as plain
// C++ (through links named *.h, so Go's build cache sees an edit of a
// kernel header).
#include "kernels_ff.h"
#include "kernels_fp2.h"
#include "kernels_ec.h"
#include "kernels_fixedbase.h"
#include "hostfixedbase.h"

#include <vector>

typedef unsigned long long u64;

namespace {
template <class F, bool inline_add>
void mul(const u64 *scalars, long n, const u64 *table, unsigned c, unsigned group, u64 *out) {
  typedef ec::affine_t<F> affine;
  typedef ec::xyzz_t<F> xyzz;
  const ff::fr_t *s = reinterpret_cast<const ff::fr_t *>(scalars);
  const affine *t = reinterpret_cast<const affine *>(table);
  affine *o = reinterpret_cast<affine *>(out);
  std::vector<xyzz> sums(n);
  for (long i = 0; i < n; i++) sums[i] = fb::scalar_mul<F, inline_add>(ff::fr_t::from_mont(s[i]), t, c);
  for (long start = 0; start < n; start += group) {
    unsigned len = n - start < (long)group ? (unsigned)(n - start) : group;
    fb::batch_affine<F>(sums.data() + start, len, o + start);
  }
}
}  // namespace

void hfb_mul(int g2, const u64 *scalars, long n, const u64 *table, unsigned c, unsigned group, u64 *out) {
  if (g2)
    mul<ff::fp2_t, false>(scalars, n, table, c, group, out);
  else
    mul<ff::fp_t, true>(scalars, n, table, c, group, out);
}
