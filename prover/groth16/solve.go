package groth16

import (
	"context"
	"math/big"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/constraint/solver"

	"github.com/otelcuzk/otelcuzk/internal/parallel"
)

// solverTasksKey carries a synthesis's solver tasks in its context.
type solverTasksKey struct{}

// WithSolverTasks returns ctx carrying n, the goroutines gnark's solver
// gets in a synthesis under ctx (solver.WithNbTasks): the engine's tuner
// splits the cores over the syntheses running at once this way. n < 1:
// the default (GOMAXPROCS).
func WithSolverTasks(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, solverTasksKey{}, n)
}

// SolverTasks returns the solver tasks ctx carries (WithSolverTasks), 0
// when none.
func SolverTasks(ctx context.Context) int {
	n, _ := ctx.Value(solverTasksKey{}).(int)
	return max(n, 0)
}

// solverTasks returns the number of goroutines for gnark's solver on r1cs:
// GOMAXPROCS, gnark's own choice (runtime.NumCPU) bounded by what the
// process may use. Fewer tasks looked cheaper on 2 cores for merkle's
// narrow levels (20,012 levels of 52-208 constraints, each a barrier), but
// on the H200 host's 16 cores one task solved merkle 2^22 in 10.2 s against
// 3.6 s with 16 (bench/caches.md), so the solver keeps every core.
func solverTasks(r1cs *cs.R1CS) int {
	_ = r1cs
	return max(1, runtime.GOMAXPROCS(0))
}

// copyPieceElems is the elements one goroutine copies at a time (2 MiB).
const copyPieceElems = 1 << 16

// copyJob is one vector of a synthesis copied into its mmap'd buffer: src
// into dst, the rest of dst zeroed unless zeroed says it already is (a
// fresh mapping).
type copyJob struct {
	dst, src []fr.Element
	zeroed   bool
}

// parallelCopy does the jobs in pieces of copyPieceElems on up to
// GOMAXPROCS goroutines, all jobs' pieces in one queue (one pass, one
// wait): the destinations are mmap'd memory whose first write
// page-faults, which one core alone pays serially.
func parallelCopy(jobs ...copyJob) {
	type piece struct{ job, lo, hi int }
	var pieces []piece
	for j, c := range jobs {
		n := len(c.dst)
		if c.zeroed {
			n = min(n, len(c.src)) // the tail stays untouched: not even faulted in
		}
		for lo := 0; lo < n; lo += copyPieceElems {
			pieces = append(pieces, piece{j, lo, min(lo+copyPieceElems, n)})
		}
	}
	do := func(p piece) {
		c := jobs[p.job]
		k := 0
		if p.lo < len(c.src) {
			k = copy(c.dst[p.lo:p.hi], c.src[p.lo:min(p.hi, len(c.src))])
		}
		clear(c.dst[p.lo+k : p.hi])
	}
	parallel.For(len(pieces), func(i int) { do(pieces[i]) })
}

// hintClock sums the calls and the time of the circuit's hints during one
// solve. gnark's solver calls hints inside its levels, from its task
// goroutines, each call microseconds long: a span per call would outweigh
// it, so synthesize.solve carries the totals (cuzk.solver.hint_calls,
// cuzk.solver.hint_cpu_ms, summed over the goroutines: CPU time, not wall
// time). The commitment hint is not counted here: its MSM has its own
// msm.g1.commitment span.
type hintClock struct {
	calls, nanos atomic.Int64
}

// options wraps every registered hint r1cs depends on with the clock; a
// hint not registered is left for gnark to report missing.
func (hc *hintClock) options(r1cs *cs.R1CS) []solver.Option {
	registered := map[solver.HintID]solver.Hint{}
	for _, h := range solver.GetRegisteredHints() {
		registered[solver.GetHintID(h)] = h
	}
	var opts []solver.Option
	for id := range r1cs.MHintsDependencies {
		h, ok := registered[id]
		if !ok {
			continue
		}
		opts = append(opts, solver.OverrideHint(id, func(mod *big.Int, in, out []*big.Int) error {
			t := time.Now()
			err := h(mod, in, out)
			hc.nanos.Add(int64(time.Since(t)))
			hc.calls.Add(1)
			return err
		}))
	}
	return opts
}
