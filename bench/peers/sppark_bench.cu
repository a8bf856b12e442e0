// sppark_bench: times sppark's BLS12-381 MSM (G1, G2) and NTT on inputs
// written by bench/peers (the Go side), one job per line of a manifest,
// and writes each result's raw bytes for the Go side to check against
// gnark-crypto. Built by bench/peers/build.sh from a sppark and a blst
// checkout (neither is part of this repository); PEERS_PART selects the
// translation unit (1 the G1 and G2 MSM, 3 NTT, 0 main), so nvcc compiles
// the four in parallel.
//
// Manifest lines (whitespace-separated):
//   g1|g2 NAME POINTS NPOINTS N SCALARS REPS OUT   MSM over N points (the
//         NPOINTS distinct ones of POINTS repeated), N scalars of SCALARS
//         (gnark's Montgomery form, sppark's mont=true), bases resident
//         (uploaded once, not timed), scalars from host memory: pageable,
//         then pinned (cudaHostRegister)
//   ntt NAME INPUT LG REPS OUT                    forward NTT of 2^LG
//         elements resident on the device, natural order in, bit-reversed
//         out (sppark's NR, gnark's DIF)
// Output: one line per job, "RESULT NAME MS_PAGEABLE MS_PINNED" (median
// of REPS after one warm-up; "-" where not timed), or "ERROR NAME text".

#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <vector>
#include <string>
#include <chrono>
#include <algorithm>

#ifndef PEERS_PART
# define PEERS_PART 0
#endif

#if PEERS_PART == 1
# include <ff/bls12-381-fp2.hpp>
# include <ec/jacobian_t.hpp>
# include <ec/xyzz_t.hpp>
typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef jacobian_t<fp2_t> point_fp2_t;
typedef xyzz_t<fp2_t> bucket_fp2_t;
typedef bucket_fp2_t::affine_t affine_fp2_t;
typedef fr_t scalar_t;
# include <msm/pippenger.cuh>
// The kernels of the G2 MSM, instantiated as pippenger.cuh instantiates
// G1's (the host code below is not compiled in the device pass). G1 and
// G2 share a translation unit: sort.cuh's kernel is not a template.
template __global__
void accumulate<bucket_fp2_t, affine_fp2_t::mem_t>(bucket_fp2_t::mem_t buckets_[],
                                                   uint32_t nwins, uint32_t wbits,
                                                   affine_fp2_t::mem_t points_[],
                                                   const vec2d_t<uint32_t> digits,
                                                   const vec2d_t<uint32_t> histogram,
                                                   uint32_t sid);
template __global__
void batch_addition<bucket_fp2_t>(bucket_fp2_t::mem_t buckets[],
                                  const affine_fp2_t::mem_t points[], size_t npoints,
                                  const uint32_t digits[], const uint32_t& ndigits);
template __global__
void integrate<bucket_fp2_t>(bucket_fp2_t::mem_t buckets_[], uint32_t nwins,
                             uint32_t wbits, uint32_t nbits);
#elif PEERS_PART == 3
# include <ff/bls12-381.hpp>
# include <ntt/ntt.cuh>
#endif

#ifndef __CUDA_ARCH__

static bool read_file(const char* path, void* dst, size_t bytes)
{
    FILE* f = fopen(path, "rb");
    if (!f)
        return false;
    size_t got = fread(dst, 1, bytes, f);
    fclose(f);
    return got == bytes;
}

static bool write_file(const char* path, const void* src, size_t bytes)
{
    FILE* f = fopen(path, "wb");
    if (!f)
        return false;
    size_t put = fwrite(src, 1, bytes, f);
    fclose(f);
    return put == bytes;
}

