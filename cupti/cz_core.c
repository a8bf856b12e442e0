// Internal to package cupti and the gpu-trace injection library (see
// cz_core.h). Everything here runs on threads of CUDA, CUPTI or the traced
// program: it never blocks on the reader, never calls into Go, and a
// failure only stops the capture.
#define _GNU_SOURCE
#include "cz_core.h"
#include "cuzk_cupti.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

typedef int CUptiResult;
#define CZ_CUPTI_NOT_INITIALIZED 15 /* CUPTI_ERROR_NOT_INITIALIZED */
typedef void *CUpti_SubscriberHandle;
typedef void (*cz_buf_request)(uint8_t **, size_t *, size_t *);
typedef void (*cz_buf_complete)(void *, uint32_t, uint8_t *, size_t, size_t);
typedef void (*cz_cb)(void *, int, uint32_t, const void *);

static struct {
	void *lib;
	CUptiResult (*GetVersion)(uint32_t *);
	CUptiResult (*GetResultString)(CUptiResult, const char **);
	CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, cz_cb, void *);
	CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle);
	CUptiResult (*EnableDomain)(uint32_t, CUpti_SubscriberHandle, int);
	CUptiResult (*ActivityEnable)(int);
	CUptiResult (*ActivityDisable)(int);
	CUptiResult (*ActivityRegisterCallbacks)(cz_buf_request, cz_buf_complete);
	CUptiResult (*ActivityGetNextRecord)(uint8_t *, size_t, void **);
	CUptiResult (*ActivityGetNumDroppedRecords)(void *, uint32_t, size_t *);
	CUptiResult (*ActivityFlushAll)(uint32_t);
	CUptiResult (*GetTimestamp)(uint64_t *);
	CUptiResult (*PushExternalCorrelationId)(int, uint64_t);
	CUptiResult (*PopExternalCorrelationId)(int, uint64_t *);
	CUptiResult (*EnableCallback)(uint32_t, CUpti_SubscriberHandle, int, uint32_t); /* optional */
	CUptiResult (*EnableHWTrace)(uint8_t);                                          /* optional (CUDA 12.8+) */
	CUptiResult (*SetAttribute)(int, size_t *, void *);                             /* optional */
	char path[4096];
} L;

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint8_t *buf;
	size_t len, cap, limit;
	uint64_t dropped;
} Q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 64u << 20, 0};

static volatile int running;
static CUpti_SubscriberHandle sub;
static uint32_t started_kinds[10];
static int nstarted;

// ---- queue ----

static void put_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

// frame_begin reserves a frame of n payload bytes under Q.mu; NULL when
// the queue is at its limit (the frame is dropped and counted).
static uint8_t *frame_begin(uint16_t type, size_t n) {
	size_t total = 8 + n;
	if (total > 0xffffffffu || Q.len + total > Q.limit) {
		Q.dropped++;
		return NULL;
	}
	if (Q.len + total > Q.cap) {
		size_t c = Q.cap ? Q.cap : 1 << 16;
		while (c < Q.len + total) c *= 2;
		uint8_t *nb = realloc(Q.buf, c);
		if (nb == NULL) {
			Q.dropped++;
			return NULL;
		}
		Q.buf = nb;
		Q.cap = c;
	}
	uint8_t *p = Q.buf + Q.len;
	put_u32(p, (uint32_t)total);
	put_u16(p + 4, type);
	put_u16(p + 6, 0);
	Q.len += total;
	return p + 8;
}

void cz_queue_frame(uint16_t type, const void *payload, size_t n) {
	pthread_mutex_lock(&Q.mu);
	uint8_t *p = frame_begin(type, n);
	if (p && n) memcpy(p, payload, n);
	pthread_cond_signal(&Q.cv);
	pthread_mutex_unlock(&Q.mu);
}

void cz_set_queue_limit(size_t bytes) {
	pthread_mutex_lock(&Q.mu);
	Q.limit = bytes;
	pthread_mutex_unlock(&Q.mu);
}

void cz_note(const char *msg) { cz_queue_frame(CZ_FRAME_NOTE, msg, strlen(msg)); }

uint8_t *cz_take(size_t *len) {
	pthread_mutex_lock(&Q.mu);
	if (Q.dropped) {
		uint8_t pl[12];
		uint64_t d = Q.dropped;
		memcpy(pl, &d, 8);
		put_u32(pl + 8, 1); // reason 1: our queue was full
		Q.dropped = 0;
		uint8_t *p = frame_begin(CZ_FRAME_DROPPED, sizeof pl);
		if (p) memcpy(p, pl, sizeof pl);
	}
	uint8_t *b = Q.buf;
	*len = Q.len;
	Q.buf = NULL;
	Q.len = Q.cap = 0;
	pthread_mutex_unlock(&Q.mu);
	return b;
}

int cz_wait_data(int ms) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&Q.mu);
	if (Q.len == 0) pthread_cond_timedwait(&Q.cv, &Q.mu, &ts);
	int any = Q.len > 0;
	pthread_mutex_unlock(&Q.mu);
	return any;
}

// ---- loading ----

