// ff.cuh: Montgomery arithmetic over the BLS12-381 fields, for CUDA kernels
// (nvcc and NVRTC) and for plain C++ on the host (the hostarith package
// compiles this same header with g++ and tests it against gnark-crypto).
//
// An element is N little-endian 64-bit limbs holding x·R mod q with
// R = 2^(64·N), exactly gnark-crypto's fr.Element (N = 4, R = 2^256) and
// fp.Element (N = 6, R = 2^384), so a []fr.Element or []fp.Element copies to
// the device byte for byte, with no conversion pass.
//
// Every value this header produces is fully reduced (in [0, q)); every input
// must be too. Multiplication is CIOS Montgomery multiplication (Koç, Acar,
// Kaliski, "Analyzing and comparing Montgomery multiplication algorithms",
// IEEE Micro 1996), the algorithm gnark-crypto uses on the CPU.
//
// API, for F = ff::fr_t or ff::fp_t (all static, __host__ __device__):
//   F::zero(), F::one() (R mod q), F::modulus() (q, not reduced)
//   F::add(a,b), F::sub(a,b), F::neg(a), F::dbl(a)
//   F::mul(a,b) (a·b·R⁻¹; on the device mul_evenodd, or mul_ptx with
//     -DFF_MUL_EVENODD=0), F::sqr(a)
//   F::mul_evenodd(a,b) (32-bit PTX chains, two independent carry chains
//     per row), F::mul_ptx(a,b) (one chain per row, the earlier default)
//   F::to_mont(x) (x canonical -> x·R), F::from_mont(a) (a·R⁻¹)
//   F::eq(a,b), F::is_zero(a)
//   F::pow(a, e, nlimbs) (a^e, e little-endian 64-bit limbs)
//   F::inverse(a) (a^(q-2), so inverse(0) = 0 as in gnark-crypto)
//   operators + - * == != on F values.
#ifndef OTELCUZK_FF_CUH
#define OTELCUZK_FF_CUH

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FF_HD __host__ __device__ __forceinline__
#else
#define FF_HD inline
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FF_UNROLL _Pragma("unroll")
#else
#define FF_UNROLL
#endif

typedef unsigned long long ff_u64;

// Field::mul on the device is mul_evenodd (FF_MUL_EVENODD=1, the default)
// or mul_ptx (FF_MUL_EVENODD=0); both compute the same fully reduced
// product. Measured on an H200 (bench/msm.md, bench/ntt.md): Fr 29.6 ->
// 52.3 G multiplications/s, Fp 13.1 -> 26.7 G/s; ptxas turns the
// even/odd chains into about half as many instructions (IMAD.WIDE pairs).
#ifndef FF_MUL_EVENODD
#define FF_MUL_EVENODD 1
#endif

