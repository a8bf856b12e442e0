#ifndef OTELCUZK_HOSTEC_H
#define OTELCUZK_HOSTEC_H
#ifdef __cplusplus
extern "C" {
#endif

// Point operations of ec.cuh: g2 = 0 for G1 (coordinates in Fp), 1 for
// G2 (in Fp2); points laid out as gnark-crypto's types.
void hec_add_affine(int g2, const unsigned long long *p, const unsigned long long *a, unsigned long long *out, long n);
void hec_add(int g2, const unsigned long long *p, const unsigned long long *q, unsigned long long *out, long n);
void hec_dbl(int g2, const unsigned long long *p, unsigned long long *out, long n);
void hec_neg(int g2, const unsigned long long *p, unsigned long long *out, long n);
void hec_mul_u32(int g2, const unsigned long long *p, const unsigned int *k, unsigned long long *out, long n);
void hec_from_affine(int g2, const unsigned long long *a, unsigned long long *out, long n);
void hec_eq_affine(int g2, const unsigned long long *p, const unsigned long long *a, int *out, long n);
void hec_on_curve(int g2, const unsigned long long *a, int *out, long n);
void hec_bucket_sum(int g2, const unsigned long long *a, const unsigned char *neg, unsigned long long *out, long n);
// sizes of fp2_t, g2_affine, g2_jac, g2_xyzz, g1_affine, g1_jac, g1_xyzz
void hec_sizes(long *out);

#ifdef __cplusplus
}
#endif
#endif
