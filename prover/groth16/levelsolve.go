package groth16

import (
	"errors"
	"fmt"
	"math/big"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/constraint/solver"
)

// The level solver solves a BLS12-381 R1CS as gnark's solver does (level
// by level: the constraints of a level depend only on earlier levels, each
// solves at most one wire), with two changes that matter on many cores:
//
//   - Its goroutines wait for the next level by spinning on an atomic
//     pointer and each solves the same share of every level, where
//     gnark sends each level's pieces over a channel and waits on a
//     WaitGroup (goroutines parked and woken at every one of merkle's
//     20,072 levels), and gnark splits a level only when it has 50
//     constraints per task (merkle 2^22, 208 constraints a level, ran on 5
//     of 16 cores);
//   - it writes the wires and a, b, c straight into the caller's vectors
//     (the mmap'd buffers of an Assignment) instead of gnark's heap
//     vectors copied afterwards, and counts solved wires per goroutine
//     instead of one shared atomic.
//
// It handles the instructions of gnark's R1CS builder: R1C blueprints and
// hint blueprints. A system with any other blueprint (a custom solvable or
// stateful one, GKR) is left to gnark's Solve (levelSolvable).

// levelPiece is the least number of constraints of a level's part, and
// a level with fewer than 2 parts is solved by one goroutine. With 8 and
// parts taken from an atomic counter, merkle 2^22 (levels of 210) took
// 945 ms on 16 cores of the H200 host against 1628 ms for gnark's Solve,
// with 10.9 s of CPU: the goroutines mostly waited on one another.
const levelPiece = 16

// How many parts a level is split into is measured while the solve runs
// (levelPace): whether splitting a level pays depends on its width, on
// the host's cores and on what else runs there, and a split that does
// not pay costs a lot (merkle 2^20, levels of 52: on the 2-core
// development VM two goroutines took 3.3x the CPU time and 2.9x the wall
// time of one). The levels are solved in blocks of at least
// levelBlockInsts instructions; the first blocks try 1, 2, 4, ... parts
// (up to the solver's goroutines) for as long as each doubling is
// levelGain faster per instruction, the rest use the fastest, and every
// levelReprobe blocks a neighbour of it (half or double) is timed again,
// so the choice follows a host whose load changes.
const (
	levelBlockInsts = 4096
	levelGain       = 0.93 // a candidate must take at most this share of the best's time per instruction
	levelReprobe    = 24
)

// levelPace chooses the parts of each shared level from the measured time
// per instruction of blocks of levels solved with each candidate.
type levelPace struct {
	cands []int     // part counts: 1, 2, 4, ... and the most
	cost  []float64 // time per instruction of each, ns; 0: not measured
	best  int       // index into cands of the fastest so far
	cur   int       // index into cands of the block under way
	climb bool      // still trying doublings
	since int       // blocks since the last probe
	probe int       // 1 or -1: the side of best the next probe times

	insts int       // instructions of the block under way
	start time.Time // when it began
	now   func() time.Time
}

// newLevelPace returns the pacing of a solve on tasks goroutines.
func newLevelPace(tasks int, now func() time.Time) *levelPace {
	p := &levelPace{climb: true, probe: 1, now: now}
	for c := 1; c < tasks; c *= 2 {
		p.cands = append(p.cands, c)
	}
	p.cands = append(p.cands, tasks)
	p.cost = make([]float64, len(p.cands))
	return p
}

// parts is the number of parts of a level of n instructions in the block
// under way (1: the leader solves it alone).
func (p *levelPace) parts(n int) int {
	if p.insts == 0 {
		p.start = p.now()
	}
	p.insts += n
	return max(1, min(p.cands[p.cur], n/levelPiece))
}

// done ends a level; at the end of a block it records the block's time
// per instruction and picks the candidate of the next block.
func (p *levelPace) done() {
	if p.insts < levelBlockInsts || len(p.cands) == 1 {
		return
	}
	ns := float64(p.now().Sub(p.start)) / float64(p.insts)
	p.insts = 0
	i := p.cur
	if p.cost[i] == 0 || i != p.best {
		p.cost[i] = ns
	} else {
		p.cost[i] = (p.cost[i] + ns) / 2 // the best, timed again: smoothed
	}
	switch {
	case p.climb:
		if i == 0 || p.cost[i] <= levelGain*p.cost[p.best] {
			p.best = i
			if i+1 < len(p.cands) {
				p.cur = i + 1
				return
			}
		}
		p.climb = false
		p.cur = p.best
	case i != p.best:
		// A probe: taken when faster by the margin.
		if p.cost[i] <= levelGain*p.cost[p.best] {
			p.best = i
		}
		p.cur = p.best
	default:
		p.since++
		if p.since < levelReprobe {
			return
		}
		p.since = 0
		d := p.probe
		p.probe = -d
		next := p.best + d
		if next < 0 || next >= len(p.cands) {
			next = p.best - d // no candidate on that side: the other
		}
		if next >= 0 && next < len(p.cands) {
			p.cur = next
		}
	}
}