// dlopen_error writes why dlopen(path) failed into err: "dlopen PATH:
// REASON", with dlerror's text as REASON; that text names the library it
// was given ("libcupti.so.13: cannot open shared object file: ..."), so then
// the name is not said twice.
static void dlopen_error(const char *path, char *err, size_t errlen) {
	const char *e = dlerror();
	size_t n = strlen(path);
	if (e == NULL)
		snprintf(err, errlen, "dlopen %s: unknown error", path);
	else if (strncmp(e, path, n) == 0 && e[n] == ':')
		snprintf(err, errlen, "dlopen %s", e);
	else
		snprintf(err, errlen, "dlopen %s: %s", path, e);
}

#define SYM(field, name)                                                              \
	do {                                                                              \
		*(void **)&L.field = dlsym(L.lib, name);                                      \
		if (L.field == NULL) {                                                        \
			snprintf(err, errlen, "%s has no %s (not a CUPTI library, or too old)", path, name); \
			goto fail;                                                                \
		}                                                                             \
	} while (0)

int cz_open(const char *path, char *err, size_t errlen) {
	if (L.lib) return 0;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		dlopen_error(path, err, errlen);
		return -1;
	}
	L.lib = h;
	SYM(GetVersion, "cuptiGetVersion");
	SYM(GetResultString, "cuptiGetResultString");
	SYM(Subscribe, "cuptiSubscribe");
	SYM(Unsubscribe, "cuptiUnsubscribe");
	SYM(EnableDomain, "cuptiEnableDomain");
	SYM(ActivityEnable, "cuptiActivityEnable");
	SYM(ActivityDisable, "cuptiActivityDisable");
	SYM(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks");
	SYM(ActivityGetNextRecord, "cuptiActivityGetNextRecord");
	SYM(ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords");
	SYM(ActivityFlushAll, "cuptiActivityFlushAll");
	SYM(GetTimestamp, "cuptiGetTimestamp");
	SYM(PushExternalCorrelationId, "cuptiActivityPushExternalCorrelationId");
	SYM(PopExternalCorrelationId, "cuptiActivityPopExternalCorrelationId");
	*(void **)&L.EnableCallback = dlsym(L.lib, "cuptiEnableCallback");
	*(void **)&L.EnableHWTrace = dlsym(L.lib, "cuptiActivityEnableHWTrace");
	*(void **)&L.SetAttribute = dlsym(L.lib, "cuptiActivitySetAttribute");
	Dl_info info;
	if (dladdr(*(void **)&L.GetVersion, &info) && info.dli_fname)
		snprintf(L.path, sizeof L.path, "%s", info.dli_fname);
	else
		snprintf(L.path, sizeof L.path, "%s", path);
	return 0;
fail:
	dlclose(h);
	memset(&L, 0, sizeof L);
	return -1;
}

int cz_probe(const char *path, char *out, size_t outlen, uint32_t *version, char *err, size_t errlen) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		dlopen_error(path, err, errlen);
		return -1;
	}
	CUptiResult (*gv)(uint32_t *);
	*(void **)&gv = dlsym(h, "cuptiGetVersion");
	if (gv == NULL || dlsym(h, "cuptiSubscribe") == NULL) {
		snprintf(err, errlen, "%s has no cuptiGetVersion (not a CUPTI library, or too old)", path);
		dlclose(h);
		return -1;
	}
	*version = 0;
	gv(version);
	Dl_info info;
	if (dladdr(*(void **)&gv, &info) && info.dli_fname)
		snprintf(out, outlen, "%s", info.dli_fname);
	else
		snprintf(out, outlen, "%s", path);
	dlclose(h);
	return 0;
}

uint32_t cz_version(void) {
	uint32_t v = 0;
	if (L.lib && L.GetVersion(&v) != 0) v = 0;
	return v;
}

const char *cz_loaded_path(void) { return L.path; }

void *cz_sym(const char *name) { return L.lib ? dlsym(L.lib, name) : NULL; }

static const char *result_text(CUptiResult r) {
	const char *s = NULL;
	if (L.lib && L.GetResultString(r, &s) == 0 && s) return s;
	return "unknown CUPTI error";
}

// ---- activity buffers ----

// 2 MiB (about 10k kernel records): CUPTI hands over a buffer only once
// every record in it is complete (or on a forced flush), so a smaller
// buffer bounds what a process that dies without a flush (Go's os.Exit,
// _exit) takes with it, at the cost of more buffer callbacks.
#define CZ_BUFFER_BYTES (2u << 20)

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max) {
	void *p = NULL;
	if (posix_memalign(&p, 8, CZ_BUFFER_BYTES) != 0) p = NULL;
	*buffer = p;
	*size = p ? CZ_BUFFER_BYTES : 0;
	*max = 0; // as many records as fit
}

// Kernel names: CUPTI shares one string per kernel across its records, so
// names are cached by pointer. A new pointer is read with
// process_vm_readv on this process, which fails with EFAULT instead of
// faulting when the pointer is not one: a CUPTI whose record layout moved
// the name must not crash the traced program. Called with Q.mu held.
#define NAME_CACHE 1024
static struct {
	const char *p;
	char *s;
} names[NAME_CACHE];

