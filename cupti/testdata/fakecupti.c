// A stand-in for libcupti, for testing package cupti's C side in process
// (cfake_test.go) and `cuzk gpu-trace` with its injection library
// (cmd/cuzk/gputrace_test.go) without a GPU: the entry points libcuzkinject.so uses, with
// records made up by the test program through fake_launch and NVTX
// callbacks raised by fake_nvtx. Record layouts are CUDA 11.8's.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*buf_request)(uint8_t **, size_t *, size_t *);
typedef void (*buf_complete)(void *, uint32_t, uint8_t *, size_t, size_t);
typedef void (*callback)(void *, int, uint32_t, const void *);

static callback sub_cb;
static buf_request req;
static buf_complete comp;
static int nvtx_on;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t pending[1 << 20];
static size_t npending;
static uint32_t next_corr = 100;
static __thread uint64_t ext_stack[8][16];
static __thread int ext_depth[8];

static uint64_t mono(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int cuptiGetVersion(uint32_t *v) {
	const char *e = getenv("FAKE_CUPTI_VERSION");
	*v = e ? (uint32_t)atoi(e) : 18;
	return 0;
}
int cuptiGetResultString(int r, const char **s) {
	*s = r == 39 ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" : "CUPTI_ERROR_UNKNOWN";
	return 0;
}
int cuptiSubscribe(void **sub, callback cb, void *ud) {
	(void)ud;
	if (getenv("FAKE_CUPTI_BUSY")) return 39;
	*sub = (void *)1;
	sub_cb = cb;
	return 0;
}
int cuptiUnsubscribe(void *sub) { (void)sub; sub_cb = NULL; return 0; }
int cuptiEnableDomain(uint32_t en, void *sub, int dom) { (void)sub; if (dom == 5) nvtx_on = (int)en; return 0; }
static int resource_on;
int cuptiEnableCallback(uint32_t en, void *sub, int dom, uint32_t cbid) {
	(void)sub;
	if (dom == 3 && cbid == 2) resource_on = (int)en;
	return 0;
}
// fake_ctx_destroy raises CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, as
// cuCtxDestroy (or the primary context's release) does.
void fake_ctx_destroy(void) {
	struct { void *ctx; void *stream; } d = {NULL, NULL};
	if (sub_cb && resource_on) sub_cb(NULL, 3, 2, &d);
}
// As CUPTI: API records only while the driver or runtime API kind is
// enabled, and the external correlation records beside them only while
// the external correlation kind (39) is enabled too.
static int api_kinds_on[2], ext_kind_on;
static int api_switched_on;
int cuptiActivityEnable(int k) {
	if (k == 4 || k == 5) {
		if (!api_kinds_on[k - 4]) api_switched_on++;
		api_kinds_on[k - 4] = 1;
	}
	if (k == 39) ext_kind_on = 1;
	return 0;
}
int cuptiActivityDisable(int k) {
	if (k == 4 || k == 5) api_kinds_on[k - 4] = 0;
	if (k == 39) ext_kind_on = 0;
	return 0;
}
// fake_ext_on: whether external correlation records are being made now.
int fake_ext_on(void) { return ext_kind_on; }
// fake_api_on: whether API records are being made now; fake_api_switched_on:
// how many times a kind of them was switched on.
int fake_api_on(void) { return api_kinds_on[0] || api_kinds_on[1]; }
int fake_api_switched_on(void) { return api_switched_on; }
int cuptiActivityRegisterCallbacks(buf_request r, buf_complete c) { req = r; comp = c; return 0; }
// fake_drop: the next cuptiActivityGetNumDroppedRecords says n records
// were dropped (CUPTI's buffers full), once.
static size_t drop_pending;
void fake_drop(size_t n) { __atomic_store_n(&drop_pending, n, __ATOMIC_SEQ_CST); }
int cuptiActivityGetNumDroppedRecords(void *c, uint32_t s, size_t *d) {
	(void)c;
	(void)s;
	*d = __atomic_exchange_n(&drop_pending, 0, __ATOMIC_SEQ_CST);
	return 0;
}
int cuptiGetTimestamp(uint64_t *t) { *t = mono(); return 0; }

static size_t rec_size(const uint8_t *r) {
	uint32_t kind;
	memcpy(&kind, r, 4);
	switch (kind) {
	case 10: return 200; // CUpti_ActivityKernel8
	case 39: return 24;  // CUpti_ActivityExternalCorrelation
	case 4: return 40;   // CUpti_ActivityAPI
	}
	return 8;
}

int cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, void **rec) {
	uint8_t *next = *rec ? (uint8_t *)*rec + rec_size(*rec) : buf;
	if (next >= buf + valid) return 3; // CUPTI_ERROR_MAX_LIMIT_REACHED
	*rec = next;
	return 0;
}

// fake_hold(1): flushes deliver nothing (the records are not complete
// yet), as CUPTI's buffers can be late; fake_hold(0) lets them go.
// fake_flushes: how many flushes were asked for, and of them forced.
static int hold, flushes, forced_flushes;
void fake_hold(int on) { __atomic_store_n(&hold, on, __ATOMIC_SEQ_CST); }
int fake_flushes(int forced) { return forced ? forced_flushes : flushes; }
// The same for cupti.Call (void fn(void *)): fake_hold_cb(arg) holds while
// *(int32_t *)arg is 1; fake_flushes_cb(arg) writes both counts to the
// int32_t[2] at arg.
void fake_hold_cb(void *arg) { fake_hold(*(int32_t *)arg); }
void fake_flushes_cb(void *arg) {
	pthread_mutex_lock(&mu);
	((int32_t *)arg)[0] = flushes;
	((int32_t *)arg)[1] = forced_flushes;
	pthread_mutex_unlock(&mu);
}

