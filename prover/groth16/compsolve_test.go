package groth16

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// The plan holds every instruction once, the prologue first; each
// component in index order (the circuit's), past the prologue's levels; chains that share only their inputs are one
// component each, and merkle's proofs, which share the `one` wire the
// prologue makes, are one component a proof plus the filler's chain.
func TestComponentPlan(t *testing.T) {
	circuit, assign := newChains(300, 40, func(i int) int { return 5 + i })
	chains, _ := compileFor(t, circuit, assign)
	in, err := circuits.Build("merkle", 1<<15)
	if err != nil {
		t.Fatal(err)
	}
	ccs, err := in.Compile()
	if err != nil {
		t.Fatal(err)
	}
	merkle := ccs.(*cs.R1CS)
	for _, tc := range []struct {
		name  string
		r1cs  *cs.R1CS
		comps int
		equal bool // all components the same size
	}{
		{"chains 300x40", chains, 300, true},
		{"merkle 2^15", merkle, 0, false},
	} {
		p := compPlanOf(tc.r1cs, shapeOf(tc.r1cs))
		level := make([]int, len(tc.r1cs.Instructions))
		for l, lv := range tc.r1cs.Levels {
			for _, i := range lv {
				level[i] = l
			}
		}
		seen := make([]bool, len(tc.r1cs.Instructions))
		mark := func(i uint32) {
			if seen[i] {
				t.Fatalf("%s: instruction %d planned twice", tc.name, i)
			}
			seen[i] = true
		}
		last := -1
		for _, i := range p.prologue {
			mark(i)
			if level[i] < last {
				t.Fatalf("%s: prologue out of level order at %d", tc.name, i)
			}
			last = level[i]
		}
		rest := 0
		for k, c := range p.comps {
			if k > 0 && len(c) > len(p.comps[k-1]) {
				t.Fatalf("%s: component %d larger than the one before", tc.name, k)
			}
			if tc.equal && len(c) != len(p.comps[0]) {
				t.Errorf("%s: component %d of %d instructions, the first %d", tc.name, k, len(c), len(p.comps[0]))
			}
			prev := -1
			for _, i := range c {
				mark(i)
				if level[i] <= last || int(i) <= prev {
					t.Fatalf("%s: component %d: instruction %d (level %d) out of order or in the prologue's levels", tc.name, k, i, level[i])
				}
				prev = int(i)
			}
			rest += len(c)
		}
		for i, ok := range seen {
			if !ok {
				t.Fatalf("%s: instruction %d not planned", tc.name, i)
			}
		}
		if rest != p.rest || len(p.prologue)+rest != len(tc.r1cs.Instructions) {
			t.Errorf("%s: rest %d, counted %d, prologue %d, instructions %d", tc.name, p.rest, rest, len(p.prologue), len(tc.r1cs.Instructions))
		}
		if float64(len(p.prologue)) > compPrologueShare*float64(len(tc.r1cs.Instructions)) {
			t.Errorf("%s: prologue of %d instructions", tc.name, len(p.prologue))
		}
		if tc.comps > 0 && len(p.comps) != tc.comps {
			t.Errorf("%s: %d components, want %d", tc.name, len(p.comps), tc.comps)
		}
		if tc.name == "merkle 2^15" {
			// Its proofs: at least two components of the same size (one
			// a proof), and more than one goroutine's worth of them.
			if len(p.comps) < 3 || len(p.comps[0]) != len(p.comps[1]) {
				t.Errorf("merkle: components of %d, %d, ... instructions (%d), want proofs of one size", len(p.comps[0]), len(p.comps[1]), len(p.comps))
			}
			if len(p.prologue) == 0 {
				t.Error("merkle: empty prologue (its `one` wire joins every proof)")
			}
		}
	}
}

// The choice: independent chains take the component solver at any number
// of goroutines; one component whose first level is wide keeps the level
// solver on several goroutines (and takes the components, the same
// parallelism, on one).
func TestComponentSolverChoice(t *testing.T) {
	circuit, assign := newChains(300, 40, func(i int) int { return 5 + i })
	chains, _ := compileFor(t, circuit, assign)
	star, _ := compileStar(t, 400)
	pc, ps := compPlanOf(chains, shapeOf(chains)), compPlanOf(star, shapeOf(star))
	for _, tasks := range []int{1, 3, 16} {
		if !pc.better(tasks) {
			t.Errorf("chains, %d tasks: the level solver chosen", tasks)
		}
	}
	if len(ps.comps) != 1 {
		t.Fatalf("star: %d components, want 1", len(ps.comps))
	}
	if !ps.better(1) || ps.better(8) {
		t.Errorf("star: components chosen on 1 goroutine %v (want true), on 8 %v (want false)", ps.better(1), ps.better(8))
	}
	if got := pc.makespan(7); got != (300+6)/7*len(pc.comps[0]) {
		t.Errorf("chains: makespan on 7 goroutines %d, want %d", got, (300+6)/7*len(pc.comps[0]))
	}
}

