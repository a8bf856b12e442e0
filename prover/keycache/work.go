package keycache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/progress"
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

// work makes one cache file's content (a key setup, a compile) in its own
// goroutine, in phases the calls waiting for it follow with their own
// spans: it takes the file's lock (waiting while another process holds
// it), looks whether the file is there now (the holder stored it: found,
// nothing is made), makes the content, stores it, and releases the lock.
// A call whose context ends leaves it: during the make or the store the
// work goes on (AbandonedError) and a later call of the same key joins it;
// during the wait for the lock, the wait ends once no call waits.
type work struct {
	step     string
	lockWait chan struct{} // closed when the lock is found held elsewhere
	locked   chan struct{} // closed once the lock is held, or the work goes on without it; found is set
	made     chan struct{} // closed once make returned; val and err are set
	done     chan struct{} // closed once stored and unlocked; storeErr is set

	found    bool // the file was in the cache once locked: nothing made
	val      any
	err      error // make's, or the wait's context error
	storeErr error

	// Under Cache.mu: the calls waiting for the lock phase, whether the
	// work is past it, whether every call left before (its wait ends: a
	// new call starts another work), and how to end its wait.
	waiters  int
	holding  bool
	aborting bool
	cancel   context.CancelFunc
}

// workSpec is what a work does.
type workSpec struct {
	key, step string
	// lockPath is the lock file ("" none); waitLine is said once on the
	// progress writer when another holds it.
	lockPath, waitLine string
	// cached, once the lock is held, reports whether the file is there
	// (made by the process that held it); nil: never looked for.
	cached func() bool
	make   func() (any, error)
	store  func(any) error // nil: nothing stored
}

// join returns the work of spec.key under way, counting the call of ctx
// as waiting for it, or starts it.
func (c *Cache) join(ctx context.Context, spec workSpec) *work {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.work[spec.key]; ok && !w.aborting {
		w.waiters++
		return w
	}
	// The work outlives the call that started it: its values (the trace),
	// not its cancellation.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &work{step: spec.step, lockWait: make(chan struct{}), locked: make(chan struct{}),
		made: make(chan struct{}), done: make(chan struct{}), waiters: 1, cancel: cancel}
	c.work[spec.key] = w
	c.background.Add(1)
	go c.run(wctx, w, spec)
	return w
}

func (c *Cache) run(wctx context.Context, w *work, spec workSpec) {
	defer c.background.Done()
	unlock := func() {}
	defer func() {
		unlock()
		w.cancel()
		c.mu.Lock()
		if c.work[spec.key] == w {
			delete(c.work, spec.key)
		}
		c.mu.Unlock()
		close(w.done)
	}()
	if spec.lockPath != "" {
		u, err := flockFile(wctx, spec.lockPath, func() {
			close(w.lockWait)
			if c.progress != nil && spec.waitLine != "" {
				progress.Println(c.progress, spec.waitLine)
			}
		})
		switch {
		case err == nil:
			unlock = u
		case !errors.Is(err, errNoLock):
			// Every call left while it waited: nothing to make.
			w.err = err
			close(w.locked)
			close(w.made)
			return
		}
	}
	c.mu.Lock()
	if w.aborting {
		c.mu.Unlock()
		w.err = wctx.Err()
		close(w.locked)
		close(w.made)
		return
	}
	w.holding = true
	c.mu.Unlock()
	w.found = spec.cached != nil && spec.cached()
	close(w.locked)
	if w.found {
		close(w.made)
		return
	}
	w.val, w.err = runRecovered(spec.step, spec.make)
	close(w.made)
	if w.err == nil && spec.store != nil {
		_, w.storeErr = runRecovered(spec.step+" store", func() (any, error) { return nil, spec.store(w.val) })
	}
}

// workSpans names the spans of a call following a work: lock (only when
// the work waits for a lock held elsewhere), make and store ("" none).
type workSpans struct{ lock, make, store string }

// await follows w for the call of ctx, each phase it waits for in a span
// of its own under ctx, until w has stored its result (or found the file
// there, found true: the caller reads it). Errors: make's (v nil); ctx's
// while the lock is awaited; an *AbandonedError wrapping ctx's when it
// ends during the make or the store (the work goes on). storeErr is the
// store's, which fails no call: the result is good, only not cached.
func (c *Cache) await(ctx context.Context, w *work, spans workSpans) (found bool, v any, storeErr error, err error) {
	if !isClosed(w.locked) {
		select {
		case <-w.locked:
		case <-w.lockWait:
		case <-ctx.Done():
			return false, nil, nil, c.leave(ctx, w)
		}
		if !isClosed(w.locked) {
			_, span := c.tracer.Start(ctx, spans.lock)
			select {
			case <-w.locked:
				span.End()
			case <-ctx.Done():
				endSpan(span, ctx.Err())
				return false, nil, nil, c.leave(ctx, w)
			}
		}
	}
	if w.found {
		return true, nil, nil, nil
	}
	_, mspan := c.tracer.Start(ctx, spans.make)
	select {
	case <-w.made:
	case <-ctx.Done():
		err := abandon(ctx, w)
		endSpan(mspan, err)
		return false, nil, nil, err
	}
	endSpan(mspan, w.err)
	if w.err != nil {
		return false, nil, nil, w.err
	}
	if spans.store != "" {
		_, sspan := c.tracer.Start(ctx, spans.store)
		select {
		case <-w.done:
		case <-ctx.Done():
			err := abandon(ctx, w)
			endSpan(sspan, err)
			return false, nil, nil, err
		}
		endSpan(sspan, w.storeErr)
	}
	<-w.done
	return false, w.val, w.storeErr, nil
}

// leave is a call's exit while w waits for its lock: once no call waits,
// the wait ends and nothing is made. It returns ctx's error: nothing of
// the call's runs on.
func (c *Cache) leave(ctx context.Context, w *work) error {
	c.mu.Lock()
	if w.waiters--; w.waiters == 0 && !w.holding {
		w.aborting = true
		w.cancel()
	}
	c.mu.Unlock()
	return ctx.Err()
}

// abandon is a call's exit while w makes or stores: it runs on.
func abandon(ctx context.Context, w *work) error {
	return &AbandonedError{Step: w.step, Since: time.Now(), Err: ctx.Err(), done: w.done}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Running returns the number of compiles and setups under way, those
// left running by a cancelled call and those waiting for another
// process's lock included. Safe for concurrent use.
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
