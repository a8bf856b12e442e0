// cuptimatrix: what CUPTI itself costs a launch, by configuration, on the
// short-kernel loop of examples/multistream-cpp (--loop), with no code of
// this project's capture in the way. Built on the GPU host by
// bench/cuptibench/session.sh (nvcc, the toolkit's CUPTI headers, -lcupti);
// one configuration a process (some settings hold for a whole process):
//
//   cuptimatrix [--n 100000] [--iters 16] MODE
//
// MODE is "off" (no CUPTI call at all) or tokens joined by '+':
//   sub      cuptiSubscribe, the NVTX domain and the context-destroy
//            callback on (what libcuzkinject.so subscribes to)
//   ck       CONCURRENT_KERNEL records        k    KERNEL records (serial)
//   ext      EXTERNAL_CORRELATION records     api  DRIVER and RUNTIME records
//   mem      MEMCPY, MEMSET, SYNCHRONIZATION records
//   hes      cuptiActivityEnableHWTrace(1) after cuInit, before the first context
//   pinned   activity device buffers in pinned host memory
//   devbuf   a 32 MiB device buffer (CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE)
//   nopt     one activity buffer for all threads (PER_THREAD_ACTIVITY_BUFFER 0)
//   hbuf     32 MiB host buffers (2 MiB otherwise, as libcuzkinject.so)
//   tick     a thread calling cuptiActivityFlushAll(0) every 100 ms (the writer)
//   fp       cuptiActivityFlushPeriod(100)
//   push     an external correlation id pushed around the loop (an NVTX range)
//   cbl      a runtime-API callback on cudaLaunchKernel only, keeping each
//            launch's correlation id (what a range needs, without API records)
//   rtl      API records of cudaLaunchKernel only (cuptiActivityEnableRuntimeApi)
//
// It prints one line: the loop's wall ms, µs a kernel, the host's µs inside a
// launch call, and from the records (where kernels are recorded) how many,
// their median duration and median gap on the GPU, the external correlation
// and API records seen, and for cbl how many kernels' correlation ids the
// callback saw.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#define CHECK(call)                                                                        \
	do {                                                                                   \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			std::fprintf(stderr, "cuptimatrix: %s: %s\n", #call, cudaGetErrorString(e_)); \
			std::exit(1);                                                                  \
		}                                                                                  \
	} while (0)

static void cupti_check(CUptiResult r, const char *what) {
	if (r == CUPTI_SUCCESS) return;
	const char *s = "?";
	cuptiGetResultString(r, &s);
	std::printf("cuptimatrix: %s: %s (%d)\n", what, s, (int)r);
}
#define CU(call) cupti_check((call), #call)

#include "../../examples/multistream-cpp/shortloop.cuh"

static size_t host_buf = 2u << 20;
static std::mutex mu;
static std::vector<std::pair<uint64_t, uint64_t>> kern; // start, end
static std::vector<uint32_t> kern_corr;
static uint64_t n_ext, n_api, n_other;
static std::mutex cb_mu;
static std::unordered_set<uint32_t> cb_corr;

static void CUPTIAPI buf_req(uint8_t **b, size_t *size, size_t *max) {
	void *p = nullptr;
	if (posix_memalign(&p, 8, host_buf) != 0) p = nullptr;
	*b = (uint8_t *)p;
	*size = p ? host_buf : 0;
	*max = 0;
}

static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t *b, size_t, size_t valid) {
	CUpti_Activity *rec = nullptr;
	std::lock_guard<std::mutex> g(mu);
	while (cuptiActivityGetNextRecord(b, valid, &rec) == CUPTI_SUCCESS) {
		const uint8_t *r = (const uint8_t *)rec;
		uint32_t kind;
		std::memcpy(&kind, r, 4);
		if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL) {
			uint64_t s, e;
			uint32_t c;
			std::memcpy(&s, r + 16, 8);
			std::memcpy(&e, r + 24, 8);
			std::memcpy(&c, r + 92, 4);
			kern.emplace_back(s, e);
			kern_corr.push_back(c);
		} else if (kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
			n_ext++;
		} else if (kind == CUPTI_ACTIVITY_KIND_DRIVER || kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
			n_api++;
		} else {
			n_other++;
		}
	}
	free(b);
}

static void CUPTIAPI callback(void *, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data) {
	if (dom == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
		const CUpti_CallbackData *d = (const CUpti_CallbackData *)data;
		if (d->callbackSite == CUPTI_API_EXIT) {
			std::lock_guard<std::mutex> g(cb_mu);
			cb_corr.insert(d->correlationId);
		}
	}
}

