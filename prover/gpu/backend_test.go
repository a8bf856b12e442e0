package gpu

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

func TestCUDABackendIsRegistered(t *testing.T) {
	if _, ok := backend.Lookup("cuda"); !ok {
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
	f, _ := backend.Lookup("cuda")
	b, err := f(context.Background(), backend.Options{})
	if err == nil {
		b.Close()
		t.Fatal("opened the CUDA backend without a device")
	}
	if !errors.Is(err, backend.ErrUnavailable) || !errors.Is(err, cudaspans.ErrNoDevice) {
		t.Fatalf("error %q wraps neither ErrBackendUnavailable nor ErrNoDevice", err)
	}
	if !strings.HasPrefix(err.Error(), "cuda backend unavailable: no CUDA device: ") {
		t.Errorf("error %q, want 'cuda backend unavailable: no CUDA device: REASON'", err)
	}
}
