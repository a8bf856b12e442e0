/*
 * cudaspans.h: record phases of C and CUDA host code as spans in the
 * trace of the Go program that calls it (package
 * github.com/otelcuzk/otelcuzk/cudaspans). Link: the functions are
 * defined by the Go package; C code built through cgo in the same binary
 * calls them directly.
 *
 * Parents are explicit handles, so the C code needs no thread-local state
 * and may hand a handle to its own threads:
 *
 *   Go:  h, release := cudaspans.CParent(ctx)  // ctx holds the parent span
 *        defer release()
 *        C.prove_step(C.uint64_t(h), C.uintptr_t(stream.Handle()))
 *
 *   C:   cudaspans_handle s = cudaspans_begin(parent, "msm.bucket_sort", NULL);
 *        ...host work...                       // host clock
 *        cudaspans_end(s);
 *
 *        cudaspans_handle k = cudaspans_begin(parent, "ntt.batch", (void*)stream);
 *        my_kernel<<<g, b, 0, stream>>>(...);  // device clock: CUDA events on
 *        cudaspans_end(k);                     // the stream, read at its next
 *                                              // Synchronize in Go
 *
 * A handle returned by cudaspans_begin is itself a parent for nested
 * phases. With a stream, the phase is timed by CUDA events on that stream
 * (which must come from cudaspans' Stream.Handle); its nested phases
 * become children of its own parent, since a device span exists only once
 * the stream is synchronized. With NULL, or a stream cudaspans does not
 * know, the phase is timed on the host clock. Handle 0 means "no span":
 * begin returns 0 for an unknown or released parent, and every call
 * ignores 0. Handles are safe to use from any thread; each begun handle
 * must be ended exactly once.
 */
#ifndef CUDASPANS_H
#define CUDASPANS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t cudaspans_handle;

/* Begin a span named name (copied) under parent; stream is a CUstream or NULL. */
cudaspans_handle cudaspans_begin(cudaspans_handle parent, const char *name, void *stream);
/* End a span begun by cudaspans_begin. */
void cudaspans_end(cudaspans_handle span);
/* Attributes of a begun span (key and value are copied). */
void cudaspans_set_int(cudaspans_handle span, const char *key, int64_t value);
void cudaspans_set_double(cudaspans_handle span, const char *key, double value);
void cudaspans_set_str(cudaspans_handle span, const char *key, const char *value);

#ifdef __cplusplus
}

/* C++: a scope that ends its span on destruction. */
struct cudaspans_scope {
	cudaspans_handle h;
	cudaspans_scope(cudaspans_handle parent, const char *name, void *stream = nullptr)
	    : h(cudaspans_begin(parent, name, stream)) {}
	~cudaspans_scope() { cudaspans_end(h); }
	cudaspans_scope(const cudaspans_scope &) = delete;
	cudaspans_scope &operator=(const cudaspans_scope &) = delete;
};
#endif

#endif /* CUDASPANS_H */
