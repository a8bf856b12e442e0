package gpu

import (
	"context"
	"fmt"
	"testing"

	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// TestRegisteredCUDAPooledProofsEqualCPU: with pooled buffers (release
// mode pool) and the registered host copy mode, merkle at 2^18 proves
// three times on the CUDA backend (vectors of 8 MiB, above the size that
// is copied through pinned memory); every proof verifies and equals the
// CPU backend's for the same witness, r and s; the first registers its
// buffers (cuda.host_register), the later ones register nothing and
// stage nothing; closing the pool unregisters them, and the backend then
// holds no registration.
func TestRegisteredCUDAPooledProofsEqualCPU(t *testing.T) {
	b, rel, rec, tp := openBackend(t, buffer.ReleasePool)
	if err := b.SetHostCopy(backend.HostCopyRegistered); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, s := fixedRandomness()
	f := newProveFixture(t, "merkle", 1<<18)
	want, err := groth16.Prove(ctx, f.ccs, f.pk, f.w, prover.WithRandomness(r, s))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		jctx, job := tp.Tracer("test").Start(ctx, semconv.SpanEngineJob)
		got, err := groth16.Prove(jctx, f.ccs, f.pk, f.w, groth16.WithBackend(b), prover.WithRandomness(r, s),
			groth16.WithKeyID("merkle-2^18"), groth16.WithReleaser(rel), prover.WithTracerProvider(tp))
		job.End()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := gnarkgroth16.Verify(got, f.vk, f.pub); err != nil {
			t.Fatalf("round %d: CUDA proof does not verify: %v", round, err)
		}
		sameProof(t, fmt.Sprintf("registered copies, pooled buffers, round %d", round), got, want)
		trace := job.SpanContext().TraceID()
		regs := len(spansNamed(rec, trace, semconv.SpanCUDAHostRegister))
		staged := len(spansNamed(rec, trace, semconv.SpanHostStage))
		bytes, n := b.registeredBytes()
		t.Logf("round %d: %d cuda.host_register, %d cuda.host_stage spans; %d buffers (%d MiB) registered",
			round, regs, staged, n, bytes>>20)
		if round == 0 && regs == 0 {
			t.Error("the first proof registered nothing")
		}
		if round > 0 && (regs != 0 || staged != 0) {
			t.Errorf("round %d: %d registrations and %d staged copies, want none (pooled buffers stay registered)", round, regs, staged)
		}
	}
	if err := rel.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if bytes, n := b.registeredBytes(); n != 0 {
		t.Errorf("after the pool's close: %d buffers (%d bytes) still registered", n, bytes)
	}
}