static int plausible_kernel(const uint8_t *rec, size_t reclen) {
	uint32_t g[3], b[3];
	memcpy(g, rec + 52, 12);
	memcpy(b, rec + 64, 12);
	return reclen >= CZ_KERNEL_NAME_OFFSET + 8 && g[0] && g[1] && g[2] && b[0] && b[1] && b[2] &&
	       b[0] * (uint64_t)b[1] * b[2] <= 1024;
}

static const char *kernel_name(const uint8_t *rec, size_t reclen) {
	const char *p;
	memcpy(&p, rec + CZ_KERNEL_NAME_OFFSET, sizeof p);
	if (p == NULL) return NULL;
	size_t h = ((uintptr_t)p >> 4) % NAME_CACHE;
	if (names[h].p == p) return names[h].s;
	char buf[1024];
	struct iovec local = {buf, sizeof buf - 1}, remote = {(void *)p, sizeof buf - 1};
	ssize_t n = syscall(SYS_process_vm_readv, getpid(), &local, 1UL, &remote, 1UL, 0UL);
	if (n < 0 && errno == EFAULT) {
		// The read may cross into an unmapped page after a short name:
		// retry up to the end of the pointer's page.
		size_t left = 4096 - ((uintptr_t)p & 4095);
		local.iov_len = remote.iov_len = left < sizeof buf - 1 ? left : sizeof buf - 1;
		n = syscall(SYS_process_vm_readv, getpid(), &local, 1UL, &remote, 1UL, 0UL);
		if (n < 0) return NULL;
	} else if (n < 0) {
		// No process_vm_readv (a sandbox without it): read directly only
		// from a record that looks like the layout we know.
		if (!plausible_kernel(rec, reclen)) return NULL;
		n = (ssize_t)strnlen(p, sizeof buf - 1);
		memcpy(buf, p, (size_t)n);
	}
	buf[n] = 0;
	char *copy = strdup(buf);
	if (copy == NULL) return NULL;
	free(names[h].s);
	names[h].p = p;
	names[h].s = copy;
	return copy;
}

// ---- CUPTI's durations of cudaspans' launches (cuda.cupti_ms) ----

// cudaspans asks for them at every Synchronize, on its launching thread.
// Decoding the frames in Go to find them cost about 2 µs a kernel there,
// so they are matched here as the records pass (external correlation
// record of kind CZ_EXT_CUDASPANS + kernel record of the same correlation
// id, in either order) and cz_cudaspans_take hands them over in one call;
// Go decodes the frames later, off that thread. Fixed tables, all under
// Q.mu: a slot reused before its match only costs that launch its
// cuda.cupti_ms. Offsets: records.go's extLayout and kernelLayout.
#define CS_BITS 13
#define CS_SLOTS (1u << CS_BITS)
#define CS_PROBE 8
static struct {
	uint32_t corr, used;
	uint64_t v; // the launch id (cs_ext) or the kernel's ns (cs_kern)
} cs_ext[CS_SLOTS], cs_kern[CS_SLOTS];
static struct {
	uint64_t id, ns;
	uint32_t corr, used;
} cs_done[CS_SLOTS];

// Fibonacci hashing: ids are cudaspans' launch ids (a counter, never
// reused in the process) or any other numbers; the top CS_BITS bits of the
// product spread them.
static size_t cs_hash(uint64_t id) { return (size_t)((id * 0x9E3779B97F4A7C15ull) >> (64 - CS_BITS)); }

// cs_put keeps the launch's duration. Launch ids are unique, so a record
// that comes late can only be taken for its own launch (ids were once the
// start events, which cudaspans reuses: a late record went to the next
// launch on that event); for an id seen again anyway the later launch, by
// correlation id, wins.
static void cs_put(uint64_t id, uint32_t corr, uint64_t ns) {
	size_t h = cs_hash(id), pick = CS_SLOTS;
	for (int i = 0; i < CS_PROBE; i++) {
		size_t j = (h + (size_t)i) & (CS_SLOTS - 1);
		if (cs_done[j].used && cs_done[j].id == id) {
			if (corr >= cs_done[j].corr) cs_done[j].corr = corr, cs_done[j].ns = ns;
			return;
		}
		if (pick == CS_SLOTS && !cs_done[j].used) pick = j;
	}
	if (pick == CS_SLOTS) { // full: the oldest launch gives way
		pick = h;
		for (int i = 1; i < CS_PROBE; i++) {
			size_t j = (h + (size_t)i) & (CS_SLOTS - 1);
			if (cs_done[j].corr < cs_done[pick].corr) pick = j;
		}
	}
	cs_done[pick].id = id, cs_done[pick].corr = corr, cs_done[pick].ns = ns, cs_done[pick].used = 1;
}

