// multistream: a CUDA C++ runtime-API program of supraseal-c2's shape,
// knowing nothing of tracing: several host threads, each with its own
// streams, stream-ordered allocation (cudaMallocAsync/cudaFreeAsync),
// events that make one stream wait for another, copies both ways, a
// memset, and one outer NVTX range per job whose message may carry a W3C
// traceparent, so that `cuzk gpu-trace` puts the job's kernels in the
// caller's trace.
//
//   multistream [--threads 4] [--streams 2] [--jobs 3] [--elems 1048576]
//               [--traceparent 00-<trace>-<span>-01]
//               [--loop N]                  N launches of a kernel of a few µs on one
//                                           stream, timed (the overhead loop): the wall
//                                           time, and the host's time inside the launch
//                                           calls and inside the syncs
//               [--loop-range]              the loop inside one NVTX push range
//               [--loop-iters 16]           the loop kernel's multiply-adds a thread (more:
//                                           a longer kernel, so the GPU bounds the loop)
//               [--end exit|_exit|sigterm|crash]   how the program ends
//
// It checks every result and every CUDA call, and exits 1 on a wrong one.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#define CHECK(call)                                                                          \
	do {                                                                                     \
		cudaError_t e_ = (call);                                                             \
		if (e_ != cudaSuccess) {                                                             \
			std::fprintf(stderr, "multistream: %s: %s (%s:%d)\n", #call, cudaGetErrorString(e_), \
			             __FILE__, __LINE__);                                                \
			std::exit(1);                                                                    \
		}                                                                                    \
	} while (0)

__global__ void fill(float *x, size_t n, float v) {
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n) x[i] = v + (float)(i % 7);
}

__global__ void axpy(float *y, const float *x, size_t n, float a) {
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n) y[i] += a * x[i];
}

#include "shortloop.cuh"

struct Options {
	int threads = 4, streams = 2, jobs = 3;
	size_t elems = 1 << 20;
	std::string traceparent, end = "exit";
	long loop = 0;
	int loop_iters = 16;
	bool loop_range = false;
};

static bool run_job(const Options &o, int thread, int job) {
	char msg[256];
	if (!o.traceparent.empty())
		std::snprintf(msg, sizeof msg, "multistream.job thread=%d job=%d traceparent=%s", thread, job, o.traceparent.c_str());
	else
		std::snprintf(msg, sizeof msg, "multistream.job thread=%d job=%d", thread, job);
	nvtxRangePushA(msg);
	std::vector<cudaStream_t> s(o.streams);
	for (auto &st : s) CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	size_t n = o.elems, bytes = n * sizeof(float);
	float *x, *y;
	CHECK(cudaMallocAsync(&x, bytes, s[0]));
	CHECK(cudaMallocAsync(&y, bytes, s[0]));
	std::vector<float> host(n, 1.0f);
	cudaEvent_t ready, done;
	CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
	unsigned blocks = (unsigned)((n + 255) / 256);
	nvtxRangePushA("upload");
	CHECK(cudaMemcpyAsync(y, host.data(), bytes, cudaMemcpyHostToDevice, s[0]));
	CHECK(cudaMemsetAsync(x, 0, bytes, s[0]));
	CHECK(cudaEventRecord(ready, s[0]));
	nvtxRangePop();
	nvtxRangePushA("compute");
	// Each other stream waits for the upload, fills its own part of x.
	for (int k = 1; k < o.streams; k++) CHECK(cudaStreamWaitEvent(s[k], ready, 0));
	fill<<<blocks, 256, 0, s[o.streams > 1 ? 1 : 0]>>>(x, n, (float)job);
	CHECK(cudaGetLastError());
	CHECK(cudaEventRecord(done, s[o.streams > 1 ? 1 : 0]));
	CHECK(cudaStreamWaitEvent(s[0], done, 0));
	axpy<<<blocks, 256, 0, s[0]>>>(y, x, n, 2.0f);
	CHECK(cudaGetLastError());
	nvtxRangePop();
	nvtxRangePushA("download");
	CHECK(cudaMemcpyAsync(host.data(), y, bytes, cudaMemcpyDeviceToHost, s[0]));
	CHECK(cudaFreeAsync(x, s[0]));
	CHECK(cudaFreeAsync(y, s[0]));
	CHECK(cudaStreamSynchronize(s[0]));
	nvtxRangePop();
	bool ok = true;
	for (size_t i = 0; i < n; i += n / 17 + 1)
		if (host[i] != 1.0f + 2.0f * ((float)job + (float)(i % 7))) ok = false;
	for (auto &st : s) CHECK(cudaStreamDestroy(st));
	CHECK(cudaEventDestroy(ready));
	CHECK(cudaEventDestroy(done));
	nvtxRangePop();
	return ok;
}

