// Package parallel spreads a loop of independent iterations over the
// cores: the key cache checks its chunks with it, the prover copies and
// zeroes its host buffers with it (the first write of fresh mmap'd memory
// page-faults, which one core alone pays serially).
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls f(0) … f(n-1), each exactly once, and returns when all have
// returned. Up to GOMAXPROCS goroutines take the next index from one
// counter, so an iteration that runs long holds up only its own goroutine.
// With one worker (GOMAXPROCS 1, n ≤ 1) it calls them in order on the
// caller's goroutine. f must be safe to call concurrently for distinct i.
func For(n int, f func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}
