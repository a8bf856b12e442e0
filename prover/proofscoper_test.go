package prover

import (
	"context"
	"errors"
	"sync"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

type scopeKey struct{}

// scopedCPU is the CPU backend with a ProofScoper hook that records what
// ProveAssignment does with it.
type scopedCPU struct {
	*cpu.Backend
	failMSM bool

	mu                  sync.Mutex
	begins, ends        int
	parentAtBegin       trace.SpanContext
	callsInScope        int
	callsOutside        int
	callsAfterEnd       int
	endErr              error
	proveSpanEndedAtEnd bool
}

func (b *scopedCPU) BeginProof(ctx context.Context) (context.Context, func() error) {
	b.mu.Lock()
	b.begins++
	b.parentAtBegin = trace.SpanContextFromContext(ctx)
	b.mu.Unlock()
	span := trace.SpanFromContext(ctx)
	var once sync.Once
	return context.WithValue(ctx, scopeKey{}, b), func() error {
		once.Do(func() {
			b.mu.Lock()
			b.ends++
			b.proveSpanEndedAtEnd = !span.IsRecording()
			b.mu.Unlock()
		})
		return b.endErr
	}
}

func (b *scopedCPU) see(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.ends > 0:
		b.callsAfterEnd++
	case ctx.Value(scopeKey{}) == b:
		b.callsInScope++
	default:
		b.callsOutside++
	}
}

func (b *scopedCPU) ComputeH(ctx context.Context, keyID string, d *fft.Domain, a, bv, c []fr.Element) error {
	b.see(ctx)
	return b.Backend.ComputeH(ctx, keyID, d, a, bv, c)
}

func (b *scopedCPU) MSMG1(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G1Affine], sc []fr.Element) (curve.G1Jac, error) {
	b.see(ctx)
	if b.failMSM && call.Span == semconv.SpanMSMG1K {
		return curve.G1Jac{}, errors.New("device lost")
	}
	return b.Backend.MSMG1(ctx, call, bases, sc)
}

var _ backend.ProofScoper = (*scopedCPU)(nil)

// TestProofScoperWrapsTheDeviceWorkOfOneProof: a backend implementing
// ProofScoper gets one BeginProof per proof with gnarkgroth16.prove as the
// parent, every ComputeH and MSMG1 call carries the returned context, the
// end function is called once after the last of them and before
// gnarkgroth16.prove ends, and the proof still verifies.
func TestProofScoperWrapsTheDeviceWorkOfOneProof(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	tp, exp := spantest.NewMemory()
	b := &scopedCPU{Backend: cpu.New(tp)}
	proof, err := groth16.Prove(context.Background(), f.CCS, f.PK, f.Witness, groth16.WithBackend(b), WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	if err := gnarkgroth16.Verify(proof, f.VK, f.Public); err != nil {
		t.Fatalf("proof from a scoped backend does not verify: %v", err)
	}
	if b.begins != 1 || b.ends != 1 {
		t.Fatalf("BeginProof %d times, end %d times; want 1 and 1", b.begins, b.ends)
	}
	if b.callsInScope != 5 || b.callsOutside != 0 || b.callsAfterEnd != 0 {
		t.Errorf("device calls: %d in scope, %d outside, %d after the end; want 5, 0, 0",
			b.callsInScope, b.callsOutside, b.callsAfterEnd)
	}
	if b.proveSpanEndedAtEnd {
		t.Error("the end function ran after gnarkgroth16.prove ended")
	}
	tree := spantest.NewTree(exp.GetSpans())
	proves := tree.Named(semconv.SpanGroth16Prove)
	if len(proves) != 1 || proves[0].SpanContext.SpanID() != b.parentAtBegin.SpanID() {
		t.Errorf("BeginProof's parent is not the gnarkgroth16.prove span")
	}
}

// TestProofScoperEndsOnErrorAndReportsItsError: a failing MSM still ends
// the scope (once), and an error of the end function fails the proof.
func TestProofScoperEndsOnErrorAndReportsItsError(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	b := &scopedCPU{Backend: cpu.New(nil), failMSM: true}
	if _, err := groth16.Prove(context.Background(), f.CCS, f.PK, f.Witness, groth16.WithBackend(b)); err == nil {
		t.Fatal("a failing MSM gave a proof")
	}
	if b.begins != 1 || b.ends != 1 {
		t.Fatalf("after a failed MSM: BeginProof %d times, end %d times; want 1 and 1", b.begins, b.ends)
	}
	sync := errors.New("synchronize: illegal address")
	b = &scopedCPU{Backend: cpu.New(nil), endErr: sync}
	if _, err := groth16.Prove(context.Background(), f.CCS, f.PK, f.Witness, groth16.WithBackend(b)); !errors.Is(err, sync) {
		t.Fatalf("error of the scope's end: got %v, want %v", err, sync)
	}
}
