// msm_harness.cu: a standalone check and benchmark of the MSM kernels
// (../msm.cu) with the CUDA runtime, for use on a GPU host before (and
// beside) the Go integration. Test vectors come from ./msmvec (gnark-crypto
// results); see that program for the file format.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o msm_harness msm_harness.cu
//   ./msm_harness [-c 13,14,...] [-reps 5] FILE...
//
// For each file and window size it prints one line: file, n, c, pass or
// FAIL, median wall milliseconds of the MSM (scalar upload, kernels, window
// sums download, window combination on the host; bases resident), and the
// median per-kernel times (merge: all merge passes). Exit status
// 1 if any check failed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../msm.cu"

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(2);                                                                             \
    }                                                                                      \
  } while (0)

struct Vec {
  size_t n = 0;
  std::vector<unsigned char> scalars;  // n×32
  std::vector<unsigned char> bases;    // n×96
  unsigned char want[96];
};

static unsigned long long splitmix(unsigned long long &s) {
  s += 0x9e3779b97f4a7c15ULL;
  unsigned long long z = s;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static bool load(const char *path, Vec &v) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  char magic[8];
  unsigned long long n;
  if (fread(magic, 1, 8, f) != 8 || fread(&n, 8, 1, f) != 1) return false;
  v.n = n;
  if (memcmp(magic, "MSMV0", 5) == 0) {
    v.scalars.resize(n * 32);
    v.bases.resize(n * 96);
    if (fread(v.scalars.data(), 1, n * 32, f) != n * 32) return false;
    if (fread(v.bases.data(), 1, n * 96, f) != n * 96) return false;
  } else if (memcmp(magic, "MSMV1", 5) == 0) {
    unsigned long long seed, P;
    if (fread(&seed, 8, 1, f) != 1 || fread(&P, 8, 1, f) != 1) return false;
    std::vector<unsigned char> pool(P * 96);
    if (fread(pool.data(), 1, P * 96, f) != P * 96) return false;
    v.scalars.resize(n * 32);
    v.bases.resize(n * 96);
    unsigned long long st = seed;
    unsigned long long *s = (unsigned long long *)v.scalars.data();
    for (size_t i = 0; i < n; i++) {
      for (int l = 0; l < 4; l++) s[4 * i + l] = splitmix(st);
      s[4 * i + 3] &= 0x3fffffffffffffffULL;
      memcpy(&v.bases[i * 96], &pool[(i % P) * 96], 96);
    }
  } else {
    return false;
  }
  bool ok = fread(v.want, 1, 96, f) == 96;
  fclose(f);
  return ok;
}

struct Plan {
  unsigned n, c, W, nb, seg_cap, m, nslices;
};

static Plan plan(unsigned n, unsigned c) {
  Plan p;
  p.n = n;
  p.c = c;
  p.W = (256 + c - 1) / c;
  p.nb = 1u << (c - 1);
  p.seg_cap = (n + MSM_SEGMENT - 1) / MSM_SEGMENT + std::min(p.nb, n);
  p.m = std::max(1u, std::min((unsigned)MSM_REDUCE_SLICE, p.nb / 1024));
  p.nslices = p.nb / p.m;
  return p;
}

static unsigned auto_c(size_t n) {
  unsigned lg = 0;
  while ((1ull << lg) < n) lg++;
  int c = (int)lg - 5;
  return (unsigned)std::min(16, std::max(6, c));
}

static const char *knames[] = {"fill", "digits", "scan", "scatter", "accum", "merge", "reduce", "wsum"};
enum { NK = 8 };

