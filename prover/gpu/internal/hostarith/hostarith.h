#ifndef OTELCUZK_HOSTARITH_H
#define OTELCUZK_HOSTARITH_H
#ifdef __cplusplus
extern "C" {
#endif
enum {
  HA_ADD = 0, HA_SUB, HA_MUL, HA_SQR, HA_NEG, HA_DBL,
  HA_TOMONT, HA_FROMMONT, HA_INV, HA_EQ, HA_ONE, HA_ZERO
};
void ha_fr(int op, const unsigned long long *a, const unsigned long long *b, unsigned long long *z, long n);
void ha_fp(int op, const unsigned long long *a, const unsigned long long *b, unsigned long long *z, long n);
void ha_fr_pow(const unsigned long long *a, const unsigned long long *e, int nlimbs, unsigned long long *z);
#ifdef __cplusplus
}
#endif
#endif
