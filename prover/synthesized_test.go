package prover

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

func TestValidateLeavesMemoryToTheBudget(t *testing.T) {
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync)
	huge := &Request{Circuit: "mulchain", Constraints: 1 << 40}
	if err := p.Validate(huge); err != nil {
		t.Errorf("Validate of a size beyond memory: %v; the engine's budget refuses it, not Validate", err)
	}
	n, err := p.EstimateMemory(huge)
	if err != nil || n < 32<<40 {
		t.Errorf("EstimateMemory(2^40 constraints) = %d, %v; want at least 32 TiB", n, err)
	}
	if _, err := p.EstimateMemory(&Request{Circuit: "nosuch", Constraints: 8}); !errors.Is(err, ErrUnknownCircuit) {
		t.Errorf("EstimateMemory of an unknown circuit: %v", err)
	}
}

func TestEstimateMemoryUsesTheCompiledCircuitOnceLoaded(t *testing.T) {
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync)
	req := &Request{Circuit: "mulchain", Constraints: 1000}
	before, err := p.EstimateMemory(req)
	if err != nil {
		t.Fatal(err)
	}
	if p.KeyMemory() != 0 {
		t.Errorf("KeyMemory %d before any key is loaded", p.KeyMemory())
	}
	if err := p.LoadCircuit(context.Background(), "mulchain", 1000); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	lc := p.loaded[circuitKey("mulchain", 1000)]
	p.mu.Unlock()
	wires := lc.ccs.GetNbInternalVariables() + lc.ccs.GetNbPublicVariables() + lc.ccs.GetNbSecretVariables()
	after, _ := p.EstimateMemory(req)
	if want := circuits.ProofMemory(lc.ccs.GetNbConstraints(), wires, circuits.CommittedWires(lc.ccs)); after != want {
		t.Errorf("estimate once loaded %d, want ProofMemory of the compiled counts %d", after, want)
	}
	// The estimate before compiling is an upper bound of the one after.
	if before < after {
		t.Errorf("estimate before compiling %d is below the compiled circuit's %d", before, after)
	}
	// What synthesis really maps stays within the estimate.
	s, err := p.Synthesize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	mapped := s.(*synthesis).asg.Bytes()
	if uint64(mapped) > after {
		t.Errorf("synthesis mapped %d bytes, over the estimate %d", mapped, after)
	}
	s.Release(context.Background())
	if p.KeyMemory() == 0 {
		t.Error("KeyMemory 0 with a key loaded")
	}
}

func TestStagesProveWhatRunProves(t *testing.T) {
	tp, exp := spantest.NewMemory()
	synth := newTestPipeline(t, "cpu", buffer.ReleaseAsync, WithTracerProvider(tp))
	device := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithTracerProvider(tp))
	req := &Request{Circuit: "mulchain", Constraints: 256, Verify: true}
	s, err := synth.Synthesize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// Proved by another Prover (one per GPU; one synthesizes for all).
	res, err := s.Prove(context.Background(), device)
	if err != nil || !res.Verified {
		t.Fatalf("prove of a synthesis made by another pipeline: %v (verified %v)", err, res != nil && res.Verified)
	}
	select {
	case <-s.Freed():
	case <-time.After(5 * time.Second):
		t.Fatal("Freed never closed after the prove")
	}
	if _, err := s.Prove(context.Background(), device); err == nil {
		t.Error("a synthesis proved twice: want an error")
	}
	if err := s.Release(context.Background()); err != nil {
		t.Errorf("Release after the prove: %v, want a no-op", err)
	}
	// The proving pipeline now holds the synthesizing one's keys: listed,
	// evictable, counted once between the two.
	if got := device.LoadedCircuits(); len(got) != 1 || got[0] != "mulchain/256" {
		t.Errorf("the proving pipeline holds %v, want mulchain/256", got)
	}
	if both, one := KeyMemoryOf(synth, device), synth.KeyMemory(); both != one || one == 0 {
		t.Errorf("keys shared by two pipelines counted %d, one holds %d: want them counted once", both, one)
	}
	if !device.EvictCircuit("mulchain", 256) {
		t.Error("Evict on the proving pipeline: not held")
	}
	names := map[string]int{}
	for _, sp := range exp.GetSpans() {
		names[sp.Name]++
	}
	for _, n := range []string{semconv.SpanPipelineSynthesize, semconv.SpanPipelineProve, semconv.SpanProofVerify, semconv.SpanBufferRelease} {
		if names[n] == 0 {
			t.Errorf("no %s span", n)
		}
	}
}