int main(int argc, char **argv) {
  std::vector<unsigned> cs;
  int reps = 3;
  std::vector<const char *> files;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-c") && i + 1 < argc) {
      for (char *t = strtok(argv[++i], ","); t; t = strtok(nullptr, ",")) cs.push_back(atoi(t));
    } else if (!strcmp(argv[i], "-reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else {
      files.push_back(argv[i]);
    }
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s, %d SMs, %.1f GiB\n", prop.name, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0);
  int failures = 0;
  for (const char *path : files) {
    Vec v;
    if (!load(path, v)) {
      fprintf(stderr, "cannot load %s\n", path);
      failures++;
      continue;
    }
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    std::vector<unsigned> clist = cs;
    if (clist.empty()) clist.push_back(auto_c(v.n));
    void *d_bases, *d_scalars;
    CK(cudaMalloc(&d_bases, v.n * 96));
    CK(cudaMalloc(&d_scalars, v.n * 32));
    CK(cudaMemcpy(d_bases, v.bases.data(), v.n * 96, cudaMemcpyHostToDevice));
    void *h_scalars;
    CK(cudaMallocHost(&h_scalars, v.n * 32));
    memcpy(h_scalars, v.scalars.data(), v.n * 32);
    for (unsigned c : clist) {
      Plan p = plan((unsigned)v.n, c);
      msm_u32 *d_counts, *d_boff, *d_cursor, *d_segoff, *d_sorted, *d_segb;
      ec::g1_xyzz *d_partials, *d_parts, *d_wsums;
      size_t wb = (size_t)p.W * p.nb;
      CK(cudaMalloc(&d_counts, wb * 4));
      CK(cudaMalloc(&d_boff, wb * 4));
      CK(cudaMalloc(&d_cursor, wb * 4));
      CK(cudaMalloc(&d_segoff, (size_t)p.W * (p.nb + 1) * 4));
      CK(cudaMalloc(&d_sorted, (size_t)p.W * p.n * 4));
      CK(cudaMalloc(&d_partials, (size_t)p.W * p.seg_cap * sizeof(ec::g1_xyzz)));
      CK(cudaMalloc(&d_parts, (size_t)p.W * p.nslices * sizeof(ec::g1_xyzz)));
      CK(cudaMalloc(&d_wsums, (size_t)p.W * sizeof(ec::g1_xyzz)));
      CK(cudaMalloc(&d_segb, (size_t)p.W * p.seg_cap * 4));
      unsigned maxseg = (p.n + MSM_SEGMENT - 1) / MSM_SEGMENT;
      std::vector<ec::g1_xyzz> h_wsums(p.W);
      cudaEvent_t ev[NK + 3];
      for (auto &e : ev) CK(cudaEventCreate(&e));
      std::vector<float> tot;
      std::vector<std::vector<float>> kt(NK);
      bool pass = true;
      for (int r = 0; r < reps + 1; r++) {  // first run warms up
        CK(cudaMemset(d_partials, 0xA5, (size_t)p.W * p.seg_cap * sizeof(ec::g1_xyzz)));  // poison
        CK(cudaMemset(d_wsums, 0xA5, (size_t)p.W * sizeof(ec::g1_xyzz)));
        CK(cudaDeviceSynchronize());
        auto t0 = std::chrono::steady_clock::now();
        CK(cudaEventRecord(ev[0]));
        CK(cudaMemcpyAsync(d_scalars, h_scalars, v.n * 32, cudaMemcpyHostToDevice));
        CK(cudaEventRecord(ev[1]));
        msm_fill_u32<<<(unsigned)((wb + 255) / 256), 256>>>(d_counts, 0, (unsigned)wb);
        CK(cudaEventRecord(ev[2]));
        msm_digits_count<<<(p.n + 255) / 256, 256>>>((ff::fr_t *)d_scalars, p.n, p.c, p.W, d_counts);
        CK(cudaEventRecord(ev[3]));
        msm_bucket_scan<<<p.W, MSM_SCAN_THREADS>>>(d_counts, p.nb, d_boff, d_cursor, d_segoff);
        CK(cudaEventRecord(ev[4]));
        msm_scatter<<<(p.n + 255) / 256, 256>>>((ff::fr_t *)d_scalars, p.n, p.c, p.W, d_cursor, d_sorted);
        CK(cudaEventRecord(ev[5]));
        msm_bucket_accumulate<<<dim3((p.seg_cap + 127) / 128, p.W), 128>>>(
            (ec::g1_affine *)d_bases, d_sorted, d_counts, d_boff, d_segoff, p.n, p.nb, p.seg_cap, d_partials, d_segb);
        CK(cudaEventRecord(ev[6]));
        for (unsigned stride = 1; stride < maxseg; stride <<= 1)
          msm_segment_merge<<<dim3((p.seg_cap + 127) / 128, p.W), 128>>>(d_partials, d_segb, d_segoff, p.nb,
                                                                           p.seg_cap, stride);
        CK(cudaEventRecord(ev[7]));
        msm_bucket_reduce<<<dim3((p.nslices + 127) / 128, p.W), 128>>>(d_partials, d_segoff, p.nb, p.m, p.seg_cap,
                                                                         d_parts);
        CK(cudaEventRecord(ev[8]));
        msm_window_sum<<<p.W, MSM_WINDOW_SUM_THREADS>>>(d_parts, p.nslices, d_wsums);
        CK(cudaEventRecord(ev[9]));
        CK(cudaMemcpyAsync(h_wsums.data(), d_wsums, p.W * sizeof(ec::g1_xyzz), cudaMemcpyDeviceToHost));
        CK(cudaEventRecord(ev[10]));
        CK(cudaEventSynchronize(ev[10]));
        CK(cudaGetLastError());
        // Window combination on the host, Horner's rule with ec.cuh's own
        // (host-compiled) formulas.
        ec::g1_xyzz acc = h_wsums[p.W - 1];
        for (int w = (int)p.W - 2; w >= 0; w--) {
          for (unsigned k = 0; k < p.c; k++) acc = ec::xyzz_dbl(acc);
          acc = ec::xyzz_add(acc, h_wsums[w]);
        }
        auto t1 = std::chrono::steady_clock::now();
        if (!ec::xyzz_eq_affine(acc, *(const ec::g1_affine *)v.want)) pass = false;
        if (r == 0) continue;
        float ms;
        tot.push_back(std::chrono::duration<float, std::milli>(t1 - t0).count());
        for (int k = 0; k < NK; k++) {
          CK(cudaEventElapsedTime(&ms, ev[k + 1], ev[k + 2]));
          kt[k].push_back(ms);
        }
      }
      auto med = [](std::vector<float> x) {
        std::sort(x.begin(), x.end());
        return x.empty() ? 0.f : x[x.size() / 2];
      };
      printf("%-26s n=%-9zu c=%-2u %s total=%9.3f ms |", name, v.n, c, pass ? "pass" : "FAIL", med(tot));
      for (int k = 0; k < NK; k++) printf(" %s=%.3f", knames[k], med(kt[k]));
      printf("\n");
      fflush(stdout);
      if (!pass) failures++;
      for (auto &e : ev) cudaEventDestroy(e);
      cudaFree(d_counts);
      cudaFree(d_boff);
      cudaFree(d_cursor);
      cudaFree(d_segoff);
      cudaFree(d_sorted);
      cudaFree(d_partials);
      cudaFree(d_parts);
      cudaFree(d_wsums);
      cudaFree(d_segb);
    }
    cudaFree(d_bases);
    cudaFree(d_scalars);
    cudaFreeHost(h_scalars);
  }
  printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
