package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
)

func TestForCallsEachIndexOnceOnAtMostGOMAXPROCSGoroutines(t *testing.T) {
	for _, procs := range []int{1, 4} {
		old := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 3, 1000} {
			calls := make([]atomic.Int32, n)
			var running, most atomic.Int32
			For(n, func(i int) {
				r := running.Add(1)
				for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
				}
				calls[i].Add(1)
				running.Add(-1)
			})
			for i := range calls {
				if c := calls[i].Load(); c != 1 {
					t.Errorf("GOMAXPROCS %d, n %d: f(%d) called %d times, want 1", procs, n, i, c)
				}
			}
			if m := most.Load(); int(m) > procs {
				t.Errorf("GOMAXPROCS %d, n %d: %d calls at once, want at most %d", procs, n, m, procs)
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

func TestForRunsInOrderOnTheCallerWithOneWorker(t *testing.T) {
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	var got []int
	For(5, func(i int) { got = append(got, i) }) // no lock: the caller's goroutine only
	for i, v := range got {
		if v != i {
			t.Fatalf("order %v, want 0 … 4", got)
		}
	}
	if len(got) != 5 {
		t.Fatalf("%d calls, want 5", len(got))
	}
}
