package groth16

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

// chainsCircuit is K independent chains of N squarings plus a hint each
// (ToBinary of the chain's start): levels of K constraints, wide enough
// for the level solver to share them out.
type chainsCircuit struct {
	X []frontend.Variable
	N int
}

func (c *chainsCircuit) Define(api frontend.API) error {
	for _, x := range c.X {
		bits := api.ToBinary(x, 16)
		v := api.Add(x, bits[3], 3) // a constant term in a linear expression
		for i := 0; i < c.N; i++ {
			v = api.Add(api.Mul(v, v), x, i)
		}
		api.AssertIsDifferent(v, 0)
	}
	return nil
}

func compileFor(t *testing.T, circuit, assignment frontend.Circuit) (*cs.R1CS, witness.Witness) {
	t.Helper()
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, circuit)
	if err != nil {
		t.Fatal(err)
	}
	w, err := frontend.NewWitness(assignment, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	return ccs.(*cs.R1CS), w
}

// synthesizeTraced synthesizes w for ccs under ctx (with opts) with its
// spans recorded and returns the assignment (released at t's end) and the
// one synthesize.solve span.
func synthesizeTraced(t *testing.T, ctx context.Context, ccs constraint.ConstraintSystem, w witness.Witness, opts ...SynthesizeOption) (*Assignment, tracetest.SpanStub) {
	t.Helper()
	tp, exp := spantest.NewMemory()
	asg, err := Synthesize(ctx, ccs, w, append(opts, WithTracerProvider(tp))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { asg.Release(context.Background(), nil) })
	solve := spantest.NewTree(exp.GetSpans()).Named(semconv.SpanSynthesizeSolve)
	if len(solve) != 1 {
		t.Fatalf("%d synthesize.solve spans, want 1", len(solve))
	}
	return asg, solve[0]
}

func newChains(k, n int, x func(i int) int) (*chainsCircuit, *chainsCircuit) {
	xs := make([]frontend.Variable, k)
	for i := range xs {
		xs[i] = x(i)
	}
	return &chainsCircuit{X: make([]frontend.Variable, k), N: n}, &chainsCircuit{X: xs, N: n}
}

// The level solver's wires and a, b, c are gnark's Solve's, element for
// element, on one goroutine and on many (levels shared out), with hints,
// constants and stale values in the vectors it writes into.
func TestLevelSolverMatchesGnarksSolve(t *testing.T) {
	for _, tc := range []struct {
		name             string
		circuit, assigns frontend.Circuit
	}{
		{"chains 300x40", nil, nil},
		{"bits", &bitsCircuit{X: make([]frontend.Variable, 70)}, nil},
		{"wide", &wideCircuit{X: make([]frontend.Variable, 500)}, nil},
		{"merkle 2^14", nil, nil},
		{"porep 2^17", nil, nil}, // SHA-256 chains: hints, independent challenges
	} {
		switch tc.name {
		case "chains 300x40":
			tc.circuit, tc.assigns = newChains(300, 40, func(i int) int { return 1000 + 37*i })
		case "bits":
			x := make([]frontend.Variable, 70)
			for i := range x {
				x[i] = i * 3 % 256
			}
			tc.assigns = &bitsCircuit{X: x}
		case "wide":
			x := make([]frontend.Variable, 500)
			for i := range x {
				x[i] = 2 - 4*(i%2) // 2 or -2
			}
			tc.assigns = &wideCircuit{X: x}
		}
		var r1cs *cs.R1CS
		var w witness.Witness
		if name, lg, ok := strings.Cut(tc.name, " 2^"); ok {
			size, _ := strconv.Atoi(lg)
			in, err := circuits.Build(name, 1<<size)
			if err != nil {
				t.Fatal(err)
			}
			ccs, err := in.Compile()
			if err != nil {
				t.Fatal(err)
			}
			r1cs = ccs.(*cs.R1CS)
			if w, err = in.Witness(3); err != nil {
				t.Fatal(err)
			}
		} else {
			r1cs, w = compileFor(t, tc.circuit, tc.assigns)
		}
		if !levelSolvable(r1cs) {
			t.Fatalf("%s: not level-solvable", tc.name)
		}
		sol, err := r1cs.Solve(w, solver.WithNbTasks(4))
		if err != nil {
			t.Fatalf("%s: gnark: %v", tc.name, err)
		}
		want := sol.(*cs.R1CSSolution)
		n := r1cs.GetNbConstraints()
		for _, mode := range []struct {
			comps bool
			tasks int
		}{{false, 1}, {false, 3}, {false, 16}, {true, 1}, {true, 3}, {true, 16}, {false, 0}, {true, 0}} { // 0: one goroutine
			tasks := mode.tasks
			wires := make([]fr.Element, len(want.W))
			a, b, c := make([]fr.Element, n+5), make([]fr.Element, n+5), make([]fr.Element, n+5)
			for i := range a { // stale values, as a pooled buffer holds
				a[i].SetUint64(uint64(i) + 7)
				b[i], c[i] = a[i], a[i]
			}
			for i := range wires {
				wires[i].SetUint64(99)
			}
			rep, err := levelSolveReport(r1cs, w.Vector().(fr.Vector), wires, a, b, c, tasks, solverOf(mode.comps))
			if err != nil {
				t.Fatalf("%s, %d tasks, components %v: %v", tc.name, tasks, mode.comps, err)
			}
			if (rep.components > 0) != mode.comps {
				t.Fatalf("%s, %d tasks, components %v: solved by %d components", tc.name, tasks, mode.comps, rep.components)
			}
			for name, pair := range map[string][2][]fr.Element{"W": {wires, want.W}, "A": {a[:n], want.A}, "B": {b[:n], want.B}, "C": {c[:n], want.C}} {
				for i := range pair[1] {
					if !pair[0][i].Equal(&pair[1][i]) {
						t.Fatalf("%s, %d tasks, components %v: %s[%d] = %s, gnark %s", tc.name, tasks, mode.comps, name, i, pair[0][i].String(), pair[1][i].String())
					}
				}
			}
			if got := a[n+4]; got.Uint64() != uint64(n+4)+7 {
				t.Errorf("%s: a past the constraints written (%s)", tc.name, got.String())
			}
		}
	}
}

