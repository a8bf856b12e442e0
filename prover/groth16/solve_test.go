package groth16

import (
	"context"
	"runtime"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"go.opentelemetry.io/otel/attribute"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
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
	merkle := circuitstest.Setup(t, "merkle", 1<<14, 42) // narrow levels: still every core
	if got := solverTasks(merkle.CCS.(*cs.R1CS)); got != 16 {
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

func TestParallelCopyCopiesAndZeroesTheRestOfStaleBuffers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const stale = 999 // a pooled buffer's old values
	sizes := []struct{ src, dst int }{{0, 5}, {3, 3}, {copyPieceElems + 1, 3 * copyPieceElems}, {5*copyPieceElems - 7, 5 * copyPieceElems}}
	for _, zeroed := range []bool{false, true} {
		var jobs []copyJob
		for _, c := range sizes {
			src := make([]fr.Element, c.src)
			for i := range src {
				src[i].SetUint64(uint64(i + 1))
			}
			dst := make([]fr.Element, c.dst)
			for i := range dst {
				dst[i].SetUint64(stale)
			}
			jobs = append(jobs, copyJob{dst: dst, src: src, zeroed: zeroed})
		}
		parallelCopy(jobs...) // all sizes in one call: one queue of pieces
		for _, j := range jobs {
			for i := range j.dst {
				var want fr.Element
				switch {
				case i < len(j.src):
					want = j.src[i]
				case zeroed: // said to be zero already: left untouched
					want.SetUint64(stale)
				}
				if j.dst[i] != want {
					t.Fatalf("zeroed %v, src %d dst %d: element %d = %v, want %v", zeroed, len(j.src), len(j.dst), i, j.dst[i].String(), want.String())
				}
			}
		}
	}
}

// bitsCircuit decomposes each X into 8 bits: one hint call (gnark's
// bits.NBits) per value.
type bitsCircuit struct {
	X []frontend.Variable
}

func (c *bitsCircuit) Define(api frontend.API) error {
	for _, x := range c.X {
		api.ToBinary(x, 8)
	}
	return nil
}

func TestSolveSpanCountsTheCircuitsHintCalls(t *testing.T) {
	solveAttrs := func(circuit, assignment frontend.Circuit) map[attribute.Key]attribute.Value {
		t.Helper()
		ccs, w := compileFor(t, circuit, assignment)
		_, solve := synthesizeTraced(t, context.Background(), ccs, w)
		return spantest.StubAttrs(solve)
	}
	const n = 37
	x := make([]frontend.Variable, n)
	for i := range x {
		x[i] = i * 7 % 256
	}
	attrs := solveAttrs(&bitsCircuit{X: make([]frontend.Variable, n)}, &bitsCircuit{X: x})
	if got := attrs[semconv.KeySolverHintCalls].AsInt64(); got != n {
		t.Errorf("%d values decomposed: %s = %d, want %d", n, semconv.KeySolverHintCalls, got, n)
	}
	if got := attrs[semconv.KeySolverHintCPU].AsFloat64(); got <= 0 {
		t.Errorf("%s = %v, want > 0", semconv.KeySolverHintCPU, got)
	}
	sq := make([]frontend.Variable, 4)
	for i := range sq {
		sq[i] = 2
	}
	attrs = solveAttrs(&wideCircuit{X: make([]frontend.Variable, 4)}, &wideCircuit{X: sq})
	if v, ok := attrs[semconv.KeySolverHintCalls]; !ok || v.AsInt64() != 0 {
		t.Errorf("a circuit without hints: %s = %v (present %v), want 0", semconv.KeySolverHintCalls, v.AsInt64(), ok)
	}
}
