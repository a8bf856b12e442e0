#ifndef OTELCUZK_HOSTFIXEDBASE_H
#define OTELCUZK_HOSTFIXEDBASE_H
#ifdef __cplusplus
extern "C" {
#endif

// fixedbase.cuh on the host: out[i] = [scalars[i]]G as gnark affine
// points, g2 = 0 for G1, 1 for G2; scalars in Montgomery form; table as
// fixedbase.G1Table or G2Table for window c; affine conversion in runs of
// group points.
void hfb_mul(int g2, const unsigned long long *scalars, long n, const unsigned long long *table, unsigned c,
             unsigned group, unsigned long long *out);

#ifdef __cplusplus
}
#endif
#endif
