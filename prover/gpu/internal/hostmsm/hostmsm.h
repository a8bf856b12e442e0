#ifndef OTELCUZK_HOSTMSM_H
#define OTELCUZK_HOSTMSM_H
#ifdef __cplusplus
extern "C" {
#endif

// hmsm_bucket_sums sums the nb buckets of one window as msm.cu's affine
// path does: counts[b] sorted entries per bucket (index | MSM_NEG_FLAG),
// bucket b's at offsets[b]; levels of msmaffine.cuh's level_thread, each
// level's outputs split among threads of per outputs, until no bucket
// holds more than tail points, then finish_bucket. out gets nb Jacobian
// points (gnark's G1Jac or G2Jac layout). g2 = 0 for G1, 1 for G2;
// scratch holds 2·(n + nb) points of the group (n the entries).
// Returns the number of levels run.
int hmsm_bucket_sums(int g2, const unsigned long long *bases, const unsigned *sorted, const unsigned *counts,
                     const unsigned *offsets, unsigned nb, unsigned tail, unsigned per, unsigned long long *scratch,
                     unsigned *scratch32, unsigned long long *out);

#ifdef __cplusplus
}
#endif
#endif
