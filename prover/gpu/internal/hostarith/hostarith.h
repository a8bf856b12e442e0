#ifndef OTELCUZK_HOSTARITH_H
#define OTELCUZK_HOSTARITH_H
#ifdef __cplusplus
extern "C" {
#endif
// The operations of ha_fr, ha_fp (ff.cuh's fr_t and fp_t) and ha_fp2
// (fp2.cuh's fp2_t); each returns -1 for an op its field lacks, else 0.
enum {
  HA_ADD = 0, HA_SUB, HA_MUL, HA_SQR, HA_NEG, HA_DBL,
  HA_TOMONT, HA_FROMMONT, HA_INV, HA_EQ, HA_ONE, HA_ZERO, HA_MUL_EVENODD,
  HA_MUL_PTX, HA_ADD_PTX, HA_SUB_PTX, HA_CONJ, HA_ISZERO
};
int ha_fr(int op, const unsigned long long *a, const unsigned long long *b, unsigned long long *z, long n);
int ha_fp(int op, const unsigned long long *a, const unsigned long long *b, unsigned long long *z, long n);
int ha_fp2(int op, const unsigned long long *a, const unsigned long long *b, unsigned long long *z, long n);
void ha_fp2_mul_fp(const unsigned long long *a, const unsigned long long *f, unsigned long long *z, long n);
void ha_fp2_norm(const unsigned long long *a, unsigned long long *z, long n);
void ha_fr_pow(const unsigned long long *a, const unsigned long long *e, int nlimbs, unsigned long long *z);
void ha_ntt_pass(unsigned long long *data, const unsigned long long *tw, unsigned logn,
                 unsigned log_mmin, unsigned t, int dit, int in_mode,
                 const unsigned long long *in_table, const unsigned long long *in_c,
                 int out_mode, const unsigned long long *out_table,
                 const unsigned long long *out_c);
void ha_ntt_powers(unsigned long long *out, const unsigned long long *base,
                   const unsigned long long *first, unsigned count);
void ha_pointwise(unsigned long long *a, const unsigned long long *b,
                  const unsigned long long *c, const unsigned long long *den, unsigned n);
#ifdef __cplusplus
}
#endif
#endif
