package prover

import (
	"runtime"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// minConstraintsPerTask is the least work, in constraints, worth handing
// to another goroutine of gnark's solver. The solver splits each level of
// independent constraints into tasks and waits for all of them before the
// next level (constraint/bls12-381/solver.go, run); a task must outlast the
// wake-up of a parked worker and that barrier by a wide margin. gnark's own
// threshold is 50 constraints, about 10 µs of work at the 0.2 µs per
// constraint measured on the H200 host (a 999,021-constraint MiMC chain in
// 0.2 s), the order of one wake-up: merkle's 20,012 levels of K ≈ 52
// (2^20) to 208 (2^22) constraints then cost more in barriers than the
// whole solve does on one core.
const minConstraintsPerTask = 2000

// solverTasks returns the number of goroutines for gnark's solver on r1cs:
// one per minConstraintsPerTask constraints of an average level, at least 1
// and at most GOMAXPROCS.
func solverTasks(r1cs *cs.R1CS) int {
	levels := max(len(r1cs.Levels), 1)
	perLevel := r1cs.GetNbConstraints() / levels
	return max(1, min(runtime.GOMAXPROCS(0), perLevel/minConstraintsPerTask))
}

// copyPieceElems is the elements one goroutine copies at a time (2 MiB).
const copyPieceElems = 1 << 16

// parallelCopy copies src into dst and zeroes the rest of dst, in pieces
// on up to GOMAXPROCS goroutines: the destination is mmap'd memory whose
// first write page-faults, which one core alone pays serially.
func parallelCopy(dst, src []fr.Element) {
	n := len(dst)
	pieces := (n + copyPieceElems - 1) / copyPieceElems
	workers := min(pieces, runtime.GOMAXPROCS(0))
	do := func(i int) {
		lo, hi := i*copyPieceElems, min((i+1)*copyPieceElems, n)
		k := 0
		if lo < len(src) {
			k = copy(dst[lo:hi], src[lo:min(hi, len(src))])
		}
		clear(dst[lo+k : hi])
	}
	if workers <= 1 {
		for i := 0; i < pieces; i++ {
			do(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int, pieces)
	for i := 0; i < pieces; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				do(i)
			}
		}()
	}
	wg.Wait()
}