// A witness that breaks one constraint of a wide level fails as gnark's
// does, naming that constraint, on any number of goroutines; a missing
// hint is named.
func TestLevelSolverNamesTheUnsatisfiedConstraint(t *testing.T) {
	const k = 400
	x := make([]frontend.Variable, k)
	for i := range x {
		x[i] = 2
	}
	x[233] = 3
	r1cs, w := compileFor(t, &wideCircuit{X: make([]frontend.Variable, k)}, &wideCircuit{X: x})
	_, gerr := r1cs.Solve(w)
	var gu *cs.UnsatisfiedConstraintError
	if !errors.As(gerr, &gu) {
		t.Fatalf("gnark: %v, want an unsatisfied constraint", gerr)
	}
	for _, tasks := range []int{1, 8, -1, -8} { // negative: by levels
		mode := solverOf(tasks > 0)
		tasks := max(tasks, -tasks)
		n := r1cs.GetNbConstraints()
		wires := make([]fr.Element, len(r1cs.Public)+len(r1cs.Secret)+r1cs.NbInternalVariables)
		_, err := levelSolveReport(r1cs, w.Vector().(fr.Vector), wires, make([]fr.Element, n), make([]fr.Element, n), make([]fr.Element, n), tasks, mode)
		var u *cs.UnsatisfiedConstraintError
		if !errors.As(err, &u) || u.CID != gu.CID {
			t.Errorf("%d tasks: %v, want constraint #%d unsatisfied", tasks, err, gu.CID)
		}
	}
	// Through Synthesize: ErrUnsatisfied, the constraint named.
	_, err := Synthesize(context.Background(), r1cs, w)
	if !errors.Is(err, ErrUnsatisfied) || err.Error() != fmt.Sprintf("%v: constraint #%d is not satisfied", ErrUnsatisfied, gu.CID) {
		t.Errorf("Synthesize: %v", err)
	}

	br, bw := compileFor(t, &bitsCircuit{X: make([]frontend.Variable, 2)}, &bitsCircuit{X: []frontend.Variable{1, 2}})
	n := br.GetNbConstraints()
	if err := levelSolve(br, bw.Vector().(fr.Vector), make([]fr.Element, 1), make([]fr.Element, n), make([]fr.Element, n), make([]fr.Element, n), 2); err == nil {
		t.Error("vectors of the wrong size: no error")
	}
}

