package groth16

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	"github.com/otelcuzk/otelcuzk/internal/parallel"
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
// joined by the wires they share past the prologue), each solved in level
// order on its own: no barrier, and each goroutine reads the wires its own
// chain wrote. The components are found once per R1CS (compPlanOf) by a
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
	comps    [][]uint32 // each component's instructions in level order, largest first
	rest     int        // instructions past the prologue (the sum of len(comps[i]))
	levels   int        // levels past the prologue
}

// compPlans caches each R1CS's plan while the R1CS lives (weakCache): 4
// bytes an instruction, 256 MiB at 2^26.
var compPlans weakCache[cs.R1CS, *compPlanOnce]

type compPlanOnce struct {
	once sync.Once
	plan *compPlan
}

// compPlanOf returns r1cs's plan, computing it on first use
// (newCompPlan). shape must be r1cs's (levelSolvable).
func compPlanOf(r1cs *cs.R1CS, shape levelShape) *compPlan {
	po := compPlans.get(r1cs, func() *compPlanOnce { return &compPlanOnce{} })
	po.once.Do(func() { po.plan = newCompPlan(r1cs, shape) })
	return po.plan
}

// compChunk is the instructions one goroutine decodes at a time in the
// passes of newCompPlan.
const compChunk = 1 << 12

// compParallelPlan is the fewest cores (GOMAXPROCS) on which
// newCompPlan makes the plan in parallel: its two passes and atomics cost
// about 2.5 times the CPU of the one sequential pass (merkle 2^20 on the
// development VM: 200-300 ms on one core against 90-120 ms), which pays
// from about four cores.
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

