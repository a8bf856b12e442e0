package kernels

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestParallelRunsEveryFunctionAtOnceAndJoinsErrors(t *testing.T) {
	const n = 10
	var started sync.WaitGroup
	started.Add(n)
	boom := errors.New("boom")
	fns := make([]func() error, n)
	for i := range fns {
		fns[i] = func() error {
			started.Done()
			started.Wait() // returns only when all n run at the same time
			if i == 3 {
				return boom
			}
			return nil
		}
	}
	done := make(chan error)
	go func() { done <- Parallel(fns...) }()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("parallel = %v, want the failing function's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("parallel did not run its functions concurrently")
	}
}
