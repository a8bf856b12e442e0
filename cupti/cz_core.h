/*
 * Internal to package cupti and the gpu-trace injection library: CUPTI
 * loaded at run time, its activity buffers and NVTX callbacks turned into
 * frames of our own wire format (frames.go documents it), queued for the
 * reader (Go in this process, or the injection library's writer thread).
 *
 * No CUPTI header is needed to build: the few enums and entry points used
 * are declared here with their values from cupti_activity.h,
 * cupti_callbacks.h and cupti_nvtx_cbid.h (stable since CUDA 11). Record
 * layouts are not read here except where a record holds a pointer (the
 * kernel name), whose string is appended to the frame; Go decodes the rest.
 */
#ifndef CUZK_CZ_CORE_H
#define CUZK_CZ_CORE_H

#include <stddef.h>
#include <stdint.h>

/* Frame types (frames.go). */
enum {
	CZ_FRAME_RECORD = 1,
	CZ_FRAME_NVTX_PUSH = 2,
	CZ_FRAME_NVTX_POP = 3,
	CZ_FRAME_CALIB = 4,
	CZ_FRAME_DROPPED = 5,
	CZ_FRAME_NOTE = 6,
	CZ_FRAME_HELLO = 7,
	CZ_FRAME_BYE = 8,
	CZ_FRAME_FLUSHED = 9,
};

/* Why a FLUSHED frame was sent (frames.go). */
enum {
	CZ_FLUSH_SIGNAL = 1,          /* a fatal signal: flushed before the default action */
	CZ_FLUSH_CONTEXT_DESTROY = 2, /* a CUDA context is being destroyed */
};

/* CUPTI activity kinds (cupti_activity.h). */
enum {
	CZ_KIND_MEMCPY = 1,
	CZ_KIND_MEMSET = 2,
	CZ_KIND_KERNEL = 3,
	CZ_KIND_DRIVER = 4,
	CZ_KIND_RUNTIME = 5,
	CZ_KIND_CONCURRENT_KERNEL = 10,
	CZ_KIND_SYNCHRONIZATION = 38,
	CZ_KIND_EXTERNAL_CORRELATION = 39,
};

/* External correlation kinds: CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0..2. */
enum {
	CZ_EXT_PARENT = 3,    /* a Go span registered with cupti.Parent */
	CZ_EXT_RANGE = 4,     /* the innermost NVTX push range of the thread */
	CZ_EXT_CUDASPANS = 5, /* a launch cudaspans already times */
};

/* Start flags. */
enum {
	CZ_START_NVTX = 1,
	CZ_START_MEMCPY = 2,
	CZ_START_MEMSET = 4,
	CZ_START_SYNC = 8,
	CZ_START_NO_API = 16, /* no API records: cheaper, but no external correlation (ranges, parents) */
	/* API records only while a correlation scope is open (an NVTX push
	 * range or a cuzk_cupti_enter parent, on any thread): switched on by
	 * the push that opens the first, off by cz_api_tick once none has been
	 * open for a whole tick. Kernels outside every scope need no API
	 * record (they go under a device window or job by time), so a program
	 * that marks nothing pays only for the activity records. */
	CZ_START_LAZY_API = 32,
	/* Kernel timestamps from the GPU's hardware event system
	 * (cuptiActivityEnableHWTrace), where this CUPTI and GPU have it;
	 * refused (a NOTE) elsewhere, and the capture goes on without it. */
	CZ_START_HWTRACE = 64,
	/* KERNEL records instead of CONCURRENT_KERNEL (kernels serialized):
	 * measured against the default for what each costs a launch. */
	CZ_START_KIND_KERNEL = 128,
};

/* Offset of the kernel name pointer in CUpti_ActivityKernel4..9. */
#define CZ_KERNEL_NAME_OFFSET 104

/* cz_open loads libcupti at path. 0 on success; else a one-line reason in err. */
int cz_open(const char *path, char *err, size_t errlen);
/* cz_probe loads path, reads its version and file (dladdr) and unloads it
 * again, leaving the capture's library alone. 0 on success. */
int cz_probe(const char *path, char *out, size_t outlen, uint32_t *version, char *err, size_t errlen);
/* cz_version: cuptiGetVersion; 0 when not loaded. */
uint32_t cz_version(void);
/* cz_loaded_path: the file the library was loaded from (dladdr), or "". */
const char *cz_loaded_path(void);
/* cz_sym: a symbol of the loaded library (tests call a fake's functions). */
void *cz_sym(const char *name);
/* cz_start subscribes and enables the activity kinds of flags. Returns the
 * CUPTI result (0 = success) and a one-line reason in err. */
int cz_start(uint32_t flags, char *err, size_t errlen);
/* cz_stop flushes (forced), disables and unsubscribes; idempotent. */
void cz_stop(void);
/* cz_flush: cuptiActivityFlushAll (forced when forced != 0). */
int cz_flush(int forced);
/* cz_calibrate queues a CALIB frame of n bracketed clock readings. */
void cz_calibrate(int n);
/* cz_take hands the queued frames to the caller (free them with free). */
uint8_t *cz_take(size_t *len);
/* cz_wait_data waits up to ms milliseconds for queued frames; 1 if any. */
int cz_wait_data(int ms);
/* cz_note queues a NOTE frame (one line). */
void cz_note(const char *msg);
/* cz_queue_frame queues a frame of type with payload (used for HELLO/BYE). */
void cz_queue_frame(uint16_t type, const void *payload, size_t n);
/* cz_set_queue_limit caps queued bytes (frames past it are dropped and counted). */
void cz_set_queue_limit(size_t bytes);

/* cz_api_tick: with CZ_START_LAZY_API, switches the API records off when
 * no correlation scope has been open since the previous tick (the caller's
 * period, e.g. the writer's flush interval). */
void cz_api_tick(void);
/* cz_api_switches: how many times the API records were switched on and off
 * (CZ_START_LAZY_API), for the capture's goodbye. */
void cz_api_switches(uint64_t *on, uint64_t *off);

/* cz_set_flush_hook names a function called (on the program's thread)
 * when a CUDA context is about to be destroyed, with CZ_FLUSH_CONTEXT_DESTROY:
 * the injection library flushes and sends there. */
void cz_set_flush_hook(void (*fn)(int reason));

/* cz_call runs fn(arg) with parent pushed as the calling thread's external
 * correlation id (and current parent of NVTX ranges), then pops it: one
 * call, so the push, the call and the pop happen on one OS thread. */
void cz_call(uint64_t parent, void (*fn)(void *), void *arg);
/* Used by cudaspans' launch hook (CZ_EXT_CUDASPANS). */
void cz_cudaspans_push(uint64_t id);
void cz_cudaspans_pop(void);
/* cz_cudaspans_take: CUPTI's durations (ms) of the cudaspans launches ids
 * (their CZ_EXT_CUDASPANS ids) delivered so far, into ms (-1: none yet),
 * each forgotten once taken; returns how many were found. */
int cz_cudaspans_take(const uint64_t *ids, double *ms, int n);

#endif
