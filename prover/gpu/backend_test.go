package gpu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/fakedevice"
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

// Open's errors other than a missing device name the backend once, on
// their own and through prover.New, also under a per-GPU name as the
// daemon registers one ("cuda:3"): they read "cuda backend: cuda backend:
// ...", Open and prover.New each adding the prefix.
func TestOpenErrorsNameTheBackendOnce(t *testing.T) {
	for _, tc := range []struct {
		what    string
		ordinal int
		device  backend.DeviceSettings
		want    string
	}{
		{"an ordinal past the fake device's one", 3, backend.DeviceSettings{},
			"cuda backend: cudaspans: device ordinal 3 out of range (1 devices)"},
		{"a host copy mode no parse makes", 0, backend.DeviceSettings{HostCopy: "pinned"},
			`cuda backend: host copy mode "pinned" (want staged, register, registered or pageable)`},
	} {
		opts := []cudaspans.Option{cudaspans.WithDriver(fakedevice.New(1 << 20))}
		o := backend.Options{DeviceOrdinal: tc.ordinal, Device: tc.device}
		if b, err := open(context.Background(), o, opts...); err == nil {
			b.Close()
			t.Errorf("%s: Open succeeded", tc.what)
		} else if err.Error() != tc.want {
			t.Errorf("%s: Open: %q, want %q", tc.what, err, tc.want)
		}
		name := fmt.Sprintf("test-cuda-%d:%d", fakePipelines.Add(1), tc.ordinal)
		backend.Register(name, func(ctx context.Context, o backend.Options) (backend.Backend, error) {
			o.DeviceOrdinal = tc.ordinal
			return open(ctx, o, opts...)
		})
		p, err := prover.New(context.Background(), name, prover.WithKeyCacheDir(t.TempDir()), prover.WithNotice(io.Discard),
			prover.WithDeviceSettings(tc.device))
		if err == nil {
			_ = p.Close(context.Background())
			t.Errorf("%s: prover.New succeeded", tc.what)
			continue
		}
		if err.Error() != tc.want || strings.Count(err.Error(), "backend") != 1 {
			t.Errorf("%s: prover.New: %q, want %q", tc.what, err, tc.want)
		}
	}
}
