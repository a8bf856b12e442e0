package prover

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
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
	res, err := device.ProveSynthesized(context.Background(), s)
	if err != nil || !res.Verified {
		t.Fatalf("prove of a synthesis made by another pipeline: %v (verified %v)", err, res != nil && res.Verified)
	}
	select {
	case <-s.Freed():
	case <-time.After(5 * time.Second):
		t.Fatal("Freed never closed after the prove")
	}
	if _, err := device.ProveSynthesized(context.Background(), s); err == nil {
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
	for _, n := range []string{otelcuzk.SpanPipelineSynthesize, otelcuzk.SpanPipelineProve, otelcuzk.SpanProofVerify, otelcuzk.SpanBufferRelease} {
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
		if sp.Name == otelcuzk.SpanBufferRelease {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d buffer.release spans after releasing a synthesis, want 4 (wires, a, b, c)", n)
	}
	if _, err := p.ProveSynthesized(context.Background(), s); err == nil {
		t.Error("prove after release: want an error")
	}
}