static void cs_record(uint32_t kind, const uint8_t *rec, size_t reclen) {
	uint32_t corr;
	if (kind == CZ_KIND_EXTERNAL_CORRELATION && reclen >= 20) {
		uint32_t ek;
		uint64_t id;
		memcpy(&ek, rec + 4, 4);
		memcpy(&id, rec + 8, 8);
		memcpy(&corr, rec + 16, 4);
		if (ek != CZ_EXT_CUDASPANS || id <= 1) return; // id 1: cudaspans' copies and memsets
		size_t j = corr & (CS_SLOTS - 1);
		if (cs_kern[j].used && cs_kern[j].corr == corr) {
			cs_kern[j].used = 0;
			cs_put(id, corr, cs_kern[j].v);
		} else {
			cs_ext[j].corr = corr, cs_ext[j].v = id, cs_ext[j].used = 1;
		}
	} else if ((kind == CZ_KIND_KERNEL || kind == CZ_KIND_CONCURRENT_KERNEL) && reclen >= 96) {
		uint64_t start, end;
		memcpy(&start, rec + 16, 8);
		memcpy(&end, rec + 24, 8);
		memcpy(&corr, rec + 92, 4);
		uint64_t ns = end > start ? end - start : 0;
		size_t j = corr & (CS_SLOTS - 1);
		if (cs_ext[j].used && cs_ext[j].corr == corr) {
			cs_ext[j].used = 0;
			cs_put(cs_ext[j].v, corr, ns);
		} else {
			cs_kern[j].corr = corr, cs_kern[j].v = ns, cs_kern[j].used = 1;
		}
	}
}

int cz_cudaspans_take(const uint64_t *ids, double *ms, int n) {
	int found = 0;
	pthread_mutex_lock(&Q.mu);
	for (int k = 0; k < n; k++) {
		ms[k] = -1;
		size_t h = cs_hash(ids[k]);
		for (int i = 0; i < CS_PROBE; i++) {
			size_t j = (h + (size_t)i) & (CS_SLOTS - 1);
			if (cs_done[j].used && cs_done[j].id == ids[k]) {
				ms[k] = (double)cs_done[j].ns / 1e6;
				cs_done[j].used = 0;
				found++;
				break;
			}
		}
	}
	pthread_mutex_unlock(&Q.mu);
	return found;
}

// frame_record queues one record; a kernel record's name follows it.
// Called with Q.mu held.
static void frame_record(const uint8_t *rec, size_t reclen) {
	uint32_t kind;
	if (reclen < 4) return;
	memcpy(&kind, rec, 4);
	if (kind == CZ_KIND_DRIVER || kind == CZ_KIND_RUNTIME) return;
	cs_record(kind, rec, reclen);
	const char *name = NULL;
	size_t namelen = 0;
	if ((kind == CZ_KIND_KERNEL || kind == CZ_KIND_CONCURRENT_KERNEL) && reclen >= CZ_KERNEL_NAME_OFFSET + 8) {
		name = kernel_name(rec, reclen);
		if (name) namelen = strlen(name);
	}
	if (reclen > 0xffff) return;
	size_t n = 4 + reclen + (name ? 2 + namelen : 0);
	uint8_t *p = frame_begin(CZ_FRAME_RECORD, n);
	if (p == NULL) return;
	put_u16(p, (uint16_t)reclen);
	put_u16(p + 2, name ? 1 : 0);
	memcpy(p + 4, rec, reclen);
	if (name) {
		put_u16(p + 4 + reclen, (uint16_t)namelen);
		memcpy(p + 6 + reclen, name, namelen);
	}
}

static void buffer_completed(void *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
	if (buffer == NULL) return;
	void *rec = NULL;
	uint8_t *prev = NULL;
	pthread_mutex_lock(&Q.mu);
	// cuptiActivityGetNextRecord advances rec in place. A record's size is
	// the distance to the next one (or to the end of the valid bytes):
	// CUPTI writes them back to back.
	while (L.ActivityGetNextRecord(buffer, valid, &rec) == 0 && rec != NULL) {
		if (prev) frame_record(prev, (size_t)((uint8_t *)rec - prev));
		prev = rec;
	}
	if (prev) frame_record(prev, (size_t)(buffer + valid - prev));
	size_t dropped = 0;
	if (L.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == 0 && dropped > 0) {
		uint8_t *p = frame_begin(CZ_FRAME_DROPPED, 12);
		if (p) {
			uint64_t d = dropped;
			memcpy(p, &d, 8);
			put_u32(p + 8, 0); // reason 0: CUPTI dropped them
		}
	}
	pthread_cond_signal(&Q.cv);
	pthread_mutex_unlock(&Q.mu);
	free(buffer);
	(void)size;
}

int cz_flush(int forced) {
	if (!L.lib || !running) return 0;
	return L.ActivityFlushAll(forced ? 1 /* CUPTI_ACTIVITY_FLAG_FLUSH_FORCED */ : 0);
}

// ---- clock ----

static uint64_t wall_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cz_calibrate(int n) {
	if (!L.lib) return;
	if (n < 1) n = 1;
	if (n > 64) n = 64;
	uint8_t pl[4 + 64 * 24];
	put_u32(pl, (uint32_t)n);
	for (int i = 0; i < n; i++) {
		uint64_t h0 = wall_ns(), g = 0;
		L.GetTimestamp(&g);
		uint64_t h1 = wall_ns();
		memcpy(pl + 4 + i * 24, &h0, 8);
		memcpy(pl + 12 + i * 24, &g, 8);
		memcpy(pl + 20 + i * 24, &h1, 8);
	}
	cz_queue_frame(CZ_FRAME_CALIB, pl, 4 + (size_t)n * 24);
}

// ---- API records on demand (CZ_START_LAZY_API) ----

