// C entry point over msmaffine.cuh (through links named *.h, as hostec's:
// Go's build cache then sees an edit to a kernel header) for the Go
// tests: the GPU MSM's affine bucket sums compiled as plain C++ on the
// host, the levels run as the device runs them (the same offsets, the
// same split of each level's outputs among threads).
#include "kernels_ff.h"
#include "kernels_fp2.h"
#include "kernels_ec.h"
#include "kernels_msm.h"
#include "kernels_msmaffine.h"
#include "hostmsm.h"

namespace {
typedef unsigned u32;

template <class F>
int sums(const unsigned long long *bases, const u32 *sorted, const u32 *counts, const u32 *offsets, u32 nb, u32 tail,
         u32 per, unsigned long long *scratch, u32 *scratch32, unsigned long long *out) {
  typedef ec::affine_t<F> affine;
  typedef ec::jac_t<F> jac;
  u32 n = 0, top = 0;
  for (u32 b = 0; b < nb; b++) {
    n += counts[b];
    if (counts[b] > top) top = counts[b];
  }
  affine *X = reinterpret_cast<affine *>(scratch);
  affine *Y = X + (n + nb);
  // Two count/offset pairs, as the device ping-pongs them.
  u32 *cA = scratch32, *oA = cA + nb, *cB = oA + nb, *oB = cB + nb;
  for (u32 b = 0; b < nb; b++) {
    cA[b] = counts[b];
    oA[b] = offsets[b];
  }
  u32 *icnt = cA, *ioff = oA, *ocnt = cB, *ooff = oB;
  msmaff::source<F> src;
  src.bases = reinterpret_cast<const affine *>(bases);
  src.sorted = sorted;
  src.in = 0;
  int levels = 0;
  while (top > tail) {
    u32 tot = msmaff::scan_window(icnt, nb, ocnt, ooff);
    affine *dst = levels % 2 == 0 ? X : Y;
    for (u32 j0 = 0; j0 < tot; j0 += per) {
      u32 j1 = j0 + per < tot ? j0 + per : tot;
      msmaff::level_thread<F>(src, icnt, ioff, ooff, nb, tot, j0, j1, dst);
    }
    src.sorted = 0;
    src.in = dst;
    u32 *t = icnt;
    icnt = ocnt;
    ocnt = t;
    t = ioff;
    ioff = ooff;
    ooff = t;
    top = (top + 1) / 2;
    levels++;
  }
  jac *res = reinterpret_cast<jac *>(out);
  for (u32 b = 0; b < nb; b++) res[b] = ec::xyzz_to_jac(msmaff::finish_bucket<F>(src, ioff[b], icnt[b]));
  return levels;
}
}  // namespace

extern "C" int hmsm_bucket_sums(int g2, const unsigned long long *bases, const unsigned *sorted,
                                const unsigned *counts, const unsigned *offsets, unsigned nb, unsigned tail,
                                unsigned per, unsigned long long *scratch, unsigned *scratch32,
                                unsigned long long *out) {
  if (g2) return sums<ff::fp2_t>(bases, sorted, counts, offsets, nb, tail, per, scratch, scratch32, out);
  return sums<ff::fp_t>(bases, sorted, counts, offsets, nb, tail, per, scratch, scratch32, out);
}
