package engine

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// popLocked takes the first task of the highest non-empty priority of qs;
// e.mu must be held and qs not empty.
func popLocked(qs *[levels]*list.List) *task {
	for p := levels - 1; p >= 0; p-- {
		if el := qs[p].Front(); el != nil {
			t := el.Value.(*task)
			qs[p].Remove(el)
			t.elem = nil
			return t
		}
	}
	return nil
}

// startLocked marks t's job started at now; e.mu must be held.
func (e *Engine) startLocked(t *task, now time.Time) {
	j := t.job
	if j.started.IsZero() {
		j.started = now
		e.running[j.id] = j
	}
}

// startSynthesis waits for t's share of the memory budget (admit) and
// marks t's synthesis, and its job, started now (t.synthStart); it returns
// true with e.mu held. When t's job was cancelled or failed meanwhile it
// runs refused (if not nil) with e.mu held, ends t with the job's cause and
// returns false without the lock.
func (e *Engine) startSynthesis(t *task, refused func()) bool {
	if !e.admit(t) {
		e.mu.Lock()
		if refused != nil {
			refused()
		}
		cause := t.job.cause
		e.mu.Unlock()
		e.endTask(t, -1, nil, cause)
		return false
	}
	e.mu.Lock()
	now := e.cfg.now()
	t.synthStart = now
	e.startLocked(t, now)
	return true
}

// synthesisWork is one synthesis worker's loop (pipelined engine): take
// the first queued task of the highest priority, wait for the memory
// budget, synthesize, hand the result to the device queue; return once
// Shutdown began and the queue is empty.
func (e *Engine) synthesisWork() {
	defer e.wg.Done()
	for {
		e.mu.Lock()
		for (e.queued == 0 || !e.tunerAllowsLocked()) && !e.closing {
			e.cond.Wait()
		}
		if e.queued == 0 {
			e.mu.Unlock()
			return
		}
		t := popLocked(&e.queues)
		e.queued--
		e.synthesizing++
		tasks := 0
		if e.cfg.tuner != nil {
			starved := e.devQueued == 0 && e.proving < e.healthy
			tasks = e.cfg.tuner.SolverTasksStarting(&t.req, e.synthesizing, e.queued, e.proving, starved)
		}
		now := e.cfg.now()
		runCtx, cancel := context.WithCancel(t.ctx)
		t.cancelRun = cancel
		t.job.refresh()
		waited := e.leftQueueLocked(t, now)
		e.mu.Unlock()
		t.queueSpan.SetAttributes(waited...)
		t.queueSpan.End(trace.WithTimestamp(now))

		if !e.startSynthesis(t, func() {
			cancel()
			e.synthesizing--
			e.cond.Broadcast()
		}) {
			continue
		}
		t.state = StateSynthesizing
		t.job.refresh()
		e.mu.Unlock()
		synCtx := runCtx
		if tasks > 0 {
			synCtx = groth16.WithSolverTasks(runCtx, tasks)
		}
		syn, err := runSafely(func() (prover.Synthesized, error) { return e.synth.Synthesize(synCtx, &t.req) })
		ab := abandonedOf(err)
		e.mu.Lock()
		if ab == nil {
			e.synthesizing--
		}
		t.synthEnd = e.cfg.now()
		if err == nil && syn != nil && e.cfg.tuner != nil {
			e.observeSynthesis(t, syn)
		}
		stop := t.job.cancelled || t.job.failed != nil
		if err != nil || syn == nil || stop {
			t.cancelRun = nil
			e.cond.Broadcast()
			e.mu.Unlock()
			cancel()
			if syn != nil {
				_ = syn.Release(t.ctx)
				e.unreserveWhenFreed(t, syn)
			} else if ab == nil {
				e.unreserve(t)
			}
			if err == nil && syn == nil {
				err = errors.New("runner returned no synthesized proof")
			}
			var a *Abandoned
			if ab != nil {
				a = e.abandon(t, ab, "")
			}
			e.endTask(t, -1, nil, err)
			if ab != nil {
				// This slot is not handed out until the work ends.
				e.holdAbandoned(t, a, ab)
				e.mu.Lock()
				e.synthesizing--
				e.cond.Broadcast()
				e.mu.Unlock()
			}
			continue
		}
		cancel()
		t.cancelRun = nil
		t.syn = syn
		t.state = StateWaitingDevice
		_, t.gpuSpan = e.tracer.Start(t.ctx, semconv.SpanGPUQueue, trace.WithTimestamp(t.synthEnd),
			trace.WithAttributes(semconv.KeyQueueDepth.Int(e.devQueued)))
		if !e.ready {
			_, t.warmSpan = e.tracer.Start(t.ctx, semconv.SpanEngineWarmup, trace.WithTimestamp(t.synthEnd))
		}
		t.elem = e.devQueues[slot(t.job.req.Priority)].PushBack(t)
		e.devQueued++
		t.job.refresh()
		e.cond.Broadcast()
		e.mu.Unlock()
	}
}

