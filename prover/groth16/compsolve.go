package groth16

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/parallel"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// The component solver: many circuits are several computations that share
// only a few early wires. merkle's proofs share one wire (its `one`, two
// levels from the inputs) and are otherwise independent chains of MiMC
// rounds; porep's challenges are independent SHA-256 chains. Levels are
// the wrong unit there: a level holds one or a few constraints of each
// chain, so the level solver meets a barrier every few hundred
// constraints (merkle 2^22: 133,014 levels) and reads the wires of
// hundreds of chains in turn. The component solver instead solves the
// first levels (the prologue, where the shared wires are made) in level
// order, then gives each goroutine whole components (sets of constraints
// joined by the wires they share past the prologue), each solved in the
// order the circuit defined its constraints: no barrier, and each
// goroutine reads the wires its own chain just wrote. The components are found once per R1CS (compPlanOf) by a
// union-find over the constraints' wires.

// compPrologueShare is the most instructions the prologue takes, as a
// share of all: its levels are solved before the components, by one
// goroutine, and the wires they make join no components.
const compPrologueShare = 0.01

// The component solver is chosen on tasks goroutines (compPlan.better)
// when the parallelism its components allow, the instructions past the
// prologue over the most one goroutine solves (largest first, each to the
// least loaded), is at least compEdge of the level solver's: at most
// tasks, and at most the pieces of levelPiece instructions an average
// level past the prologue holds. The level solver's figure is a ceiling
// it does not reach (a barrier a level: merkle 2^22 on 16 cores of the
// H200 host took 945 ms, about its one-goroutine time), the components'
// one they nearly do (no barrier). On one goroutine both are 1 and the components win:
// solved chain by chain, each goroutine reads the wires its own chain
// just wrote (merkle 2^20 on one goroutine of the development VM: 104 ms
// against 199 ms in level order). A circuit of one chain whose levels
// are wide (many products summed into one wire) keeps the level solver.

// compEdge is the share of the level solver's parallelism the
// components' must reach for the component solver (see above).
const compEdge = 0.75

// compPlan is an R1CS's components.
type compPlan struct {
	prologue []uint32   // instructions of the prologue's levels, in level order
	comps    [][]uint32 // each component's instructions in index order, largest first
	rest     int        // instructions past the prologue (the sum of len(comps[i]))
	levels   int        // levels past the prologue
}

// compPlans caches each R1CS's plan while the R1CS lives (weakCache): 4
// bytes an instruction, 256 MiB at 2^26.
var compPlans weakCache[cs.R1CS, *compPlanOnce]

type compPlanOnce struct {
	once sync.Once
	plan *compPlan
	made atomic.Bool // plan is set
}

// compPlanOf returns r1cs's plan, computing it on first use
// (newCompPlan). shape must be r1cs's (levelSolvable).
func compPlanOf(r1cs *cs.R1CS, shape levelShape) *compPlan {
	po := compPlans.get(r1cs, func() *compPlanOnce { return &compPlanOnce{} })
	po.once.Do(func() {
		po.plan = newCompPlan(r1cs, shape)
		po.made.Store(true)
	})
	return po.plan
}

// planTraced makes r1cs's plan under a synthesize.plan span (with the
// number of components) when it is not made yet, so that the first
// synthesis of a circuit shows what the plan cost (a step before
// synthesize.solve, ctx being the solve's parent); afterwards it does
// nothing.
func planTraced(ctx context.Context, tracer trace.Tracer, r1cs *cs.R1CS) {
	po := compPlans.get(r1cs, func() *compPlanOnce { return &compPlanOnce{} })
	if po.made.Load() {
		return
	}
	_, span := tracer.Start(ctx, semconv.SpanSynthesizePlan)
	p := compPlanOf(r1cs, shapeOf(r1cs))
	span.SetAttributes(semconv.KeySolverComponents.Int(len(p.comps)))
	span.End()
}