// Synthesize takes this project's solver for gnark's circuits, by
// components where a circuit's are independent chains and by levels where
// one component has wide levels (the span says which ran, and how many
// components), and its assignment is gnark's.
func TestSynthesizeUsesTheLevelSolver(t *testing.T) {
	circuit, assign := newChains(64, 10, func(i int) int { return 5 + i })
	r1cs, w := compileFor(t, circuit, assign)
	checkSynthesized(t, r1cs, w, "components", 64)
	checkSynthesized(t, r1cs, w, "levels", 0, WithSolver(SolverLevels))

	r1cs, w = compileStar(t, 400)
	checkSynthesized(t, r1cs, w, "levels", 0)
	checkSynthesized(t, r1cs, w, "components", 1, WithSolver(SolverComponents))

	for in, want := range map[string]Solver{"": SolverAuto, "auto": SolverAuto, "levels": SolverLevels, "components": SolverComponents} {
		if got, err := ParseSolver(in); err != nil || got != want {
			t.Errorf("ParseSolver(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseSolver("level"); err == nil || !strings.Contains(err.Error(), "auto, levels or components") {
		t.Errorf("ParseSolver(level): %v, want the choices named", err)
	}
}

// checkSynthesized synthesizes w for r1cs on 8 solver tasks (with opts) and checks
// the solver the span names (and its components) and the assignment
// against gnark's.
func checkSynthesized(t *testing.T, r1cs *cs.R1CS, w witness.Witness, solverName string, comps int, opts ...SynthesizeOption) {
	t.Helper()
	asg, solve := synthesizeTraced(t, WithSolverTasks(context.Background(), 8), r1cs, w, opts...)
	if got := spantest.StubAttr(solve, string(semconv.KeySolver)); got != solverName {
		t.Errorf("cuzk.solver %q, want %s", got, solverName)
	}
	wantComps := ""
	if comps > 0 {
		wantComps = fmt.Sprint(comps)
	}
	if got := spantest.StubAttr(solve, string(semconv.KeySolverComponents)); got != wantComps {
		t.Errorf("cuzk.solver.components %q, want %q", got, wantComps)
	}
	sol, _ := r1cs.Solve(w)
	want := sol.(*cs.R1CSSolution)
	for i := range want.W {
		if !asg.Wires[i].Equal(&want.W[i]) {
			t.Fatalf("wire %d differs", i)
		}
	}
	for i := range asg.A {
		var wa fr.Element
		if i < len(want.A) {
			wa = want.A[i]
		}
		if !asg.A[i].Equal(&wa) {
			t.Fatalf("a[%d] differs", i)
		}
	}
}

// starCircuit is len(X) products of independent inputs (one wide level)
// summed into one wire that a last constraint checks: one component, whose
// first level the level solver shares out.
type starCircuit struct {
	X []frontend.Variable
}

func (c *starCircuit) Define(api frontend.API) error {
	var sum frontend.Variable = 0
	for _, x := range c.X {
		sum = api.Add(sum, api.Mul(x, x, x))
	}
	api.AssertIsDifferent(sum, 0)
	return nil
}

// compileStar compiles a starCircuit of n products with inputs 1..n.
func compileStar(t *testing.T, n int) (*cs.R1CS, witness.Witness) {
	t.Helper()
	x := make([]frontend.Variable, n)
	for i := range x {
		x[i] = i + 1
	}
	return compileFor(t, &starCircuit{X: make([]frontend.Variable, n)}, &starCircuit{X: x})
}

// simulatePace runs levels of width n through a pacing of tasks
// goroutines whose time per instruction at k parts is cost(k), and
// returns the part counts used, level by level.
func simulatePace(p *levelPace, clock *time.Time, levels, n int, cost func(k int) float64) []int {
	var used []int
	for range levels {
		k := p.parts(n)
		used = append(used, k)
		*clock = clock.Add(time.Duration(float64(n) * cost(k)))
		p.done()
	}
	return used
}

// The pacing keeps the fastest part count it measured: splitting that
// pays is climbed up to where a doubling stops paying; splitting that
// does not pay is dropped after one block; narrow levels are never split
// below levelPiece constraints a part; a change of the host's speed is
// followed through the probes of the neighbours.
func TestLevelPaceKeepsTheFastestPartCount(t *testing.T) {
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	count := func(used []int, k int) int {
		n := 0
		for _, u := range used {
			if u == k {
				n++
			}
		}
		return n
	}

	// Splitting pays up to 4 parts: 2 and 4 kept, 8 no faster.
	p := newLevelPace(16, now)
	speed := map[int]float64{1: 200, 2: 110, 4: 70, 8: 68, 16: 90}
	used := simulatePace(p, &clock, 2000, 200, func(k int) float64 { return speed[k] })
	if p.chosen() != 4 {
		t.Fatalf("chose %d parts, want 4 (used %v...)", p.chosen(), used[:200])
	}
	if n := count(used, 4); n < len(used)*3/4 {
		t.Errorf("4 parts in %d of %d levels, want most", n, len(used))
	}
	if n := count(used, 16); n != 0 {
		t.Errorf("16 parts tried in %d levels, though 8 did not pay", n)
	}

	// Splitting does not pay: one goroutine after the first blocks.
	p = newLevelPace(16, now)
	used = simulatePace(p, &clock, 4000, 52, func(k int) float64 { return 200 * float64(k) })
	if p.chosen() != 1 {
		t.Fatalf("chose %d parts where splitting costs, want 1", p.chosen())
	}
	if n := count(used, 1); n < len(used)*9/10 {
		t.Errorf("one part in %d of %d levels, want nearly all", n, len(used))
	}
	// Levels of 52 make at most 3 parts of levelPiece (16).
	for i, u := range used {
		if u > 52/levelPiece {
			t.Fatalf("level %d split into %d parts of fewer than %d constraints", i, u, levelPiece)
		}
	}

	// The host gets slower at 4 parts (another process took cores):
	// a probe finds 2 faster and the pacing moves there.
	p = newLevelPace(16, now)
	simulatePace(p, &clock, 2000, 200, func(k int) float64 { return speed[k] })
	slow := map[int]float64{1: 200, 2: 110, 4: 160, 8: 170, 16: 200}
	simulatePace(p, &clock, 4000, 200, func(k int) float64 { return slow[k] })
	if p.chosen() != 2 {
		t.Fatalf("after the slowdown chose %d parts, want 2", p.chosen())
	}

	// One goroutine: nothing to choose.
	p = newLevelPace(1, now)
	used = simulatePace(p, &clock, 100, 200, func(int) float64 { return 100 })
	if p.chosen() != 1 || count(used, 1) != len(used) {
		t.Fatalf("one task: chose %d, used %v", p.chosen(), used[:10])
	}
}

// The goroutines the pacing leaves out of the levels sleep instead of
// spinning beside the ones at work: with 2 parts fixed on 8 tasks, each
// of the six followers without a part, once a level is published, takes
// one turn of its loop (the one that finds no part for it) and sleeps
// until the end; the one with a part solves its share of every level; the
// solution is gnark's. Turns before the first level are not counted:
// every follower waits alike until the leader publishes it, as long as
// the leader takes to get there (on a loaded host, descheduled, hundreds
// of turns: the test failed so under -race).
func TestLevelSolverFollowersWithoutAPartSleep(t *testing.T) {
	defer func(p func(int) *levelPace, a func([]levelScratch)) { newPace, afterSolve = p, a }(newPace, afterSolve)
	newPace = func(int) *levelPace {
		return &levelPace{cands: []int{2}, cost: make([]float64, 1), now: time.Now}
	}
	var polls []int
	afterSolve = func(sc []levelScratch) {
		for i := range sc {
			polls = append(polls, sc[i].polls)
		}
	}
	circuit, assign := newChains(300, 40, func(i int) int { return 5 + i })
	r1cs, w := compileFor(t, circuit, assign)
	sol, err := r1cs.Solve(w)
	if err != nil {
		t.Fatal(err)
	}
	want := sol.(*cs.R1CSSolution)
	n := r1cs.GetNbConstraints()
	wires := make([]fr.Element, len(want.W))
	a, b, c := make([]fr.Element, n), make([]fr.Element, n), make([]fr.Element, n)
	// The chains are independent: the level solver is asked for.
	if _, err := levelSolveReport(r1cs, w.Vector().(fr.Vector), wires, a, b, c, 8, SolverLevels); err != nil {
		t.Fatal(err)
	}
	for i := range want.W {
		if !wires[i].Equal(&want.W[i]) {
			t.Fatalf("wire %d differs from gnark's", i)
		}
	}
	if len(polls) != 8 {
		t.Fatalf("%d goroutines, want 8", len(polls))
	}
	if polls[1] < 40 {
		t.Errorf("the follower with a part polled %d times, want at least once a level (40)", polls[1])
	}
	for j := 2; j < 8; j++ {
		if polls[j] > 1 {
			t.Errorf("follower %d without a part polled %d times, want it asleep (polls %v)", j, polls[j], polls)
		}
	}
}
