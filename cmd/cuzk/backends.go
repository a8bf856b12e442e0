package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"

	// The CUDA backend registers itself as "cuda" when its package is
	// linked in. It loads the driver at run time, so this binary still runs
	// (on the CPU, with one line saying why) on hosts without a GPU.
	"github.com/otelcuzk/otelcuzk/prover/gpu"
)

// deviceSettings reads the CUDA backend's settings from the environment,
// the one place they are read: CUZK_CUDA_HOST_COPY (staged, register or
// pageable; default staged) and CUZK_CUDA_MSM_G2 (gpu or cpu; default
// gpu). A malformed value is refused at start, whatever the backend,
// naming the variable, so a typo shows on the host where it was made.
func deviceSettings() (prover.DeviceSettings, error) {
	s := prover.DeviceSettings{HostCopy: os.Getenv("CUZK_CUDA_HOST_COPY"), MSMG2: os.Getenv("CUZK_CUDA_MSM_G2")}
	if err := gpu.CheckDeviceSettings(prover.DeviceSettings{HostCopy: s.HostCopy}); err != nil {
		return s, fmt.Errorf("CUZK_CUDA_HOST_COPY: %w", err)
	}
	if err := gpu.CheckDeviceSettings(prover.DeviceSettings{MSMG2: s.MSMG2}); err != nil {
		return s, fmt.Errorf("CUZK_CUDA_MSM_G2: %w", err)
	}
	return s, nil
}

// deviceOptions puts the build (service.version, versionOption) and the
// host's GPUs into the trace resource (hw.id, hw.model, ...; not for the CPU
// backend, nor without a driver or device).
func deviceOptions(backend string) []otelcuzk.Option {
	opts := versionOption()
	if backend == "cpu" {
		return opts
	}
	devs, err := cudaspans.Devices()
	if err != nil {
		return opts
	}
	return append(opts, otelcuzk.WithDevices(cudaspans.ResourceDevices(devs)))
}

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