// The API kinds are what external correlation rides on: CUPTI writes an
// external correlation record beside the API record of a call made while
// an id is pushed. They cost about a microsecond a launch, so with
// CZ_START_LAZY_API they are on only while some thread has a scope open
// (a push range or a parent): the push that opens the first switches them
// on before it returns, so every launch inside it has its record; they go
// off at the first cz_api_tick after a whole tick with none open. The
// lock is taken only when a scope opens or closes, never on a launch.
static struct {
	pthread_mutex_t mu;
	int lazy, on, open, touched;
	uint64_t n_on, n_off;
} api = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0};

static void api_switch_locked(int on) {
	if (api.on == on) return;
	// On: the external correlation kind first, so the first API record
	// already has its external one; off: it last.
	const int kinds[3] = {CZ_KIND_EXTERNAL_CORRELATION, CZ_KIND_DRIVER, CZ_KIND_RUNTIME};
	for (int i = 0; i < 3; i++) {
		if (on) L.ActivityEnable(kinds[i]);
		else L.ActivityDisable(kinds[2 - i]);
	}
	api.on = on;
	if (on) api.n_on++;
	else api.n_off++;
}

static void scope_open(void) {
	if (!api.lazy) return;
	pthread_mutex_lock(&api.mu);
	api.open++;
	api.touched = 1;
	if (running) api_switch_locked(1);
	pthread_mutex_unlock(&api.mu);
}

static void scope_close(void) {
	if (!api.lazy) return;
	pthread_mutex_lock(&api.mu);
	if (api.open > 0) api.open--;
	pthread_mutex_unlock(&api.mu);
}

void cz_api_tick(void) {
	if (!api.lazy) return;
	pthread_mutex_lock(&api.mu);
	if (running && api.open == 0 && !api.touched) api_switch_locked(0);
	api.touched = 0;
	pthread_mutex_unlock(&api.mu);
}

void cz_api_switches(uint64_t *on, uint64_t *off) {
	pthread_mutex_lock(&api.mu);
	*on = api.n_on;
	*off = api.n_off;
	pthread_mutex_unlock(&api.mu);
}

// ---- external correlation ----

static __thread uint64_t tls_parent;

void cz_call(uint64_t parent, void (*fn)(void *), void *arg) {
	cuzk_cupti_enter(parent);
	fn(arg);
	cuzk_cupti_exit();
}

static __thread uint64_t tls_saved[64];
static __thread int tls_depth;

void cuzk_cupti_enter(uint64_t parent) {
	if (tls_depth < 64) tls_saved[tls_depth] = tls_parent;
	tls_depth++;
	tls_parent = parent;
	if (parent) scope_open();
	if (running && parent) L.PushExternalCorrelationId(CZ_EXT_PARENT, parent);
}

void cuzk_cupti_exit(void) {
	if (tls_depth == 0) return;
	uint64_t cur = tls_parent;
	tls_depth--;
	tls_parent = tls_depth < 64 ? tls_saved[tls_depth] : 0;
	uint64_t last;
	if (running && cur) L.PopExternalCorrelationId(CZ_EXT_PARENT, &last);
	if (cur) scope_close();
}

void cz_cudaspans_push(uint64_t id) {
	if (running) L.PushExternalCorrelationId(CZ_EXT_CUDASPANS, id);
}

void cz_cudaspans_pop(void) {
	uint64_t last;
	if (running) L.PopExternalCorrelationId(CZ_EXT_CUDASPANS, &last);
}

// ---- NVTX ----

// nvtxEventAttributes_t (nvToolsExt.h, NVTX_VERSION 2 and 3).
typedef struct {
	uint16_t version, size;
	uint32_t category;
	int32_t colorType;
	uint32_t color;
	int32_t payloadType;
	int32_t reserved0;
	uint64_t payload;
	int32_t messageType;
	int32_t pad;
	const void *message;
} cz_nvtx_attr;

// CUpti_NvtxData (cupti_callbacks.h).
typedef struct {
	const char *functionName;
	const void *functionParams;
	const void *functionReturnValue;
} cz_nvtx_data;

enum {
	NVTX_RangeStartA = 4, NVTX_RangeStartEx = 6, NVTX_RangeEnd = 7,
	NVTX_RangePushA = 8, NVTX_RangePushEx = 10, NVTX_RangePop = 11,
	NVTX_DomainRangeStartEx = 31, NVTX_DomainRangeEnd = 32,
	NVTX_DomainRangePushEx = 33, NVTX_DomainRangePop = 34,
	NVTX_DomainCreateA = 41,
};

// Push ranges open on this thread, innermost last.
typedef struct {
	uint64_t id;
	const void *domain;
} cz_open_range;
static __thread cz_open_range tls_ranges[128];
static __thread int tls_nranges;
static uint64_t next_range_id; // atomic

static struct {
	pthread_mutex_t mu;
	const void *h[256];
	char *name[256];
	int n;
} domains = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, 0};

static void domain_add(const void *h, const char *name) {
	if (!h || !name) return;
	pthread_mutex_lock(&domains.mu);
	if (domains.n < 256) {
		domains.h[domains.n] = h;
		domains.name[domains.n] = strdup(name);
		domains.n++;
	}
	pthread_mutex_unlock(&domains.mu);
}

