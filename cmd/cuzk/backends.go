package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/internal/progress"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

// warmupProgress is where warmupInBackground keeps the last kernel
// compile's time (RateFile, "" for none) and whether it draws its bar off
// a terminal (Force, --progress).
type warmupProgress struct {
	RateFile string
	Force    bool
}

// kernelRateFile is the file in the key cache directory dir ("" means
// keycache.DefaultDir) that holds the last kernel compile measured here;
// "" when the directory is unknown.
func kernelRateFile(dir string) string {
	if dir == "" {
		var err error
		if dir, err = keycache.DefaultDir(); err != nil {
			return ""
		}
	}
	return filepath.Join(dir, "kernel-compile-rate")
}

// warmupInBackground starts the backend's warm-up (backend.Warmer: the CUDA
// backend compiles or loads its kernel modules, a gpu.warmup trace of its
// own) while the key load and the synthesis run; the proof waits for what
// is left of it (a gpu.warmup span in the proof's trace). When it has not
// finished after notAfter, one line says so on w (with the time the last
// compile measured here took), on a terminal a bar of the time left (a
// spinner without an estimate), and another line when it ends, so a first
// run on a host with an empty kernel cache does not look hung. A warm-up
// that ran past notAfter and succeeded is recorded in p.RateFile for the
// next estimate. The returned channel is closed when the warm-up has ended.
func warmupInBackground(ctx context.Context, w warmer, out io.Writer, notAfter time.Duration, p warmupProgress) <-chan struct{} {
	warm, done := make(chan error, 1), make(chan struct{})
	start := time.Now()
	go func() { warm <- w.Warmup(ctx) }()
	go func() {
		defer close(done)
		select {
		case err := <-warm:
			warm <- err
			return
		case <-time.After(notAfter):
		}
		line := "cuda: compiling the kernel modules (NVRTC, in parallel; kept in the kernel cache for later runs)..."
		var est time.Duration
		if p.RateFile != "" {
			if e, ok := progress.Estimate(p.RateFile, 1); ok {
				est = e
				line = fmt.Sprintf("cuda: compiling the kernel modules (NVRTC, in parallel; kept in the kernel cache for later runs), about %s from the last compile measured here...", human.Duration(est))
			}
		}
		stop := progress.Start(progress.Step{W: out, Force: p.Force, After: time.Nanosecond, Line: line,
			Bar: "cuda kernel compile", Estimate: est}, nil)
		err := <-warm
		stop()
		took := time.Since(start)
		if err != nil {
			// err names the backend ("cuda backend: warm-up: REASON").
			fmt.Fprintf(out, "kernel warm-up failed after %s: %v\n", human.Duration(took), err)
			return
		}
		if p.RateFile != "" {
			progress.Record(p.RateFile, 1, took)
		}
		fmt.Fprintf(out, "cuda: kernels ready after %s\n", human.Duration(took))
	}()
	return done
}

// warmer is prover.Prover's Warmup.
type warmer interface{ Warmup(context.Context) error }