namespace ff {

// lo(a + b·c + carry), with carry set to the high word. Never overflows:
// (2^64-1) + (2^64-1)^2 + (2^64-1) = 2^128 - 1.
FF_HD ff_u64 mac(ff_u64 a, ff_u64 b, ff_u64 c, ff_u64 &carry) {
#ifdef __CUDA_ARCH__
  ff_u64 lo = b * c;
  ff_u64 hi = __umul64hi(b, c);
  lo += a;
  hi += (lo < a);
  lo += carry;
  hi += (lo < carry);
  carry = hi;
  return lo;
#else
  unsigned __int128 t = (unsigned __int128)b * c + a + carry;
  carry = (ff_u64)(t >> 64);
  return (ff_u64)t;
#endif
}

// a + b + carry (carry in {0,1}), carry set to the carry out.
FF_HD ff_u64 adc(ff_u64 a, ff_u64 b, ff_u64 &carry) {
  ff_u64 s = a + b;
  ff_u64 c1 = s < a;
  ff_u64 r = s + carry;
  ff_u64 c2 = r < s;
  carry = c1 | c2;
  return r;
}

// a - b - borrow (borrow in {0,1}), borrow set to the borrow out.
FF_HD ff_u64 sbb(ff_u64 a, ff_u64 b, ff_u64 &borrow) {
  ff_u64 d = a - b;
  ff_u64 b1 = a < b;
  ff_u64 r = d - borrow;
  ff_u64 b2 = d < borrow;
  borrow = b1 | b2;
  return r;
}

// 32-bit PTX integer instructions with the carry flag made explicit, so that
// one source serves the device and a host emulation the tests run (the
// hostarith package). On the device each helper is the single PTX
// instruction and cf is unused: the hardware carry flag (CC.CF) carries, so
// a chain must be consecutive helper calls, as with raw asm. On the host, cf
// is CC.CF: the .cc forms write the carry out of the addition to it, the c
// forms (madc, addc) add it in, and the rest leave it alone, as the PTX ISA
// defines mad{.hi,.lo}.cc, madc{.hi,.lo}{.cc} and add{c}{.cc}.
namespace ptx {
// d = lo(a·b)
FF_HD void mul_lo(unsigned &d, unsigned a, unsigned b) {
#ifdef __CUDA_ARCH__
  asm volatile("mul.lo.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
  d = a * b;
#endif
}
// d = hi(a·b)
FF_HD void mul_hi(unsigned &d, unsigned a, unsigned b) {
#ifdef __CUDA_ARCH__
  asm volatile("mul.hi.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
  d = (unsigned)(((ff_u64)a * b) >> 32);
#endif
}
// d = lo(a·b) + c, cf = carry out
FF_HD void mad_lo_cc(unsigned &d, unsigned a, unsigned b, unsigned c, unsigned &cf) {
#ifdef __CUDA_ARCH__
  (void)cf;
  asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
#else
  ff_u64 s = (ff_u64)(unsigned)(a * b) + c;
  d = (unsigned)s;
  cf = (unsigned)(s >> 32);
#endif
}
// d = lo(a·b) + c + cf, cf = carry out
FF_HD void madc_lo_cc(unsigned &d, unsigned a, unsigned b, unsigned c, unsigned &cf) {
#ifdef __CUDA_ARCH__
  (void)cf;
  asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
#else
  ff_u64 s = (ff_u64)(unsigned)(a * b) + c + cf;
  d = (unsigned)s;
  cf = (unsigned)(s >> 32);
#endif
}
// d = hi(a·b) + c, cf = carry out
FF_HD void mad_hi_cc(unsigned &d, unsigned a, unsigned b, unsigned c, unsigned &cf) {
#ifdef __CUDA_ARCH__
  (void)cf;
  asm volatile("mad.hi.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
#else
  ff_u64 s = (((ff_u64)a * b) >> 32) + c;
  d = (unsigned)s;
  cf = (unsigned)(s >> 32);
#endif
}
// d = hi(a·b) + c + cf, cf = carry out
FF_HD void madc_hi_cc(unsigned &d, unsigned a, unsigned b, unsigned c, unsigned &cf) {
#ifdef __CUDA_ARCH__
  (void)cf;
  asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
#else
  ff_u64 s = (((ff_u64)a * b) >> 32) + c + cf;
  d = (unsigned)s;
  cf = (unsigned)(s >> 32);
#endif
}
// d = hi(a·b) + c + cf (mod 2^32), no carry out
FF_HD void madc_hi(unsigned &d, unsigned a, unsigned b, unsigned c, unsigned &cf) {
#ifdef __CUDA_ARCH__
  (void)cf;
  asm volatile("madc.hi.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
#else
  d = (unsigned)((((ff_u64)a * b) >> 32) + c + cf);
#endif
}
// d = a + b, cf = carry out
FF_HD void add_cc(unsigned &d, unsigned a, unsigned b, unsigned &cf) {
#ifdef __CUDA_ARCH__
  (void)cf;
  asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
  ff_u64 s = (ff_u64)a + b;
  d = (unsigned)s;
  cf = (unsigned)(s >> 32);
#endif
}
// d = a + b + cf, cf = carry out
FF_HD void addc_cc(unsigned &d, unsigned a, unsigned b, unsigned &cf) {
#ifdef __CUDA_ARCH__
  (void)cf;
  asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
  ff_u64 s = (ff_u64)a + b + cf;
  d = (unsigned)s;
  cf = (unsigned)(s >> 32);
#endif
}
// d = a + b + cf (mod 2^32), no carry out
FF_HD void addc(unsigned &d, unsigned a, unsigned b, unsigned &cf) {
#ifdef __CUDA_ARCH__
  (void)cf;
  asm volatile("addc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
  d = a + b + cf;
#endif
}
// d = a − b, cf = borrow out (sub.cc: CC.CF is the borrow)
FF_HD void sub_cc(unsigned &d, unsigned a, unsigned b, unsigned &cf) {
#ifdef __CUDA_ARCH__
  (void)cf;
  asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
  ff_u64 s = (ff_u64)a - b;
  d = (unsigned)s;
  cf = (unsigned)(s >> 63);
#endif
}
// d = a − b − cf, cf = borrow out
FF_HD void subc_cc(unsigned &d, unsigned a, unsigned b, unsigned &cf) {
#ifdef __CUDA_ARCH__
  (void)cf;
  asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
  ff_u64 s = (ff_u64)a - b - cf;
  d = (unsigned)s;
  cf = (unsigned)(s >> 63);
#endif
}
// d = a − b − cf (mod 2^32), no borrow out
FF_HD void subc(unsigned &d, unsigned a, unsigned b, unsigned &cf) {
#ifdef __CUDA_ARCH__
  (void)cf;
  asm volatile("subc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
  d = a - b - cf;
#endif
}
}  // namespace ptx

// BLS12-381 scalar field r (gnark-crypto ecc/bls12-381/fr, element.go).
struct FrParams {
  static const int N = 4;
  static const ff_u64 INV = 0xfffffffeffffffffULL;  // -q^-1 mod 2^64
  static FF_HD ff_u64 q(int i) {
    const ff_u64 v[4] = {0xffffffff00000001ULL, 0x53bda402fffe5bfeULL,
                         0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL};
    return v[i];
  }
  static FF_HD ff_u64 r1(int i) {  // R mod q
    const ff_u64 v[4] = {8589934590ULL, 6378425256633387010ULL,
                         11064306276430008309ULL, 1739710354780652911ULL};
    return v[i];
  }
  static FF_HD ff_u64 r2(int i) {  // R^2 mod q
    const ff_u64 v[4] = {14526898881837571181ULL, 3129137299524312099ULL,
                         419701826671360399ULL, 524908885293268753ULL};
    return v[i];
  }
};

// BLS12-381 base field p (gnark-crypto ecc/bls12-381/fp, element.go).
struct FpParams {
  static const int N = 6;
  static const ff_u64 INV = 9940570264628428797ULL;  // -q^-1 mod 2^64
  static FF_HD ff_u64 q(int i) {
    const ff_u64 v[6] = {13402431016077863595ULL, 2210141511517208575ULL,
                         7435674573564081700ULL,  7239337960414712511ULL,
                         5412103778470702295ULL,  1873798617647539866ULL};
    return v[i];
  }
  static FF_HD ff_u64 r1(int i) {
    const ff_u64 v[6] = {8505329371266088957ULL,  17002214543764226050ULL,
                         6865905132761471162ULL,  8632934651105793861ULL,
                         6631298214892334189ULL,  1582556514881692819ULL};
    return v[i];
  }
  static FF_HD ff_u64 r2(int i) {
    const ff_u64 v[6] = {17644856173732828998ULL, 754043588434789617ULL,
                         10224657059481499349ULL, 7488229067341005760ULL,
                         11130996698012816685ULL, 1267921511277847466ULL};
    return v[i];
  }
};

template <class P>
struct Field {
  static const int N = P::N;
  ff_u64 limb[N];

  static FF_HD Field zero() {
    Field z;
    FF_UNROLL for (int i = 0; i < N; i++) z.limb[i] = 0;
    return z;
  }
  static FF_HD Field one() {
    Field z;
    FF_UNROLL for (int i = 0; i < N; i++) z.limb[i] = P::r1(i);
    return z;
  }
  static FF_HD Field modulus() {
    Field z;
    FF_UNROLL for (int i = 0; i < N; i++) z.limb[i] = P::q(i);
    return z;
  }

  static FF_HD bool eq(const Field &a, const Field &b) {
    ff_u64 d = 0;
    FF_UNROLL for (int i = 0; i < N; i++) d |= a.limb[i] ^ b.limb[i];
    return d == 0;
  }
  static FF_HD bool is_zero(const Field &a) {
    ff_u64 d = 0;
    FF_UNROLL for (int i = 0; i < N; i++) d |= a.limb[i];
    return d == 0;
  }

  // z = t - q if (hi, t) >= q, where hi is a carry word above t.
  static FF_HD Field reduce_once(const Field &t, ff_u64 hi) {
    Field d;
    ff_u64 borrow = 0;
    FF_UNROLL for (int i = 0; i < N; i++) d.limb[i] = sbb(t.limb[i], P::q(i), borrow);
    // t >= q exactly when the subtraction did not borrow, or a carry was above.
    bool take = (hi != 0) || (borrow == 0);
    Field z;
    FF_UNROLL for (int i = 0; i < N; i++) z.limb[i] = take ? d.limb[i] : t.limb[i];
    return z;
  }

  static FF_HD Field add(const Field &a, const Field &b) {
#if defined(__CUDA_ARCH__) && defined(FF_PTX_ADDSUB) && FF_PTX_ADDSUB
    return add_ptx(a, b);
#endif
    Field t;
    ff_u64 carry = 0;
    FF_UNROLL for (int i = 0; i < N; i++) t.limb[i] = adc(a.limb[i], b.limb[i], carry);
    return reduce_once(t, carry);
  }
  static FF_HD Field dbl(const Field &a) { return add(a, a); }

  static FF_HD Field sub(const Field &a, const Field &b) {
#if defined(__CUDA_ARCH__) && defined(FF_PTX_ADDSUB) && FF_PTX_ADDSUB
    return sub_ptx(a, b);
#endif
    Field t;
    ff_u64 borrow = 0;
    FF_UNROLL for (int i = 0; i < N; i++) t.limb[i] = sbb(a.limb[i], b.limb[i], borrow);
    // a < b: add q back (the result wraps into [0, q)).
    ff_u64 mask = (ff_u64)0 - borrow;
    ff_u64 carry = 0;
    FF_UNROLL for (int i = 0; i < N; i++) t.limb[i] = adc(t.limb[i], P::q(i) & mask, carry);
    return t;
  }

  static FF_HD Field neg(const Field &a) {
    if (is_zero(a)) return a;
    Field t;
    ff_u64 borrow = 0;
    FF_UNROLL for (int i = 0; i < N; i++) t.limb[i] = sbb(P::q(i), a.limb[i], borrow);
    return t;
  }

  // CIOS Montgomery multiplication: a·b·R⁻¹ mod q. On the device, the
  // 32-bit-word version with PTX carry chains (mul_ptx); the GPU has no
  // native 64-bit multiply, and the emulated one costs ~2.5x more.
  static FF_HD Field mul(const Field &a, const Field &b) {
#if defined(__CUDA_ARCH__) && FF_MUL_EVENODD
    return mul_evenodd(a, b);
#elif defined(__CUDA_ARCH__)
    return mul_ptx(a, b);
#else
    return mul_cios64(a, b);
#endif
  }

  // CIOS over 64-bit limbs (the host path, and the reference for mul_ptx).
  static FF_HD Field mul_cios64(const Field &a, const Field &b) {
    ff_u64 t[N + 2];
    FF_UNROLL for (int i = 0; i < N + 2; i++) t[i] = 0;
    FF_UNROLL for (int i = 0; i < N; i++) {
      ff_u64 c = 0;
      FF_UNROLL for (int j = 0; j < N; j++) t[j] = mac(t[j], a.limb[j], b.limb[i], c);
      ff_u64 cc = 0;
      t[N] = adc(t[N], c, cc);
      t[N + 1] = cc;

      ff_u64 m = t[0] * P::INV;
      c = 0;
      (void)mac(t[0], m, P::q(0), c);
      FF_UNROLL for (int j = 1; j < N; j++) t[j - 1] = mac(t[j], m, P::q(j), c);
      cc = 0;
      t[N - 1] = adc(t[N], c, cc);
      t[N] = t[N + 1] + cc;
    }
    Field z;
    FF_UNROLL for (int i = 0; i < N; i++) z.limb[i] = t[i];
    return reduce_once(z, t[N]);
  }
  static FF_HD Field sqr(const Field &a) { return mul(a, a); }

  // Word j of q (32-bit words, little-endian); a constant after unrolling.
  static FF_HD unsigned qword(int j) { return (unsigned)(P::q(j / 2) >> (32 * (j & 1))); }

  // Montgomery multiplication a·b·2^(−64N) mod q over n = 2N 32-bit words
  // with two accumulators, in the style of sppark's mont_t (ff/mont_t.cuh)
  // but derived here: per word b_i of b the products a_j·b_i of even j go to
  // one array ("even" role, word k at weight W^k, W = 2^32) and those of odd
  // j to the other ("odd" role, word k at weight W^(k+1)). Each product's
  // lo and hi words land on a word pair of their own within an array, so
  // each array takes a·b_i (and then m·q) as ONE carry chain lo, hi, lo,
  // hi, ..., and the two arrays' chains are independent of each other,
  // unlike mul_ptx's lo chain → hi chain. After m·q word 0 of the even
  // array is zero; dividing by W then turns the odd array into the next
  // even one (its weights drop to W^k) and the even array, shifted down two
  // words as the next row adds into it, into the next odd one. The arrays
  // are merged once at the end and reduced once.
  //
  // Bounds (why no carry is dropped): with a, b < q and the running value
  // T < 2q before a row, the row's total T + a·b_i + m·q < 2q + 2q(W−1) =
  // 2qW, and T/W < 2q after it. Every partial sum inside a row, and so each
  // array's own value (all terms are non-negative), stays below 2qW ≤ W^(n+1)
  // because 2q ≤ 2^(32n) (q < 2^255 for Fr, n = 8; q < 2^381 for Fp,
  // n = 12): the odd array (top word at weight W^n) never carries out of
  // its top word, so its chains may end without a carry out; the even
  // array's carry out of word n−1 (weight W^n) is added into the odd array's
  // top word. The merged result is the final T < 2q < W^n, and one
  // conditional subtraction of q puts it in [0, q), as gnark-crypto's Mul.
  //
  // Written with the ptx:: helpers, so the host build of this function
  // emulates the device instruction by instruction (hostarith tests it
  // against gnark-crypto); the device uses it unless FF_MUL_EVENODD=0.
  static FF_HD Field mul_evenodd(const Field &a, const Field &b) {
    const int n = 2 * N;
    unsigned aw[n], bw[n], ev[n], od[n];
    FF_UNROLL for (int j = 0; j < N; j++) {
      aw[2 * j] = (unsigned)a.limb[j];
      aw[2 * j + 1] = (unsigned)(a.limb[j] >> 32);
      bw[2 * j] = (unsigned)b.limb[j];
      bw[2 * j + 1] = (unsigned)(b.limb[j] >> 32);
    }
    unsigned cf = 0;
    // Two rows per step, so that the roles of the arrays are fixed per call.
    FF_UNROLL for (int i = 0; i < n; i += 2) {
      evenodd_row(ev, od, aw, bw[i], i == 0, cf);
      evenodd_row(od, ev, aw, bw[i + 1], false, cf);
    }
    // After the last row (n is even) ev holds weights W^k and od[k] weights
    // W^(k−1) (od[0] is the zeroed word): the result is ev + od[1..n−1].
    ptx::add_cc(ev[0], ev[0], od[1], cf);
    FF_UNROLL for (int k = 1; k < n - 1; k++) ptx::addc_cc(ev[k], ev[k], od[k + 1], cf);
    ptx::addc(ev[n - 1], ev[n - 1], 0, cf);
    Field z;
    FF_UNROLL for (int j = 0; j < N; j++)
      z.limb[j] = (ff_u64)ev[2 * j] | ((ff_u64)ev[2 * j + 1] << 32);
    return reduce_once(z, 0);
  }

  // One row of mul_evenodd: adds a·bi and then m·q, m = e[0]·(−q⁻¹ mod W),
  // to the value e + W·o (e in the even role, o in the odd role), leaving
  // e[0] = 0. On entry (not the first row) e holds weights W^k and o, the
  // previous row's even array, weights W^(k−1) with o[0] = 0: o[1] joins
  // e[0] and o shifts down two words while the odd-j products are added.
  static FF_HD void evenodd_row(unsigned *e, unsigned *o, const unsigned *aw, unsigned bi,
                                bool first, unsigned &cf) {
    const int n = 2 * N;
    if (first) {
      FF_UNROLL for (int j = 0; j < n; j += 2) {
        ptx::mul_lo(e[j], aw[j], bi);
        ptx::mul_hi(e[j + 1], aw[j], bi);
        ptx::mul_lo(o[j], aw[j + 1], bi);
        ptx::mul_hi(o[j + 1], aw[j + 1], bi);
      }
    } else {
      // odd role: o[1] → e[0] with its carry at weight W, then a_(j+1)·bi
      // (weight W^(j+1)) plus the old o[j+2], o[j+3] into o[j], o[j+1].
      ptx::add_cc(e[0], e[0], o[1], cf);
      FF_UNROLL for (int j = 0; j < n - 2; j += 2) {
        ptx::madc_lo_cc(o[j], aw[j + 1], bi, o[j + 2], cf);
        ptx::madc_hi_cc(o[j + 1], aw[j + 1], bi, o[j + 3], cf);
      }
      ptx::madc_lo_cc(o[n - 2], aw[n - 1], bi, 0, cf);
      ptx::madc_hi(o[n - 1], aw[n - 1], bi, 0, cf);  // hi ≤ W−2: no carry out
      // even role: a_j·bi for even j, its carry out (weight W^n) to o[n−1].
      ptx::mad_lo_cc(e[0], aw[0], bi, e[0], cf);
      ptx::madc_hi_cc(e[1], aw[0], bi, e[1], cf);
      FF_UNROLL for (int j = 2; j < n; j += 2) {
        ptx::madc_lo_cc(e[j], aw[j], bi, e[j], cf);
        ptx::madc_hi_cc(e[j + 1], aw[j], bi, e[j + 1], cf);
      }
      ptx::addc(o[n - 1], o[n - 1], 0, cf);
    }
    const unsigned m = e[0] * (unsigned)P::INV;
    // m·q: odd words of q into o (no carry out of o's top word, by the
    // bound), even words into e with the carry out to o[n−1].
    ptx::mad_lo_cc(o[0], m, qword(1), o[0], cf);
    ptx::madc_hi_cc(o[1], m, qword(1), o[1], cf);
    FF_UNROLL for (int j = 2; j < n - 2; j += 2) {
      ptx::madc_lo_cc(o[j], m, qword(j + 1), o[j], cf);
      ptx::madc_hi_cc(o[j + 1], m, qword(j + 1), o[j + 1], cf);
    }
    ptx::madc_lo_cc(o[n - 2], m, qword(n - 1), o[n - 2], cf);
    ptx::madc_hi(o[n - 1], m, qword(n - 1), o[n - 1], cf);
    ptx::mad_lo_cc(e[0], m, qword(0), e[0], cf);
    ptx::madc_hi_cc(e[1], m, qword(0), e[1], cf);
    FF_UNROLL for (int j = 2; j < n; j += 2) {
      ptx::madc_lo_cc(e[j], m, qword(j), e[j], cf);
      ptx::madc_hi_cc(e[j + 1], m, qword(j), e[j + 1], cf);
    }
    ptx::addc(o[n - 1], o[n - 1], 0, cf);
  }

  // add and sub as 32-bit PTX carry chains (the device's add and sub with
  // FF_PTX_ADDSUB=1, the default of the NTT and MSM modules): a + b, then
  // a − q on the sum, keeping the difference unless it borrowed past the
  // sum's carry. Written with the ptx:: helpers, so the host runs the same
  // chains through their emulation (hostarith tests them against
  // gnark-crypto).
  static FF_HD Field add_ptx(const Field &a, const Field &b) {
    const int n = 2 * N;
    unsigned aw[n], bw[n], s[n], d[n], c = 0, mask = 0, cf = 0;
    FF_UNROLL for (int j = 0; j < N; j++) {
      aw[2 * j] = (unsigned)a.limb[j];
      aw[2 * j + 1] = (unsigned)(a.limb[j] >> 32);
      bw[2 * j] = (unsigned)b.limb[j];
      bw[2 * j + 1] = (unsigned)(b.limb[j] >> 32);
    }
    ptx::add_cc(s[0], aw[0], bw[0], cf);
    FF_UNROLL for (int j = 1; j < n; j++) ptx::addc_cc(s[j], aw[j], bw[j], cf);
    ptx::addc(c, 0, 0, cf);
    ptx::sub_cc(d[0], s[0], qword(0), cf);
    FF_UNROLL for (int j = 1; j < n; j++) ptx::subc_cc(d[j], s[j], qword(j), cf);
    // mask = c − borrow: all ones exactly when the sum is below q.
    ptx::subc(mask, c, 0, cf);
    Field z;
    FF_UNROLL for (int j = 0; j < N; j++) {
      unsigned lo = (s[2 * j] & mask) | (d[2 * j] & ~mask);
      unsigned hi = (s[2 * j + 1] & mask) | (d[2 * j + 1] & ~mask);
      z.limb[j] = (ff_u64)lo | ((ff_u64)hi << 32);
    }
    return z;
  }

  static FF_HD Field sub_ptx(const Field &a, const Field &b) {
    const int n = 2 * N;
    unsigned aw[n], bw[n], d[n], r[n], mask = 0, cf = 0;
    FF_UNROLL for (int j = 0; j < N; j++) {
      aw[2 * j] = (unsigned)a.limb[j];
      aw[2 * j + 1] = (unsigned)(a.limb[j] >> 32);
      bw[2 * j] = (unsigned)b.limb[j];
      bw[2 * j + 1] = (unsigned)(b.limb[j] >> 32);
    }
    ptx::sub_cc(d[0], aw[0], bw[0], cf);
    FF_UNROLL for (int j = 1; j < n; j++) ptx::subc_cc(d[j], aw[j], bw[j], cf);
    ptx::subc(mask, 0, 0, cf);  // all ones when a < b
    ptx::add_cc(r[0], d[0], qword(0) & mask, cf);
    FF_UNROLL for (int j = 1; j < n; j++) ptx::addc_cc(r[j], d[j], qword(j) & mask, cf);
    Field z;
    FF_UNROLL for (int j = 0; j < N; j++) z.limb[j] = (ff_u64)r[2 * j] | ((ff_u64)r[2 * j + 1] << 32);
    return z;
  }

  // CIOS over 2N 32-bit words: per word of b, one carry chain adds the low
  // halves of a·b_i, a second the high halves (one word up), then the same
  // for m·q with m = t_0·(−q⁻¹ mod 2^32), and the result shifts down a word.
  // Words of q and −q⁻¹ are compile-time constants after unrolling. The
  // chains rely on the carry flag surviving between consecutive asm
  // statements, as ec-gpu-gen's and sppark's field code does; the device
  // tests compare every transform with gnark-crypto, and the host build
  // (the ptx:: helpers' emulation) is tested against it in hostarith.
  static FF_HD Field mul_ptx(const Field &a, const Field &b) {
    const int n = 2 * N;
    unsigned aw[n], bw[n], t[n + 2];
    FF_UNROLL for (int j = 0; j < N; j++) {
      aw[2 * j] = (unsigned)a.limb[j];
      aw[2 * j + 1] = (unsigned)(a.limb[j] >> 32);
      bw[2 * j] = (unsigned)b.limb[j];
      bw[2 * j + 1] = (unsigned)(b.limb[j] >> 32);
    }
    FF_UNROLL for (int j = 0; j < n + 2; j++) t[j] = 0;
    const unsigned inv = (unsigned)P::INV;
    unsigned cf = 0;
    FF_UNROLL for (int i = 0; i < n; i++) {
      const unsigned bi = bw[i];
      ptx::mad_lo_cc(t[0], aw[0], bi, t[0], cf);
      FF_UNROLL for (int j = 1; j < n; j++) ptx::madc_lo_cc(t[j], aw[j], bi, t[j], cf);
      ptx::addc_cc(t[n], t[n], 0, cf);
      ptx::addc(t[n + 1], t[n + 1], 0, cf);
      ptx::mad_hi_cc(t[1], aw[0], bi, t[1], cf);
      FF_UNROLL for (int j = 1; j < n; j++) ptx::madc_hi_cc(t[j + 1], aw[j], bi, t[j + 1], cf);
      ptx::addc(t[n + 1], t[n + 1], 0, cf);

      const unsigned m = t[0] * inv;
      ptx::mad_lo_cc(t[0], m, qword(0), t[0], cf);
      FF_UNROLL for (int j = 1; j < n; j++) ptx::madc_lo_cc(t[j], m, qword(j), t[j], cf);
      ptx::addc_cc(t[n], t[n], 0, cf);
      ptx::addc(t[n + 1], t[n + 1], 0, cf);
      ptx::mad_hi_cc(t[1], m, qword(0), t[1], cf);
      FF_UNROLL for (int j = 1; j < n; j++) ptx::madc_hi_cc(t[j + 1], m, qword(j), t[j + 1], cf);
      ptx::addc(t[n + 1], t[n + 1], 0, cf);
      // t[0] is now zero: divide by 2^32.
      FF_UNROLL for (int j = 0; j < n + 1; j++) t[j] = t[j + 1];
      t[n + 1] = 0;
    }
    Field z;
    FF_UNROLL for (int j = 0; j < N; j++)
      z.limb[j] = (ff_u64)t[2 * j] | ((ff_u64)t[2 * j + 1] << 32);
    return reduce_once(z, t[n]);
  }

  static FF_HD Field to_mont(const Field &x) {
    Field r2;
    FF_UNROLL for (int i = 0; i < N; i++) r2.limb[i] = P::r2(i);
    return mul(x, r2);
  }
  static FF_HD Field from_mont(const Field &a) {
    Field raw1 = zero();
    raw1.limb[0] = 1;
    return mul(a, raw1);
  }

  // a^e, e given as nlimbs little-endian 64-bit limbs (left-to-right
  // square-and-multiply).
  static FF_HD Field pow(const Field &a, const ff_u64 *e, int nlimbs) {
    Field r = one();
    bool started = false;  // skip the squarings of leading zero bits
    for (int i = nlimbs - 1; i >= 0; i--) {
      for (int bit = 63; bit >= 0; bit--) {
        if (started) r = sqr(r);
        if ((e[i] >> bit) & 1) {
          r = started ? mul(r, a) : a;
          started = true;
        }
      }
    }
    return r;
  }
  static FF_HD Field pow_u64(const Field &a, ff_u64 e) { return pow(a, &e, 1); }

  // Fermat inverse a^(q-2); inverse(0) = 0 as in gnark-crypto.
  static FF_HD Field inverse(const Field &a) {
    ff_u64 e[N];
    FF_UNROLL for (int i = 0; i < N; i++) e[i] = P::q(i);
    e[0] -= 2;  // q[0] > 2 for both fields: no borrow
    return pow(a, e, N);
  }

  FF_HD Field operator+(const Field &b) const { return add(*this, b); }
  FF_HD Field operator-(const Field &b) const { return sub(*this, b); }
  FF_HD Field operator*(const Field &b) const { return mul(*this, b); }
  FF_HD bool operator==(const Field &b) const { return eq(*this, b); }
  FF_HD bool operator!=(const Field &b) const { return !eq(*this, b); }
};

typedef Field<FrParams> fr_t;
typedef Field<FpParams> fp_t;

}  // namespace ff

#endif  // OTELCUZK_FF_CUH
