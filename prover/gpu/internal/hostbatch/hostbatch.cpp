// C entry point over batchadd.cuh (through links named *.h, as hostec's:
// Go's build cache then sees an edit to a kernel header) for the Go tests:
// the GPU's batch addition compiled as plain C++ on the host.
#include "kernels_ff.h"
#include "kernels_fp2.h"
#include "kernels_ec.h"
#include "kernels_batchadd.h"
#include "hostbatch.h"

namespace {
template <class F>
void sum(const unsigned long long *bases, const unsigned *idx, long m, long workers, unsigned long long *scratch,
         unsigned long long *out) {
  typedef ec::affine_t<F> affine;
  affine *res = reinterpret_cast<affine *>(out);
  if (m == 0) {
    res->x = F::zero();
    res->y = F::zero();
    return;
  }
  const affine *in = reinterpret_cast<const affine *>(bases);
  affine *a = reinterpret_cast<affine *>(scratch);
  affine *b = a + (m + 1) / 2;
  const unsigned *ix = idx;
  affine *dst = a;
  while (m > 1) {
    for (long w = 0; w < workers; w++) ec::batch_add_pairs<F>(in, ix, m, dst, w, workers);
    m = (m + 1) / 2;
    in = dst;
    ix = 0;
    dst = dst == a ? b : a;
  }
  *res = ix ? in[ix[0]] : in[0];
}
}  // namespace

extern "C" void hba_sum(int g2, const unsigned long long *bases, const unsigned *idx, long m, long workers,
                        unsigned long long *scratch, unsigned long long *out) {
  if (g2)
    sum<ff::fp2_t>(bases, idx, m, workers, scratch, out);
  else
    sum<ff::fp_t>(bases, idx, m, workers, scratch, out);
}