// compChunk is the instructions one goroutine decodes at a time in the
// passes of newCompPlan.
const compChunk = 1 << 12

// compParallelPlan is the fewest cores (GOMAXPROCS) on which
// newCompPlan makes the plan in parallel: its two passes and atomics cost
// about twice the CPU of the one sequential pass (on one core of the
// development VM, merkle 2^20: 106 against 56 ms; porep 2^20: 636-697
// against 340-351 ms on two), which pays from about four cores.
var compParallelPlan = 4

// newCompPlan finds r1cs's components: in parallel (parallelCompPlan) on
// compParallelPlan cores or more, else in one pass (sequentialCompPlan).
// Both give the same plan.
func newCompPlan(r1cs *cs.R1CS, shape levelShape) *compPlan {
	if runtime.GOMAXPROCS(0) >= compParallelPlan {
		return parallelCompPlan(r1cs, shape)
	}
	return sequentialCompPlan(r1cs, shape)
}

// Both plans walk the instructions in their index order, the order the
// circuit defined them, which is an order to solve them in: gnark's builder
// gives an instruction the level after those of the wires it names, taking
// a wire no earlier instruction named as the one it solves
// (constraint.System.AddInstruction), so the first instruction to name an
// internal wire solves it, and a reader comes after its solver. Walking
// that order, a chain's instructions are next to one another (merkle 2^22
// on the development VM: 535 ms for the plan in level order, where
// consecutive instructions are of different chains). The components list
// their instructions in that order too, and are solved so.

// planPrologue returns, per instruction, whether it is in the prologue:
// whole levels from the first, at most compPrologueShare of the
// instructions; with the prologue in level order and the levels past it.
func planPrologue(r1cs *cs.R1CS) (in []bool, prologue []uint32, levels int) {
	n := len(r1cs.Instructions)
	in = make([]bool, n)
	l0, pro := 0, 0
	for l0 < len(r1cs.Levels) && float64(pro+len(r1cs.Levels[l0])) <= compPrologueShare*float64(n) {
		pro += len(r1cs.Levels[l0])
		l0++
	}
	if pro > 0 {
		prologue = make([]uint32, 0, pro)
	}
	for _, level := range r1cs.Levels[:l0] {
		for _, i := range level {
			in[i] = true
			prologue = append(prologue, i)
		}
	}
	return in, prologue, len(r1cs.Levels) - l0
}

// wireWalker calls f(w) for every internal wire (index nIn or more) that
// the instructions it is given name: an R1C's terms, a hint's inputs and
// outputs. One per goroutine (its decoding space).
type wireWalker struct {
	r1cs  *cs.R1CS
	shape levelShape
	nIn   int
	r     constraint.R1C
	h     constraint.HintMapping
}

func (ww *wireWalker) terms(l constraint.LinearExpression, f func(w int)) {
	for _, t := range l {
		if !t.IsConstant() && t.WireID() >= ww.nIn {
			f(t.WireID())
		}
	}
}

func (ww *wireWalker) walk(i int, f func(w int)) {
	pi := ww.r1cs.Instructions[i]
	inst := pi.Unpack(&ww.r1cs.System)
	if bc := ww.shape.r1c[pi.BlueprintID]; bc != nil {
		bc.DecompressR1C(&ww.r, inst)
		ww.terms(ww.r.L, f)
		ww.terms(ww.r.R, f)
		ww.terms(ww.r.O, f)
	} else if bc := ww.shape.hint[pi.BlueprintID]; bc != nil {
		bc.DecompressHint(&ww.h, inst)
		for _, le := range ww.h.Inputs {
			ww.terms(le, f)
		}
		for w := ww.h.OutputRange.Start; w < ww.h.OutputRange.End; w++ {
			if int(w) >= ww.nIn {
				f(int(w))
			}
		}
	}
}

