// Command foreign-cuda traces CUDA code this project did not write, in
// its own process: foreign.c launches kernels with the plain CUDA driver
// API (not cudaspans) and marks its phases with NVTX; with a cupti.Capture
// started first, its kernels, copies and NVTX ranges become spans under
// the Go span that called it.
//
//	go run ./examples/foreign-cuda [-iters 10] [-elems 1048576]
//
// Spans go where otelcuzk.Setup sends them (OTEL_* variables; by default
// the file cuzk-trace.jsonl). The same C code as a standalone executable
// (build.sh) is what `cuzk gpu-trace` traces from outside; README.md has
// both.
package main

/*
#cgo LDFLAGS: -ldl -lm -lpthread
#include <stdlib.h>
#include "foreign.h"
*/
import "C"

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"unsafe"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cupti"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
)

// SpanJob is the Go span the foreign work goes under.
const SpanJob = "foreign.job"

// runForeign calls foreign_run under the span in ctx, through cupti.Call
// so that the calling thread carries the span's id while the C code runs.
func runForeign(ctx context.Context, iters, elems int) error {
	a := (*C.foreign_args)(C.calloc(1, C.sizeof_foreign_args))
	defer C.free(unsafe.Pointer(a))
	a.iters, a.elems = C.int(iters), C.int(elems)
	cupti.Call(ctx, unsafe.Pointer(C.foreign_run_cb), unsafe.Pointer(a))
	if a.rc != 0 {
		return errors.New("foreign-cuda: " + C.GoString(&a.err[0]))
	}
	return nil
}

// run starts the capture, runs the foreign code under a SpanJob span of
// tp and flushes the GPU spans before ending it.
// errNoDriver is run's error on a host without the CUDA driver: said
// first, as cuzk gpu-trace does, not the CUPTI paths tried.
var errNoDriver = errors.New("foreign-cuda: no CUDA driver (" + cupti.DriverLibrary + ") on this host; this example needs an NVIDIA GPU")

func run(ctx context.Context, tp trace.TracerProvider, iters, elems int) error {
	if cupti.LibraryLoads(cupti.DriverLibrary) != nil {
		return errNoDriver
	}
	c, err := cupti.Start(ctx, cupti.WithTracerProvider(tp))
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	ctx, span := tp.Tracer("foreign-cuda").Start(ctx, SpanJob)
	defer span.End()
	err = runForeign(ctx, iters, elems)
	c.Flush(ctx)
	return err
}

func main() {
	iters := flag.Int("iters", 10, "launches of each kernel (1..24)")
	elems := flag.Int("elems", 1<<20, "floats per buffer")
	flag.Parse()
	if *iters < 1 || *iters > 24 || *elems < 1 {
		fmt.Fprintln(os.Stderr, "foreign-cuda: want 1 <= -iters <= 24 and -elems >= 1")
		os.Exit(2)
	}
	ctx := context.Background()
	tel, err := otelcuzk.New(ctx, otelcuzk.WithServiceName("foreign-cuda"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "foreign-cuda:", err)
		os.Exit(1)
	}
	err = run(ctx, tel.TracerProvider, *iters, *elems)
	if serr := tel.Shutdown(ctx); err == nil {
		err = serr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("foreign-cuda: ok")
}