// chosen is the part count the solve settled on (its fastest candidate).
func (p *levelPace) chosen() int { return p.cands[p.best] }

// levelSpins is how many times a waiting goroutine polls before it yields
// its thread (runtime.Gosched) between polls, and levelYields how many
// times it yields before it sleeps until the next level is published (a
// long stretch of narrow levels, which the leader solves alone).
const (
	levelSpins  = 256
	levelYields = 4096
)

// levelShape is what the level solver knows of an R1CS, computed once.
type levelShape struct {
	ok        bool // levelSolvable
	maxPieces int  // the most levelPiece pieces of one level: more goroutines idle
	// Per blueprint, its R1C or hint form (one of them), so the hot loop
	// makes no interface assertion.
	r1c  []constraint.BlueprintR1C
	hint []constraint.BlueprintHint
}

// levelShapes caches each R1CS's shape while the R1CS lives (weakCache).
var levelShapes weakCache[cs.R1CS, levelShape]

// levelSolvable reports whether the level solver can solve r1cs: an R1CS
// without GKR whose blueprints are all R1C or hint blueprints.
func levelSolvable(r1cs *cs.R1CS) bool { return shapeOf(r1cs).ok }

func shapeOf(r1cs *cs.R1CS) levelShape {
	return levelShapes.get(r1cs, func() levelShape { return newLevelShape(r1cs) })
}

func newLevelShape(r1cs *cs.R1CS) levelShape {
	var sh levelShape
	for _, l := range r1cs.Levels {
		sh.maxPieces = max(sh.maxPieces, len(l)/levelPiece)
	}
	ok := r1cs.Type == constraint.SystemR1CS && !r1cs.GkrInfo.Is()
	sh.r1c = make([]constraint.BlueprintR1C, len(r1cs.Blueprints))
	sh.hint = make([]constraint.BlueprintHint, len(r1cs.Blueprints))
	for i, b := range r1cs.Blueprints {
		if _, solvable := b.(constraint.BlueprintSolvable[constraint.U64]); solvable {
			ok = false
		}
		if r1c, is := b.(constraint.BlueprintR1C); is {
			sh.r1c[i] = r1c // gnark's solver takes the R1C form first too
		} else if hint, is := b.(constraint.BlueprintHint); is {
			sh.hint[i] = hint
		} else {
			ok = false
		}
	}
	sh.ok = ok
	return sh
}

// levelSolver is one solve's state.
type levelSolver struct {
	r1cs    *cs.R1CS
	coeffs  []fr.Element
	values  []fr.Element // the wires, len = all wires
	solved  []bool
	a, b, c []fr.Element // at least NbConstraints each
	hints   map[solver.HintID]solver.Hint
	q       *big.Int
	tasks   int
	shape   levelShape
	pace    *levelPace

	cur     atomic.Pointer[levelWork] // the level under way, published to the followers
	stop    atomic.Bool
	failure atomic.Pointer[error]
	done    []levelDone

	// Followers asleep (levelYields passed) wait on wake; parked counts
	// them so that a publish takes the lock only when one sleeps.
	mu     sync.Mutex
	wake   *sync.Cond
	parked atomic.Int32
	asleep []atomic.Bool // by follower: waiting on wake
}

// publish makes w the level under way (nil with stop set: the end) and
// wakes the sleeping followers when one of them has a part of it (or at
// the end): a follower without a part sleeps on, so the goroutines the
// pacing leaves out of the levels cost no core (spinning beside the ones
// at work they slowed them: merkle 2^22 on 16 tasks, 4 parts chosen, took
// 1307 ms and 13.7 s of CPU on the H200 host against 700 ms on 4 tasks).
func (s *levelSolver) publish(w *levelWork) {
	if w != nil {
		s.cur.Store(w)
	}
	if s.parked.Load() == 0 {
		return
	}
	wake := w == nil
	for j := 1; !wake && j < w.parts; j++ {
		wake = s.asleep[j].Load()
	}
	if wake {
		s.mu.Lock()
		s.wake.Broadcast()
		s.mu.Unlock()
	}
}