func TestReleasedSynthesisFreesWithSpans(t *testing.T) {
	tp, exp := spantest.NewMemory()
	p := newTestPipeline(t, "cpu", buffer.ReleaseAsync, WithTracerProvider(tp))
	s, err := p.Synthesize(context.Background(), &Request{Circuit: "mulchain", Constraints: 256})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Freed():
	case <-time.After(5 * time.Second):
		t.Fatal("Freed never closed after Release")
	}
	n := 0
	for _, sp := range exp.GetSpans() {
		if sp.Name == semconv.SpanBufferRelease {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d buffer.release spans after releasing a synthesis, want 4 (wires, a, b, c)", n)
	}
	if _, err := s.Prove(context.Background(), p); err == nil {
		t.Error("prove after release: want an error")
	}
}

// ownBackend is the CPU backend under a name of its own, counting the G1
// MSMs it is asked for.
type ownBackend struct {
	*cpu.Backend
	msms atomic.Int32
}

func (b *ownBackend) Name() string { return "own" }

func (b *ownBackend) MSMG1(ctx context.Context, call backend.Call, bases backend.BaseSet[curve.G1Affine], scalars []fr.Element) (curve.G1Jac, error) {
	b.msms.Add(1)
	return b.Backend.MSMG1(ctx, call, bases, scalars)
}

// ownDevice is a Device that is no Prover.
type ownDevice struct{ b backend.Backend }

func (d ownDevice) Proving() Proving { return Proving{Backend: d.b} }

func TestASynthesisProvesOnAnyDeviceAndRefusesNoneWithoutLosingItself(t *testing.T) {
	synth := newTestPipeline(t, "cpu", buffer.ReleaseAsync)
	s, err := synth.Synthesize(context.Background(), &Request{Circuit: "mulchain", Constraints: 256, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	// No device, or a device without a backend: refused, and the
	// synthesized proof is still there to be proved.
	if _, err := s.Prove(context.Background(), nil); err == nil || errors.Is(err, ErrSynthesisSpent) {
		t.Fatalf("prove on a nil device: %v, want an error that keeps the proof", err)
	}
	if _, err := s.Prove(context.Background(), ownDevice{}); err == nil || !strings.Contains(err.Error(), "no backend") {
		t.Fatalf("prove on a device without a backend: %v, want an error naming it", err)
	}
	select {
	case <-s.Freed():
		t.Fatal("a refused prove freed the synthesized proof's buffers")
	default:
	}
	own := &ownBackend{Backend: cpu.New(nil)}
	res, err := s.Prove(context.Background(), ownDevice{own})
	if err != nil || !res.Verified {
		t.Fatalf("prove on a device of its own: %v (verified %v)", err, res != nil && res.Verified)
	}
	if res.Backend != "own" || own.msms.Load() == 0 {
		t.Errorf("proved on backend %q with %d G1 MSMs there, want the device's backend \"own\" doing them", res.Backend, own.msms.Load())
	}
	select {
	case <-s.Freed():
	case <-time.After(5 * time.Second):
		t.Fatal("Freed never closed after the prove")
	}
	if _, err := s.Prove(context.Background(), ownDevice{own}); !errors.Is(err, ErrSynthesisSpent) {
		t.Errorf("a second prove: %v, want ErrSynthesisSpent", err)
	}
	if got := synth.LoadedCircuits(); len(got) != 1 || got[0] != "mulchain/256" {
		t.Errorf("the synthesizing Prover holds %v after a prove elsewhere, want mulchain/256", got)
	}
}
