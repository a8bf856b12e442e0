/*
 * cuzk_cupti.h: put the kernels that C and C++ code launches under a span
 * of the Go program that calls it (package
 * github.com/otelcuzk/otelcuzk/cupti, CUPTI activity capture). Link: the
 * functions are defined by the Go package; C code built through cgo in the
 * same binary calls them directly.
 *
 * CUPTI's external correlation ids belong to an OS thread, so the parent is
 * entered and left on the thread that launches the work:
 *
 *   Go:  id, release := cupti.Parent(ctx)   // ctx holds the parent span
 *        defer release()
 *        C.run_batch(C.uint64_t(id))         // or cupti.Call(ctx, fn, arg)
 *
 *   C:   void run_batch(uint64_t parent) {
 *            cuzk_cupti_enter(parent);       // launches below are children
 *            my_kernel<<<g, b, 0, s>>>(...);
 *            nvtxRangePushA("phase");        // so is this range
 *            ...
 *            nvtxRangePop();
 *            cuzk_cupti_exit();
 *        }
 *
 * Enter/exit pairs nest per thread and each enter must be left on the
 * thread that entered. Parent 0 means "no parent": the work goes under the
 * device's window span. Without an active capture both calls do nothing.
 */
#ifndef CUZK_CUPTI_H
#define CUZK_CUPTI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void cuzk_cupti_enter(uint64_t parent);
void cuzk_cupti_exit(void);

#ifdef __cplusplus
}

/* C++: a scope that leaves its parent on destruction. */
struct cuzk_cupti_scope {
	explicit cuzk_cupti_scope(uint64_t parent) { cuzk_cupti_enter(parent); }
	~cuzk_cupti_scope() { cuzk_cupti_exit(); }
	cuzk_cupti_scope(const cuzk_cupti_scope &) = delete;
	cuzk_cupti_scope &operator=(const cuzk_cupti_scope &) = delete;
};
#endif

#endif /* CUZK_CUPTI_H */
