#ifndef OTELCUZK_HOSTARITH_H
#define OTELCUZK_HOSTARITH_H
#ifdef __cplusplus
extern "C" {
#endif
enum {
  HA_ADD = 0, HA_SUB, HA_MUL, HA_SQR, HA_NEG, HA_DBL,
  HA_TOMONT, HA_FROMMONT, HA_INV, HA_EQ, HA_ONE, HA_ZERO, HA_MUL_EVENODD,
  HA_MUL_PTX, HA_ADD_PTX, HA_SUB_PTX
};
void ha_fr(int op, const unsigned long long *a, const unsigned long long *b, unsigned long long *z, long n);
void ha_fp(int op, const unsigned long long *a, const unsigned long long *b, unsigned long long *z, long n);
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
