package prover

import (
	"runtime"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	cs "github.com/consensys/gnark/constraint/bls12-381"
)

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