// parallelCompPlan finds r1cs's components in two passes over its
// instructions on all cores, each decoding every instruction as a solve
// does (without the field arithmetic):
//
//  1. the solver of each internal wire is the first instruction to name
//     it: solver[w] is the least index naming w (an atomic minimum);
//  2. each instruction is joined (a lock-free union-find, a root linked to
//     a smaller root by compare-and-swap) with the solver of each internal
//     wire it names, unless the prologue solves it.
//
// Memory while it runs: 4 bytes a wire and 5 an instruction, then 4 an
// instruction kept.
func parallelCompPlan(r1cs *cs.R1CS, shape levelShape) *compPlan {
	nIn := len(r1cs.Public) + len(r1cs.Secret)
	n := len(r1cs.Instructions)
	inPro, prologue, levels := planPrologue(r1cs)
	each := func(f func(i int32, w int)) {
		parallel.For((n+compChunk-1)/compChunk, func(c int) {
			ww := wireWalker{r1cs: r1cs, shape: shape, nIn: nIn}
			for i := c * compChunk; i < min(n, (c+1)*compChunk); i++ {
				ww.walk(i, func(w int) { f(int32(i), w) })
			}
		})
	}

	solver := make([]atomic.Int32, nIn+r1cs.NbInternalVariables)
	for i := range solver {
		solver[i].Store(math.MaxInt32)
	}
	each(func(i int32, w int) {
		for o := solver[w].Load(); i < o; o = solver[w].Load() {
			if solver[w].CompareAndSwap(o, i) {
				return
			}
		}
	})

	parent := make([]atomic.Int32, n)
	for i := range parent {
		parent[i].Store(int32(i))
	}
	find := func(x int32) int32 {
		for {
			p := parent[x].Load()
			if p == x {
				return x
			}
			gp := parent[p].Load()
			if gp != p {
				parent[x].CompareAndSwap(p, gp) // halving: gp is an ancestor of x too
			}
			x = gp
		}
	}
	each(func(i int32, w int) {
		o := solver[w].Load()
		if o == i || inPro[o] {
			return
		}
		a, b := i, o
		for {
			a, b = find(a), find(b)
			if a == b {
				return
			}
			if a < b {
				a, b = b, a
			}
			if parent[a].CompareAndSwap(a, b) { // a root: linked to the smaller one
				return
			}
		}
	})
	solver = nil
	roots := make([]int32, n)
	for i := range roots {
		roots[i] = find(int32(i))
	}
	return listComponents(roots, inPro, prologue, levels)
}

// sequentialCompPlan is parallelCompPlan in one pass on one goroutine:
// each instruction, in index order, takes the internal wires no earlier
// one named as those it solves, and is joined with the solver of each
// other wire it names (a union-find over instructions), except wires the
// prologue solves.
func sequentialCompPlan(r1cs *cs.R1CS, shape levelShape) *compPlan {
	nIn := len(r1cs.Public) + len(r1cs.Secret)
	n := len(r1cs.Instructions)
	inPro, prologue, levels := planPrologue(r1cs)
	// solver[w]: 1 + the instruction that solves internal wire w (0: none
	// seen yet); -1 for a wire the prologue solves.
	solver := make([]int32, nIn+r1cs.NbInternalVariables)
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	ww := wireWalker{r1cs: r1cs, shape: shape, nIn: nIn}
	for i := range n {
		ww.walk(i, func(w int) {
			switch o := solver[w]; {
			case o < 0:
			case o == 0:
				if inPro[i] {
					solver[w] = -1
				} else {
					solver[w] = int32(i) + 1
				}
			case o-1 != int32(i):
				a, b := find(int32(i)), find(o-1)
				if a < b {
					a, b = b, a
				}
				parent[a] = b
			}
		})
	}
	solver = nil
	for i := range parent {
		parent[i] = find(int32(i))
	}
	return listComponents(parent, inPro, prologue, levels)
}