// domain_name copies the name of h into out.
static void domain_name(const void *h, char *out, size_t n) {
	out[0] = 0;
	if (!h) return;
	pthread_mutex_lock(&domains.mu);
	for (int i = 0; i < domains.n; i++)
		if (domains.h[i] == h && domains.name[i]) {
			snprintf(out, n, "%s", domains.name[i]);
			break;
		}
	pthread_mutex_unlock(&domains.mu);
}

static uint64_t thread_id(void) { return (uint64_t)syscall(SYS_gettid); }

static uint64_t now_ts(void) {
	uint64_t t = 0;
	L.GetTimestamp(&t);
	return t;
}

// NVTX_PUSH payload: ts, tid, id, parent range, Go parent (u64 each),
// flags, category, color, payload type (u32 each), payload (u64), then
// message and domain as u16 length + bytes.
#define PUSH_FIXED (5 * 8 + 4 * 4 + 8)
enum { PUSH_THREAD = 1, PUSH_STARTEND = 2 };

static void emit_push(uint64_t id, uint64_t parent_range, uint32_t flags, const cz_nvtx_attr *a,
                      const char *msg, const void *domain) {
	char dom[256];
	domain_name(domain, dom, sizeof dom);
	size_t ml = msg ? strnlen(msg, 4096) : 0, dl = strlen(dom);
	uint8_t *p;
	pthread_mutex_lock(&Q.mu);
	p = frame_begin(CZ_FRAME_NVTX_PUSH, PUSH_FIXED + 4 + ml + dl);
	if (p) {
		uint64_t v[5] = {now_ts(), thread_id(), id, parent_range, tls_parent};
		memcpy(p, v, sizeof v);
		uint32_t w[4] = {flags, a ? a->category : 0, a ? a->color : 0, a ? (uint32_t)a->payloadType : 0};
		memcpy(p + 40, w, sizeof w);
		uint64_t pay = a ? a->payload : 0;
		memcpy(p + 56, &pay, 8);
		put_u16(p + PUSH_FIXED, (uint16_t)ml);
		memcpy(p + PUSH_FIXED + 2, msg, ml);
		put_u16(p + PUSH_FIXED + 2 + ml, (uint16_t)dl);
		memcpy(p + PUSH_FIXED + 4 + ml, dom, dl);
	}
	pthread_cond_signal(&Q.cv);
	pthread_mutex_unlock(&Q.mu);
}

// NVTX_POP payload: ts, tid, id (u64; id 0 = a pop with no open range), kind (u32: 0 push/pop, 1 start/end).
static void emit_pop(uint64_t id, uint32_t kind) {
	uint8_t pl[28];
	uint64_t v[3] = {now_ts(), thread_id(), id};
	memcpy(pl, v, 24);
	put_u32(pl + 24, kind);
	cz_queue_frame(CZ_FRAME_NVTX_POP, pl, sizeof pl);
}

static const char *attr_message(const cz_nvtx_attr *a) {
	// Only ASCII messages (NVTX_MESSAGE_TYPE_ASCII = 1) are read; wide and
	// registered strings are named by type.
	if (a == NULL) return NULL;
	if (a->messageType == 1) return (const char *)a->message;
	if (a->messageType == 2) return "(wide string)";
	if (a->messageType == 3) return "(registered string)";
	return NULL;
}

static void range_push(const void *domain, const char *msg, const cz_nvtx_attr *a) {
	uint64_t id = __atomic_add_fetch(&next_range_id, 1, __ATOMIC_RELAXED);
	uint64_t parent = tls_nranges > 0 && tls_nranges <= 128 ? tls_ranges[tls_nranges - 1].id : 0;
	scope_open();
	if (tls_nranges < 128) {
		tls_ranges[tls_nranges].id = id;
		tls_ranges[tls_nranges].domain = domain;
		L.PushExternalCorrelationId(CZ_EXT_RANGE, id);
	}
	tls_nranges++;
	emit_push(id, parent, PUSH_THREAD, a, msg, domain);
}

static void range_pop(const void *domain) {
	if (tls_nranges == 0) {
		emit_pop(0, 0);
		return;
	}
	if (tls_nranges > 128) {
		tls_nranges--;
		scope_close();
		return;
	}
	// The innermost open range of this domain; ranges of other domains
	// above it stay open, so their correlation ids are pushed back.
	int i = tls_nranges - 1;
	while (i >= 0 && tls_ranges[i].domain != domain) i--;
	if (i < 0) {
		emit_pop(0, 0);
		return;
	}
	uint64_t last;
	for (int j = tls_nranges - 1; j >= i; j--) L.PopExternalCorrelationId(CZ_EXT_RANGE, &last);
	uint64_t id = tls_ranges[i].id;
	for (int j = i + 1; j < tls_nranges; j++) {
		tls_ranges[j - 1] = tls_ranges[j];
		L.PushExternalCorrelationId(CZ_EXT_RANGE, tls_ranges[j - 1].id);
	}
	tls_nranges--;
	scope_close();
	emit_pop(id, 0);
}

