// Package cupti traces CUDA work this project did not write: every
// kernel, copy, memset and synchronization that any code in the process
// runs, and the NVTX ranges it marks, become OpenTelemetry spans, through
// NVIDIA's CUPTI activity API (the same records Nsight Systems and
// PyTorch's Kineto read).
//
// # Loading
//
// libcupti is loaded at run time with dlopen (libcupti.so.13, .so.12,
// then under /usr/local/cuda; WithLibraryPaths or $CUZK_CUPTI), so
// building needs no CUDA toolkit. Start returns errors wrapping
// ErrNoCUPTI, ErrVersion (older than MinVersion), ErrInUse (another tool,
// such as Nsight Systems, holds CUPTI's one subscription) or ErrStart.
//
// # Use
//
//	c, err := cupti.Start(ctx)          // before the CUDA work
//	defer c.Close(ctx)
//	cupti.Call(ctx, C.run_batch, arg)   // foreign C code; its kernels are children of ctx's span
//	c.Flush(ctx)                        // before ending that span
//
// # Records and spans
//
// CUPTI hands filled activity buffers to cz_core.c, which frames each
// record (with the strings its pointers point to) into a queue that the
// capture drains every DefaultFlushInterval. Records are decoded with the
// field offsets of records.go and become spans with cudaspans' attributes
// (cuda.kernel.name, cuda.grid, cuda.block, cuda.shared_bytes,
// cuda.stream, cuda.device.ordinal, cuda.bytes, cuda.gbps) plus
// cuda.cupti_ms, cuda.correlation_id, cuda.clock=cupti and the clock
// calibration's cuda.clock.offset_ns and cuda.clock.uncertainty_ns.
//
// # Parents
//
// CUPTI's external correlation ids belong to the OS thread that launches
// the work. Call pushes the id of a Go span, calls a C function and pops
// the id in one cgo call; C and C++ code on its own threads uses
// cuzk_cupti_enter/cuzk_cupti_exit (cuzk_cupti.h) with an id from Parent.
// A record launched inside an NVTX push range is a child of the range.
// Records with neither go under the job whose published time window
// holds them (WithJobs, package cupti/jobs), else under a per-device span
// (SpanWindow) covering a bounded window (DefaultWindow), each the root
// of its own trace, ended and exported once its time is over; the gaps
// between its records are SpanIdle children.
//
// # cudaspans
//
// Kernels, copies and memsets launched through cudaspans are traced by
// cudaspans with CUDA events; Start hooks cudaspans
// (cudaspans.SetLaunchCorrelation) so that CUPTI's records of them are not
// turned into second spans and each kernel span carries CUPTI's duration
// (cuda.cupti_ms) beside the events' (cuda.gpu_ms).
//
// By default cudaspans' Synchronize forces no CUPTI flush for that: a
// kernel span whose record has not come by then is held until a drain
// brings it, DefaultDurationWait at most (WithoutForcedFlush sets the
// wait), and then ends without cuda.cupti_ms; Close says how many did.
// WithForcedFlush, or CUZK_CUPTI_NO_FORCED_FLUSH=0 (NoForcedFlushEnv),
// forces a flush at each Synchronize instead, paid on the launching
// thread; the variable's other values are 1 or a wait ("500ms"), and one
// it does not take keeps the default, said in one line at Start.
//
// # Clock
//
// Activity timestamps are CUPTI's clock (cuptiGetTimestamp, ns). Every
// DefaultCalibrateInterval the capture reads the host clock, CUPTI's clock
// and the host clock again 16 times; the tightest bracket gives the offset
// (its midpoint) and uncertainty (half its width), as Kineto calibrates.
// Between calibrations the offset is interpolated.
//
// # NVTX
//
// Start sets NVTX_INJECTION64_PATH to the loaded libcupti unless it is
// set, so it must run before the process's first NVTX call. Ranges of
// nvtxRangePush/Pop, nvtxRangeStart/End and their domain forms become
// spans named by their message, nested under the enclosing range of the
// thread, else the Go span of Call or cuzk_cupti_enter, else the root; a
// message carrying "traceparent=00-…" (W3C Trace Context) makes the range
// a child of that remote span. Payload, category, color and domain are
// attributes. Kernels and copies are children of the innermost push range
// open on the thread that launched them; start/end ranges, which belong to
// no thread, have no such children. Ranges opened before Start are not
// seen (under cuzk gpu-trace the capture starts at the program's first
// NVTX call or cuInit, whichever comes first); NVTXMessage makes the
// message of a range that joins a Go span's trace. A pop with nothing open is said once and ignored; ranges
// still open at Close end there, marked nvtx.unclosed.
//
// # Volume
//
// As in cudaspans, past WithMaxKernelSpans kernels under one parent the
// further kernels of one drain are folded per name into one span with
// cuzk.aggregate.count, total_ms, min_ms and max_ms.
package cupti
