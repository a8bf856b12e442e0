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
//   F::mul(a,b) (a·b·R⁻¹; 32-bit PTX chains on the device), F::sqr(a)
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
#ifdef __CUDA_ARCH__
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

#ifdef __CUDA_ARCH__
  // add and sub as 32-bit PTX carry chains (opt-in with -DFF_PTX_ADDSUB=1):
  // a + b, then a − q on the sum, keeping the difference unless it borrowed
  // past the sum's carry.
  static __device__ __forceinline__ Field add_ptx(const Field &a, const Field &b) {
    const int n = 2 * N;
    unsigned aw[n], bw[n], s[n], d[n], c = 0, mask = 0;
    FF_UNROLL for (int j = 0; j < N; j++) {
      aw[2 * j] = (unsigned)a.limb[j];
      aw[2 * j + 1] = (unsigned)(a.limb[j] >> 32);
      bw[2 * j] = (unsigned)b.limb[j];
      bw[2 * j + 1] = (unsigned)(b.limb[j] >> 32);
    }
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(s[0]) : "r"(aw[0]), "r"(bw[0]));
    FF_UNROLL for (int j = 1; j < n; j++)
      asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(s[j]) : "r"(aw[j]), "r"(bw[j]));
    asm volatile("addc.u32 %0, 0, 0;" : "=r"(c));
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(d[0]) : "r"(s[0]), "r"((unsigned)P::q(0)));
    FF_UNROLL for (int j = 1; j < n; j++)
      asm volatile("subc.cc.u32 %0, %1, %2;"
                   : "=r"(d[j])
                   : "r"(s[j]), "r"((unsigned)(P::q(j / 2) >> (32 * (j & 1)))));
    // mask = c − borrow: all ones exactly when the sum is below q.
    asm volatile("subc.u32 %0, %1, 0;" : "=r"(mask) : "r"(c));
    Field z;
    FF_UNROLL for (int j = 0; j < N; j++) {
      unsigned lo = (s[2 * j] & mask) | (d[2 * j] & ~mask);
      unsigned hi = (s[2 * j + 1] & mask) | (d[2 * j + 1] & ~mask);
      z.limb[j] = (ff_u64)lo | ((ff_u64)hi << 32);
    }
    return z;
  }

  static __device__ __forceinline__ Field sub_ptx(const Field &a, const Field &b) {
    const int n = 2 * N;
    unsigned aw[n], bw[n], d[n], r[n], mask = 0;
    FF_UNROLL for (int j = 0; j < N; j++) {
      aw[2 * j] = (unsigned)a.limb[j];
      aw[2 * j + 1] = (unsigned)(a.limb[j] >> 32);
      bw[2 * j] = (unsigned)b.limb[j];
      bw[2 * j + 1] = (unsigned)(b.limb[j] >> 32);
    }
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(d[0]) : "r"(aw[0]), "r"(bw[0]));
    FF_UNROLL for (int j = 1; j < n; j++)
      asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(d[j]) : "r"(aw[j]), "r"(bw[j]));
    asm volatile("subc.u32 %0, 0, 0;" : "=r"(mask));  // all ones when a < b
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r[0]) : "r"(d[0]), "r"((unsigned)P::q(0) & mask));
    FF_UNROLL for (int j = 1; j < n; j++)
      asm volatile("addc.cc.u32 %0, %1, %2;"
                   : "=r"(r[j])
                   : "r"(d[j]), "r"((unsigned)(P::q(j / 2) >> (32 * (j & 1))) & mask));
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
  // tests compare every transform with gnark-crypto.
  static __device__ __forceinline__ Field mul_ptx(const Field &a, const Field &b) {
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
    FF_UNROLL for (int i = 0; i < n; i++) {
      const unsigned bi = bw[i];
      asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[0]) : "r"(aw[0]), "r"(bi));
      FF_UNROLL for (int j = 1; j < n; j++)
        asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[j]) : "r"(aw[j]), "r"(bi));
      asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(t[n]));
      asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[n + 1]));
      asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[1]) : "r"(aw[0]), "r"(bi));
      FF_UNROLL for (int j = 1; j < n; j++)
        asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[j + 1]) : "r"(aw[j]), "r"(bi));
      asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[n + 1]));

      const unsigned m = t[0] * inv;
      asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[0]) : "r"(m), "r"((unsigned)P::q(0)));
      FF_UNROLL for (int j = 1; j < n; j++)
        asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;"
                     : "+r"(t[j])
                     : "r"(m), "r"((unsigned)(P::q(j / 2) >> (32 * (j & 1)))));
      asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(t[n]));
      asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[n + 1]));
      asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[1]) : "r"(m), "r"((unsigned)P::q(0)));
      FF_UNROLL for (int j = 1; j < n; j++)
        asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;"
                     : "+r"(t[j + 1])
                     : "r"(m), "r"((unsigned)(P::q(j / 2) >> (32 * (j & 1)))));
      asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[n + 1]));
      // t[0] is now zero: divide by 2^32.
      FF_UNROLL for (int j = 0; j < n + 1; j++) t[j] = t[j + 1];
      t[n + 1] = 0;
    }
    Field z;
    FF_UNROLL for (int j = 0; j < N; j++)
      z.limb[j] = (ff_u64)t[2 * j] | ((ff_u64)t[2 * j + 1] << 32);
    return reduce_once(z, t[n]);
  }
#endif

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