static int loop(long n, int iters, bool range) {
	const unsigned elems = 1 << 16;
	float *x;
	cudaStream_t s;
	short_loop_start(elems, iters, &x, &s);
	if (range) nvtxRangePushA("multistream.loop");
	// The host's time inside the launch calls says what bounds the loop:
	// when it is below the wall time a kernel, the GPU is (the host waits
	// in the syncs); when it reaches it, the launches are.
	using clk = std::chrono::steady_clock;
	clk::duration in_launch{}, in_sync{};
	auto t0 = clk::now();
	for (long i = 0; i < n; i++) {
		auto a = clk::now();
		short_kernel<<<elems / 256, 256, 0, s>>>(x, elems, iters);
		auto b = clk::now();
		in_launch += b - a;
		if ((i + 1) % 1000 == 0) {
			CHECK(cudaStreamSynchronize(s));
			in_sync += clk::now() - b;
		}
	}
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaGetLastError());
	double ms = std::chrono::duration<double, std::milli>(clk::now() - t0).count();
	if (range) nvtxRangePop();
	double us_launch = std::chrono::duration<double, std::micro>(in_launch).count() / (double)n;
	double ms_sync = std::chrono::duration<double, std::milli>(in_sync).count();
	std::printf("multistream: loop of %ld kernels in %.3f ms (%.3f us each; host %.3f us a launch call, %.1f ms in syncs)\n",
	            n, ms, 1000.0 * ms / (double)n, us_launch, ms_sync);
	CHECK(cudaFree(x));
	CHECK(cudaStreamDestroy(s));
	return 0;
}

int main(int argc, char **argv) {
	Options o;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> const char * {
			if (i + 1 >= argc) {
				std::fprintf(stderr, "multistream: %s wants a value\n", a.c_str());
				std::exit(2);
			}
			return argv[++i];
		};
		if (a == "--threads") o.threads = std::atoi(val());
		else if (a == "--streams") o.streams = std::atoi(val());
		else if (a == "--jobs") o.jobs = std::atoi(val());
		else if (a == "--elems") o.elems = std::strtoull(val(), nullptr, 10);
		else if (a == "--traceparent") o.traceparent = val();
		else if (a == "--loop") o.loop = std::atol(val());
		else if (a == "--loop-range") o.loop_range = true;
		else if (a == "--loop-iters") o.loop_iters = std::atoi(val());
		else if (a == "--end") o.end = val();
		else {
			std::fprintf(stderr, "multistream: unknown argument %s\n", a.c_str());
			return 2;
		}
	}
	if (o.threads < 1 || o.streams < 1 || o.jobs < 1 || o.elems < 1 || o.loop < 0 || o.loop_iters < 0 ||
	    (o.end != "exit" && o.end != "_exit" && o.end != "sigterm" && o.end != "crash")) {
		std::fprintf(stderr, "multistream: want --threads, --streams, --jobs, --elems >= 1, --loop >= 0, --end exit|_exit|sigterm|crash\n");
		return 2;
	}
	if (o.loop > 0) {
		loop(o.loop, o.loop_iters, o.loop_range);
	} else {
		std::vector<std::thread> ts;
		std::vector<int> ok(o.threads, 1);
		for (int t = 0; t < o.threads; t++)
			ts.emplace_back([&, t] {
				for (int j = 0; j < o.jobs; j++)
					if (!run_job(o, t, j)) ok[t] = 0;
			});
		for (auto &t : ts) t.join();
		for (int t = 0; t < o.threads; t++)
			if (!ok[t]) {
				std::fprintf(stderr, "multistream: thread %d computed a wrong result\n", t);
				return 1;
			}
		std::printf("multistream: %d threads x %d jobs, %d streams each, %zu floats: ok\n", o.threads, o.jobs, o.streams, o.elems);
	}
	std::fflush(stdout);
	if (o.end == "_exit") _exit(0);
	if (o.end == "sigterm") std::raise(SIGTERM);
	if (o.end == "crash") *(volatile int *)(uintptr_t)8 = 1;
	return 0;
}
