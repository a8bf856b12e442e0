package main

import (
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"

	// The CUDA backend registers itself as "cuda" when its package is
	// linked in. It loads the driver at run time, so this binary still runs
	// (on the CPU, with one line saying why) on hosts without a GPU.
	"github.com/otelcuzk/otelcuzk/prover/gpu"
)

// checkBackendEnv refuses a malformed CUDA backend variable
// (CUZK_CUDA_HOST_COPY, CUZK_CUDA_MSM_G2) at start, whatever the backend,
// so a typo shows on the host where it was made.
func checkBackendEnv() error { return gpu.CheckEnv() }

// deviceOptions puts the host's GPUs into the trace resource (hw.id,
// hw.model, ...) unless the backend is the CPU; without a driver or device
// there is nothing to add.
func deviceOptions(backend string) []otelcuzk.Option {
	if backend == "cpu" {
		return nil
	}
	devs, err := cudaspans.Devices()
	if err != nil {
		return nil
	}
	return []otelcuzk.Option{otelcuzk.WithDevices(cudaspans.ResourceDevices(devs))}
}