// observeSynthesis gives the tuner t's synthesis time: the runner's own
// measure of it when it has one (prover.SynthesisTimer: without the
// compile, the keys' load and the wait for another job's load, which the
// time from t.synthStart holds on a circuit's first use), a first solve's
// apart; else the time from t.synthStart.
func (e *Engine) observeSynthesis(t *task, syn prover.Synthesized) {
	st, ok := syn.(prover.SynthesisTimer)
	if !ok {
		e.cfg.tuner.ObserveSynthesis(&t.req, t.synthEnd.Sub(t.synthStart))
		return
	}
	tm := st.SynthesisTiming()
	if tm.FirstSolve {
		e.cfg.tuner.ObserveFirstSynthesis(&t.req, tm.Synthesis)
	} else {
		e.cfg.tuner.ObserveSynthesis(&t.req, tm.Synthesis)
	}
}

// tunerAllowsLocked reports whether the tuner lets one more synthesis of
// the next queued job's circuit and size start beside those under way;
// e.mu must be held.
func (e *Engine) tunerAllowsLocked() bool {
	if e.cfg.tuner == nil || e.queued == 0 {
		return true
	}
	for p := levels - 1; p >= 0; p-- {
		if el := e.queues[p].Front(); el != nil {
			t := el.Value.(*task)
			return e.synthesizing < e.cfg.tuner.Workers(&t.req, t.job.memory, e.cfg.budget)
		}
	}
	return true
}

// fitsLocked reports whether need more bytes fit in the budget beside
// what is reserved and held; a task also fits when nothing is reserved,
// since waiting could not make room (Submit refused what can never fit).
func (e *Engine) fitsLocked(need, held uint64) bool {
	return e.cfg.budget == 0 || e.reserved == 0 || e.reserved+need+held <= e.cfg.budget
}

// admit waits until t fits in the memory budget and reserves its estimate;
// the wait is an engine.budget span. It returns false, reserving nothing,
// when t's job was cancelled or failed meanwhile.
func (e *Engine) admit(t *task) bool {
	if e.cfg.budget == 0 {
		e.mu.Lock()
		defer e.mu.Unlock()
		return !t.job.cancelled && t.job.failed == nil
	}
	need := t.job.memory
	e.mu.Lock()
	defer e.mu.Unlock()
	stopped := func() bool { return t.job.cancelled || t.job.failed != nil }
	held := e.held()
	if !stopped() && !e.fitsLocked(need, held) {
		start := e.cfg.now()
		_, span := e.tracer.Start(t.ctx, semconv.SpanEngineBudget, trace.WithTimestamp(start), trace.WithAttributes(
			semconv.KeyMemoryBytes.Int64(int64(need)), semconv.KeyMemoryBudget.Int64(int64(e.cfg.budget))))
		t.budgetSpan = span
		e.budgetWaiting++
		t.waitingMemory = true
		for !stopped() && !e.fitsLocked(need, held) {
			e.cond.Wait()
			held = e.held()
		}
		t.waitingMemory = false
		e.budgetWaiting--
		end := e.cfg.now()
		t.memoryWait = end.Sub(start)
		span.End(trace.WithTimestamp(end))
	}
	if stopped() {
		return false
	}
	e.reserved += need
	t.reserved = need
	e.peak = max(e.peak, e.reserved+held)
	return true
}

