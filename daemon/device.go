package daemon

import (
	"fmt"
	"os"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/cupti"
	"github.com/otelcuzk/otelcuzk/otelcuzk"

	"github.com/otelcuzk/otelcuzk/prover/backend"

	// The CUDA backend registers itself as "cuda" when its package is
	// linked in. It loads the driver at run time, so a daemon still runs
	// (on the CPU, with one line saying why) on hosts without a GPU.
	_ "github.com/otelcuzk/otelcuzk/prover/gpu"
)

// DeviceSettingsFromEnv reads the CUDA backend's settings from the environment
// and parses them, the one place they are read and parsed (the backend
// takes the typed values): CUZK_CUDA_HOST_COPY (staged, register,
// registered or pageable; default registered) and CUZK_CUDA_MSM_G2 (gpu or cpu; default
// gpu). A malformed value is refused at start, whatever the backend,
// naming the variable, so a typo shows on the host where it was made;
// CUZK_CUPTI_NO_FORCED_FLUSH (cupti.NoForcedFlushEnv, read by a CUPTI
// capture's Start, which reports a bad value only when CUPTI starts) is
// checked here the same way.
func DeviceSettingsFromEnv() (backend.DeviceSettings, error) {
	if _, _, err := cupti.ParseNoForcedFlush(os.Getenv(cupti.NoForcedFlushEnv)); err != nil {
		return backend.DeviceSettings{}, fmt.Errorf("%s=%w", cupti.NoForcedFlushEnv, err)
	}
	hc, err := backend.ParseHostCopy(os.Getenv("CUZK_CUDA_HOST_COPY"))
	if err != nil {
		return backend.DeviceSettings{}, fmt.Errorf("CUZK_CUDA_HOST_COPY: %w", err)
	}
	g2, err := backend.ParseG2Placement(os.Getenv("CUZK_CUDA_MSM_G2"))
	if err != nil {
		return backend.DeviceSettings{}, fmt.Errorf("CUZK_CUDA_MSM_G2: %w", err)
	}
	return backend.DeviceSettings{HostCopy: hc, MSMG2: g2}, nil
}

// TraceDevices puts the host's GPUs into the trace resource (hw.id,
// hw.model, ...) unless the backend is the CPU; without a driver or device
// there is nothing to add.
func TraceDevices(backend string) []otelcuzk.Option {
	if backend == "cpu" {
		return nil
	}
	devs, err := cudaspans.Devices()
	if err != nil {
		return nil
	}
	return []otelcuzk.Option{otelcuzk.WithDevices(cudaspans.ResourceDevices(devs))}
}