static void nvtx_callback(uint32_t cbid, const cz_nvtx_data *d) {
	const void *const *pp = (const void *const *)d->functionParams;
	switch (cbid) {
	case NVTX_RangePushA:
		range_push(NULL, pp ? (const char *)pp[0] : NULL, NULL);
		break;
	case NVTX_RangePushEx: {
		const cz_nvtx_attr *a = pp ? pp[0] : NULL;
		range_push(NULL, attr_message(a), a);
		break;
	}
	case NVTX_DomainRangePushEx: {
		const cz_nvtx_attr *a = pp ? pp[1] : NULL;
		range_push(pp ? pp[0] : NULL, attr_message(a), a);
		break;
	}
	case NVTX_RangePop:
		range_pop(NULL);
		break;
	case NVTX_DomainRangePop:
		range_pop(pp ? pp[0] : NULL);
		break;
	case NVTX_RangeStartA:
	case NVTX_RangeStartEx:
	case NVTX_DomainRangeStartEx: {
		// The range id is the function's return value; without it the
		// end cannot be matched and the range is not recorded.
		uint64_t id = 0;
		if (d->functionReturnValue) memcpy(&id, d->functionReturnValue, 8);
		if (id == 0) break;
		const cz_nvtx_attr *a = NULL;
		const char *msg = NULL;
		const void *dom = NULL;
		if (cbid == NVTX_RangeStartA) msg = pp ? pp[0] : NULL;
		else if (cbid == NVTX_RangeStartEx) { a = pp ? pp[0] : NULL; msg = attr_message(a); }
		else { dom = pp ? pp[0] : NULL; a = pp ? pp[1] : NULL; msg = attr_message(a); }
		uint64_t parent = tls_nranges > 0 && tls_nranges <= 128 ? tls_ranges[tls_nranges - 1].id : 0;
		emit_push(id, parent, PUSH_STARTEND, a, msg, dom);
		break;
	}
	case NVTX_RangeEnd:
	case NVTX_DomainRangeEnd: {
		// nvtxRangeEnd(id) and nvtxDomainRangeEnd(domain, id).
		uint64_t id = 0;
		if (pp) memcpy(&id, cbid == NVTX_RangeEnd ? (const void *)&pp[0] : (const void *)&pp[1], 8);
		emit_pop(id, 1);
		break;
	}
	case NVTX_DomainCreateA:
		if (pp && d->functionReturnValue) {
			const void *h = NULL;
			memcpy(&h, d->functionReturnValue, sizeof h);
			domain_add(h, (const char *)pp[0]);
		}
		break;
	}
}

static void (*flush_hook)(int reason);
static int kernel_kind = CZ_KIND_CONCURRENT_KERNEL;
static volatile int hw_pending; // HWTrace asked for before the driver was initialized

// hw_trace_at_init: CU_INIT_FINISHED with HWTrace pending. The kernel kind
// is off while it is switched (CUPTI wants it before the kinds).
static void hw_trace_at_init(void) {
	if (!__atomic_exchange_n(&hw_pending, 0, __ATOMIC_SEQ_CST)) return;
	L.ActivityDisable(kernel_kind);
	CUptiResult r = L.EnableHWTrace(1);
	L.ActivityEnable(kernel_kind);
	char msg[256];
	if (r == 0)
		snprintf(msg, sizeof msg, "kernel timestamps from the hardware event system (cuptiActivityEnableHWTrace at cuInit's end)");
	else
		snprintf(msg, sizeof msg, "hardware kernel timestamps not used: cuptiActivityEnableHWTrace at cuInit's end: %s (%d)", result_text(r), r);
	cz_note(msg);
}

void cz_set_flush_hook(void (*fn)(int reason)) { flush_hook = fn; }

static void callback(void *userdata, int domain, uint32_t cbid, const void *cbdata) {
	(void)userdata;
	if (running && domain == 5 /* CUPTI_CB_DOMAIN_NVTX */ && cbdata)
		nvtx_callback(cbid, (const cz_nvtx_data *)cbdata);
	// CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
	// the context is still alive, and for a Go program (whose exit runs
	// no atexit handler) often the last moment its records can be had.
	if (running && domain == 3 && cbid == 2 && flush_hook) flush_hook(CZ_FLUSH_CONTEXT_DESTROY);
	if (running && domain == 3 && cbid == 5 /* CU_INIT_FINISHED */) hw_trace_at_init();
}

// ---- start / stop ----

