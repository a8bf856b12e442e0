/*
 * nvtxlite.h: the few NVTX calls the example uses, as a client of the
 * NVTX v3 injection interface (what NVIDIA's header-only nvtx3 library
 * does): on the first call it loads the library named by
 * NVTX_INJECTION64_PATH (CUPTI, when a tracer set it), calls its
 * InitializeInjectionNvtx2 with our export tables, and from then on each
 * call goes to the function the injection put in its slot; without an
 * injection every call does nothing. Written for this example so it builds
 * without NVIDIA's headers; real programs use nvtx3/nvToolsExt.h, which
 * speaks the same interface.
 */
#ifndef NVTXLITE_H
#define NVTXLITE_H

#include <stdint.h>

/* nvtxEventAttributes_t of NVTX v2/v3. */
typedef struct {
	uint16_t version;  /* 3 */
	uint16_t size;     /* sizeof(nvtxlite_attr) */
	uint32_t category;
	int32_t colorType; /* 1: ARGB */
	uint32_t color;
	int32_t payloadType; /* 1 u64, 2 i64, 3 double, 4 u32, 5 i32, 6 float */
	int32_t reserved0;
	uint64_t payload;
	int32_t messageType; /* 1: ASCII */
	int32_t pad;
	const char *message;
} nvtxlite_attr;

/* nvtxlite_ascii fills a with message and no payload, category or color. */
void nvtxlite_ascii(nvtxlite_attr *a, const char *message);

int nvtxlite_push(const char *message);          /* nvtxRangePushA */
int nvtxlite_push_ex(const nvtxlite_attr *a);    /* nvtxRangePushEx */
int nvtxlite_pop(void);                          /* nvtxRangePop */
uint64_t nvtxlite_start(const char *message);    /* nvtxRangeStartA */
void nvtxlite_end(uint64_t id);                  /* nvtxRangeEnd */
void *nvtxlite_domain(const char *name);         /* nvtxDomainCreateA */
int nvtxlite_domain_push(void *domain, const nvtxlite_attr *a); /* nvtxDomainRangePushEx */
int nvtxlite_domain_pop(void *domain);           /* nvtxDomainRangePop */

#endif