// listComponents makes the plan from each instruction's root (roots[i],
// the least instruction of its component: both union-finds link a root to
// a smaller one): components in the order of their first instruction,
// each listing its instructions in index order, then sorted largest first
// (stable).
func listComponents(roots []int32, inPro []bool, prologue []uint32, levels int) *compPlan {
	p := &compPlan{prologue: prologue, levels: levels}
	// id[root]: 1 + the component's id.
	id := make([]int32, len(roots))
	var sizes []int32
	for i, root := range roots {
		if inPro[i] {
			continue
		}
		if id[root] == 0 {
			sizes = append(sizes, 0)
			id[root] = int32(len(sizes))
		}
		sizes[id[root]-1]++
	}
	p.comps = make([][]uint32, len(sizes))
	for k, c := range sizes {
		p.comps[k] = make([]uint32, 0, c)
		p.rest += int(c)
	}
	for i, root := range roots {
		if !inPro[i] {
			k := id[root] - 1
			p.comps[k] = append(p.comps[k], uint32(i))
		}
	}
	slices.SortStableFunc(p.comps, func(a, b []uint32) int { return len(b) - len(a) })
	return p
}

// makespan is the most instructions one of tasks goroutines solves when
// the components, largest first, each go to the least loaded goroutine.
func (p *compPlan) makespan(tasks int) int {
	load := make([]int, max(tasks, 1))
	for _, c := range p.comps {
		j := 0
		for k := range load {
			if load[k] < load[j] {
				j = k
			}
		}
		load[j] += len(c)
	}
	return slices.Max(load)
}

// better reports whether the component solver is expected to solve at
// least as fast as the level solver on tasks goroutines (see above).
func (p *compPlan) better(tasks int) bool {
	if p.rest == 0 {
		return false
	}
	tasks = max(tasks, 1)
	comps := float64(p.rest) / float64(p.makespan(tasks))
	levels := min(float64(tasks), max(1, float64(p.rest)/float64(max(p.levels, 1))/levelPiece))
	return comps >= compEdge*levels
}

// solveComponents solves the prologue on the calling goroutine, then the
// components on tasks goroutines, each taking the next unsolved component
// (largest first) until none is left. The first error stops the others at
// their next instruction.
func (s *levelSolver) solveComponents(p *compPlan, tasks int, scratch []levelScratch) error {
	for _, i := range p.prologue {
		if err := s.instruction(i, &scratch[0]); err != nil {
			return err
		}
	}
	var next atomic.Int64
	work := func(sc *levelScratch) {
		for {
			k := int(next.Add(1)) - 1
			if k >= len(p.comps) || s.failure.Load() != nil {
				return
			}
			for _, i := range p.comps[k] {
				if s.failure.Load() != nil {
					return
				}
				if err := s.instruction(i, sc); err != nil {
					s.failure.CompareAndSwap(nil, &err)
					return
				}
			}
		}
	}
	var wg sync.WaitGroup
	for j := 1; j < tasks; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(&scratch[j])
		}()
	}
	work(&scratch[0])
	wg.Wait()
	if e := s.failure.Load(); e != nil {
		return *e
	}
	return nil
}

// Solver is how Synthesize solves an R1CS of gnark's R1CS builder
// (WithSolver); other systems go to gnark's Solve whatever it says.
type Solver string

const (
	// SolverAuto, the default: by components where they are expected to
	// be at least as fast (compPlan.better), else by levels.
	SolverAuto Solver = ""
	// SolverLevels: by levels only (the level solver, levelsolve.go).
	SolverLevels Solver = "levels"
	// SolverComponents: by components whenever the R1CS has any past its
	// prologue, however unbalanced.
	SolverComponents Solver = "components"
)

// ParseSolver reads a Solver by name: "auto" or "" (SolverAuto),
// "levels", "components"; anything else is an error naming the choices.
func ParseSolver(s string) (Solver, error) {
	switch s {
	case "", "auto":
		return SolverAuto, nil
	case string(SolverLevels), string(SolverComponents):
		return Solver(s), nil
	}
	return SolverAuto, fmt.Errorf("solver %q: want auto, levels or components", s)
}
