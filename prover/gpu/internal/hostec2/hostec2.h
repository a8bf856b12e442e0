#ifndef OTELCUZK_HOSTEC2_H
#define OTELCUZK_HOSTEC2_H
#ifdef __cplusplus
extern "C" {
#endif
// Layouts are gnark-crypto's, all fp limbs in Montgomery form: E2 12 limbs
// (A0, A1); G2Affine 24 (X, Y); G2Jac 36 (X, Y, Z); XYZZ 48 (X, Y, ZZ, ZZZ).

// Fp2 (fp2.cuh), element by element over n elements. Unary ops ignore b;
// H2_EQ writes 1 or 0 (not Montgomery form) into the low limb of z[i].
enum {
  H2_ADD = 0,
  H2_SUB = 1,
  H2_MUL = 2,
  H2_SQR = 3,
  H2_NEG = 4,
  H2_DBL = 5,
  H2_CONJ = 6,
  H2_INV = 7,
  H2_EQ = 8,
  H2_ONE = 9,
  H2_ZERO = 10,
  H2_ISZERO = 11
};
int h2_fp2(int op, const unsigned long long *a, const unsigned long long *b, unsigned long long *z, long n);
// z[i] = a[i]·f[i] with f in Fp (6 limbs each).
void h2_fp2_mul_fp(const unsigned long long *a, const unsigned long long *f, unsigned long long *z, long n);
// z[i] = norm(a[i]) in Fp (6 limbs each).
void h2_fp2_norm(const unsigned long long *a, unsigned long long *z, long n);

// G2 (ec_g2.cuh): every point result is written in gnark's G2Jac layout.
void h2_add_affine(const unsigned long long *p, const unsigned long long *a, unsigned long long *out, long n);
void h2_add(const unsigned long long *p, const unsigned long long *q, unsigned long long *out, long n);
void h2_dbl(const unsigned long long *p, unsigned long long *out, long n);
void h2_neg(const unsigned long long *p, unsigned long long *out, long n);
void h2_mul_u32(const unsigned long long *p, const unsigned int *k, unsigned long long *out, long n);
void h2_from_affine(const unsigned long long *a, unsigned long long *out, long n);
void h2_eq_affine(const unsigned long long *p, const unsigned long long *a, int *out, long n);
void h2_on_curve(const unsigned long long *a, int *out, long n);
// One bucket: the sum over i of a[i], or of −a[i] (affine_neg) where
// neg[i] != 0, accumulated with xyzz_add_affine from infinity; one G2Jac.
void h2_bucket_sum(const unsigned long long *a, const unsigned char *neg, unsigned long long *out, long n);
// The sizes of fp2_t, g2_affine, g2_jac and g2_xyzz in bytes, so the Go side
// can check them against gnark's types.
void h2_sizes(long *out);
#ifdef __cplusplus
}
#endif
#endif