int cz_start(uint32_t flags, char *err, size_t errlen) {
	if (!L.lib) {
		snprintf(err, errlen, "libcupti is not loaded");
		return -1;
	}
	if (running) return 0;
	CUptiResult r = L.Subscribe(&sub, callback, NULL);
	if (r != 0) {
		snprintf(err, errlen, "cuptiSubscribe: %s (%d)", result_text(r), r);
		sub = NULL;
		return r;
	}
	// The buffer callbacks are registered once per process: a second
	// capture reuses them (CUPTI may refuse a re-registration).
	static int registered;
	if (!registered) {
		if ((r = L.ActivityRegisterCallbacks(buffer_requested, buffer_completed)) != 0) {
			snprintf(err, errlen, "cuptiActivityRegisterCallbacks: %s (%d)", result_text(r), r);
			L.Unsubscribe(sub);
			sub = NULL;
			return r;
		}
		registered = 1;
	}
	uint32_t kinds[10];
	int n = 0;
	// External correlation records precede the API records of calls made
	// with an id pushed, so the API kinds must be on; their own records
	// are not forwarded (frame_record). The external correlation kind is
	// not free: on the H200's short-kernel loop, gpu-trace with it on
	// outside ranges added 2.3 µs a launch, without it 1.4 (CUPTI's kernel
	// records alone 1.2; bench/cupti.md), so with CZ_START_LAZY_API it is
	// switched with the API kinds, and without API records it is off.
	pthread_mutex_lock(&api.mu);
	api.lazy = (flags & CZ_START_LAZY_API) && !(flags & CZ_START_NO_API);
	api.on = api.open = api.touched = 0;
	pthread_mutex_unlock(&api.mu);
	if (!(flags & (CZ_START_NO_API | CZ_START_LAZY_API))) {
		kinds[n++] = CZ_KIND_EXTERNAL_CORRELATION;
		kinds[n++] = CZ_KIND_DRIVER;
		kinds[n++] = CZ_KIND_RUNTIME;
	}
	if (L.SetAttribute) {
		// CUZK_CUPTI_PINNED=1: CUPTI's profiling buffers in pinned host
		// memory instead of device memory (measured, not the default).
		const char *pin = getenv("CUZK_CUPTI_PINNED");
		if (pin && !strcmp(pin, "1")) {
			uint8_t v = 1;
			size_t sz = sizeof v;
			r = L.SetAttribute(8 /* CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED */, &sz, &v);
			char msg[160];
			snprintf(msg, sizeof msg, "profiling buffers in pinned host memory (CUZK_CUPTI_PINNED=1): %s", r == 0 ? "on" : result_text(r));
			cz_note(msg);
		}
	}
	kernel_kind = (flags & CZ_START_KIND_KERNEL) ? CZ_KIND_KERNEL : CZ_KIND_CONCURRENT_KERNEL;
	hw_pending = 0;
	if (flags & CZ_START_HWTRACE) {
		// CUPTI takes it after the driver is initialized and before the
		// first context: inside cuInit (the injection library's start) or
		// before it (NVTX's) it answers CUPTI_ERROR_NOT_INITIALIZED, so
		// then it is asked again at CU_INIT_FINISHED (callback below).
		if (!L.EnableHWTrace) {
			cz_note("hardware kernel timestamps not used: this CUPTI has no cuptiActivityEnableHWTrace");
		} else if ((r = L.EnableHWTrace(1)) == 0) {
			cz_note("kernel timestamps from the hardware event system (cuptiActivityEnableHWTrace)");
		} else if (r == CZ_CUPTI_NOT_INITIALIZED && L.EnableCallback) {
			hw_pending = 1;
		} else {
			char msg[256];
			snprintf(msg, sizeof msg, "hardware kernel timestamps not used: cuptiActivityEnableHWTrace: %s (%d)", result_text(r), r);
			cz_note(msg);
		}
	}
	kinds[n++] = (uint32_t)kernel_kind;
	if (flags & CZ_START_MEMCPY) kinds[n++] = CZ_KIND_MEMCPY;
	if (flags & CZ_START_MEMSET) kinds[n++] = CZ_KIND_MEMSET;
	if (flags & CZ_START_SYNC) kinds[n++] = CZ_KIND_SYNCHRONIZATION;
	nstarted = 0;
	for (int i = 0; i < n; i++) {
		if ((r = L.ActivityEnable((int)kinds[i])) != 0) {
			snprintf(err, errlen, "cuptiActivityEnable(kind %u): %s (%d)", kinds[i], result_text(r), r);
			for (int j = 0; j < nstarted; j++) L.ActivityDisable((int)started_kinds[j]);
			nstarted = 0;
			L.Unsubscribe(sub);
			sub = NULL;
			return r;
		}
		started_kinds[nstarted++] = kinds[i];
	}
	if ((flags & CZ_START_NVTX) && (r = L.EnableDomain(1, sub, 5 /* NVTX */)) != 0) {
		// Kernels are still captured; ranges are not.
		char msg[256];
		snprintf(msg, sizeof msg, "NVTX ranges not captured: cuptiEnableDomain(NVTX): %s (%d)", result_text(r), r);
		cz_note(msg);
	}
	// Context destruction: a flush point (cz_set_flush_hook). Optional: a
	// CUPTI without cuptiEnableCallback still captures.
	if (L.EnableCallback) L.EnableCallback(1, sub, 3 /* RESOURCE */, 2 /* CONTEXT_DESTROY_STARTING */);
	if (hw_pending) L.EnableCallback(1, sub, 3 /* RESOURCE */, 5 /* CU_INIT_FINISHED */);
	running = 1;
	pthread_mutex_lock(&api.mu);
	if (api.lazy && api.open > 0) api_switch_locked(1); // scopes opened before the start
	pthread_mutex_unlock(&api.mu);
	cz_calibrate(16);
	return 0;
}

void cz_stop(void) {
	if (!running) return;
	L.ActivityFlushAll(1);
	pthread_mutex_lock(&api.mu);
	api_switch_locked(0);
	running = 0;
	pthread_mutex_unlock(&api.mu);
	for (int j = 0; j < nstarted; j++) L.ActivityDisable((int)started_kinds[j]);
	nstarted = 0;
	if (sub) L.EnableDomain(0, sub, 5);
	if (sub) L.Unsubscribe(sub);
	sub = NULL;
	L.ActivityFlushAll(1);
}
