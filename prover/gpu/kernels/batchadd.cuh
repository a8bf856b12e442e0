// batchadd.cuh: the sum of many affine points of G1 or G2 by a tree of
// pairwise affine additions whose slope denominators share one inversion
// per batch (Montgomery's trick: P. L. Montgomery, "Speeding the Pollard
// and elliptic curve methods of factorization", Math. Comp. 48, 1987,
// §10.3.1), the batch addition that sums the bases of the wires whose
// value is 1. Plain templates over the coordinate field, host and device:
// batchadd.cu's kernels call them on the GPU and the hostbatch package
// compiles them with g++ to test them against gnark-crypto.
//
// One level of the tree halves a vector of m points: out[j] = in[2j] +
// in[2j+1] (the last point alone when m is odd). A worker takes the pairs
// j = j0, j0 + stride, ... below the level's (m+1)/2 outputs; for each it
// finds the denominator of the slope (x₂ − x₁ for an addition, 2y₁ for a
// doubling), keeps the running product of those denominators in out[j].x
// (the output slot is free until its sum is written), inverts the product
// once, and walks back, peeling each denominator's inverse off the running
// inverse: 3 multiplications per pair for the trick plus the addition's
// 1 inversion-free slope multiplication, 1 squaring and 1 multiplication,
// against 8M + 2S for a mixed XYZZ addition.
//
// Total: infinity ((0, 0), gnark's encoding) on either side, P + P (a
// doubling) and P + (−P) (infinity, no denominator) are handled per pair.
#ifndef OTELCUZK_BATCHADD_CUH
#define OTELCUZK_BATCHADD_CUH

#include "ec.cuh"

namespace ec {

// batch_point reads point i of the level's input: in[idx[i]] when idx is
// given (the first level gathers the bases of the chosen wires), else in[i].
template <class F>
EC_HD affine_t<F> batch_point(const affine_t<F> *in, const unsigned *idx, long i) {
  return idx ? in[idx[i]] : in[i];
}

// batch_add_pairs sums the pairs j0, j0 + stride, ... (< (m+1)/2) of one
// level: out[j] = in'[2j] + in'[2j+1], in' the m points of in (through idx
// when it is not null). out must not overlap in.
template <class F>
EC_HD void batch_add_pairs(const affine_t<F> *in, const unsigned *idx, long m, affine_t<F> *out, long j0,
                           long stride) {
  const long nout = (m + 1) / 2;
  affine_t<F> inf;
  inf.x = F::zero();
  inf.y = F::zero();
  // Forward: out[j].x holds the product of the denominators before j.
  F acc = F::one();
  for (long j = j0; j < nout; j += stride) {
    affine_t<F> p = batch_point(in, idx, 2 * j);
    affine_t<F> q = 2 * j + 1 < m ? batch_point(in, idx, 2 * j + 1) : inf;
    F den;
    int k = affine_pair_kind(p, q, den);
    out[j].x = acc;
    if (k >= PAIR_ADD) acc = F::mul(acc, den);
  }
  if (j0 >= nout) return;
  F inv = F::inverse(acc);
  long last = j0 + (nout - 1 - j0) / stride * stride;
  for (long j = last; j >= j0; j -= stride) {
    affine_t<F> p = batch_point(in, idx, 2 * j);
    affine_t<F> q = 2 * j + 1 < m ? batch_point(in, idx, 2 * j + 1) : inf;
    F den;
    int k = affine_pair_kind(p, q, den);
    out[j] = affine_pair_sum(k, p, q, den, out[j].x, inv);
  }
}

}  // namespace ec

#endif  // OTELCUZK_BATCHADD_CUH
