// C entry points over ec.cuh for the Go tests: the kernels' G1 arithmetic
// compiled as plain C++ on the host.
// The headers are included through links named *.h (kernels_*.h ->
// ../../kernels/*.cuh): go hashes a package's .h files, so an edit to a
// kernel header reruns these tests (prover/gpu's
// TestHostPackagesLinkEveryKernelHeaderTheyInclude checks every include).
#include "kernels_ff.h"
#include "kernels_fp2.h"
#include "kernels_ec.h"
#include "hostec.h"

using ec::g1_affine;
using ec::g1_jac;
using ec::g1_xyzz;
typedef unsigned long long u64;

static const g1_xyzz *X(const u64 *p) { return reinterpret_cast<const g1_xyzz *>(p); }
static const g1_affine *A(const u64 *p) { return reinterpret_cast<const g1_affine *>(p); }
static g1_jac *J(u64 *p) { return reinterpret_cast<g1_jac *>(p); }

extern "C" void he_add_affine(const u64 *p, const u64 *a, u64 *out, long n) {
  for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_add_affine(X(p)[i], A(a)[i]));
}
extern "C" void he_add(const u64 *p, const u64 *q, u64 *out, long n) {
  for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_add(X(p)[i], X(q)[i]));
}
extern "C" void he_dbl(const u64 *p, u64 *out, long n) {
  for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_dbl(X(p)[i]));
}
extern "C" void he_mul_u32(const u64 *p, const unsigned *k, u64 *out, long n) {
  for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_mul_u32(X(p)[i], k[i]));
}
extern "C" void he_from_affine(const u64 *a, u64 *out, long n) {
  for (long i = 0; i < n; i++) J(out)[i] = ec::xyzz_to_jac(ec::xyzz_from_affine(A(a)[i]));
}
extern "C" void he_eq_affine(const u64 *p, const u64 *a, int *out, long n) {
  for (long i = 0; i < n; i++) out[i] = ec::xyzz_eq_affine(X(p)[i], A(a)[i]) ? 1 : 0;
}
