package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// warmupInBackground starts the backend's warm-up (prover.Warmer: the CUDA
// backend compiles or loads its kernel modules, a gpu.warmup trace of its
// own) while the key load and the synthesis run; the proof waits for what
// is left of it (a gpu.warmup span in the proof's trace). When it has not
// finished after notAfter, one line says so on w, and another when it
// ends, so a first run on a host with an empty kernel cache does not look
// hung. The returned channel is closed when the warm-up has ended.
func warmupInBackground(ctx context.Context, w warmer, out io.Writer, notAfter time.Duration) <-chan struct{} {
	warm, done := make(chan error, 1), make(chan struct{})
	start := time.Now()
	go func() { warm <- w.Warmup(ctx) }()
	go func() {
		defer close(done)
		select {
		case <-warm:
			return
		case <-time.After(notAfter):
		}
		fmt.Fprintln(out, "cuda: compiling the kernel modules (NVRTC, in parallel; kept in the kernel cache for later runs)...")
		if err := <-warm; err != nil {
			fmt.Fprintf(out, "cuda: kernel warm-up failed after %.1f s: %v\n", time.Since(start).Seconds(), err)
			return
		}
		fmt.Fprintf(out, "cuda: kernels ready after %.1f s\n", time.Since(start).Seconds())
	}()
	return done
}

// warmer is prover.Pipeline's Warmup.
type warmer interface{ Warmup(context.Context) error }
