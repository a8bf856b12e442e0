package gpu

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/gpu/kernels"
	"github.com/otelcuzk/otelcuzk/prover/gpu/msm"
	"github.com/otelcuzk/otelcuzk/prover/gpu/ntt"
)

var _ backend.Warmer = (*Backend)(nil)

// Warmup makes the backend ready to prove: it compiles with NVRTC, or
// loads from the kernel cache (cudaspans.Context.KernelCacheDir), every
// kernel module the backend uses (the NTT; the MSM's scalar part and the
// four point parts of G1 and of G2, kernels/msm.cu) all at once on their
// own goroutines, so the wall time is that of the slowest module rather
// than the sum. It is recorded as a gpu.warmup span (child of the span in
// ctx) with one cuda.compile child per module, and cuda.nvrtc.compile
// below those that missed the cache.
//
// It returns nil once every module is loaded; later calls return nil at
// once. On failure (a *cudaspans.CompileError with the log, no NVRTC and
// no cached image: cudaspans.ErrNoCompiler) it returns the error, keeps
// what did load, and the next call tries the rest again. Concurrent calls
// share the warm-up in flight (their gpu.warmup spans say
// cuzk.warmup.shared). ctx ends the wait, not the work: a caller whose ctx
// ends gets its error (wrapping ctx.Err()) at once while the compiles go
// on, and a later call waits for them.
//
// Calling it is optional: a proof warms the backend itself (BeginProof, before
// the gpu.lock wait and before the device session, so neither gpu.lock nor
// gpu.total ever covers a compile). Call it to be ready before the first
// proof: cuzk serve reports NOT_SERVING until it returns nil; cuzk prove
// prints a line while it runs. Cold on the H200 host it compiles for tens
// of seconds; from the kernel cache it takes milliseconds.
func (b *Backend) Warmup(ctx context.Context) (err error) {
	if b.ready.Load() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cuda backend: warm-up: %w", err)
	}
	// The span starts before the wait for a warm-up in flight, so a proof
	// that waits for the daemon's (or cuzk prove's) warm-up shows the wait.
	ctx, span := b.tracer.Start(ctx, semconv.SpanGPUWarmup,
		trace.WithAttributes(semconv.KeyCUDADeviceOrdinal.Int(b.c.Device().Ordinal)))
	defer func() {
		semconv.SetError(span, err)
		span.End()
	}()
	b.warmMu.Lock()
	if b.ready.Load() {
		b.warmMu.Unlock()
		span.SetAttributes(semconv.KeyWarmupShared.Bool(true))
		return nil
	}
	run := b.inflight
	span.SetAttributes(semconv.KeyWarmupShared.Bool(run != nil))
	if run == nil {
		// The compiles outlive a caller that stops waiting (NVRTC cannot
		// be interrupted; what it compiles lands in the kernel cache).
		run = &warmRun{done: make(chan struct{})}
		b.inflight = run
		go b.runWarm(context.WithoutCancel(ctx), run)
	}
	b.warmMu.Unlock()
	select {
	case <-run.done:
		if run.err != nil {
			return fmt.Errorf("cuda backend: warm-up: %w", run.err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cuda backend: warm-up: %w (the compile goes on)", ctx.Err())
	}
}

// warmRun is one warm-up: done closes when it has ended, err its result.
type warmRun struct {
	done chan struct{}
	err  error
}

// runWarm runs b.warm for run and publishes the result.
func (b *Backend) runWarm(ctx context.Context, run *warmRun) {
	err := b.warm(ctx)
	b.warmMu.Lock()
	if err == nil {
		b.ready.Store(true)
	}
	run.err = err
	b.inflight = nil
	b.warmMu.Unlock()
	close(run.done)
}

// waitWarm waits for a warm-up in flight, if any (Close).
func (b *Backend) waitWarm() {
	b.warmMu.Lock()
	run := b.inflight
	b.warmMu.Unlock()
	if run != nil {
		<-run.done
	}
}

// compileModules compiles the NTT and MSM modules not yet loaded, in
// parallel. One runs at a time (Warmup's inflight).
func (b *Backend) compileModules(ctx context.Context) error {
	var jobs []func() error
	if b.ntt == nil {
		jobs = append(jobs, func() (err error) {
			b.ntt, err = ntt.New(ctx, b.c, ntt.WithTracerProvider(b.tp))
			return err
		})
	}
	if b.msm == nil {
		jobs = append(jobs, func() (err error) {
			b.msm, err = msm.New(ctx, b.c, msm.WithTracerProvider(b.tp), msm.WithG2(), msm.WithReleaser(b.releaser))
			return err
		})
	}
	if b.batch == nil {
		jobs = append(jobs, func() (err error) {
			b.batch, err = msm.NewBatchAdd(ctx, b.c, msm.WithTracerProvider(b.tp), msm.WithReleaser(b.releaser))
			return err
		})
	}
	return kernels.Parallel(jobs...)
}

// proofState is what BeginProof puts in a proof's context: the backend
// that owns the proof and the result of its warm-up, so a failed warm-up
// fails the proof's first device call without compiling again.
type proofState struct {
	b       *Backend
	warmErr error
}

// ensureReady returns nil when the kernels are loaded, warming the
// backend when needed; inside a proof, the proof's own warm-up result.
func (b *Backend) ensureReady(ctx context.Context) error {
	if b.ready.Load() {
		return nil
	}
	if st, ok := ctx.Value(proofKey{}).(proofState); ok && st.b == b {
		if st.warmErr != nil {
			return st.warmErr
		}
	}
	return b.Warmup(ctx)
}
