#ifndef OTELCUZK_HOSTEC_H
#define OTELCUZK_HOSTEC_H
#ifdef __cplusplus
extern "C" {
#endif
// Points are gnark-crypto's layouts: affine 12 limbs (x, y), Jacobian 18
// (X, Y, Z), XYZZ 24 (X, Y, ZZ, ZZZ); all fp limbs in Montgomery form.
// Every function maps n inputs to n outputs in gnark's G1Jac layout.
void he_add_affine(const unsigned long long *p, const unsigned long long *a, unsigned long long *out, long n);
void he_add(const unsigned long long *p, const unsigned long long *q, unsigned long long *out, long n);
void he_dbl(const unsigned long long *p, unsigned long long *out, long n);
void he_mul_u32(const unsigned long long *p, const unsigned int *k, unsigned long long *out, long n);
void he_from_affine(const unsigned long long *a, unsigned long long *out, long n);
void he_eq_affine(const unsigned long long *p, const unsigned long long *a, int *out, long n);
#ifdef __cplusplus
}
#endif
#endif
