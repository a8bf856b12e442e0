// Package cudaspans is an instrumented CUDA driver for Go: every kernel
// launch, copy, allocation and free becomes an OpenTelemetry span on the
// wall clock, with the device's own timing, so the GPU part of a proof
// appears in the same trace as the RPC that asked for it.
//
// # Loading
//
// libcuda.so.1 and NVRTC are loaded at run time with dlopen, so building
// needs no CUDA toolkit and one binary runs on hosts with and without a
// GPU. Entry points are looked up with cuGetProcAddress for the CUDA 12.0
// signatures (cuMemAlloc resolves to cuMemAlloc_v2, and names whose
// signature changed in CUDA 13, such as cuCtxCreate, keep their 12.0
// form), so drivers for CUDA 12 and 13 both work. Without a driver or a
// device, Open and Devices return errors wrapping ErrNoDevice, on which
// callers fall back to the CPU.
//
// # Use
//
//	c, err := cudaspans.Open(0)                    // primary context of GPU 0
//	mod, err := c.Compile(ctx, "ntt", src, cudaspans.CompileOptions{})
//	f, err := mod.Function("ntt_radix2")           // extern "C" __global__
//	s, err := c.NewStream()
//	buf, err := c.Alloc(ctx, n*32)
//	err = cudaspans.HtoD(ctx, s, buf.Ptr(), scalars)
//	err = s.Launch(ctx, f, cudaspans.D1(n/256), cudaspans.D1(256), 0, buf.Ptr(), uint32(n))
//	err = s.Synchronize(ctx)                       // emits the spans
//
// The context's methods make the CUDA context current on the calling OS
// thread before each driver call, so any goroutine may use them.
//
// # GPU clock to wall clock
//
// Each operation is bracketed by two CUDA events on its stream. Each
// stream keeps an anchor: an event recorded while the stream is idle,
// waited for, and paired with the host time read around it. At
// Synchronize, an operation's span starts at the anchor's wall time plus
// the elapsed time from the anchor event to its start event, and lasts
// the elapsed time between its own two events (cuda.gpu_ms). Anchors are
// renewed per Session (one per proof) and when older than
// WithAnchorMaxAge. A device span that would fall outside its host
// parent is clamped into it, marked cuda.clamped, and counted on the
// parent as cuzk.clamped_spans (DESIGN.md, "GPU clock to wall clock").
//
// # Volume
//
// After WithMaxKernelSpans launches (default 256) under one parent span,
// further launches under it are folded into one span per kernel name and
// synchronize, with cuzk.aggregate.count, total_ms, min_ms and max_ms.
//
// # gpu.total
//
// Context.BeginSession starts the device work of one prove; Session.End
// emits gpu.total, from the first to the last device operation launched
// with the session's context, on the GPU clock (cuzk's gpu_total_ms).
//
// # C and CUDA code
//
// cudaspans.h declares cudaspans_begin and cudaspans_end for C and CUDA
// host code linked into the same binary; CParent hands the C code a
// handle for the span in a Go context. Phases given a stream are timed
// with events on it like any other operation.
//
// # Kernels
//
// Compile runs NVRTC for the device's architecture (sm_90 on an H200) and
// caches the cubin on disk, keyed by SHA-256 of source, options,
// architecture and driver version; LoadModule takes a precompiled cubin or
// PTX instead. Kernel parameters are packed by value like cuLaunchKernel's
// kernelParams, at any size and alignment.
package cudaspans
