package gpu

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/fakedevice"
)

// TestParallelCopyCopiesEveryByte: the multi-goroutine copy of the staged
// mode copies every byte at sizes around its piece boundaries.
func TestParallelCopyCopiesEveryByte(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 63, 2<<20 - 1, 2 << 20, 4<<20 + 65, 17<<20 + 3} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		dst := bytes.Repeat([]byte{0xA5}, n)
		parallelCopy(dst, src)
		if !bytes.Equal(dst, src) {
			t.Fatalf("parallelCopy of %d bytes differs from its source", n)
		}
	}
}

func TestParseHostCopy(t *testing.T) {
	for in, want := range map[string]backend.HostCopy{"": backend.HostCopyRegistered, "staged": backend.HostCopyStaged,
		"register": backend.HostCopyRegister, "pageable": backend.HostCopyPageable} {
		got, err := backend.ParseHostCopy(in)
		if err != nil || got != want {
			t.Errorf("ParseHostCopy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := backend.ParseHostCopy("pinned"); err == nil {
		t.Error(`ParseHostCopy("pinned") gave no error`)
	}
}

// Open refuses a malformed setting before it touches a device, so the
// refusal is the same on a host without a GPU.
func TestOpenRefusesMalformedDeviceSettingsBeforeTheDevice(t *testing.T) {
	for _, bad := range []backend.DeviceSettings{{HostCopy: "pinned"}, {MSMG2: "GPU"}} {
		if err := bad.Check(); err == nil {
			t.Errorf("DeviceSettings(%+v).Check() accepted it", bad)
		}
		_, err := Open(context.Background(), backend.Options{Device: bad})
		if err == nil || errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "want") {
			t.Errorf("Open(%+v) = %v, want the settings' error, not the device's", bad, err)
		}
	}
	for _, ok := range []backend.DeviceSettings{{}, {HostCopy: "staged", MSMG2: "gpu"}, {HostCopy: "register", MSMG2: "cpu"}, {HostCopy: "pageable"}} {
		if err := ok.Check(); err != nil {
			t.Errorf("DeviceSettings(%+v).Check(): %v", ok, err)
		}
	}
}

// The settings Open is given are the backend's from the start (what
// CUZK_CUDA_HOST_COPY and CUZK_CUDA_MSM_G2 did when Open read them).
func TestOpenAppliesTheDeviceSettings(t *testing.T) {
	for _, tc := range []struct {
		in      backend.DeviceSettings
		copy    backend.HostCopy
		g2OnCPU bool
	}{{backend.DeviceSettings{}, backend.HostCopyRegistered, false}, {backend.DeviceSettings{HostCopy: "pageable", MSMG2: "cpu"}, backend.HostCopyPageable, true},
		{backend.DeviceSettings{HostCopy: "register", MSMG2: "gpu"}, backend.HostCopyRegister, false}} {
		c, err := cudaspans.Open(0, cudaspans.WithDriver(fakedevice.New(1<<20)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := openOn(context.Background(), c, backend.Options{Device: tc.in})
		if err != nil {
			t.Fatal(err)
		}
		if b.HostCopyMode() != tc.copy || b.g2OnCPU != tc.g2OnCPU {
			t.Errorf("%+v: host copy %s, G2 on the CPU %v; want %s, %v", tc.in, b.HostCopyMode(), b.g2OnCPU, tc.copy, tc.g2OnCPU)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
