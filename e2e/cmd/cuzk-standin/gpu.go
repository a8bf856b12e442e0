package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// spinSource is the GPU part of a stand-in proof: one thread that spins
// for a number of the SM's clock cycles, so a job's kernels are real
// kernels of a set length that CUPTI records.
const spinSource = `
extern "C" __global__ void standin_gpu_compute(unsigned long long cycles) {
	long long t0 = clock64();
	while ((unsigned long long)(clock64() - t0) < cycles) {
	}
}
`

// gpuWork runs each proof's GPU part on its GPU: kernels of about
// kernel each, one after another, until the part has lasted total.
type gpuWork struct {
	total, kernel time.Duration

	mu   sync.Mutex
	devs map[int]*gpuDev
}

type gpuDev struct {
	c         *cudaspans.Context
	s         *cudaspans.Stream
	f         *cudaspans.Function
	cyclesPer float64 // SM cycles per ns, measured
}

// dev opens GPU ordinal and compiles the kernel once.
func (w *gpuWork) dev(ctx context.Context, ordinal int) (*gpuDev, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.devs[ordinal]; d != nil {
		return d, nil
	}
	c, err := cudaspans.Open(ordinal)
	if err != nil {
		return nil, fmt.Errorf("-gpu-kernel-ms: GPU %d: %w", ordinal, err)
	}
	mod, err := c.Compile(ctx, "standin", spinSource, cudaspans.CompileOptions{})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("-gpu-kernel-ms: compiling the kernel: %w", err)
	}
	f, err := mod.Function("standin_gpu_compute")
	if err != nil {
		c.Close()
		return nil, err
	}
	s, err := c.NewStream()
	if err != nil {
		c.Close()
		return nil, err
	}
	d := &gpuDev{c: c, s: s, f: f}
	// The clock rate: a kernel of 10^7 cycles timed on the wall clock
	// (launch overhead included, so later kernels err short).
	start := time.Now()
	if err := d.spin(ctx, 10_000_000); err != nil {
		c.Close()
		return nil, err
	}
	d.cyclesPer = 1e7 / float64(time.Since(start).Nanoseconds())
	if w.devs == nil {
		w.devs = map[int]*gpuDev{}
	}
	w.devs[ordinal] = d
	return d, nil
}

func (d *gpuDev) spin(ctx context.Context, cycles uint64) error {
	if err := d.s.Launch(ctx, d.f, cudaspans.D1(1), cudaspans.D1(1), 0, cycles); err != nil {
		return err
	}
	return d.s.Synchronize(ctx)
}

// Work is a standin.Fake's Work: the proof's GPU part on GPU gpu.
func (w *gpuWork) Work(ctx context.Context, gpu int, _ string) error {
	d, err := w.dev(ctx, gpu)
	if err != nil {
		return err
	}
	end := time.Now().Add(w.total)
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		ns := min(left, w.kernel).Nanoseconds()
		if err := d.spin(ctx, uint64(float64(ns)*d.cyclesPer)+1); err != nil {
			return fmt.Errorf("GPU %d: %w", gpu, err)
		}
	}
}

// Close destroys the contexts, so that a tracer's last records are
// flushed (CUPTI flushes at a context's destruction).
func (w *gpuWork) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.devs {
		d.s.Close(context.Background())
		d.c.Close()
	}
	w.devs = nil
}
