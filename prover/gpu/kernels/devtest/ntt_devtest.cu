// ntt_devtest.cu: standalone check and timing of the NTT kernels with nvcc,
// for GPU hosts without Go. Reads reference lines written by refgen
// (op logn pattern seed w wInv g gInv den hash), regenerates each input,
// runs the kernels with the same pass plan as prover/gpu/nttplan.go, and
// compares the FNV-1a 64 hash of the output. Then times the forward NTT.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o ntt_devtest ntt_devtest.cu
//   ./ntt_devtest refs.txt [bench-logn ...]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../ntt.cu"

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(2);                                                                       \
    }                                                                                \
  } while (0)

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static void input(const std::string &pat, uint64_t seed, std::vector<fr_t> &v) {
  fr_t one = fr_t::one(), rm1 = fr_t::neg(fr_t::one());
  for (size_t i = 0; i < v.size(); i++) {
    if (pat == "rand") {
      for (int j = 0; j < 4; j++) v[i].limb[j] = splitmix64(seed + i * 4 + j);
      v[i].limb[3] &= 0x0fffffffffffffffULL;
    } else if (pat == "one") {
      v[i] = one;
    } else if (pat == "rm1") {
      v[i] = rm1;
    } else {
      v[i] = fr_t::zero();
    }
  }
}