// parallelCompPlan finds r1cs's components in two passes over its instructions
// on all cores, each decoding every instruction as a solve does (without
// the field arithmetic), in positions of level order (pos: the
// instructions of the levels one after another):
//
//  1. the solver of each internal wire is the first instruction to name
//     it in level order (a reader's level is always above its solver's):
//     solver[w] is the least position naming w (an atomic minimum);
//  2. each instruction is joined (a lock-free union-find over positions,
//     a root linked to a smaller root by compare-and-swap) with the solver
//     of each internal wire it names, unless the prologue solves it.
//
// Then, in one pass, each component's instructions are listed in level
// order. Memory while it runs: 4 bytes a wire and 8 an instruction, then
// 4 an instruction kept.
func parallelCompPlan(r1cs *cs.R1CS, shape levelShape) *compPlan {
	nIn := len(r1cs.Public) + len(r1cs.Secret)
	nWires := nIn + r1cs.NbInternalVariables
	order := make([]uint32, 0, len(r1cs.Instructions)) // level order: pos -> instruction
	for _, level := range r1cs.Levels {
		order = append(order, level...)
	}
	n := len(order)

	// The prologue: whole levels from the first, at most
	// compPrologueShare of the instructions.
	l0, pro := 0, 0
	for l0 < len(r1cs.Levels) && float64(pro+len(r1cs.Levels[l0])) <= compPrologueShare*float64(n) {
		pro += len(r1cs.Levels[l0])
		l0++
	}

	// each calls f(pos, w) for every internal wire w the instructions at
	// positions [lo, hi) name, on all cores.
	each := func(f func(pos int32, w int)) {
		parallel.For((n+compChunk-1)/compChunk, func(c int) {
			var r constraint.R1C
			var h constraint.HintMapping
			var pos int32
			terms := func(l constraint.LinearExpression) {
				for _, t := range l {
					if !t.IsConstant() && t.WireID() >= nIn {
						f(pos, t.WireID())
					}
				}
			}
			for p := c * compChunk; p < min(n, (c+1)*compChunk); p++ {
				pos = int32(p)
				pi := r1cs.Instructions[order[p]]
				inst := pi.Unpack(&r1cs.System)
				if bc := shape.r1c[pi.BlueprintID]; bc != nil {
					bc.DecompressR1C(&r, inst)
					terms(r.L)
					terms(r.R)
					terms(r.O)
				} else if bc := shape.hint[pi.BlueprintID]; bc != nil {
					bc.DecompressHint(&h, inst)
					for _, le := range h.Inputs {
						terms(le)
					}
					for w := h.OutputRange.Start; w < h.OutputRange.End; w++ {
						if int(w) >= nIn {
							f(pos, int(w))
						}
					}
				}
			}
		})
	}

	solver := make([]atomic.Int32, nWires)
	for i := range solver {
		solver[i].Store(math.MaxInt32)
	}
	each(func(pos int32, w int) {
		for o := solver[w].Load(); pos < o; o = solver[w].Load() {
			if solver[w].CompareAndSwap(o, pos) {
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
	each(func(pos int32, w int) {
		o := solver[w].Load()
		if o == pos || int(o) < pro {
			return
		}
		a, b := pos, o
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

	p := &compPlan{prologue: order[:pro:pro], levels: len(r1cs.Levels) - l0}
	// id[root]: 1 + the component's id, given at its first position; ids
	// in the order of the components' first instructions.
	id := make([]int32, n)
	var sizes []int32
	for q := pro; q < n; q++ {
		root := find(int32(q))
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
	for q := pro; q < n; q++ {
		k := id[find(int32(q))] - 1
		p.comps[k] = append(p.comps[k], order[q])
	}
	if pro == 0 {
		p.prologue = nil
	} else {
		p.prologue = slices.Clone(p.prologue) // not the whole of order
	}
	slices.SortStableFunc(p.comps, func(a, b []uint32) int { return len(b) - len(a) })
	return p
}

// sequentialCompPlan is parallelCompPlan in one pass on one goroutine:
// in level order, each instruction names the wires it solves first (the
// first to name an internal wire solves it) and is joined with the solver
// of each wire it reads (a union-find over instructions), except wires
// the prologue solves.
func sequentialCompPlan(r1cs *cs.R1CS, shape levelShape) *compPlan {
	nIn := len(r1cs.Public) + len(r1cs.Secret)
	nWires := nIn + r1cs.NbInternalVariables
	nInst := len(r1cs.Instructions)
	l0, pro := 0, 0
	for l0 < len(r1cs.Levels) && float64(pro+len(r1cs.Levels[l0])) <= compPrologueShare*float64(nInst) {
		pro += len(r1cs.Levels[l0])
		l0++
	}

	// solver[w]: 1 + the instruction that solves internal wire w (0: none
	// seen yet); -1 for a wire the prologue solves.
	solver := make([]int32, nWires)
	parent := make([]int32, nInst)
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
	var r constraint.R1C
	var h constraint.HintMapping
	inPrologue := true
	var i int32
	visit := func(w int) {
		if w < nIn {
			return
		}
		switch o := solver[w]; {
		case o < 0:
		case o == 0:
			if inPrologue {
				solver[w] = -1
			} else {
				solver[w] = i + 1
			}
		default:
			a, b := find(i), find(o-1)
			if a < b {
				a, b = b, a
			}
			parent[a] = b
		}
	}
	terms := func(l constraint.LinearExpression) {
		for _, t := range l {
			if !t.IsConstant() {
				visit(t.WireID())
			}
		}
	}
	for l, level := range r1cs.Levels {
		inPrologue = l < l0
		for _, ii := range level {
			i = int32(ii)
			pi := r1cs.Instructions[ii]
			inst := pi.Unpack(&r1cs.System)
			if bc := shape.r1c[pi.BlueprintID]; bc != nil {
				bc.DecompressR1C(&r, inst)
				terms(r.L)
				terms(r.R)
				terms(r.O)
			} else if bc := shape.hint[pi.BlueprintID]; bc != nil {
				bc.DecompressHint(&h, inst)
				for _, le := range h.Inputs {
					terms(le)
				}
				for w := h.OutputRange.Start; w < h.OutputRange.End; w++ {
					visit(int(w))
				}
			}
		}
	}
	solver = nil

	p := &compPlan{levels: len(r1cs.Levels) - l0}
	if pro > 0 {
		p.prologue = make([]uint32, 0, pro)
	}
	// id[root]: 1 + the component's id, given at its first instruction in
	// level order.
	id := make([]int32, nInst)
	var sizes []int32
	for l, level := range r1cs.Levels {
		for _, ii := range level {
			if l < l0 {
				p.prologue = append(p.prologue, ii)
				continue
			}
			root := find(int32(ii))
			if id[root] == 0 {
				sizes = append(sizes, 0)
				id[root] = int32(len(sizes))
			}
			sizes[id[root]-1]++
		}
	}
	p.comps = make([][]uint32, len(sizes))
	for k, c := range sizes {
		p.comps[k] = make([]uint32, 0, c)
		p.rest += int(c)
	}
	for l := l0; l < len(r1cs.Levels); l++ {
		for _, ii := range r1cs.Levels[l] {
			k := id[find(int32(ii))] - 1
			p.comps[k] = append(p.comps[k], ii)
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