static double now_ms()
{
    return std::chrono::duration<double, std::milli>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t k = v.size();
    return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

#if PEERS_PART == 1
template<class bucket_T, class point_T, class affine_T>
static int run_msm(const char* pts_path, size_t npts, size_t n, const char* sc_path,
                   int reps, const char* out_path, double ms[2], std::string& err)
{
    std::vector<affine_T> pts(n);
    if (!read_file(pts_path, pts.data(), npts * sizeof(affine_T))) {
        err = std::string("cannot read ") + pts_path;
        return 1;
    }
    for (size_t i = npts; i < n; i++)
        pts[i] = pts[i % npts];
    std::vector<scalar_t> sc(n);
    if (!read_file(sc_path, sc.data(), n * sizeof(scalar_t))) {
        err = std::string("cannot read ") + sc_path;
        return 1;
    }
    try {
        msm_t<bucket_T, point_T, affine_T, scalar_t> msm{pts.data(), n};
        point_T out;
        for (int mode = 0; mode < 2; mode++) {
            if (mode == 1 && cudaHostRegister(sc.data(), n * sizeof(scalar_t), cudaHostRegisterDefault) != cudaSuccess) {
                err = "cudaHostRegister failed";
                return 1;
            }
            std::vector<double> ts;
            for (int i = -1; i < reps; i++) {
                double t0 = now_ms();
                RustError e = msm.invoke(out, (const affine_T*)nullptr, n, (const scalar_t*)sc.data(), true);
                double t1 = now_ms();
                if (e.code != cudaSuccess) {
                    err = std::string("invoke: ") + cudaGetErrorString((cudaError_t)e.code);
                    return 1;
                }
                if (i >= 0)
                    ts.push_back(t1 - t0);
            }
            ms[mode] = median(ts);
            if (mode == 1)
                cudaHostUnregister(sc.data());
        }
        if (!write_file(out_path, &out, sizeof(out))) {
            err = std::string("cannot write ") + out_path;
            return 1;
        }
    } catch (const cuda_error& e) {
        err = std::string("cuda error: ") + e.what();
        return 1;
    }
    return 0;
}
#endif

#if PEERS_PART == 1
int peers_msm_g1(const char* p, size_t npts, size_t n, const char* s, int reps, const char* o, double ms[2], std::string& err)
{
    static_assert(sizeof(affine_t) == 96, "G1 affine is gnark's 96 bytes");
    static_assert(sizeof(point_t) == 144, "G1 Jacobian is gnark's 144 bytes");
    return run_msm<bucket_t, point_t, affine_t>(p, npts, n, s, reps, o, ms, err);
}

int peers_msm_g2(const char* p, size_t npts, size_t n, const char* s, int reps, const char* o, double ms[2], std::string& err)
{
    static_assert(sizeof(affine_fp2_t) == 192, "G2 affine is gnark's 192 bytes");
    static_assert(sizeof(point_fp2_t) == 288, "G2 Jacobian is gnark's 288 bytes");
    return run_msm<bucket_fp2_t, point_fp2_t, affine_fp2_t>(p, npts, n, s, reps, o, ms, err);
}
#elif PEERS_PART == 3
int peers_ntt(const char* in_path, int lg, int reps, const char* out_path, double* ms, std::string& err)
{
    size_t n = (size_t)1 << lg;
    std::vector<fr_t> v(n), got(n);
    if (!read_file(in_path, v.data(), n * sizeof(fr_t))) {
        err = std::string("cannot read ") + in_path;
        return 1;
    }
    try {
        auto& gpu = select_gpu(0);
        dev_ptr_t<fr_t> d{n, gpu};
        gpu.HtoD(&d[0], v.data(), n);
        gpu.sync();
        std::vector<double> ts;
        for (int i = -1; i < reps; i++) {
            double t0 = now_ms();
            NTT::Base_dev_ptr(gpu, &d[0], lg, NTT::InputOutputOrder::NR, NTT::Direction::forward, NTT::Type::standard);
            gpu.sync();
            double t1 = now_ms();
            if (i >= 0)
                ts.push_back(t1 - t0);
        }
        *ms = median(ts);
        gpu.HtoD(&d[0], v.data(), n);
        NTT::Base_dev_ptr(gpu, &d[0], lg, NTT::InputOutputOrder::NR, NTT::Direction::forward, NTT::Type::standard);
        gpu.DtoH(got.data(), &d[0], n);
        gpu.sync();
    } catch (const cuda_error& e) {
        err = std::string("cuda error: ") + e.what();
        return 1;
    }
    if (!write_file(out_path, got.data(), n * sizeof(fr_t))) {
        err = std::string("cannot write ") + out_path;
        return 1;
    }
    return 0;
}
#else
int peers_msm_g1(const char*, size_t, size_t, const char*, int, const char*, double[2], std::string&);
int peers_msm_g2(const char*, size_t, size_t, const char*, int, const char*, double[2], std::string&);
int peers_ntt(const char*, int, int, const char*, double*, std::string&);

int main(int argc, char** argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s MANIFEST\n", argv[0]);
        return 2;
    }
    FILE* f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", argv[1]);
        return 2;
    }
    char line[4096];
    int failed = 0;
    while (fgets(line, sizeof(line), f)) {
        char kind[16], name[256], in[1024], sc[1024], out[1024];
        unsigned long long npts, n;
        int reps, lg;
        std::string err;
        double ms[2] = {-1, -1};
        int rc;
        if (sscanf(line, "%15s", kind) != 1)
            continue;
        if (!strcmp(kind, "g1") || !strcmp(kind, "g2")) {
            if (sscanf(line, "%15s %255s %1023s %llu %llu %1023s %d %1023s", kind, name, in, &npts, &n, sc, &reps, out) != 8) {
                fprintf(stderr, "bad line: %s", line);
                return 2;
            }
            rc = kind[1] == '1' ? peers_msm_g1(in, npts, n, sc, reps, out, ms, err)
                                : peers_msm_g2(in, npts, n, sc, reps, out, ms, err);
        } else if (!strcmp(kind, "ntt")) {
            if (sscanf(line, "%15s %255s %1023s %d %d %1023s", kind, name, in, &lg, &reps, out) != 6) {
                fprintf(stderr, "bad line: %s", line);
                return 2;
            }
            rc = peers_ntt(in, lg, reps, out, &ms[0], err);
        } else {
            fprintf(stderr, "unknown job kind %s\n", kind);
            return 2;
        }
        if (rc) {
            printf("ERROR %s %s\n", name, err.c_str());
            failed = 1;
        } else if (ms[1] < 0) {
            printf("RESULT %s %.3f -\n", name, ms[0]);
        } else {
            printf("RESULT %s %.3f %.3f\n", name, ms[0], ms[1]);
        }
        fflush(stdout);
    }
    fclose(f);
    return failed;
}
#endif

#endif // !__CUDA_ARCH__