// unreserve gives t's reservation back to the budget.
func (e *Engine) unreserve(t *task) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reserved -= t.reserved
	t.reserved = 0
	e.cond.Broadcast()
}

// unreserveWhenFreed gives t's reservation back once syn's buffers are
// freed (an async releaser frees them after the prove returned). The
// amount is taken from t at once, so a task sent back to the queue
// reserves afresh without its old buffers' release undoing it.
func (e *Engine) unreserveWhenFreed(t *task, syn prover.Synthesized) {
	e.mu.Lock()
	n := t.reserved
	t.reserved = 0
	e.mu.Unlock()
	if n == 0 {
		return
	}
	give := func() {
		e.mu.Lock()
		e.reserved -= n
		e.cond.Broadcast()
		e.mu.Unlock()
	}
	select {
	case <-syn.Freed():
		give()
	default:
		go func() { <-syn.Freed(); give() }()
	}
}

// awaitReady marks the engine ready once ready is closed, ending the
// engine.warmup spans of the tasks that waited for it; it returns without
// once the workers ended (Shutdown of an engine never ready).
func (e *Engine) awaitReady(ready <-chan struct{}) {
	select {
	case <-ready:
	case <-e.workersDone:
		return
	}
	e.mu.Lock()
	e.ready = true
	now := e.cfg.now()
	var spans []trace.Span
	for _, j := range e.jobs {
		for _, t := range j.tasks {
			if t.warmSpan != nil {
				spans = append(spans, t.warmSpan)
				t.warmSpan = nil
			}
		}
	}
	e.cond.Broadcast()
	e.mu.Unlock()
	for _, s := range spans {
		s.End(trace.WithTimestamp(now))
	}
}

// deviceWork is device worker i's loop. Serial engine: take the first
// queued task of the highest priority and run it whole. Pipelined: take
// the first synthesized task of the highest priority and prove it. It
// waits for readiness (WithReady) before taking work and returns once
// Shutdown began and no work is left for it.
func (e *Engine) deviceWork(i int) {
	defer e.wg.Done()
	w := e.workers[i]
	staged, _ := w.Runner.(prover.StagedRunner)
	for {
		e.mu.Lock()
		for {
			if e.ready && (e.synth == nil && e.queued > 0 || e.synth != nil && e.devQueued > 0) {
				break
			}
			if e.closing && e.queued == 0 && e.devQueued == 0 && e.synthesizing == 0 {
				e.mu.Unlock()
				return
			}
			e.cond.Wait()
		}
		var t *task
		now := e.cfg.now()
		if e.synth == nil {
			t = popLocked(&e.queues)
			e.queued--
			t.state = StateRunning
			waited := e.leftQueueLocked(t, now)
			e.mu.Unlock()
			t.queueSpan.SetAttributes(waited...)
			t.queueSpan.End(trace.WithTimestamp(now))
			if !e.startSynthesis(t, nil) {
				continue
			}
			now = t.synthStart
		} else {
			t = popLocked(&e.devQueues)
			e.devQueued--
			t.state = StateProving
			t.gpuSpan.End(trace.WithTimestamp(now))
		}
		t.proveStart = now
		t.worker = w.Name
		t.job.worker = w.Name
		runCtx, cancel := context.WithCancel(t.ctx)
		t.cancelRun = cancel
		e.proving++
		e.wstats[i].JobID = t.job.id
		e.busySince[i] = now
		t.job.refresh()
		warm := t.warmSpan
		t.warmSpan = nil
		e.mu.Unlock()
		if warm != nil {
			warm.End(trace.WithTimestamp(now))
		}
		attrSpan := t.job.span
		if t.span != nil {
			attrSpan = t.span
		}
		if len(w.Attributes) > 0 {
			attrSpan.SetAttributes(w.Attributes...)
		}

		var res *prover.Result
		var err error
		switch {
		case e.synth == nil && staged != nil:
			// Both stages here, one after the other, so the budget can
			// count the buffers until they are freed, as pipelined.
			req := t.req
			synCtx := runCtx
			if e.cfg.tuner != nil {
				// Every worker synthesizes here: the cores split over
				// those proving now and the jobs about to start.
				e.mu.Lock()
				n := e.cfg.tuner.Cores() / max(1, min(e.proving+e.queued, len(e.workers)))
				e.mu.Unlock()
				synCtx = groth16.WithSolverTasks(runCtx, max(n, 1))
			}
			var syn prover.Synthesized
			syn, err = runSafely(func() (prover.Synthesized, error) { return staged.Synthesize(synCtx, &req) })
			if err == nil && syn != nil {
				res, err = runSafely(func() (*prover.Result, error) { return syn.Prove(runCtx, staged) })
				_ = syn.Release(t.ctx)
				e.unreserveWhenFreed(t, syn)
			} else if err == nil {
				err = errors.New("runner returned no synthesized proof")
			}
			cancel()
			if abandonedOf(err) == nil {
				e.unreserve(t)
			}
		case e.synth == nil:
			req := t.req
			res, err = runSafely(func() (*prover.Result, error) { return w.Runner.Run(runCtx, &req) })
			cancel()
			if abandonedOf(err) == nil {
				e.unreserve(t)
			}
		default:
			syn := t.syn
			res, err = runSafely(func() (*prover.Result, error) { return syn.Prove(runCtx, staged) })
			cancel()
			if err == nil && e.cfg.tuner != nil {
				e.cfg.tuner.ObserveDevice(&t.req, e.cfg.now().Sub(t.proveStart))
			}
			// A runner that panicked or failed early may not have released.
			_ = syn.Release(t.ctx)
			e.unreserveWhenFreed(t, syn)
		}
		e.mu.Lock()
		e.proving--
		e.wstats[i].JobID = ""
		e.wstats[i].Busy += e.cfg.now().Sub(e.busySince[i])
		e.busySince[i] = time.Time{}
		t.cancelRun = nil
		e.cond.Broadcast()
		e.mu.Unlock()
		if err != nil && errors.Is(err, backend.ErrDeviceFault) {
			e.deviceFault(i, t, err)
			return
		}
		var a *Abandoned
		ab := abandonedOf(err)
		if ab != nil && e.synth == nil {
			a = e.abandon(t, ab, w.Name)
		}
		e.endTask(t, i, res, err)
		if a != nil {
			// This worker is not handed out until the work ends.
			e.holdAbandoned(t, a, ab)
		}
	}
}

