// ntt.cuh: the NTT over the BLS12-381 scalar field, as block-level functions
// that the CUDA kernels in ntt.cu call with their thread and block indices,
// and that the hostarith package runs serially on the host (one "thread",
// every block in turn) so CI checks the same index arithmetic against
// gnark-crypto's fft package.
//
// Transforms are iterative radix-2 (Cooley-Tukey DIT on bit-reversed input,
// natural output; Gentleman-Sande DIF on natural input, bit-reversed output),
// the orders gnark-crypto's Domain.FFT uses, so groth16's compute_h never
// needs a bit-reversal pass. Several consecutive stages run in one pass: a
// block loads a tile of 2^t-point sub-transforms into shared memory, runs
// the t stages there, and writes the tile back.
//
// Twiddles: one table per (size, direction); the stage of half-size h uses
// entries [h-1, 2h-1), entry h-1+p = w_{2h}^p with w_{2h} = w^(n/2h) the
// primitive 2h-th root of unity of the domain (w = Generator or
// GeneratorInv). The table holds n-1 elements.
#ifndef OTELCUZK_NTT_CUH
#define OTELCUZK_NTT_CUH

#include "ff.cuh"

#ifdef __CUDA_ARCH__
#define NTT_SYNC() __syncthreads()
#else
#define NTT_SYNC() \
  do {             \
  } while (0)
#endif

// NTT_SKIP_UNIT_TWIDDLE: skip the multiply by w^0 = 1 (on by default: 8%
// faster at 2^24 on the H200 with the other defaults of ntt.cu; bench/ntt.md).
#ifndef NTT_SKIP_UNIT_TWIDDLE
#define NTT_SKIP_UNIT_TWIDDLE 1
#endif

