package groth16

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

// BenchmarkSolve times one solve of a built-in circuit into reused
// vectors by levels and by components, on 1, 2, 4 and 16 goroutines (the
// plan of the components made before the timer), the making of the
// plan alone, sequential and parallel (on GOMAXPROCS goroutines: -cpu),
// and its plan file written and read back (planfile.go).
// SOLVE_BENCH_CIRCUIT (merkle) and SOLVE_BENCH_LOG2 (18) choose the
// circuit.
//
//	go test -run '^$' -bench Solve -benchtime 5x ./prover/groth16/
func BenchmarkSolve(b *testing.B) {
	name, lg := os.Getenv("SOLVE_BENCH_CIRCUIT"), 18
	if name == "" {
		name = "merkle"
	}
	if v, err := strconv.Atoi(os.Getenv("SOLVE_BENCH_LOG2")); err == nil {
		lg = v
	}
	in, err := circuits.Build(name, 1<<lg)
	if err != nil {
		b.Fatal(err)
	}
	ccs, err := in.Compile()
	if err != nil {
		b.Fatal(err)
	}
	r1cs := ccs.(*cs.R1CS)
	w, err := in.Witness(1)
	if err != nil {
		b.Fatal(err)
	}
	p := compPlanOf(r1cs, shapeOf(r1cs))
	n := r1cs.GetNbConstraints()
	wires := make([]fr.Element, len(r1cs.Public)+len(r1cs.Secret)+r1cs.NbInternalVariables)
	a, bb, c := make([]fr.Element, n), make([]fr.Element, n), make([]fr.Element, n)
	b.Run(fmt.Sprintf("%s/%d/plan/sequential", name, lg), func(b *testing.B) {
		for b.Loop() {
			sequentialCompPlan(r1cs, shapeOf(r1cs))
		}
	})
	b.Run(fmt.Sprintf("%s/%d/plan/parallel", name, lg), func(b *testing.B) {
		for b.Loop() {
			parallelCompPlan(r1cs, shapeOf(r1cs))
		}
	})
	// The plan file (planfile.go): written to memory, read back from
	// memory (the checks included) and from a file in the page cache as
	// the key cache reads it.
	var file bytes.Buffer
	if err := WritePlan(&file, r1cs, "bench"); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "plan")
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("%s/%d/plan/write", name, lg), func(b *testing.B) {
		var w bytes.Buffer
		w.Grow(file.Len())
		b.SetBytes(int64(file.Len()))
		for b.Loop() {
			w.Reset()
			if err := WritePlan(&w, r1cs, "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("%s/%d/plan/read", name, lg), func(b *testing.B) {
		b.SetBytes(int64(file.Len()))
		for b.Loop() {
			if _, err := readPlan(bytes.NewReader(file.Bytes()), r1cs, "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("%s/%d/plan/read-file", name, lg), func(b *testing.B) {
		b.SetBytes(int64(file.Len()))
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			_, err = readPlan(f, r1cs, "bench")
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, comps := range []bool{false, true} {
		for _, tasks := range []int{1, 2, 4, 16} {
			mode := "levels"
			if comps {
				mode = "components"
			}
			b.Run(fmt.Sprintf("%s/%d/%s/tasks=%d", name, lg, mode, tasks), func(b *testing.B) {
				if comps && !p.better(tasks) {
					b.Skipf("%d components: the level solver is chosen on %d goroutines", len(p.comps), tasks)
				}
				for b.Loop() {
					if _, err := levelSolveReport(r1cs, w.Vector().(fr.Vector), wires, a, bb, c, tasks, solverOf(comps)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// solverOf is SolverComponents for true, SolverLevels for false.
func solverOf(components bool) Solver {
	if components {
		return SolverComponents
	}
	return SolverLevels
}