// levelWork is one published level: its instructions, split in parts
// equal parts (part j to goroutine j), and its number among the shared
// levels. A goroutine says it finished its part in its done slot; the
// leader waits for them all before the next level, so no goroutine falls
// a level behind.
type levelWork struct {
	insts []uint32
	seq   int64
	parts int
}

// levelDone is one goroutine's last finished level (seq), alone in its
// cache line.
type levelDone struct {
	seq atomic.Int64
	_   [56]byte
}

// levelScratch is one goroutine's reused decoding space and counts.
type levelScratch struct {
	r1c    constraint.R1C
	hint   constraint.HintMapping
	solved int
	polls  int      // a follower's turns of its wait loop once a level was published (tests)
	_      [64]byte // its own cache line
}

// Test hooks: newPace makes a solve's pacing, afterSolve sees its
// goroutines' scratch at the end.
var (
	newPace    = func(tasks int) *levelPace { return newLevelPace(tasks, time.Now) }
	afterSolve = func([]levelScratch) {}
)

// levelSolve solves r1cs for the witness values (public then secret, the
// constant wire excluded) into wires (all wires) and a, b, c (their first
// NbConstraints elements; the rest untouched) on tasks goroutines, calling
// the hints of opts (solver.Option: WithHints, OverrideHint), by
// components or by levels as SolverAuto chooses. Errors: a constraint not
// satisfied (*cs.UnsatisfiedConstraintError with its index), a hint's
// error, a missing hint, a wire left unsolved.
func levelSolve(r1cs *cs.R1CS, witness fr.Vector, wires, a, b, c []fr.Element, tasks int, opts ...solver.Option) error {
	_, err := levelSolveReport(r1cs, witness, wires, a, b, c, tasks, SolverAuto, opts...)
	return err
}

// solveReport is how levelSolveReport solved an R1CS.
type solveReport struct {
	// components is the number of components the component solver shared
	// out (compsolve.go); 0 when the levels were shared instead.
	components int
	// parts is the parts the level solver's pacing settled on for the
	// shared levels (1: solved by one goroutine); 0 with components.
	parts int
}

// levelSolveReport is levelSolve by mode (SolverAuto: by components when
// r1cs's components, compPlanOf, are expected to solve at least as fast,
// compPlan.better; else by levels) that says how it solved, or how it
// failed once a solver ran (the zero report when none did).
func levelSolveReport(r1cs *cs.R1CS, witness fr.Vector, wires, a, b, c []fr.Element, tasks int, mode Solver, opts ...solver.Option) (rep solveReport, err error) {
	cfg, err := solver.NewConfig(opts...)
	if err != nil {
		return solveReport{}, err
	}
	for id, name := range r1cs.MHintsDependencies {
		if _, ok := cfg.HintFunctions[id]; !ok {
			return solveReport{}, fmt.Errorf("solver missing hint(s): %v", name)
		}
	}
	nbWires := len(r1cs.Public) + len(r1cs.Secret) + r1cs.NbInternalVariables
	if len(witness) != len(r1cs.Public)-1+len(r1cs.Secret) {
		return solveReport{}, fmt.Errorf("invalid witness size, got %d, expected %d", len(witness), len(r1cs.Public)-1+len(r1cs.Secret))
	}
	n := r1cs.GetNbConstraints()
	if len(wires) != nbWires || len(a) < n || len(b) < n || len(c) < n {
		return solveReport{}, fmt.Errorf("level solver: vectors of %d wires and %d/%d/%d evaluations for %d wires, %d constraints", len(wires), len(a), len(b), len(c), nbWires, n)
	}
	s := &levelSolver{
		r1cs: r1cs, coeffs: r1cs.Coefficients, values: wires, solved: make([]bool, nbWires),
		a: a, b: b, c: c, hints: cfg.HintFunctions, q: r1cs.Field(),
	}
	s.values[0].SetOne()
	s.solved[0] = true
	copy(s.values[1:], witness)
	for i := range witness {
		s.solved[i+1] = true
	}
	s.shape = shapeOf(r1cs)
	if mode != SolverLevels {
		if p := compPlanOf(r1cs, s.shape); mode == SolverComponents && p.rest > 0 || p.better(tasks) {
			tasks = max(1, min(tasks, len(p.comps)))
			scratch := make([]levelScratch, tasks)
			err := s.solveComponents(p, tasks, scratch)
			afterSolve(scratch)
			rep := solveReport{components: len(p.comps)}
			if err != nil {
				return rep, err
			}
			return rep, s.allSolved(scratch, len(witness))
		}
	}
	// More goroutines than a level has pieces would only wait.
	tasks = max(1, min(tasks, s.shape.maxPieces))
	s.tasks = tasks
	s.pace = newPace(tasks)
	s.wake = sync.NewCond(&s.mu)
	s.asleep = make([]atomic.Bool, tasks)
	scratch := make([]levelScratch, tasks)
	s.done = make([]levelDone, tasks)
	var wg sync.WaitGroup
	for j := 1; j < tasks; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.follow(j, &scratch[j])
		}()
	}
	err = s.lead(&scratch[0])
	s.stop.Store(true)
	s.publish(nil)
	wg.Wait()
	afterSolve(scratch)
	rep = solveReport{parts: s.pace.chosen()}
	if err != nil {
		return rep, err
	}
	return rep, s.allSolved(scratch, len(witness))
}