namespace ntt {

typedef ff::fr_t fr_t;

// Per-element scaling applied on load or store of a pass.
enum ScaleMode {
  SCALE_NONE = 0,
  SCALE_CONST = 1,       // x *= c
  SCALE_TABLE = 2,       // x[i] *= table[i]
  SCALE_TABLE_BREV = 3,  // x[i] *= table[bitreverse(i)]
};

// Elements one pass holds in shared memory (per block) at most, as a power of
// two: 2^10 elements = 32 KiB, under the 48 KiB every device gives a block
// without opting in.
static const unsigned LOG_TILE = 10;

FF_HD unsigned bitreverse(unsigned i, unsigned logn) {
  if (logn == 0) return 0;
#ifdef __CUDA_ARCH__
  return __brev(i) >> (32 - logn);
#else
  unsigned r = 0;
  for (unsigned b = 0; b < logn; b++) r |= ((i >> b) & 1u) << (logn - 1 - b);
  return r;
#endif
}

FF_HD fr_t scale(const fr_t &x, unsigned idx, unsigned logn, int mode, const fr_t *table,
                 const fr_t &c) {
  switch (mode) {
    case SCALE_CONST: return fr_t::mul(x, c);
    case SCALE_TABLE: return fr_t::mul(x, table[idx]);
    case SCALE_TABLE_BREV: return fr_t::mul(x, table[bitreverse(idx, logn)]);
    default: return x;
  }
}

// Parameters of one pass: t consecutive radix-2 stages whose smallest
// half-size is 2^log_mmin (so the stages have half-sizes 2^log_mmin ..
// 2^(log_mmin+t-1)). dit selects the butterfly and the stage order (DIT:
// small half-sizes first; DIF: large first).
struct PassParams {
  unsigned logn;
  unsigned log_mmin;
  unsigned t;
  int dit;
  int in_mode;   // ScaleMode applied to each element as it is loaded
  int out_mode;  // ScaleMode applied to each element as it is stored
};

// Elements per block (log2) for a pass: the whole tile, or n if smaller.
FF_HD unsigned pass_log_tile(unsigned logn) { return logn < LOG_TILE ? logn : LOG_TILE; }

// Global index of the element at tile position e in block blk. The tile is
// (groups, k, l): k in [0, 2^t) walks one sub-transform (stride mmin), l in
// [0, lp) runs over consecutive low indices (coalesced loads), groups fill
// the rest of the tile.
FF_HD unsigned pass_index(const PassParams &p, unsigned blk, unsigned e) {
  unsigned log_e = pass_log_tile(p.logn);
  unsigned log_l = log_e - p.t;                               // tile columns
  unsigned log_lp = log_l < p.log_mmin ? log_l : p.log_mmin;  // consecutive run
  unsigned l = e & ((1u << log_lp) - 1);
  unsigned r = e >> log_lp;
  unsigned k = r & ((1u << p.t) - 1);
  unsigned qq = r >> p.t;
  unsigned tile = (blk << (log_l - log_lp)) + qq;
  unsigned log_groups_lo = p.log_mmin - log_lp;
  unsigned lo_group = tile & ((1u << log_groups_lo) - 1);
  unsigned hi = tile >> log_groups_lo;
  return (hi << (p.t + p.log_mmin)) + (k << p.log_mmin) + (lo_group << log_lp) + l;
}

// One pass over the block blk, run by nthreads cooperating threads (tid is
// this thread's rank). sm is the block's shared tile (2^pass_log_tile
// elements). On the host, call with tid = 0, nthreads = 1 for every block.
FF_HD void pass_block(fr_t *data, const fr_t *tw, const PassParams &p, const fr_t *in_table,
                      fr_t in_c, const fr_t *out_table, fr_t out_c, unsigned blk, unsigned tid,
                      unsigned nthreads, fr_t *sm) {
  const unsigned log_e = pass_log_tile(p.logn);
  const unsigned E = 1u << log_e;
  const unsigned log_l = log_e - p.t;
  const unsigned log_lp = log_l < p.log_mmin ? log_l : p.log_mmin;
  const unsigned lp_mask = (1u << log_lp) - 1;
  const unsigned groups_lo_mask = (1u << (p.log_mmin - log_lp)) - 1;

  for (unsigned e = tid; e < E; e += nthreads) {
    unsigned idx = pass_index(p, blk, e);
    sm[e] = scale(data[idx], idx, p.logn, p.in_mode, in_table, in_c);
  }
  NTT_SYNC();

  const unsigned half = E >> 1;
  for (unsigned s = 0; s < p.t; s++) {
    unsigned b = p.dit ? s : p.t - 1 - s;  // stage bit within k
    unsigned h_log = p.log_mmin + b;       // half-size of this stage
    const fr_t *tws = tw + ((1u << h_log) - 1);
    for (unsigned f = tid; f < half; f += nthreads) {
      unsigned l = f & lp_mask;
      unsigned r = f >> log_lp;
      unsigned kk = r & ((1u << (p.t - 1)) - 1);
      unsigned qq = r >> (p.t - 1);
      unsigned k = ((kk >> b) << (b + 1)) | (kk & ((1u << b) - 1));
      unsigned e0 = (((qq << p.t) + k) << log_lp) + l;
      unsigned e1 = e0 + (1u << (b + log_lp));
      // j mod h of the upper element: the low bits of k below b, then the
      // position inside the mmin-run, which is pass_index(p, blk, e0) &
      // mmin_mask: (lo_group << log_lp) | l, read off directly.
      unsigned lo_group = ((blk << (log_l - log_lp)) + qq) & groups_lo_mask;
      unsigned pw = ((k & ((1u << b) - 1)) << p.log_mmin) | (lo_group << log_lp) | l;
      fr_t w = tws[pw];
      fr_t u = sm[e0], v = sm[e1];
#if NTT_SKIP_UNIT_TWIDDLE
      // w_{2h}^0 = 1: whole warps of the h = 1 stage skip the multiply.
      const bool unit = pw == 0;
#else
      const bool unit = false;
#endif
      if (p.dit) {
        if (!unit) v = fr_t::mul(v, w);
        sm[e0] = fr_t::add(u, v);
        sm[e1] = fr_t::sub(u, v);
      } else {
        sm[e0] = fr_t::add(u, v);
        sm[e1] = unit ? fr_t::sub(u, v) : fr_t::mul(fr_t::sub(u, v), w);
      }
    }
    NTT_SYNC();
  }

  for (unsigned e = tid; e < E; e += nthreads) {
    unsigned idx = pass_index(p, blk, e);
    data[idx] = scale(sm[e], idx, p.logn, p.out_mode, out_table, out_c);
  }
}

// Elements of a powers table one thread computes: one exponentiation, then
// a multiplication per element.
static const unsigned POWERS_CHUNK = 32;

// out[i] = first·base^i for i in chunk c ([c·POWERS_CHUNK, ...) ∩ [0, count)).
FF_HD void powers_chunk(fr_t *out, const fr_t &base, const fr_t &first, unsigned count,
                        unsigned c) {
  unsigned s = c * POWERS_CHUNK;
  unsigned e = s + POWERS_CHUNK < count ? s + POWERS_CHUNK : count;
  fr_t x = fr_t::mul(fr_t::pow_u64(base, s), first);
  for (unsigned i = s; i < e; i++) {
    out[i] = x;
    x = fr_t::mul(x, base);
  }
}

// Groth16's pointwise step: a = (a·b − c)·den.
FF_HD fr_t pointwise(const fr_t &a, const fr_t &b, const fr_t &c, const fr_t &den) {
  return fr_t::mul(fr_t::sub(fr_t::mul(a, b), c), den);
}

}  // namespace ntt

#endif  // OTELCUZK_NTT_CUH
