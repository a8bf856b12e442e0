package gpu

import (
	"context"
	"errors"
	"testing"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover"
)

func TestCUDABackendIsRegistered(t *testing.T) {
	if _, ok := prover.LookupBackend("cuda"); !ok {
		t.Fatal(`importing prover/gpu did not register the "cuda" backend`)
	}
}

// TestOpenWithoutDeviceIsUnavailable: on a host without a CUDA driver or
// device (CI), opening the backend fails with ErrBackendUnavailable and
// ErrNoDevice, so `--backend auto` can fall back to the CPU.
func TestOpenWithoutDeviceIsUnavailable(t *testing.T) {
	if _, err := cudaspans.Devices(); err == nil {
		t.Skip("this host has a CUDA device")
	}
	f, _ := prover.LookupBackend("cuda")
	b, err := f(context.Background(), prover.BackendOptions{})
	if err == nil {
		b.Close()
		t.Fatal("opened the CUDA backend without a device")
	}
	if !errors.Is(err, prover.ErrBackendUnavailable) || !errors.Is(err, cudaspans.ErrNoDevice) {
		t.Fatalf("error %q wraps neither ErrBackendUnavailable nor ErrNoDevice", err)
	}
}
