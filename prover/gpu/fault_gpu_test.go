package gpu

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/gputest"
)

// faultKernel writes through a pointer no allocation covers: the launch
// leaves CUDA_ERROR_ILLEGAL_ADDRESS, which poisons the context.
const faultKernel = `extern "C" __global__ void write_wild(unsigned long long addr) {
	*(volatile int *)addr = 1;
}`

// On a real device, a deliberately faulting kernel: the sticky error
// reaches the next MSM as backend.ErrDeviceFault and fences the device off.
// The context stays poisoned for the life of the process, so this test
// runs alone, in its own process, only with CUZK_TEST_DEVICE_FAULT=1
// (bench/device-session.sh's fault step).
func TestFaultingKernelFencesTheDeviceOffGPU(t *testing.T) {
	if os.Getenv("CUZK_TEST_DEVICE_FAULT") != "1" {
		t.Skip("poisons the process's CUDA context: run alone with CUZK_TEST_DEVICE_FAULT=1")
	}
	b, _, _, _ := openBackend(t, buffer.ReleaseSync)
	ctx := context.Background()
	c := b.Context()
	m, err := c.Compile(ctx, "fault_test", faultKernel, cudaspans.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Function("write_wild")
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Launch(ctx, f, cudaspans.D1(1), cudaspans.D1(1), 0, uint64(0x10)); err != nil && !errors.Is(err, cudaspans.ErrSticky) {
		t.Fatalf("launch: %v", err)
	}
	serr := s.Synchronize(ctx)
	if !errors.Is(serr, cudaspans.ErrSticky) {
		t.Fatalf("synchronize after the faulting kernel: %v, want a sticky CUDA error", serr)
	}
	t.Logf("the faulting kernel: %v", serr)
	scalars := make([]fr.Element, 1024)
	for i := range scalars {
		scalars[i].SetUint64(uint64(i + 3))
	}
	_, err = b.MSMG1(ctx, backend.Call{Span: semconv.SpanMSMG1A}, gputest.BaseSet("", len(scalars)), scalars)
	if !errors.Is(err, backend.ErrDeviceFault) {
		t.Fatalf("MSM after the fault: %v, want backend.ErrDeviceFault", err)
	}
	t.Logf("the next MSM: %v", err)
	if _, err := b.MSMG1(ctx, backend.Call{Span: semconv.SpanMSMG1B}, gputest.BaseSet("", len(scalars)), scalars); !errors.Is(err, backend.ErrDeviceFault) || b.Fault() == nil {
		t.Fatalf("fenced device: %v (Fault %v)", err, b.Fault())
	}
}
