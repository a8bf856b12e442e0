package gpu

import (
	"context"
	"testing"
	"time"

	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// TestBitSplitProveGPUEqualsCPUOnPoRep: porep at 2^17 (its wires mostly 0
// and 1) proved on the CUDA backend with the bit split on (the batch
// addition on the GPU) and off, twice each over resident bases: every
// proof verifies and equals the CPU backend's for the same witness, r and
// s, and the split proof's MSMs have their batch_add and tail children.
func TestBitSplitProveGPUEqualsCPUOnPoRep(t *testing.T) {
	b, _, rec, tp := openBackend(t, buffer.ReleaseSync)
	ctx := context.Background()
	r, s := fixedRandomness()
	f := newProveFixture(t, "porep", 1<<17)
	want, err := groth16.Prove(ctx, f.ccs, f.pk, f.w, prover.WithRandomness(r, s), prover.WithBitSplit(groth16.BitSplitOff))
	if err != nil {
		t.Fatal(err)
	}
	for _, bs := range []groth16.BitSplit{groth16.BitSplitOn, groth16.BitSplitOff, groth16.BitSplitAuto} {
		for round := range 2 {
			start := time.Now()
			got, err := groth16.Prove(ctx, f.ccs, f.pk, f.w, groth16.WithBackend(b), prover.WithRandomness(r, s),
				groth16.WithKeyID("porep-2^17"), prover.WithTracerProvider(tp), prover.WithBitSplit(bs))
			if err != nil {
				t.Fatalf("bits %v, round %d: %v", bs, round, err)
			}
			if err := gnarkgroth16.Verify(got, f.vk, f.pub); err != nil {
				t.Fatalf("bits %v, round %d: CUDA proof does not verify: %v", bs, round, err)
			}
			sameProof(t, "bits "+bs.String(), got, want)
			t.Logf("porep 2^17, bits %v, round %d: verifies, equal to CPU (%v)", bs, round, time.Since(start).Round(time.Microsecond))
		}
	}
	for _, name := range []string{semconv.SpanMSMG1A, semconv.SpanMSMG1B, semconv.SpanMSMG1K, semconv.SpanMSMG2B} {
		// On (2 proofs) and auto (2 proofs: porep has far more than
		// BitSplitMinOnes ones in each MSM).
		if n := len(spantest.Named(rec, name+semconv.SpanSuffixBatchAdd)); n != 4 {
			t.Errorf("%d %s.batch_add spans, want 4", n, name)
		}
		if n := len(spantest.Named(rec, name+semconv.SpanSuffixTail)); n != 4 {
			t.Errorf("%d %s.tail spans, want 4", n, name)
		}
	}
}