int main(int argc, char **argv) {
	long n = 100000;
	int iters = 16;
	std::string mode;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--n" && i + 1 < argc) n = std::atol(argv[++i]);
		else if (a == "--iters" && i + 1 < argc) iters = std::atoi(argv[++i]);
		else mode = a;
	}
	if (mode.empty()) {
		std::fprintf(stderr, "usage: cuptimatrix [--n N] [--iters K] MODE\n");
		return 2;
	}
	std::set<std::string> t;
	for (size_t p = 0; p <= mode.size();) {
		size_t q = mode.find('+', p);
		if (q == std::string::npos) q = mode.size();
		t.insert(mode.substr(p, q - p));
		p = q + 1;
	}
	auto has = [&](const char *s) { return t.count(s) > 0; };
	bool cupti = mode != "off";
	std::atomic<bool> stop{false};
	std::thread ticker;
	CUpti_SubscriberHandle sub = nullptr;
	if (has("hes")) {
		// After the driver's initialization, before the first context.
		if (cuInit(0) != CUDA_SUCCESS) std::printf("cuptimatrix: cuInit failed\n");
		CUptiResult r = cuptiActivityEnableHWTrace(1);
		const char *rs = "?";
		cuptiGetResultString(r, &rs);
		std::printf("cuptimatrix: cuptiActivityEnableHWTrace(1) after cuInit: %s (%d)\n", rs, (int)r);
	}
	if (cupti) {
		if (has("hbuf")) host_buf = 32u << 20;
		if (has("pinned")) {
			uint8_t v = 1;
			size_t sz = sizeof v;
			CU(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, &sz, &v));
		}
		if (has("devbuf")) {
			size_t v = 32u << 20, sz = sizeof v;
			CU(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &sz, &v));
		}
		if (has("nopt")) {
			uint8_t v = 0;
			size_t sz = sizeof v;
			CU(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &sz, &v));
		}
		if (has("sub") || has("cbl")) {
			CU(cuptiSubscribe(&sub, (CUpti_CallbackFunc)callback, nullptr));
			if (has("sub")) {
				CU(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_NVTX));
				CU(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING));
			}
			if (has("cbl")) CU(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
		}
		CU(cuptiActivityRegisterCallbacks(buf_req, buf_done));
		if (has("ext")) CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
		if (has("api")) {
			CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
			CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
		}
		if (has("rtl")) CU(cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1));
		if (has("ck")) CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
		if (has("k")) CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL));
		if (has("mem")) {
			CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
			CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
			CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
		}
		if (has("fp")) CU(cuptiActivityFlushPeriod(100));
		if (has("tick"))
			ticker = std::thread([&] {
				while (!stop.load()) {
					std::this_thread::sleep_for(std::chrono::milliseconds(100));
					cuptiActivityFlushAll(0);
				}
			});
	}
	const unsigned elems = 1 << 16;
	float *x;
	cudaStream_t s;
	short_loop_start(elems, iters, &x, &s);
	if (has("push")) CU(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, 7));
	using clk = std::chrono::steady_clock;
	clk::duration in_launch{};
	auto t0 = clk::now();
	for (long i = 0; i < n; i++) {
		auto a = clk::now();
		short_kernel<<<elems / 256, 256, 0, s>>>(x, elems, iters);
		in_launch += clk::now() - a;
		if ((i + 1) % 1000 == 0) CHECK(cudaStreamSynchronize(s));
	}
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaGetLastError());
	double ms = std::chrono::duration<double, std::milli>(clk::now() - t0).count();
	if (has("push")) {
		uint64_t id;
		CU(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, &id));
	}
	double us_launch = std::chrono::duration<double, std::micro>(in_launch).count() / (double)n;
	char extra[512] = "";
	if (cupti) {
		stop = true;
		if (ticker.joinable()) ticker.join();
		CU(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
		std::lock_guard<std::mutex> g(mu);
		std::vector<std::pair<uint64_t, uint64_t>> k = kern;
		std::sort(k.begin(), k.end());
		std::vector<double> dur, gap;
		for (size_t i = 0; i < k.size(); i++) {
			dur.push_back((double)(k[i].second - k[i].first) / 1000.0);
			if (i > 0 && k[i].first >= k[i - 1].second) gap.push_back((double)(k[i].first - k[i - 1].second) / 1000.0);
		}
		auto med = [](std::vector<double> v) {
			if (v.empty()) return -1.0;
			std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
			return v[v.size() / 2];
		};
		long seen = 0;
		if (has("cbl")) {
			std::lock_guard<std::mutex> g2(cb_mu);
			for (uint32_t c : kern_corr)
				if (c != 0 && cb_corr.count(c)) seen++;
		}
		long zero = 0;
		for (uint32_t c : kern_corr) zero += c == 0;
		std::snprintf(extra, sizeof extra,
		              "; records: %zu kernels (median %.3f us, gap %.3f us, %ld with corr 0), %lu ext, %lu api, %lu other; callback saw %zu launches, %ld of the kernels",
		              k.size(), med(dur), med(gap), zero, (unsigned long)n_ext, (unsigned long)n_api,
		              (unsigned long)n_other, cb_corr.size(), seen);
	}
	std::printf("matrix %-22s iters %d: %ld kernels in %.3f ms (%.3f us each; host %.3f us a launch call)%s\n", mode.c_str(),
	            iters, n, ms, 1000.0 * ms / (double)n, us_launch, extra);
	if (sub) cuptiUnsubscribe(sub);
	return 0;
}