// abandonedOf returns the work err says its runner left running
// (prover.AbandonedWork), or nil.
func abandonedOf(err error) prover.AbandonedWork {
	var ab prover.AbandonedWork
	if err != nil && errors.As(err, &ab) {
		return ab
	}
	return nil
}

// abandon records the work ab that t's runner left running, holding the
// calling worker (a device worker named worker, or a synthesis slot for
// ""): it is listed in Status.Abandoned, its engine.abandoned span starts
// under t's span (called before endTask, so the span starts inside the
// job's and outlives it), and the jobs queued for the slot it keeps are
// told (waitsForLocked). holdAbandoned waits for its end.
func (e *Engine) abandon(t *task, ab prover.AbandonedWork, worker string) *Abandoned {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.cfg.now()
	a := &Abandoned{Step: ab.AbandonedStep(), JobID: t.job.id, RequestID: t.job.req.RequestID,
		Circuit: t.job.req.Circuit, Constraints: t.job.req.Constraints, Worker: worker,
		Since: now, MemoryBytes: t.reserved}
	attrs := []attribute.KeyValue{semconv.KeyJobID.String(a.JobID), semconv.KeyAbandonedStep.String(a.Step),
		semconv.KeyAbandonedSynthesisSlot.Bool(worker == "")}
	if worker != "" {
		attrs = append(attrs, semconv.KeyAbandonedWorker.String(worker))
	}
	if a.MemoryBytes > 0 {
		attrs = append(attrs, semconv.KeyMemoryBytes.Int64(int64(a.MemoryBytes)))
	}
	_, a.span = e.tracer.Start(t.ctx, semconv.SpanEngineAbandoned, trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	if len(e.abandoned) == 0 {
		e.abandonedFrom = now
	}
	e.abandoned = append(e.abandoned, a)
	if worker == "" {
		e.abandonedSlot++
	}
	if e.queued > 0 {
		taken := e.slotsTakenLocked()
		for _, q := range e.queues {
			for el := q.Front(); el != nil; el = el.Next() {
				el.Value.(*task).waitsForLocked(a, taken, now)
			}
		}
	}
	return a
}

// holdAbandoned holds the calling worker and t's memory reservation until
// the work a (of abandon) left running ends; then it ends a's span, takes
// it off Status.Abandoned and gives the reservation back. t's job has
// ended already.
func (e *Engine) holdAbandoned(t *task, a *Abandoned, ab prover.AbandonedWork) {
	<-ab.AbandonedDone()
	e.mu.Lock()
	now := e.cfg.now()
	for k, x := range e.abandoned {
		if x == a {
			e.abandoned = append(e.abandoned[:k], e.abandoned[k+1:]...)
			break
		}
	}
	if a.Worker == "" {
		e.abandonedSlot--
	}
	if len(e.abandoned) == 0 {
		e.abandonedTotal += now.Sub(e.abandonedFrom)
		e.abandonedFrom = time.Time{}
	}
	e.mu.Unlock()
	a.span.End(trace.WithTimestamp(now))
	e.unreserve(t)
}

// abandonedClockLocked is the time since New during which abandoned work
// held a slot (Status.Abandoned not empty), up to now; the difference of
// two readings is the part of the time between them that some did. e.mu
// must be held.
func (e *Engine) abandonedClockLocked(now time.Time) time.Duration {
	d := e.abandonedTotal
	if !e.abandonedFrom.IsZero() {
		d += now.Sub(e.abandonedFrom)
	}
	return d
}

// slotsTakenLocked reports whether a job queued now waits for a slot: in
// a pipelined engine every synthesis slot is taken (or the tuner allows no
// more of the first queued job's circuit), in a serial one every healthy
// device worker proves or is held by abandoned work. e.mu must be held.
func (e *Engine) slotsTakenLocked() bool {
	if e.synth != nil {
		return e.synthesizing >= e.cfg.synthesisWorkers || !e.tunerAllowsLocked()
	}
	return e.proving+len(e.abandoned) >= e.healthy
}

// queuedLocked notes, as t enters the queue at now (its queueSpan
// started, pushed on its queue), how much abandoned work has held slots so
// far, and the abandoned work holding slots now (waitsForLocked). e.mu
// must be held.
func (e *Engine) queuedLocked(t *task, now time.Time) {
	t.abandonedMark = e.abandonedClockLocked(now)
	t.waitedFor = nil
	if len(e.abandoned) == 0 {
		return
	}
	taken := e.slotsTakenLocked()
	for _, a := range e.abandoned {
		t.waitsForLocked(a, taken, now)
	}
}

// waitsForLocked notes that t is queued while the abandoned work a holds
// a slot (the first such work is the one its queueSpan's attributes name)
// and, when every slot is taken, that t waits for it from now: an
// EventWaitingForAbandoned on its queueSpan. e.mu must be held.
func (t *task) waitsForLocked(a *Abandoned, taken bool, now time.Time) {
	if t.waitedFor == nil {
		t.waitedFor = a
	}
	if taken {
		t.queueSpan.AddEvent(semconv.EventWaitingForAbandoned, trace.WithTimestamp(now), trace.WithAttributes(
			semconv.KeyAbandonedJobID.String(a.JobID), semconv.KeyAbandonedStep.String(a.Step)))
	}
}

// leftQueueLocked returns the attributes t's queueSpan gets as t leaves
// the queue at now: how long of its wait abandoned work held a slot and
// which (KeyAbandonedWaitMS, KeyAbandonedJobID, KeyAbandonedStep), or nil
// when none did. e.mu must be held.
func (e *Engine) leftQueueLocked(t *task, now time.Time) []attribute.KeyValue {
	d := e.abandonedClockLocked(now) - t.abandonedMark
	if d <= 0 {
		return nil
	}
	attrs := []attribute.KeyValue{semconv.KeyAbandonedWaitMS.Float64(human.Milliseconds(d))}
	if a := t.waitedFor; a != nil {
		attrs = append(attrs, semconv.KeyAbandonedJobID.String(a.JobID), semconv.KeyAbandonedStep.String(a.Step))
	}
	return attrs
}

// deviceFault takes worker i out of service after its runner reported a
// device fault on task t: t goes back to the head of its priority's queue
// (to be synthesized again on a pipelined engine: the prove consumed its
// buffers) for another worker; when no healthy worker is left, t and every
// job still waiting fail with ErrNoWorker.
func (e *Engine) deviceFault(i int, t *task, err error) {
	w := e.workers[i].Name
	now := e.cfg.now()
	e.mu.Lock()
	e.wstats[i].Healthy = false
	e.wstats[i].Fault = err.Error()
	e.healthy--
	j := t.job
	var acts []action
	requeue := e.healthy > 0 && !j.cancelled && j.failed == nil && !e.closing
	if requeue {
		t.state, t.syn, t.worker = StateQueued, nil, ""
		t.synthStart, t.synthEnd, t.proveStart = time.Time{}, time.Time{}, time.Time{}
		_, t.queueSpan = e.tracer.Start(t.ctx, semconv.SpanEngineQueue, trace.WithTimestamp(now), trace.WithAttributes(
			semconv.KeyQueueDepth.Int(e.queued), semconv.KeyRequeuedFrom.String(w)))
		t.elem = e.queues[slot(j.req.Priority)].PushFront(t)
		e.queued++
		e.queuedLocked(t, now)
		j.refresh()
	} else if e.healthy == 0 {
		cause := fmt.Errorf("%w: the last one, %s, faulted: %v", ErrNoWorker, w, err)
		for _, other := range e.jobs {
			if other != j && !other.state.Finished() && other.failed == nil && !other.cancelled {
				other.failed = fmt.Errorf("job %s: %w", other.id, cause)
				other.failedIndex = -1
				acts = append(acts, e.stopTasksLocked(other, other.failed)...)
			}
		}
		err = cause
	}
	e.cond.Broadcast()
	e.mu.Unlock()
	span := t.job.span
	if t.span != nil {
		span = t.span
	}
	span.AddEvent("device fault", trace.WithTimestamp(now), trace.WithAttributes(
		semconv.KeyRequeuedFrom.String(w), semconv.KeyErrorType.String(semconv.ErrorTypeDeviceFault)))
	if e.cfg.onFault != nil {
		e.cfg.onFault(w, err)
	}
	if !requeue {
		e.endTask(t, i, nil, err)
	}
	e.run(acts)
}

// endTask records how task t ended (worker is the device worker's index,
// or -1) and finishes its job when it was the last. A cancelled job's
// tasks end Cancelled whatever their runner returned; the first failure of
// a task fails the job and stops its other tasks.
func (e *Engine) endTask(t *task, worker int, res *prover.Result, err error) {
	now := e.cfg.now()
	e.mu.Lock()
	j := t.job
	state := StateSucceeded
	var acts []action
	switch {
	case j.cancelled:
		state, res, err = StateCancelled, nil, j.cause
	case j.failed != nil:
		// Stopped because another partition failed.
		state, res, err = StateCancelled, nil, fmt.Errorf("%w: partition %d failed", ErrCancelled, firstFailed(j))
	case err != nil:
		state, res = StateFailed, nil
	case res == nil:
		state, err = StateFailed, errors.New("runner returned no result")
	}
	if state == StateFailed {
		if t.index >= 0 {
			j.failed = fmt.Errorf("job %s: partition %d: %w", j.id, t.index, err)
		} else {
			j.failed = fmt.Errorf("job %s: %w", j.id, err)
		}
		j.failedIndex = t.index
		acts = e.stopTasksLocked(j, j.failed)
	}
	if res != nil {
		res.Timings.QueueWait = t.synthStart.Sub(t.queued) - t.memoryWait
		res.Timings.MemoryWait = t.memoryWait
		if e.synth != nil {
			res.Timings.DeviceWait = t.proveStart.Sub(t.synthEnd)
		}
		res.Timings.Total = now.Sub(t.queued)
		res.TraceID = j.traceID
	}
	t.ended, t.state, t.result, t.err = true, state, res, err
	t.syn = nil // the witness and circuit it refers to need not outlive the job's proof
	if worker >= 0 {
		switch state {
		case StateSucceeded:
			e.wstats[worker].Succeeded++
		case StateFailed:
			e.wstats[worker].Failed++
		case StateCancelled:
			e.wstats[worker].Cancelled++
		}
	}
	j.pending--
	last := j.pending == 0
	spans := []trace.Span{t.queueSpan, t.gpuSpan, t.warmSpan}
	t.warmSpan = nil
	var waited []attribute.KeyValue
	if t.queueSpan != nil && t.queueSpan.IsRecording() {
		waited = e.leftQueueLocked(t, now) // cancelled in the queue
	}
	stoppedIn := ""
	if state == StateCancelled && t.stopped {
		stoppedIn = t.stoppedIn.String()
	}
	j.refresh()
	e.mu.Unlock()
	if len(waited) > 0 {
		t.queueSpan.SetAttributes(waited...)
	}
	for _, s := range spans {
		if s != nil && s.IsRecording() {
			s.End(trace.WithTimestamp(now))
		}
	}
	if stoppedIn != "" {
		// Where the cancel found it: it stopped there once the step
		// running then returned, and ran nothing after it.
		span := j.span
		if t.span != nil {
			span = t.span
		}
		span.AddEvent("cancelled", trace.WithTimestamp(now), trace.WithAttributes(semconv.KeyJobState.String(stoppedIn)))
	}
	if t.span != nil {
		if err != nil {
			semconv.SetError(t.span, err)
		}
		t.span.End(trace.WithTimestamp(now))
	}
	e.run(acts)
	if last {
		e.finishJob(j, now)
	}
}

func firstFailed(j *job) int { return j.failedIndex }

// finishJob ends job j once every task ended: its result (the partitions'
// merged), error, span, counters and waiters.
func (e *Engine) finishJob(j *job, now time.Time) {
	e.mu.Lock()
	var res *prover.Result
	var err error
	state := StateSucceeded
	switch {
	case j.failed != nil:
		state, err = StateFailed, j.failed
	case j.cancelled:
		state, err = StateCancelled, j.cause
	default:
		res = merge(j, now)
	}
	e.mu.Unlock()

	if res != nil {
		if res.Backend != "" {
			j.span.SetAttributes(semconv.KeyBackend.String(res.Backend))
		}
		if j.req.Verify {
			j.span.SetAttributes(semconv.KeyProofVerified.Bool(res.Verified))
		}
	}
	if err != nil {
		semconv.SetError(j.span, err)
	}
	j.span.End(trace.WithTimestamp(now))

	e.mu.Lock()
	j.state, j.result, j.err, j.finished = state, res, err, now
	delete(e.running, j.id)
	switch state {
	case StateSucceeded:
		e.succeeded++
	case StateFailed:
		e.failed++
	case StateCancelled:
		e.cancelled++
	}
	e.keep(j, now)
	info := j.info()
	rec := e.record(j)
	e.mu.Unlock()
	e.journalPut(rec)
	if e.cfg.onFinish != nil {
		e.cfg.onFinish(info)
	}
	close(j.done)
}

// merge is the Result of a succeeded job; e.mu must be held. One task: its
// result. Several: partition 0's proof on top, every partition's in
// Partitions, the step timings summed, the queue wait the first
// partition's and Total the job's.
func merge(j *job, now time.Time) *prover.Result {
	if len(j.tasks) == 1 {
		return j.tasks[0].result
	}
	first := j.tasks[0].result
	res := &prover.Result{
		Proof: first.Proof, PublicWitness: first.PublicWitness, Verified: true,
		TraceID: j.traceID, Backend: first.Backend,
	}
	for _, t := range j.tasks {
		r := t.result
		res.Partitions = append(res.Partitions, *r)
		res.Verified = res.Verified && r.Verified
		res.Timings.KeyLoad += r.Timings.KeyLoad
		res.Timings.Synthesis += r.Timings.Synthesis
		res.Timings.Prove += r.Timings.Prove
		res.Timings.Serialize += r.Timings.Serialize
		res.Timings.Verify += r.Timings.Verify
		res.Timings.MemoryWait += r.Timings.MemoryWait
		res.Timings.DeviceWait += r.Timings.DeviceWait
	}
	res.Timings.QueueWait = first.Timings.QueueWait
	res.Timings.Total = now.Sub(j.submitted)
	return res
}