// allSolved returns an error unless the goroutines' scratch counts, with
// the constant wire and the nWitness inputs, cover every wire.
func (s *levelSolver) allSolved(scratch []levelScratch, nWitness int) error {
	solvedN := 1 + nWitness
	for i := range scratch {
		solvedN += scratch[i].solved
	}
	if solvedN != len(s.values) {
		return errors.New("solver didn't assign a value to all wires")
	}
	return nil
}

// lead walks the levels: a narrow one alone, a wide one published to the
// followers and shared with them in the parts the pacing chooses (one:
// alone), waiting until its last part is done.
func (s *levelSolver) lead(sc *levelScratch) error {
	var seq int64
	for _, level := range s.r1cs.Levels {
		parts := s.pace.parts(len(level))
		if parts < 2 {
			for _, i := range level {
				if err := s.instruction(i, sc); err != nil {
					return err
				}
			}
			s.pace.done()
			continue
		}
		seq++
		w := &levelWork{insts: level, seq: seq, parts: parts}
		s.publish(w)
		s.part(w, 0, sc)
		for j := 1; j < parts; j++ {
			for spins := 0; s.done[j].seq.Load() < seq; spins++ {
				if spins >= levelSpins {
					runtime.Gosched()
				}
			}
		}
		if p := s.failure.Load(); p != nil {
			return *p
		}
		s.pace.done()
	}
	return nil
}

// follow is goroutine j's loop (j >= 1): for each published level with a
// part j, solve it and say so in done[j], until stop.
func (s *levelSolver) follow(j int, sc *levelScratch) {
	var seen *levelWork
	for spins := 0; !s.stop.Load(); spins++ {
		w := s.cur.Load()
		if w != nil {
			// Counted from the first level published: before it, every
			// follower waits alike, as long as the leader takes to get
			// there (descheduled on a loaded host: hundreds of turns).
			sc.polls++
		}
		if w != seen {
			seen = w
			if j < w.parts {
				spins = 0
				s.part(w, j, sc)
				s.done[j].seq.Store(w.seq)
				continue
			}
			// No part of this level: the pacing chose fewer parts than
			// goroutines, sleep until a level has one.
			spins = levelSpins + levelYields
		}
		switch {
		case spins >= levelSpins+levelYields:
			s.mu.Lock()
			s.asleep[j].Store(true)
			s.parked.Add(1)
			for !s.stop.Load() {
				if w := s.cur.Load(); w != seen && j < w.parts {
					break
				}
				s.wake.Wait()
			}
			s.parked.Add(-1)
			s.asleep[j].Store(false)
			s.mu.Unlock()
			spins = 0
		case spins >= levelSpins:
			runtime.Gosched()
		}
	}
}

// part solves part j of w's level: the same share of every level for the
// same goroutine, so the wires a part reads were mostly written by its
// own goroutine the level before (gnark lists a level's constraints in
// the order they were defined: merkle's proofs one after another).
func (s *levelSolver) part(w *levelWork, j int, sc *levelScratch) {
	n := len(w.insts)
	for _, i := range w.insts[n*j/w.parts : n*(j+1)/w.parts] {
		if s.failure.Load() != nil {
			return
		}
		if err := s.instruction(i, sc); err != nil {
			s.failure.CompareAndSwap(nil, &err)
			return
		}
	}
}

// instruction solves instruction i: an R1C (its one unsolved wire, then
// a, b, c) or a hint.
func (s *levelSolver) instruction(i uint32, sc *levelScratch) error {
	pi := s.r1cs.Instructions[i]
	inst := pi.Unpack(&s.r1cs.System)
	if bc := s.shape.r1c[pi.BlueprintID]; bc != nil {
		bc.DecompressR1C(&sc.r1c, inst)
		return s.r1c(inst.ConstraintOffset, &sc.r1c, sc)
	}
	if bc := s.shape.hint[pi.BlueprintID]; bc != nil {
		bc.DecompressHint(&sc.hint, inst)
		return s.hint(&sc.hint, sc)
	}
	return fmt.Errorf("level solver: instruction %d of an unknown blueprint %T", i, s.r1cs.Blueprints[pi.BlueprintID])
}

