package gpu

import (
	"context"
	"fmt"
	"math/big"
	"testing"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/gputest"
)

// TestBackendGPUComputeHMatchesCPUBackend: the CUDA backend's ComputeH
// (copies, kernels, release) equals the CPU backend's element for element,
// leaves b and c as they were, and records the step spans under
// groth16.compute_h with gpu.lock and buffer.release spans.
func TestBackendGPUComputeHMatchesCPUBackend(t *testing.T) {
	b, _, rec, tp := openBackend(t, buffer.ReleaseSync)
	ctx := context.Background()
	for _, logn := range []int{0, 3, 12, 20} {
		d, a, bv, c, want := gputest.ComputeHCase(t, 1<<logn)
		b0, c0 := append([]fr.Element(nil), bv...), append([]fr.Element(nil), c...)
		hctx, span := tp.Tracer("test").Start(ctx, semconv.SpanComputeH)
		start := time.Now()
		if err := b.ComputeH(hctx, "", d, a, bv, c); err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		span.End()
		gputest.SameVectors(t, fmt.Sprintf("backend compute_h 2^%d", logn), a, want)
		gputest.SameVectors(t, "b after compute_h", bv, b0)
		gputest.SameVectors(t, "c after compute_h", c, c0)
		t.Logf("backend compute_h 2^%d equal to the CPU backend (%v with copies)", logn, el)
	}
	names := map[string]int{}
	for _, sp := range rec.Ended() {
		names[sp.Name()]++
	}
	for _, want := range []string{semconv.SpanGPULock, semconv.SpanBufferRelease, semconv.SpanNTTInverse,
		semconv.SpanNTTCoset, semconv.SpanPointwise, semconv.SpanNTTInverseCoset, "ntt_pass", "cuda.memcpy.htod"} {
		if names[want] == 0 {
			t.Errorf("no %s span (spans: %v)", want, names)
		}
	}
	gputest.CheckKernelSpansNested(t, rec)
}

func TestBackendGPUComputeHRejectsBadLengths(t *testing.T) {
	b, _, _, _ := openBackend(t, buffer.ReleaseSync)
	d := fft.NewDomain(16)
	err := b.ComputeH(context.Background(), "", d, make([]fr.Element, 16), make([]fr.Element, 15), make([]fr.Element, 16))
	if err == nil {
		t.Fatal("vectors shorter than the domain were accepted")
	}
}

// TestBackendGPUMSMsMatchCPUBackend: MSMG1 and MSMG2 (GPU, resident bases;
// then MSMG2 placed on the CPU) equal the CPU backend's on random scalars,
// over the same base sets each round (later rounds reuse the device copy).
func TestBackendGPUMSMsMatchCPUBackend(t *testing.T) {
	b, _, _, _ := openBackend(t, buffer.ReleaseSync)
	cpu := cpu.New(nil)
	ctx := context.Background()
	const n = 1 << 12
	_, _, g1, g2 := curve.Generators()
	p1 := make([]curve.G1Affine, n)
	p2 := make([]curve.G2Affine, n)
	for i := range p1 {
		var k fr.Element
		k.MustSetRandom()
		var kb = k.BigInt(new(big.Int))
		p1[i].ScalarMultiplication(&g1, kb)
		p2[i].ScalarMultiplication(&g2, kb)
	}
	s1 := backend.BaseSet[curve.G1Affine]{ID: "test:g1", Points: p1}
	s2 := backend.BaseSet[curve.G2Affine]{ID: "test:g2", Points: p2}
	for round := 0; round < 3; round++ {
		placement := backend.G2OnGPU
		if round == 2 {
			placement = backend.G2OnCPU
		}
		if err := b.SetMSMG2(placement); err != nil {
			t.Fatal(err)
		}
		sc := gputest.RandomVector(n)
		got, err := b.MSMG1(ctx, backend.Call{Span: semconv.SpanMSMG1A}, s1, sc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cpu.MSMG1(ctx, backend.Call{Span: semconv.SpanMSMG1A}, s1, sc)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(&want) {
			t.Fatalf("round %d: MSMG1 differs from the CPU backend", round)
		}
		got2, err := b.MSMG2(ctx, backend.Call{Span: "msm.g2.b"}, s2, sc)
		if err != nil {
			t.Fatal(err)
		}
		want2, err := cpu.MSMG2(ctx, backend.Call{Span: "msm.g2.b"}, s2, sc)
		if err != nil {
			t.Fatal(err)
		}
		if !got2.Equal(&want2) {
			t.Fatalf("round %d: MSMG2 (%s) differs from the CPU backend", round, placement)
		}
	}
	if err := b.SetMSMG2(backend.G2OnGPU); err != nil {
		t.Fatal(err)
	}
	if err := b.SetMSMG2("fpga"); err == nil {
		t.Error("SetMSMG2 accepted an unknown placement")
	}
	if _, ok := b.Bases().Get("test:g1"); !ok {
		t.Error("the G1 base set is not resident after MSMG1")
	}
	if _, ok := b.Bases().Get("test:g2"); !ok {
		t.Error("the G2 base set is not resident after MSMG2 on the GPU")
	}
}
