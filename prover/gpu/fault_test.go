package gpu

import (
	"context"
	"errors"
	"strings"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/gputest"
)

// illegalAddress is what a kernel that writes through a bad pointer
// leaves: a sticky error, on the launch or the next synchronize.
var illegalAddress = &cudaspans.Error{Call: "cuStreamSynchronize", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS",
	Message: "an illegal memory access was encountered"}

// A device that starts failing with a sticky error: the MSM's error wraps
// backend.ErrDeviceFault (so the engine requeues the proof elsewhere), the
// device is fenced off (Fault), and later calls fail at once without
// touching it; an ordinary error (out of memory) is no fault.
func TestStickyErrorFencesTheDeviceOff(t *testing.T) {
	b, drv, _ := fakeKernelBackend(t, nil)
	ctx := context.Background()
	scalars := make([]fr.Element, 64)
	for i := range scalars {
		scalars[i].SetUint64(uint64(i + 2))
	}
	if _, err := b.MSMG1(ctx, backend.Call{Span: semconv.SpanMSMG1A}, gputest.BaseSet("", 64), scalars); err != nil {
		t.Fatalf("healthy device: %v", err)
	}
	if b.Fault() != nil {
		t.Fatalf("Fault() = %v on a healthy device", b.Fault())
	}

	drv.Fault(&cudaspans.Error{Call: "cuLaunchKernel", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Message: "out of memory"})
	_, err := b.MSMG1(ctx, backend.Call{Span: semconv.SpanMSMG1A}, gputest.BaseSet("", 64), scalars)
	if err == nil || errors.Is(err, backend.ErrDeviceFault) || b.Fault() != nil {
		t.Fatalf("out of memory: err %v, Fault %v; want an error that is no device fault", err, b.Fault())
	}

	drv.Fault(illegalAddress)
	_, err = b.MSMG1(ctx, backend.Call{Span: semconv.SpanMSMG1A}, gputest.BaseSet("", 64), scalars)
	if !errors.Is(err, backend.ErrDeviceFault) || !errors.Is(err, cudaspans.ErrSticky) || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Fatalf("sticky error: %v, want a backend.ErrDeviceFault naming CUDA_ERROR_ILLEGAL_ADDRESS", err)
	}
	if f := b.Fault(); !errors.Is(f, backend.ErrDeviceFault) {
		t.Fatalf("Fault() = %v after a sticky error", f)
	}
	// Fenced: even once the driver would answer again, nothing reaches it.
	drv.Fault(nil)
	launches := len(drv.Launches())
	for _, call := range []func() error{
		func() error {
			_, err := b.MSMG1(ctx, backend.Call{Span: semconv.SpanMSMG1B}, gputest.BaseSet("", 64), scalars)
			return err
		},
		func() error {
			_, err := b.MSMG2(ctx, backend.Call{Span: semconv.SpanMSMG2B}, backend.BaseSet[curve.G2Affine]{}, nil)
			return err
		},
		func() error { _, end := b.BeginProof(ctx); return end() },
	} {
		if err := call(); !errors.Is(err, backend.ErrDeviceFault) {
			t.Errorf("call on a fenced device: %v, want backend.ErrDeviceFault", err)
		}
	}
	if n := len(drv.Launches()); n != launches {
		t.Errorf("%d kernels launched on a fenced device", n-launches)
	}
}