static uint64_t fnv(const std::vector<fr_t> &v) {
  uint64_t h = 0xcbf29ce484222325ULL;
  const unsigned char *p = reinterpret_cast<const unsigned char *>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(fr_t); i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

struct Pass { unsigned log_mmin, t; };

// Same plan as prover/gpu/nttplan.go planNTT.
static std::vector<Pass> plan(unsigned logn, bool dif) {
  std::vector<Pass> ps;
  if (logn == 0) return ps;
  unsigned low = std::min(logn, ntt::LOG_TILE);
  ps.push_back({0, low});
  unsigned rest = logn - low;
  if (rest) {
    unsigned groups = (rest + 6) / 7, at = low;
    for (unsigned g = 0; g < groups; g++) {
      unsigned t = rest / groups + (g < rest % groups ? 1 : 0);
      ps.push_back({at, t});
      at += t;
    }
  }
  if (dif) std::reverse(ps.begin(), ps.end());
  return ps;
}

struct Tables {
  unsigned logn;
  fr_t *tw, *twi, *coset, *cosetInvN;
  fr_t nInv;
};

static void powers(fr_t *out, fr_t base, fr_t first, unsigned count) {
  unsigned blocks = std::min(4096u, (count + 255) / 256);
  ntt_powers<<<blocks, 256>>>(out, base, first, count);
  CK(cudaGetLastError());
}

static fr_t host_pow(fr_t b, uint64_t e) { return fr_t::pow_u64(b, e); }

static void build(Tables &T, unsigned logn, fr_t w, fr_t wi, fr_t g, fr_t gi) {
  size_t n = size_t(1) << logn;
  T.logn = logn;
  CK(cudaMalloc(&T.tw, n * 32));
  CK(cudaMalloc(&T.twi, n * 32));
  CK(cudaMalloc(&T.coset, n * 32));
  CK(cudaMalloc(&T.cosetInvN, n * 32));
  fr_t nn = fr_t::zero();
  nn.limb[0] = n;
  nn = fr_t::to_mont(nn);
  T.nInv = fr_t::inverse(nn);
  fr_t one = fr_t::one();
  for (unsigned hl = 0; hl < logn; hl++) {
    size_t h = size_t(1) << hl;
    powers(T.tw + h - 1, host_pow(w, n / (2 * h)), one, h);
    powers(T.twi + h - 1, host_pow(wi, n / (2 * h)), one, h);
  }
  powers(T.coset, g, one, n);
  powers(T.cosetInvN, gi, T.nInv, n);
}

static void freeT(Tables &T) {
  cudaFree(T.tw); cudaFree(T.twi); cudaFree(T.coset); cudaFree(T.cosetInvN);
}

// The four scaling cases of nttplan.go runNTT.
static void run_ntt(Tables &T, fr_t *data, bool dit, bool inverse, bool coset) {
  std::vector<Pass> ps = plan(T.logn, !dit);
  int in_mode = 0, out_mode = 0;
  const fr_t *in_t = nullptr, *out_t = nullptr;
  fr_t in_c = fr_t::zero(), out_c = fr_t::zero();
  if (!inverse && coset) { in_mode = dit ? 3 : 2; in_t = T.coset; }
  if (inverse && !coset) { out_mode = 1; out_c = T.nInv; }
  if (inverse && coset) { out_mode = dit ? 2 : 3; out_t = T.cosetInvN; }
  unsigned log_e = ntt::pass_log_tile(T.logn);
  unsigned blocks = 1u << (T.logn - log_e);
  unsigned threads = std::min(256u, std::max(1u, (1u << log_e) / 2));
  for (size_t i = 0; i < ps.size(); i++) {
    ntt::PassParams p = {T.logn, ps[i].log_mmin, ps[i].t, dit ? 1 : 0, i == 0 ? in_mode : 0,
                         i + 1 == ps.size() ? out_mode : 0};
    ntt_pass<<<blocks, threads, (32u << log_e)>>>(data, dit ? (inverse ? T.twi : T.tw) : (inverse ? T.twi : T.tw), p,
                                                  in_t, in_c, out_t, out_c);
    CK(cudaGetLastError());
  }
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s refs.txt [bench-logn...]\n", argv[0]); return 2; }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  FILE *f = fopen(argv[1], "r");
  if (!f) { perror(argv[1]); return 2; }
  char line[4096];
  int pass = 0, fail = 0;
  while (fgets(line, sizeof line, f)) {
    char op[64], pat[16];
    unsigned logn;
    unsigned long long seed, want;
    unsigned long long L[20];
    int got = sscanf(line, "%63s %u %15s %llu %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx %llx",
                     op, &logn, pat, &seed, &L[0], &L[1], &L[2], &L[3], &L[4], &L[5], &L[6], &L[7], &L[8], &L[9], &L[10],
                     &L[11], &L[12], &L[13], &L[14], &L[15], &L[16], &L[17], &L[18], &L[19], &want);
    if (got != 25) { fprintf(stderr, "bad line: %s", line); return 2; }
    fr_t gen[5];
    for (int k = 0; k < 5; k++) for (int j = 0; j < 4; j++) gen[k].limb[j] = L[4 * k + j];
    size_t n = size_t(1) << logn;
    Tables T;
    build(T, logn, gen[0], gen[1], gen[2], gen[3]);
    std::vector<fr_t> h(n);
    input(pat, seed, h);
    fr_t *d;
    CK(cudaMalloc(&d, n * 32));
    CK(cudaMemcpy(d, h.data(), n * 32, cudaMemcpyHostToDevice));
    std::string o = op;
    if (o == "fwd_dif") run_ntt(T, d, false, false, false);
    else if (o == "fwd_dif_coset") run_ntt(T, d, false, false, true);
    else if (o == "fwd_dit_coset") run_ntt(T, d, true, false, true);
    else if (o == "inv_dif") run_ntt(T, d, false, true, false);
    else if (o == "inv_dit") run_ntt(T, d, true, true, false);
    else if (o == "inv_dif_coset") run_ntt(T, d, false, true, true);
    else if (o == "computeh") {
      fr_t *b, *c;
      CK(cudaMalloc(&b, n * 32));
      CK(cudaMalloc(&c, n * 32));
      input(pat, seed + (1ULL << 36), h);
      CK(cudaMemcpy(b, h.data(), n * 32, cudaMemcpyHostToDevice));
      input(pat, seed + (2ULL << 36), h);
      CK(cudaMemcpy(c, h.data(), n * 32, cudaMemcpyHostToDevice));
      fr_t *v[3] = {d, b, c};
      for (int k = 0; k < 3; k++) run_ntt(T, v[k], false, true, false);
      for (int k = 0; k < 3; k++) run_ntt(T, v[k], true, false, true);
      groth16_pointwise<<<std::min<size_t>(65535, (n + 255) / 256), 256>>>(d, b, c, gen[4], (unsigned)n);
      CK(cudaGetLastError());
      run_ntt(T, d, false, true, true);
      cudaFree(b);
      cudaFree(c);
    } else { fprintf(stderr, "unknown op %s\n", op); return 2; }
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h.data(), d, n * 32, cudaMemcpyDeviceToHost));
    uint64_t hv = fnv(h);
    bool ok = hv == want;
    ok ? pass++ : fail++;
    printf("%-14s 2^%-2u %-4s %s\n", op, logn, pat, ok ? "PASS" : "FAIL");
    cudaFree(d);
    freeT(T);
  }
  printf("correctness: %d pass, %d fail\n", pass, fail);

  // Device-to-device copy bandwidth (bytes read + written), the floor's
  // denominator.
  {
    size_t bytes = size_t(4) << 30;
    void *x, *y;
    CK(cudaMalloc(&x, bytes));
    CK(cudaMalloc(&y, bytes));
    CK(cudaMemset(x, 1, bytes));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    CK(cudaMemcpy(y, x, bytes, cudaMemcpyDeviceToDevice));
    std::vector<float> ts;
    for (int r = 0; r < 5; r++) {
      cudaEventRecord(e0);
      CK(cudaMemcpy(y, x, bytes, cudaMemcpyDeviceToDevice));
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    printf("d2d copy: %.3f ms for %zu MiB, %.0f GB/s (read+write)\n", ts[2], bytes >> 20, 2.0 * bytes / ts[2] / 1e6);
    cudaFree(x); cudaFree(y);
  }

  // Timing of the forward NTT (DIF, natural in) and of compute_h.
  for (int ai = 2; ai < argc; ai++) {
    unsigned logn = atoi(argv[ai]);
    size_t n = size_t(1) << logn;
    // generators are not needed for timing: any element works the same.
    fr_t w = fr_t::one(); w.limb[0] ^= 12345; 
    Tables T;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    cudaEventRecord(e0);
    build(T, logn, w, w, w, w);
    cudaEventRecord(e1);
    CK(cudaEventSynchronize(e1));
    float tb; cudaEventElapsedTime(&tb, e0, e1);
    std::vector<fr_t> h(n);
    input("rand", 99 + logn, h);
    fr_t *d[3];
    for (int k = 0; k < 3; k++) { CK(cudaMalloc(&d[k], n * 32)); CK(cudaMemcpy(d[k], h.data(), n * 32, cudaMemcpyHostToDevice)); }
    run_ntt(T, d[0], false, false, false);
    CK(cudaDeviceSynchronize());
    std::vector<float> ts;
    for (int r = 0; r < 9; r++) {
      cudaEventRecord(e0);
      run_ntt(T, d[r % 3], false, false, false);
      cudaEventRecord(e1);
      CK(cudaEventSynchronize(e1));
      float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    // each pass timed alone
    std::vector<Pass> ps = plan(logn, true);
    std::string per;
    unsigned log_e = ntt::pass_log_tile(logn);
    for (auto &p : ps) {
      ntt::PassParams pp = {logn, p.log_mmin, p.t, 0, 0, 0};
      cudaEventRecord(e0);
      ntt_pass<<<1u << (logn - log_e), 256, 32u << log_e>>>(d[0], T.tw, pp, nullptr, fr_t::zero(), nullptr, fr_t::zero());
      cudaEventRecord(e1);
      CK(cudaEventSynchronize(e1));
      float ms; cudaEventElapsedTime(&ms, e0, e1);
      char buf[64]; snprintf(buf, sizeof buf, " [m=2^%u t=%u %.3f]", p.log_mmin, p.t, ms); per += buf;
    }
    std::vector<float> th;
    for (int r = 0; r < 3; r++) {
      cudaEventRecord(e0);
      for (int k = 0; k < 3; k++) run_ntt(T, d[k], false, true, false);
      for (int k = 0; k < 3; k++) run_ntt(T, d[k], true, false, true);
      groth16_pointwise<<<std::min<size_t>(65535, (n + 255) / 256), 256>>>(d[0], d[1], d[2], w, (unsigned)n);
      run_ntt(T, d[0], false, true, true);
      cudaEventRecord(e1);
      CK(cudaEventSynchronize(e1));
      float ms; cudaEventElapsedTime(&ms, e0, e1); th.push_back(ms);
    }
    std::sort(th.begin(), th.end());
    printf("bench 2^%u: forward NTT median %.3f ms (min %.3f), passes%s; compute_h %.3f ms; tables %.3f ms\n",
           logn, ts[4], ts[0], per.c_str(), th[1], tb);
    for (int k = 0; k < 3; k++) cudaFree(d[k]);
    freeT(T);
  }
  return fail ? 1 : 0;
}