int cuptiActivityFlushAll(uint32_t flag) {
	pthread_mutex_lock(&mu);
	flushes++;
	if (flag & 1) forced_flushes++;
	if (npending == 0 || !req || !comp || __atomic_load_n(&hold, __ATOMIC_SEQ_CST)) {
		pthread_mutex_unlock(&mu);
		return 0;
	}
	uint8_t *b = NULL;
	size_t size = 0, max = 0;
	req(&b, &size, &max);
	size_t n = npending < size ? npending : size;
	memcpy(b, pending, n);
	npending = 0;
	pthread_mutex_unlock(&mu);
	comp(NULL, 0, b, size, n);
	return 0;
}

int cuptiActivityPushExternalCorrelationId(int kind, uint64_t id) {
	if (kind < 0 || kind > 7 || ext_depth[kind] >= 16) return 1;
	ext_stack[kind][ext_depth[kind]++] = id;
	return 0;
}
int cuptiActivityPopExternalCorrelationId(int kind, uint64_t *last) {
	if (kind < 0 || kind > 7 || ext_depth[kind] == 0) return 1;
	*last = ext_stack[kind][--ext_depth[kind]];
	return 0;
}

static void put(const void *r, size_t n) {
	if (npending + n <= sizeof pending) {
		memcpy(pending + npending, r, n);
		npending += n;
	}
}

// fake_launch records a kernel of dur ns launched now by this thread, with
// an external correlation record for each id pushed, and an API record
// (while API records are on). With FAKE_CUPTI_KERNEL_FIRST set the kernel
// record comes first, as when CUPTI's per-thread buffers deliver it before
// the launching thread's records.
void fake_launch(const char *name, uint64_t dur) {
	pthread_mutex_lock(&mu);
	uint32_t corr = next_corr++;
	int api = fake_api_on(), kernel_first = getenv("FAKE_CUPTI_KERNEL_FIRST") != NULL;
	uint8_t k[200] = {0};
	uint32_t kind = 10, one = 1, blk = 128, stream = 7;
	uint64_t start = mono() + 1000, end = start + dur;
	memcpy(k, &kind, 4);
	memcpy(k + 16, &start, 8);
	memcpy(k + 24, &end, 8);
	memcpy(k + 48, &stream, 4);
	memcpy(k + 52, &one, 4); memcpy(k + 56, &one, 4); memcpy(k + 60, &one, 4);
	memcpy(k + 64, &blk, 4); memcpy(k + 68, &one, 4); memcpy(k + 72, &one, 4);
	memcpy(k + 92, &corr, 4);
	memcpy(k + 104, &name, sizeof name);
	if (kernel_first) put(k, sizeof k);
	for (int x = 0; x < 8 && api && ext_kind_on; x++)
		if (ext_depth[x] > 0) {
			uint8_t e[24] = {0};
			uint32_t ekind = 39, ek = (uint32_t)x;
			memcpy(e, &ekind, 4);
			memcpy(e + 4, &ek, 4);
			memcpy(e + 8, &ext_stack[x][ext_depth[x] - 1], 8);
			memcpy(e + 16, &corr, 4);
			put(e, sizeof e);
		}
	uint8_t apirec[40] = {0};
	uint32_t akind = 4;
	memcpy(apirec, &akind, 4);
	memcpy(apirec + 32, &corr, 4);
	if (api) put(apirec, sizeof apirec);
	if (!kernel_first) put(k, sizeof k);
	pthread_mutex_unlock(&mu);
}

// fake_nvtx raises the NVTX callback cbid with params (CUpti_NvtxData).
void fake_nvtx(uint32_t cbid, const void *params, const void *ret) {
	struct { const char *fn; const void *params; const void *ret; } d = {"nvtx", params, ret};
	if (sub_cb && nvtx_on) sub_cb(NULL, 5, cbid, &d);
}

// fake_job_cb is a "foreign C function" for cupti.Call: an NVTX range with
// a kernel launched inside it, on the calling thread.
void fake_job_cb(void *arg) {
	(void)arg;
	const void *push[1] = {"fake.phase"};
	fake_nvtx(8, push, NULL); // nvtxRangePushA
	fake_launch("fake_kernel", 1000000);
	const void *pop[1] = {NULL};
	fake_nvtx(11, pop, NULL); // nvtxRangePop
}

// fake_cudaspans_job is a launch as cudaspans makes it (for cupti.Call):
// arg is {push, pop, id, ns, count}: count kernels of ns each, each between
// push(id + i) and pop(), as cudaspans' launch hook brackets cuLaunchKernel.
struct fake_cs_job {
	void (*push)(uint64_t);
	void (*pop)(void);
	uint64_t id, ns, count;
};
void fake_cudaspans_job(void *arg) {
	struct fake_cs_job *j = arg;
	for (uint64_t i = 0; i < j->count; i++) {
		j->push(j->id + i);
		fake_launch("cs_kernel", j->ns);
		j->pop();
	}
}
