#ifndef OTELCUZK_HOSTBATCH_H
#define OTELCUZK_HOSTBATCH_H
#ifdef __cplusplus
extern "C" {
#endif

// hba_sum sums the m points bases[idx[i]] (bases[i] when idx is null) with
// batchadd.cuh's levels, each level's pairs split among workers strided
// workers as the GPU's threads split them, down to one point, written to
// out in gnark's affine layout. g2 = 0 for G1, 1 for G2; scratch holds
// (m+1)/2 + (m+3)/4 points of the group. m = 0 writes infinity.
void hba_sum(int g2, const unsigned long long *bases, const unsigned *idx, long m, long workers,
             unsigned long long *scratch, unsigned long long *out);

#ifdef __cplusplus
}
#endif
#endif
