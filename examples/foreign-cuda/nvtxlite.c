// The NVTX v3 injection interface, client side (see nvtxlite.h). The
// constants are those of NVTX's nvtxTypes.h: module ids, callback ids
// (slot numbers) and export table ids.
#include "nvtxlite.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef void (*fnptr)(void);

enum { MOD_CORE = 1, MOD_CUDA = 2, MOD_OPENCL = 3, MOD_CUDART = 4, MOD_CORE2 = 5, MOD_SYNC = 6 };
// NVTX_CBID_<module>_SIZE.
enum { CORE_SIZE = 16, CUDA_SIZE = 9, OPENCL_SIZE = 15, CUDART_SIZE = 7, CORE2_SIZE = 16, SYNC_SIZE = 7 };
enum { CORE_RangeStartA = 5, CORE_RangeEnd = 7, CORE_RangePushEx = 8, CORE_RangePushA = 9, CORE_RangePop = 11 };
enum { CORE2_DomainRangePushEx = 4, CORE2_DomainRangePop = 5, CORE2_DomainCreateA = 12 };

// Slots the injection fills, and the tables of pointers to them that it
// is handed: entry 0 and entry SIZE are NULL, as in NVTX's own globals.
static fnptr slots[7][17];
static fnptr *tables[7][18];
static const unsigned sizes[7] = {0, CORE_SIZE, CUDA_SIZE, OPENCL_SIZE, CUDART_SIZE, CORE2_SIZE, SYNC_SIZE};

static int get_module_table(int module, fnptr ***out_table, unsigned *out_size) {
	if (module < MOD_CORE || module > MOD_SYNC) return 0;
	if (out_table) *out_table = tables[module];
	if (out_size) *out_size = sizes[module];
	return 1;
}

static void set_injection_version(uint32_t v) { (void)v; }

static struct {
	size_t struct_size;
	int (*GetModuleFunctionTable)(int, fnptr ***, unsigned *);
} etbl_callbacks = {sizeof etbl_callbacks, get_module_table};

static struct {
	size_t struct_size;
	uint32_t version;
	uint32_t reserved0;
	void (*SetInjectionNvtxVersion)(uint32_t);
} etbl_version = {sizeof etbl_version, 3, 0, set_injection_version};

static const void *get_export_table(uint32_t id) {
	switch (id) {
	case 1: return &etbl_callbacks; // NVTX_ETID_CALLBACKS
	case 3: return &etbl_version;   // NVTX_ETID_VERSIONINFO
	}
	return NULL;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static volatile int ready;

static void init(void) {
	for (int m = MOD_CORE; m <= MOD_SYNC; m++)
		for (unsigned i = 1; i < sizes[m]; i++) tables[m][i] = &slots[m][i];
	const char *path = getenv("NVTX_INJECTION64_PATH");
	if (path && *path) {
		void *h = dlopen(path, RTLD_NOW);
		int (*initialize)(const void *(*)(uint32_t)) = h ? (int (*)(const void *(*)(uint32_t)))dlsym(h, "InitializeInjectionNvtx2") : NULL;
		if (initialize == NULL || initialize(get_export_table) == 0) memset(slots, 0, sizeof slots);
	}
	ready = 1;
}

static fnptr slot(int module, int cbid) {
	if (!ready) pthread_once(&once, init);
	return slots[module][cbid];
}

void nvtxlite_ascii(nvtxlite_attr *a, const char *message) {
	memset(a, 0, sizeof *a);
	a->version = 3;
	a->size = sizeof *a;
	a->messageType = 1;
	a->message = message;
}

int nvtxlite_push(const char *message) {
	fnptr f = slot(MOD_CORE, CORE_RangePushA);
	return f ? ((int (*)(const char *))f)(message) : -2;
}

int nvtxlite_push_ex(const nvtxlite_attr *a) {
	fnptr f = slot(MOD_CORE, CORE_RangePushEx);
	return f ? ((int (*)(const nvtxlite_attr *))f)(a) : -2;
}

int nvtxlite_pop(void) {
	fnptr f = slot(MOD_CORE, CORE_RangePop);
	return f ? ((int (*)(void))f)() : -2;
}

uint64_t nvtxlite_start(const char *message) {
	fnptr f = slot(MOD_CORE, CORE_RangeStartA);
	return f ? ((uint64_t (*)(const char *))f)(message) : 0;
}

void nvtxlite_end(uint64_t id) {
	fnptr f = slot(MOD_CORE, CORE_RangeEnd);
	if (f) ((void (*)(uint64_t))f)(id);
}

void *nvtxlite_domain(const char *name) {
	fnptr f = slot(MOD_CORE2, CORE2_DomainCreateA);
	return f ? ((void *(*)(const char *))f)(name) : NULL;
}

int nvtxlite_domain_push(void *domain, const nvtxlite_attr *a) {
	fnptr f = slot(MOD_CORE2, CORE2_DomainRangePushEx);
	return f ? ((int (*)(void *, const nvtxlite_attr *))f)(domain, a) : -2;
}

int nvtxlite_domain_pop(void *domain) {
	fnptr f = slot(MOD_CORE2, CORE2_DomainRangePop);
	return f ? ((int (*)(void *))f)(domain) : -2;
}