// The shape and the plan of an R1CS do not keep it alive: once the R1CS
// is unreachable, both entries go.
func TestSolverCachesLetTheR1CSGo(t *testing.T) {
	var wp weak.Pointer[cs.R1CS]
	func() {
		circuit, assign := newChains(30, 5, func(i int) int { return 5 + i })
		r1cs, _ := compileFor(t, circuit, assign)
		compPlanOf(r1cs, shapeOf(r1cs))
		wp = weak.Make(r1cs)
		if !levelShapes.holds(wp) || !compPlans.holds(wp) {
			t.Fatalf("shape kept %v, plan kept %v, want both", levelShapes.holds(wp), compPlans.holds(wp))
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for levelShapes.holds(wp) || compPlans.holds(wp) {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the R1CS went: shape kept %v, plan kept %v", levelShapes.holds(wp), compPlans.holds(wp))
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if wp.Value() != nil {
		t.Error("the R1CS is still reachable")
	}
}

// The parallel plan (two passes, a lock-free union-find) and the
// sequential one (one pass) find the same components, listed alike, on
// chains, one wide component, merkle and porep (whose SHA-256 chains use
// hints).
func TestComponentPlansAgree(t *testing.T) {
	circuit, assign := newChains(300, 40, func(i int) int { return 5 + i })
	chains, _ := compileFor(t, circuit, assign)
	star, _ := compileStar(t, 400)
	systems := map[string]*cs.R1CS{"chains": chains, "star": star}
	for _, name := range []string{"merkle", "porep"} {
		in, err := circuits.Build(name, 1<<17)
		if err != nil {
			t.Fatal(err)
		}
		ccs, err := in.Compile()
		if err != nil {
			t.Fatal(err)
		}
		systems[name] = ccs.(*cs.R1CS)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8)) // the parallel passes on several goroutines
	for name, r1cs := range systems {
		seq, par := sequentialCompPlan(r1cs, shapeOf(r1cs)), parallelCompPlan(r1cs, shapeOf(r1cs))
		if !reflect.DeepEqual(seq, par) {
			t.Errorf("%s: sequential plan (%d components, prologue %d) differs from the parallel one (%d, %d)",
				name, len(seq.comps), len(seq.prologue), len(par.comps), len(par.prologue))
		}
		if len(seq.comps) == 0 {
			t.Errorf("%s: no component", name)
		}
	}
}

// The first synthesis of a circuit shows its plan as a synthesize.plan
// span, with the components it found: a step of pipeline.synthesize
// before synthesize.solve, which stays a leaf (its time its own work: a
// child would make the untraced processor report the rest of the solve
// as untraced); the next synthesis, which reuses the plan, has none, and
// neither has a solve by levels.
func TestTheFirstSynthesisShowsThePlan(t *testing.T) {
	circuit, assign := newChains(40, 8, func(i int) int { return 3 + i })
	r1cs, w := compileFor(t, circuit, assign)
	plans := func(opts ...SynthesizeOption) []tracetest.SpanStub {
		t.Helper()
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(otelcuzk.NewUntracedProcessor(0, 0)), sdktrace.WithSyncer(exp))
		asg, err := Synthesize(context.Background(), r1cs, w, append(opts, WithTracerProvider(tp))...)
		if err != nil {
			t.Fatal(err)
		}
		asg.Release(context.Background(), nil)
		tree := spantest.NewTree(exp.GetSpans())
		solve := tree.Named(semconv.SpanSynthesizeSolve)
		if len(solve) != 1 {
			t.Fatalf("%d synthesize.solve spans, want 1", len(solve))
		}
		for _, s := range exp.GetSpans() {
			if s.Parent.SpanID() == solve[0].SpanContext.SpanID() {
				t.Errorf("synthesize.solve has a child %s: its own work would read as untraced", s.Name)
			}
		}
		got := tree.Named(semconv.SpanSynthesizePlan)
		for _, p := range got {
			if p.Parent.SpanID() != solve[0].Parent.SpanID() || p.EndTime.After(solve[0].StartTime) {
				t.Errorf("synthesize.plan is not a step before synthesize.solve under the same parent")
			}
		}
		return got
	}
	if got := plans(WithSolver(SolverLevels)); len(got) != 0 {
		t.Errorf("a solve by levels made %d plan spans", len(got))
	}
	first := plans()
	if len(first) != 1 || spantest.StubAttr(first[0], string(semconv.KeySolverComponents)) != "40" {
		t.Fatalf("first synthesis: %d plan spans (%v), want one with 40 components", len(first), first)
	}
	if got := plans(); len(got) != 0 {
		t.Errorf("second synthesis: %d plan spans, want none (the plan is kept)", len(got))
	}
}

// A solve that fails says which solver failed: a chain whose input does
// not fit its 16 bits fails the component solver's solve, and the
// synthesize.solve span names the component solver and its components
// (as a success's does), not the level solver; by levels it names the
// level solver.
func TestFailedSolveSpanNamesTheSolverThatRan(t *testing.T) {
	circuit, assign := newChains(64, 10, func(i int) int {
		if i == 40 {
			return 1 << 20 // past ToBinary(x, 16): the recomposition fails
		}
		return 5 + i
	})
	r1cs, w := compileFor(t, circuit, assign)
	for _, tc := range []struct {
		solver Solver
		name   string
		comps  string
	}{
		{SolverAuto, "components", "64"},
		{SolverComponents, "components", "64"},
		{SolverLevels, "levels", ""},
	} {
		tp, exp := spantest.NewMemory()
		_, err := Synthesize(WithSolverTasks(context.Background(), 4), r1cs, w, WithSolver(tc.solver), WithTracerProvider(tp))
		if !errors.Is(err, ErrUnsatisfied) {
			t.Fatalf("solver %q: %v, want ErrUnsatisfied", tc.solver, err)
		}
		solve := spantest.NewTree(exp.GetSpans()).Named(semconv.SpanSynthesizeSolve)
		if len(solve) != 1 {
			t.Fatalf("solver %q: %d synthesize.solve spans, want 1", tc.solver, len(solve))
		}
		if got := spantest.StubAttr(solve[0], string(semconv.KeySolver)); got != tc.name {
			t.Errorf("solver %q: cuzk.solver %q, want %q", tc.solver, got, tc.name)
		}
		if got := spantest.StubAttr(solve[0], string(semconv.KeySolverComponents)); got != tc.comps {
			t.Errorf("solver %q: cuzk.solver.components %q, want %q", tc.solver, got, tc.comps)
		}
	}
}

// Prove takes WithSolver for its synthesis: merkle proved by levels and by
// components (the default here) gives the same proof with fixed
// randomness, and each synthesize.solve names its solver.
func TestProveTakesWithSolver(t *testing.T) {
	f := circuitstest.Setup(t, "merkle", 1<<12, 42)
	r, s := fr.NewElement(5), fr.NewElement(7)
	prove := func(opts ...ProveOption) (*groth16_bls12381.Proof, string) {
		tp, exp := spantest.NewMemory()
		proof, err := Prove(context.Background(), f.CCS, f.PK, f.Witness, append(opts, WithRandomness(r, s), WithTracerProvider(tp))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := gnarkgroth16.Verify(proof, f.VK, f.Public); err != nil {
			t.Fatalf("gnark rejects the proof: %v", err)
		}
		solve := spantest.NewTree(exp.GetSpans()).Named(semconv.SpanSynthesizeSolve)
		if len(solve) != 1 {
			t.Fatalf("%d synthesize.solve spans", len(solve))
		}
		return proof.(*groth16_bls12381.Proof), spantest.StubAttr(solve[0], string(semconv.KeySolver))
	}
	byLevels, s1 := prove(WithSolver(SolverLevels))
	byDefault, s2 := prove()
	if s1 != "levels" || s2 != "components" {
		t.Errorf("solvers %q with WithSolver(SolverLevels) and %q by default, want levels and components", s1, s2)
	}
	if !byLevels.Ar.Equal(&byDefault.Ar) || !byLevels.Bs.Equal(&byDefault.Bs) || !byLevels.Krs.Equal(&byDefault.Krs) {
		t.Error("the proofs by levels and by components differ")
	}
}
