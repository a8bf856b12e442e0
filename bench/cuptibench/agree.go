package main

import (
	"context"
	"fmt"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/cupti"
)

// agreeSource: timed waits a set number of ns on one warp (its length is
// the argument, from 5 µs to 2 ms), blocker holds a stream or every SM.
const agreeSource = `
__device__ unsigned long long now_ns() {
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}
extern "C" __global__ void timed(unsigned long long ns) {
	unsigned long long t0 = now_ns();
	while (now_ns() - t0 < ns) {}
}
extern "C" __global__ void blocker(unsigned long long ns) {
	unsigned long long t0 = now_ns();
	while (now_ns() - t0 < ns) {}
}`

// agreeLengths are the timed kernels' lengths in turn (ns).
var agreeLengths = []uint64{5e3, 10e3, 20e3, 50e3, 100e3, 200e3, 500e3, 1e6, 2e6}

// runAgree times the same kernels with cudaspans' events and with CUPTI
// (capture on, cuda.cupti_ms on each kernel span) in three arrangements
// that differ only in what the start event waits for:
//
//   - queued: every launch queued behind a 2 ms blocker and the kernels
//     before it, so the start event completes when the stream's previous
//     work ends and the events measure the kernel plus the GPU's gap
//     between two commands of one stream;
//   - idle: each launch on an idle stream (a Synchronize after each), so
//     the start event completes at once and the events also measure the
//     host's launch call and the GPU's start of the kernel;
//   - contended: the stream idle, but every SM held by a 300 µs blocker
//     on another stream, so the events also measure the wait for SMs.
//
// The agreement line of each says how many kernels' two durations are
// within max(1 %, 2 µs), and by how much they differ.
func runAgree(outer context.Context, n int) error {
	if n > cudaspans.DefaultMaxKernelSpans {
		return fmt.Errorf("-agree %d: at most %d kernels an arrangement (cudaspans folds more into aggregates)", n, cudaspans.DefaultMaxKernelSpans)
	}
	ctx := outer
	rec, tp, _, closeTracing, err := benchutil.SyncTracing()
	if err != nil {
		return err
	}
	defer closeTracing(ctx)
	c, s, fns, err := openKernels(ctx, tp, "agree", agreeSource, "timed", "blocker")
	if err != nil {
		return err
	}
	defer c.Close()
	timed, block := fns[0], fns[1]
	other, err := c.NewStream()
	if err != nil {
		return err
	}
	capt, err := cupti.Start(ctx, cupti.WithTracerProvider(tp))
	if err != nil {
		return err
	}
	defer capt.Close(ctx)
	one, warp := cudaspans.D1(1), cudaspans.D1(32)
	launch := func(i int) error {
		return s.Launch(ctx, timed, one, warp, 0, agreeLengths[i%len(agreeLengths)])
	}
	arrangements := []struct {
		name string
		run  func() error
	}{
		{"queued", func() error {
			if err := s.Launch(ctx, block, one, warp, 0, uint64(2e6)); err != nil {
				return err
			}
			for i := 0; i < n; i++ {
				if err := launch(i); err != nil {
					return err
				}
			}
			return s.Synchronize(ctx)
		}},
		{"idle", func() error {
			for i := 0; i < n; i++ {
				if err := launch(i); err != nil {
					return err
				}
				if err := s.Synchronize(ctx); err != nil {
					return err
				}
			}
			return nil
		}},
		{"contended", func() error {
			// 8 blocks of 256 threads an SM: every SM's threads taken.
			sms := cudaspans.D1(8 * c.Device().Multiprocessors)
			for i := 0; i < n; i++ {
				if err := other.Launch(ctx, block, sms, cudaspans.D1(256), 0, uint64(300e3)); err != nil {
					return err
				}
				time.Sleep(20 * time.Microsecond) // the blocker reaches the SMs first
				if err := s.Launch(ctx, timed, one, warp, 0, uint64(10e3)); err != nil {
					return err
				}
				if err := s.Synchronize(ctx); err != nil {
					return err
				}
				if err := other.Synchronize(ctx); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	// Each arrangement's kernels under a span of their own: cudaspans
	// folds the launches past DefaultMaxKernelSpans under one parent into
	// aggregates, which carry no durations to compare.
	tracer := tp.Tracer("cuptibench")
	for round := 0; round < 2; round++ { // the first round warms up
		for _, a := range arrangements {
			rec.Reset()
			var span trace.Span
			ctx, span = tracer.Start(outer, "agree."+a.name)
			err := a.run()
			if err == nil {
				// Spans held for their records (no forced flush) end
				// at a drain: this one, before they are read.
				err = capt.Flush(ctx)
			}
			span.End()
			if err != nil {
				return fmt.Errorf("%s: %w", a.name, err)
			}
			if round == 1 {
				agreement(a.name+", "+flushMode(), kernelsNamed(rec.Ended(), "timed"))
			}
		}
	}
	return nil
}

// kernelsNamed are the spans of kernels called name.
func kernelsNamed(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			if kv.Key == "cuda.kernel.name" && kv.Value.AsString() == name {
				out = append(out, s)
				break
			}
		}
	}
	return out
}
