package keycache

import (
	"context"
	"fmt"
	"time"
)

// AbandonedError is the error of a Compile or key setup whose context
// ended while the work ran: gnark's frontend.Compile and groth16.Setup
// cannot be stopped, so the call returns at once (its spans end, the
// caller is free) and the work runs on to its end in the background,
// storing what it made in the cache. A later call for the same key joins
// it rather than starting another, so at most one such work runs per key.
//
// It wraps the context's error (errors.Is(err, context.Canceled) holds;
// error.type canceled or deadline_exceeded) and tells an owner that
// accounts for its resources (prover/engine keeps the worker and the
// memory of the cancelled job reserved) what runs and when it ends.
type AbandonedError struct {
	// Step is the work left running: semconv.SpanKeysSetup or
	// semconv.SpanCircuitCompile.
	Step string
	// Since is when the context ended and the work was left to itself.
	Since time.Time
	// Err is the context's error.
	Err  error
	done <-chan struct{}
}

func (e *AbandonedError) Error() string { return e.Err.Error() }
func (e *AbandonedError) Unwrap() error { return e.Err }

// AbandonedStep names the work left running (Step).
func (e *AbandonedError) AbandonedStep() string { return e.Step }

// AbandonedDone is closed once the work has ended and stored its result.
func (e *AbandonedError) AbandonedDone() <-chan struct{} { return e.done }

// work is a compile or setup running in its own goroutine, waited for by
// the calls that need its result; a call whose context ends leaves it
// (AbandonedError), and the next call of the same key joins it.
type work struct {
	step     string
	done     chan struct{} // closed once finished and, when left, stored
	finished bool          // val and err are set; under Cache.mu
	waiters  int           // calls waiting; under Cache.mu
	val      any
	err      error
}

// shared runs run once per key at a time and waits for its result, or
// for ctx: then it returns an *AbandonedError and run goes on; when it
// ends with no call waiting, store is given its result (a call that gets
// the result stores it itself, in its own span). step names the work.
func (c *Cache) shared(ctx context.Context, key, step string, run func() (any, error), store func(any)) (any, error) {
	c.mu.Lock()
	w, ok := c.work[key]
	if !ok {
		w = &work{step: step, done: make(chan struct{})}
		c.work[key] = w
		c.background.Add(1)
		go func() {
			defer c.background.Done()
			v, err := runRecovered(step, run)
			c.mu.Lock()
			w.val, w.err, w.finished = v, err, true
			delete(c.work, key)
			left := w.waiters == 0
			c.mu.Unlock()
			if left && err == nil && store != nil {
				store(v)
			}
			close(w.done)
		}()
	}
	w.waiters++
	c.mu.Unlock()
	select {
	case <-w.done:
		return w.val, w.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	if w.finished {
		// It ended as ctx did: the result is this call's to take (and to
		// store), since the goroutine counted it as waiting.
		c.mu.Unlock()
		<-w.done
		return w.val, w.err
	}
	w.waiters--
	c.mu.Unlock()
	return nil, &AbandonedError{Step: step, Since: time.Now(), Err: ctx.Err(), done: w.done}
}

// Running returns the number of compiles and setups under way, those
// left running by a cancelled call included. Safe for concurrent use.
func (c *Cache) Running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.work)
}

// runRecovered calls run, turning a panic into an error naming step: run
// is in a goroutine of its own, where a panic would end the process
// rather than fail the one load (as it does in the caller's goroutine).
func runRecovered(step string, run func() (any, error)) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%s: panic: %v", step, r)
		}
	}()
	return run()
}