// accumulate adds t's coefficient times its wire's value to r.
func (s *levelSolver) accumulate(t constraint.Term, r *fr.Element) {
	cID, vID := t.CoeffID(), t.WireID()
	if t.IsConstant() {
		r.Add(r, &s.coeffs[cID])
		return
	}
	switch cID {
	case constraint.CoeffIdZero:
	case constraint.CoeffIdOne:
		r.Add(r, &s.values[vID])
	case constraint.CoeffIdTwo:
		var v fr.Element
		v.Double(&s.values[vID])
		r.Add(r, &v)
	case constraint.CoeffIdMinusOne:
		r.Sub(r, &s.values[vID])
	default:
		var v fr.Element
		v.Mul(&s.coeffs[cID], &s.values[vID])
		r.Add(r, &v)
	}
}

// r1c solves constraint cID, r: the one unsolved wire of its L, R or O if
// any, else checks L·R = O; a, b, c get the evaluations.
func (s *levelSolver) r1c(cID uint32, r *constraint.R1C, sc *levelScratch) error {
	var v [3]fr.Element
	loc := -1
	var unsolved constraint.Term
	for k, l := range [3]constraint.LinearExpression{r.L, r.R, r.O} {
		for _, t := range l {
			if t.IsConstant() || s.solved[t.WireID()] {
				s.accumulate(t, &v[k])
				continue
			}
			if loc >= 0 {
				return &cs.UnsatisfiedConstraintError{CID: int(cID), Err: errors.New("more than one wire to instantiate")}
			}
			unsolved, loc = t, k
		}
	}
	var wire fr.Element
	switch loc {
	case -1:
		var check fr.Element
		if !check.Mul(&v[0], &v[1]).Equal(&v[2]) {
			return unsatisfied(cID, v)
		}
	case 0, 1:
		other := &v[1-loc]
		if other.IsZero() {
			var check fr.Element
			if !check.Mul(&v[0], &v[1]).Equal(&v[2]) {
				return unsatisfied(cID, v)
			}
			break
		}
		wire.Div(&v[2], other).Sub(&wire, &v[loc])
		v[loc].Add(&v[loc], &wire)
	case 2:
		wire.Mul(&v[0], &v[1]).Sub(&wire, &v[2])
		v[2].Add(&v[2], &wire)
	}
	if loc >= 0 {
		// wire is coefficient × value: the value alone is stored.
		switch cid := unsolved.CoeffID(); cid {
		case constraint.CoeffIdOne:
		case constraint.CoeffIdMinusOne:
			wire.Neg(&wire)
		case constraint.CoeffIdZero:
			return &cs.UnsatisfiedConstraintError{CID: int(cID), Err: errors.New("division by 0")}
		default:
			wire.Div(&wire, &s.coeffs[cid])
		}
		s.set(uint32(unsolved.WireID()), &wire, sc)
	}
	s.a[cID], s.b[cID], s.c[cID] = v[0], v[1], v[2]
	return nil
}

// unsatisfied is the error of constraint cID whose L, R, O evaluate to v.
func unsatisfied(cID uint32, v [3]fr.Element) error {
	return &cs.UnsatisfiedConstraintError{CID: int(cID), Err: fmt.Errorf("%s ⋅ %s != %s", v[0].String(), v[1].String(), v[2].String())}
}

func (s *levelSolver) set(id uint32, v *fr.Element, sc *levelScratch) {
	s.values[id] = *v
	s.solved[id] = true
	sc.solved++
}

// hint runs h's function on its inputs' values and sets its outputs.
func (s *levelSolver) hint(h *constraint.HintMapping, sc *levelScratch) error {
	f, ok := s.hints[h.HintID]
	if !ok {
		return errors.New("missing hint function")
	}
	in := make([]*big.Int, len(h.Inputs))
	for i, le := range h.Inputs {
		var v fr.Element
		for _, t := range le {
			s.accumulate(t, &v)
		}
		in[i] = v.BigInt(new(big.Int))
	}
	out := make([]*big.Int, h.OutputRange.End-h.OutputRange.Start)
	for i := range out {
		out[i] = new(big.Int)
	}
	err := f(new(big.Int).Set(s.q), in, out)
	for i, o := range out {
		var v fr.Element
		v.SetBigInt(o)
		s.set(h.OutputRange.Start+uint32(i), &v, sc)
	}
	return err
}
