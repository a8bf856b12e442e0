package prover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"github.com/consensys/gnark/frontend/cs/scs"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/commitmenttest"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// TestCircuitFilesOfPLONKOrAnotherCurveAreRefused: registered from files
// (cuzk serve --circuit-file), a PLONK constraint system and an R1CS over
// another curve get the refusal Prove gives them (ErrUnsupported, one line
// naming what the file is), not an error of the key's decoding.
func TestCircuitFilesOfPLONKOrAnotherCurveAreRefused(t *testing.T) {
	bn := circuitstest.Compile(t, ecc.BN254.ScalarField(), r1cs.NewBuilder, &circuitstest.Square{})
	bnPK, bnVK, err := gnarkgroth16.Setup(bn)
	if err != nil {
		t.Fatal(err)
	}
	plonk := circuitstest.Compile(t, ecc.BLS12_381.ScalarField(), scs.NewBuilder, &circuitstest.Square{})
	_, pk, vk := circuitstest.SetupCircuit(t, &circuitstest.Square{})
	p := newTestPipeline(t, "cpu", buffer.ReleaseAsync)
	wb, err := circuitstest.NewWitness(t, &circuitstest.Square{X: 3, Y: 9}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		ccs  constraint.ConstraintSystem
		pk   gnarkgroth16.ProvingKey
		vk   gnarkgroth16.VerifyingKey
		want string
	}{{"BN254", bn, bnPK, bnVK, "bn254"}, {"PLONK", plonk, pk, vk, "SparseR1CS"}} {
		name := fmt.Sprintf("file-%s-%d", c.what, time.Now().UnixNano())
		if err := circuits.RegisterFiles(name, circuitstest.WriteFiles(t, t.TempDir(), c.what, c.ccs, c.pk, c.vk)); err != nil {
			t.Fatal(err)
		}
		_, err := p.Run(context.Background(), &Request{Circuit: name, Witness: wb, Verify: true})
		if !errors.Is(err, groth16.ErrUnsupported) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s from files: err = %v, want ErrUnsupported naming %s on one line", c.what, err, c.want)
		}
	}
}

// TestRangeCheckBuiltinProvesThroughThePipeline: the built-in
// "rangecheck" (one commitment) proves and verifies by name, as `cuzk
// prove --circuit rangecheck` does, with both spans of the commitment.
func TestRangeCheckBuiltinProvesThroughThePipeline(t *testing.T) {
	tp, exp := spantest.NewMemory()
	p := newTestPipeline(t, "cpu", buffer.ReleasePool, WithTracerProvider(tp))
	res, err := p.Run(context.Background(), &Request{Circuit: "rangecheck", Constraints: 1 << 10, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified {
		t.Fatal("not verified")
	}
	tree := spantest.NewTree(exp.GetSpans())
	for _, c := range []struct{ span, parent string }{
		{semconv.SpanMSMG1Commitment, semconv.SpanSynthesizeSolve},
		{semconv.SpanMSMG1CommitmentPok, semconv.SpanGroth16Prove},
	} {
		spans := tree.Named(c.span)
		if len(spans) != 1 {
			t.Fatalf("%d %s spans, want 1", len(spans), c.span)
		}
		if par, ok := tree.Parent(spans[0]); !ok || par.Name != c.parent {
			t.Errorf("%s under %q, want %s", c.span, par.Name, c.parent)
		}
	}
}

// TestCommitmentCircuitFromFilesProves: a circuit with several
// commitments registered from files (cuzk serve --circuit-file) proves
// with the caller's witness and verifies.
func TestCommitmentCircuitFromFilesProves(t *testing.T) {
	f := commitmenttest.Setup(t, "multicommit")
	name := fmt.Sprintf("multicommit-%d", time.Now().UnixNano())
	if err := circuits.RegisterFiles(name, circuitstest.WriteFiles(t, t.TempDir(), "c", f.CCS, f.PK, f.VK)); err != nil {
		t.Fatal(err)
	}
	p := newTestPipeline(t, "cpu", buffer.ReleaseAsync)
	wb, err := f.Witness.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background(), &Request{Circuit: name, Witness: wb, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified {
		t.Fatal("not verified")
	}
	proof := gnarkgroth16.NewProof(ecc.BLS12_381)
	if _, err := proof.ReadFrom(bytes.NewReader(res.Proof)); err != nil {
		t.Fatal(err)
	}
	if n := len(proof.(*groth16_bls12381.Proof).Commitments); n != f.Commitments {
		t.Errorf("proof carries %d commitments, want %d", n, f.Commitments)
	}
}

func TestSynthesisStepsAreSpansUnderPipelineSynthesize(t *testing.T) {
	tp, exp := spantest.NewMemory()
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithTracerProvider(tp))
	if _, err := p.Run(context.Background(), &Request{Circuit: "merkle", Constraints: 1 << 12, Verify: true}); err != nil {
		t.Fatal(err)
	}
	tree := spantest.NewTree(exp.GetSpans())
	for _, name := range []string{semconv.SpanSynthesizeWitness, semconv.SpanSynthesizeSolve, semconv.SpanSynthesizeCopy} {
		spans := tree.Named(name)
		if len(spans) != 1 {
			t.Fatalf("%d %s spans, want 1", len(spans), name)
		}
		if par, ok := tree.Parent(spans[0]); !ok || par.Name != semconv.SpanPipelineSynthesize {
			t.Errorf("%s under %q, want pipeline.synthesize", name, par.Name)
		}
	}
	solve := tree.Named(semconv.SpanSynthesizeSolve)[0]
	attrs := map[string]int64{}
	for _, a := range solve.Attributes {
		attrs[string(a.Key)] = a.Value.AsInt64()
	}
	if attrs[string(semconv.KeySolverTasks)] != int64(max(1, runtime.GOMAXPROCS(0))) || attrs[string(semconv.KeySolverLevels)] < 100 {
		t.Errorf("synthesize.solve attributes %v", attrs)
	}
	// The steps cover the synthesis: nothing of it is untraced but the
	// checks between them.
	syn := tree.Named(semconv.SpanPipelineSynthesize)[0]
	total := syn.EndTime.Sub(syn.StartTime)
	var steps int64
	// synthesize.plan too: the component solver's plan, a step of its own
	// in the first synthesis of a circuit.
	for _, name := range []string{semconv.SpanSynthesizeWitness, semconv.SpanSynthesizePlan, semconv.SpanSynthesizeSolve, semconv.SpanSynthesizeCopy} {
		for _, s := range tree.Named(name) {
			steps += int64(s.EndTime.Sub(s.StartTime))
		}
	}
	// At this size the synthesis takes about 2 ms, so the gaps allowed
	// are a fifth of it or 5 ms, whichever is more: a 2-core machine
	// running other tests' packages beside this one deschedules the
	// goroutine between steps for a millisecond at a time (CI failed
	// once with 1.21 of 1.81 ms covered).
	if gap := total - time.Duration(steps); gap > max(total/5, 5*time.Millisecond) {
		t.Errorf("steps cover %v of pipeline.synthesize's %v: %v untraced", time.Duration(steps), total, gap)
	}
}
