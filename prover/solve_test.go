package prover

import (
	"context"
	"runtime"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
)

// wideCircuit is N independent squarings: one level of N constraints.
type wideCircuit struct {
	X []frontend.Variable
}

func (c *wideCircuit) Define(api frontend.API) error {
	for i := range c.X {
		api.AssertIsEqual(api.Mul(c.X[i], c.X[i]), 4)
	}
	return nil
}

func TestSolverTasksUseEveryCoreTheProcessMayUse(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	merkle := newFixture(t, "merkle", 1<<14) // narrow levels: still every core
	if got := solverTasks(merkle.ccs.(*cs.R1CS)); got != 16 {
		t.Errorf("merkle 2^14, GOMAXPROCS 16: %d solver tasks, want 16", got)
	}
	wide, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &wideCircuit{X: make([]frontend.Variable, 64)})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(3)
	if got := solverTasks(wide.(*cs.R1CS)); got != 3 {
		t.Errorf("GOMAXPROCS 3: %d tasks, want 3", got)
	}
}

func TestParallelCopyCopiesAndZeroesTheRest(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, c := range []struct{ src, dst int }{{0, 5}, {3, 3}, {copyPieceElems + 1, 3 * copyPieceElems}, {5*copyPieceElems - 7, 5 * copyPieceElems}} {
		src := make([]fr.Element, c.src)
		for i := range src {
			src[i].SetUint64(uint64(i + 1))
		}
		dst := make([]fr.Element, c.dst)
		for i := range dst {
			dst[i].SetUint64(999) // a pooled buffer's old values
		}
		parallelCopy(dst, src)
		for i := range dst {
			want := fr.Element{}
			if i < len(src) {
				want = src[i]
			}
			if dst[i] != want {
				t.Fatalf("src %d dst %d: element %d = %v, want %v", c.src, c.dst, i, dst[i].String(), want.String())
			}
		}
	}
}

func TestSynthesisStepsAreSpansUnderPipelineSynthesize(t *testing.T) {
	exp, tp := newRecorder()
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithTracerProvider(tp))
	if _, err := p.Run(context.Background(), &Request{Circuit: "merkle", Constraints: 1 << 12, Verify: true}); err != nil {
		t.Fatal(err)
	}
	tree := newSpanTree(exp.GetSpans())
	for _, name := range []string{otelcuzk.SpanSynthesizeWitness, otelcuzk.SpanSynthesizeSolve, otelcuzk.SpanSynthesizeCopy} {
		spans := tree.named(name)
		if len(spans) != 1 {
			t.Fatalf("%d %s spans, want 1", len(spans), name)
		}
		if par, ok := tree.parent(spans[0]); !ok || par.Name != otelcuzk.SpanPipelineSynthesize {
			t.Errorf("%s under %q, want pipeline.synthesize", name, par.Name)
		}
	}
	solve := tree.named(otelcuzk.SpanSynthesizeSolve)[0]
	attrs := map[string]int64{}
	for _, a := range solve.Attributes {
		attrs[string(a.Key)] = a.Value.AsInt64()
	}
	if attrs[string(otelcuzk.KeySolverTasks)] != int64(solverTasks(nil)) || attrs[string(otelcuzk.KeySolverLevels)] < 100 {
		t.Errorf("synthesize.solve attributes %v", attrs)
	}
	// The steps cover the synthesis: nothing of it is untraced but the
	// checks between them.
	syn := tree.named(otelcuzk.SpanPipelineSynthesize)[0]
	total := syn.EndTime.Sub(syn.StartTime)
	var steps int64
	for _, name := range []string{otelcuzk.SpanSynthesizeWitness, otelcuzk.SpanSynthesizeSolve, otelcuzk.SpanSynthesizeCopy} {
		s := tree.named(name)[0]
		steps += int64(s.EndTime.Sub(s.StartTime))
	}
	if float64(steps) < 0.8*float64(total) {
		t.Errorf("steps cover %v of pipeline.synthesize's %v", steps, total)
	}
}
