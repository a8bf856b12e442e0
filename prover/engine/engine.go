package engine

import (
	"bytes"
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"
)

// NumPriorities is the number of priorities (LOW..CRITICAL); Status.Queued
// is indexed by prover.Priority.
const NumPriorities = int(prover.PriorityCritical) + 1

// Worker is one slot that runs proofs: one per GPU (its Runner bound to the
// device) and any number on the CPU.
type Worker struct {
	// Name identifies the worker in Status and JobInfo ("cuda:0", "cpu:1").
	Name string
	// Runner makes the proofs of this worker, one at a time.
	Runner prover.Runner
	// Attributes are set on the engine.job span of every job this worker
	// runs (for a GPU worker: cuda.device.ordinal).
	Attributes []attribute.KeyValue
}

// WorkerStatus is a snapshot of one worker.
type WorkerStatus struct {
	Name string
	// JobID is the job it runs now, "" when idle.
	JobID string
	// Succeeded, Failed and Cancelled count the jobs it ended.
	Succeeded, Failed, Cancelled uint64
}

// Status is a snapshot of the engine.
type Status struct {
	// Queued is the number of queued jobs per priority, indexed by
	// prover.Priority.
	Queued [NumPriorities]int
	// QueueCapacity is the bound set by WithQueueSize.
	QueueCapacity int
	// Running are the jobs being proved, in no particular order.
	Running []JobInfo
	Workers []WorkerStatus
	// Succeeded, Failed and Cancelled count jobs ended since New.
	Succeeded, Failed, Cancelled uint64
	// Started is when New returned; Uptime is the time since.
	Started time.Time
	Uptime  time.Duration
	// Closing is set once Shutdown began.
	Closing bool
}

// QueueDepth is the number of queued jobs over all priorities.
func (s Status) QueueDepth() int {
	n := 0
	for _, q := range s.Queued {
		n += q
	}
	return n
}

// Engine queues proof requests and runs them on its workers. All methods
// are safe for concurrent use.
type Engine struct {
	cfg     config
	tracer  trace.Tracer
	workers []Worker
	started time.Time
	prefix  string

	wg          sync.WaitGroup
	workersDone chan struct{}

	mu        sync.Mutex
	cond      *sync.Cond // signalled on enqueue and on Shutdown
	queues    [NumPriorities]*list.List
	queued    int
	jobs      map[string]*job // by job id, queued, running and kept
	byRequest map[string]*job
	finished  *list.List // finished jobs kept for Await, oldest first
	running   map[string]*job
	wstats    []WorkerStatus
	closing   bool
	seq       uint64
	succeeded uint64
	failed    uint64
	cancelled uint64
}

// New starts an engine with one goroutine per worker. It returns an error
// for an empty worker list, a worker without a Runner, or two workers with
// the same name. Call Shutdown to stop it.
func New(workers []Worker, opts ...Option) (*Engine, error) {
	if len(workers) == 0 {
		return nil, errors.New("engine: no workers")
	}
	names := map[string]bool{}
	for i, w := range workers {
		if w.Runner == nil {
			return nil, fmt.Errorf("engine: worker %d (%q) has no runner", i, w.Name)
		}
		if w.Name == "" {
			workers[i].Name = fmt.Sprintf("worker:%d", i)
		}
		if names[workers[i].Name] {
			return nil, fmt.Errorf("engine: two workers named %q", w.Name)
		}
		names[workers[i].Name] = true
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	e := &Engine{
		cfg:         newConfig(opts),
		workers:     append([]Worker(nil), workers...),
		prefix:      hex.EncodeToString(b[:]),
		workersDone: make(chan struct{}),
		jobs:        map[string]*job{},
		byRequest:   map[string]*job{},
		finished:    list.New(),
		running:     map[string]*job{},
		wstats:      make([]WorkerStatus, len(workers)),
	}
	e.tracer = e.cfg.tp.Tracer(otelcuzk.ScopeName)
	e.started = e.cfg.now()
	e.cond = sync.NewCond(&e.mu)
	for p := range e.queues {
		e.queues[p] = list.New()
	}
	for i := range e.workers {
		e.wstats[i].Name = e.workers[i].Name
		e.wg.Add(1)
		go e.work(i)
	}
	go func() { e.wg.Wait(); close(e.workersDone) }()
	return e, nil
}

// Submit queues req and returns its job without waiting for it. The span
// in ctx (the gRPC server span in the daemon) becomes the parent of the
// job's engine.job span; ctx's cancellation does not cancel the job.
//
// If a job with req.RequestID exists (queued, running, or finished and
// still kept), Submit returns that job with Existing set and queues
// nothing, whatever the rest of req says. Errors: ErrEmptyRequestID,
// ErrInvalidRequest (nil request, unknown priority, the validator's
// verdict), ErrQueueFull, ErrClosed.
func (e *Engine) Submit(ctx context.Context, req *prover.Request) (JobInfo, error) {
	if req == nil {
		return JobInfo{}, fmt.Errorf("%w: nil request", ErrInvalidRequest)
	}
	if req.RequestID == "" {
		return JobInfo{}, ErrEmptyRequestID
	}
	if req.Priority < prover.PriorityLow || req.Priority > prover.PriorityCritical {
		return JobInfo{}, fmt.Errorf("%w: unknown priority %d", ErrInvalidRequest, int(req.Priority))
	}
	if info, ok, err := e.existing(req); ok {
		return info, err
	}
	// Validation may parse a witness: done outside the lock, then the
	// checks above are repeated under it.
	if e.cfg.validate != nil {
		if err := e.cfg.validate(req); err != nil {
			return JobInfo{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.cfg.now()
	e.prune(now)
	if j, ok := e.byRequest[req.RequestID]; ok {
		info := j.info()
		info.Existing = true
		return info, sameProof(&j.req, req)
	}
	if e.closing {
		return JobInfo{}, ErrClosed
	}
	if e.queued >= e.cfg.queueSize {
		return JobInfo{}, fmt.Errorf("%w (%d jobs queued)", ErrQueueFull, e.queued)
	}

	e.seq++
	j := &job{
		id:        fmt.Sprintf("job-%s-%d", e.prefix, e.seq),
		req:       *req,
		done:      make(chan struct{}),
		state:     StateQueued,
		submitted: now,
	}
	ahead := 0
	for p := req.Priority; p <= prover.PriorityCritical; p++ {
		ahead += e.queues[p].Len()
	}
	attrs := []attribute.KeyValue{
		otelcuzk.KeyRequestID.String(req.RequestID),
		otelcuzk.KeyJobID.String(j.id),
		otelcuzk.KeyCircuitID.String(req.Circuit),
		otelcuzk.KeyCircuitConstraints.Int(req.Constraints),
		otelcuzk.KeyPriority.String(req.Priority.String()),
		otelcuzk.KeyQueueDepth.Int(ahead),
	}
	attrs = append(attrs, correlationAttrs(req.Correlation)...)
	jobCtx, span := e.tracer.Start(ctx, otelcuzk.SpanEngineJob,
		trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	_, j.queueSpan = e.tracer.Start(jobCtx, otelcuzk.SpanEngineQueue,
		trace.WithTimestamp(now), trace.WithAttributes(otelcuzk.KeyQueueDepth.Int(ahead)))
	j.span = span
	j.traceID = span.SpanContext().TraceID().String()
	if !span.SpanContext().TraceID().IsValid() {
		j.traceID = ""
	}

	j.elem = e.queues[req.Priority].PushBack(j)
	e.queued++
	e.jobs[j.id] = j
	e.byRequest[req.RequestID] = j
	e.cond.Signal()
	return j.info(), nil
}

// correlationAttrs returns the caller's ids as attributes, leaving out the
// ones the caller did not set (zero values).
func correlationAttrs(c prover.Correlation) []attribute.KeyValue {
	var a []attribute.KeyValue
	if c.MinerID != "" {
		a = append(a, otelcuzk.KeyMinerID.String(c.MinerID))
	}
	// Sector 0 exists, so a sector is recorded whenever a miner is named.
	if c.SectorNumber != 0 || c.MinerID != "" {
		a = append(a, otelcuzk.KeySectorNumber.Int64(c.SectorNumber))
	}
	if c.TaskID != 0 {
		a = append(a, otelcuzk.KeyTaskID.Int64(c.TaskID))
	}
	if c.TaskName != "" {
		a = append(a, otelcuzk.KeyTaskName.String(c.TaskName))
	}
	return a
}

func (e *Engine) existing(req *prover.Request) (JobInfo, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.prune(e.cfg.now())
	j, ok := e.byRequest[req.RequestID]
	if !ok {
		return JobInfo{}, false, nil
	}
	info := j.info()
	info.Existing = true
	return info, true, sameProof(&j.req, req)
}

// sameProof is nil when req asks for the proof that job (a request with the
// same id) asks for: same circuit, size and witness. Priority, correlation
// fields and Verify may differ (a retry at a higher priority is the same
// proof).
func sameProof(job, req *prover.Request) error {
	if job.Circuit != req.Circuit || job.Constraints != req.Constraints || !bytes.Equal(job.Witness, req.Witness) {
		return fmt.Errorf("%w: %q is %s with %d constraints (witness of %d bytes), not %s with %d (%d bytes)",
			ErrRequestConflict, req.RequestID, job.Circuit, job.Constraints, len(job.Witness),
			req.Circuit, req.Constraints, len(req.Witness))
	}
	return nil
}

// Await waits until the job ends or ctx is done. It returns the job's
// snapshot and, for a job that did not succeed, its error (wrapping
// ErrCancelled for a cancelled job). When ctx ends first it returns the
// current snapshot and ctx's error, and the job goes on. ErrUnknownJob if
// the engine does not know (or no longer keeps) id.
func (e *Engine) Await(ctx context.Context, id string) (JobInfo, error) {
	e.mu.Lock()
	j, ok := e.jobs[id]
	e.mu.Unlock()
	if !ok {
		return JobInfo{}, fmt.Errorf("%w: %q", ErrUnknownJob, id)
	}
	select {
	case <-j.done:
	case <-ctx.Done():
		return e.Job(id), fmt.Errorf("engine: await job %s: %w", id, ctx.Err())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return j.info(), j.err
}

// Prove submits req and awaits its job: Submit's errors, then Await's.
func (e *Engine) Prove(ctx context.Context, req *prover.Request) (JobInfo, error) {
	info, err := e.Submit(ctx, req)
	if err != nil {
		return info, err
	}
	return e.Await(ctx, info.ID)
}

// Job returns a snapshot of job id; its ID is "" if the engine does not
// know it.
func (e *Engine) Job(id string) JobInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j, ok := e.jobs[id]; ok {
		return j.info()
	}
	return JobInfo{}
}

// JobByRequest returns the job made for a request id, if the engine still
// keeps it.
func (e *Engine) JobByRequest(requestID string) (JobInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.prune(e.cfg.now())
	if j, ok := e.byRequest[requestID]; ok {
		return j.info(), true
	}
	return JobInfo{}, false
}

// Cancel cancels job id: a queued job is removed from the queue and ends
// Cancelled at once; a running job has its context cancelled and ends
// Cancelled when its Runner returns (whatever the Runner returns). Errors:
// ErrUnknownJob, ErrJobFinished.
func (e *Engine) Cancel(id string) error {
	e.mu.Lock()
	j, ok := e.jobs[id]
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrUnknownJob, id)
	}
	switch j.state {
	case StateQueued:
		e.dequeue(j)
		e.mu.Unlock()
		e.endQueued(j, ErrCancelled)
		return nil
	case StateRunning:
		if !j.cancelled {
			j.cancelled = true
			j.cancelCause = ErrCancelled
			j.cancelRun()
		}
		e.mu.Unlock()
		return nil
	}
	e.mu.Unlock()
	return fmt.Errorf("%w: %s is %s", ErrJobFinished, id, j.state)
}

// Status returns a snapshot of queues, running jobs, workers and totals.
func (e *Engine) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.cfg.now()
	s := Status{
		QueueCapacity: e.cfg.queueSize,
		Workers:       append([]WorkerStatus(nil), e.wstats...),
		Succeeded:     e.succeeded,
		Failed:        e.failed,
		Cancelled:     e.cancelled,
		Started:       e.started,
		Uptime:        now.Sub(e.started),
		Closing:       e.closing,
	}
	for p, q := range e.queues {
		s.Queued[p] = q.Len()
	}
	for _, j := range e.running {
		s.Running = append(s.Running, j.info())
	}
	return s
}

// Workers returns the names of the workers, in the order given to New.
func (e *Engine) Workers() []string {
	n := make([]string, len(e.workers))
	for i, w := range e.workers {
		n[i] = w.Name
	}
	return n
}

// Shutdown stops the engine: Submit refuses new work with ErrClosed at
// once, queued jobs end Cancelled (their error wraps ErrCancelled and
// ErrClosed), and running jobs may finish until ctx is done; then they are
// cancelled and Shutdown waits up to the cancel grace (WithCancelGrace) for
// their Runners to return. It returns nil when every running job finished
// in time, else an error wrapping ctx's error. Safe to call more than once.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	var dropped []*job
	if !e.closing {
		e.closing = true
		for p := len(e.queues) - 1; p >= 0; p-- {
			for el := e.queues[p].Front(); el != nil; el = el.Next() {
				dropped = append(dropped, el.Value.(*job))
			}
		}
		for _, j := range dropped {
			e.dequeue(j)
		}
		e.cond.Broadcast()
	}
	e.mu.Unlock()
	for _, j := range dropped {
		e.endQueued(j, fmt.Errorf("%w: %w", ErrCancelled, ErrClosed))
	}

	select {
	case <-e.workersDone:
		return nil
	case <-ctx.Done():
	}
	e.mu.Lock()
	n := len(e.running)
	for _, j := range e.running {
		if !j.cancelled {
			j.cancelled = true
			j.cancelCause = fmt.Errorf("%w: %w", ErrCancelled, ErrClosed)
			j.cancelRun()
		}
	}
	e.mu.Unlock()
	t := time.NewTimer(e.cfg.cancelGrace)
	defer t.Stop()
	select {
	case <-e.workersDone:
		return fmt.Errorf("engine: shutdown: cancelled %d running jobs: %w", n, ctx.Err())
	case <-t.C:
		// The runners that ignore their context are left behind, but their
		// jobs' engine.job spans end now, with the reason, so the traces
		// the process flushes on its way out keep their roots.
		e.mu.Lock()
		stuck := make([]*job, 0, len(e.running))
		for _, j := range e.running {
			stuck = append(stuck, j)
		}
		e.mu.Unlock()
		now := e.cfg.now()
		for _, j := range stuck {
			recordError(j.span, fmt.Errorf("%w: %w: abandoned at shutdown, its runner did not return within %v",
				ErrCancelled, ErrClosed, e.cfg.cancelGrace))
			j.span.End(trace.WithTimestamp(now))
		}
		return fmt.Errorf("engine: shutdown: workers still running %v after cancelling %d jobs: %w",
			e.cfg.cancelGrace, n, ctx.Err())
	}
}

// dequeue removes a queued job from its queue; e.mu must be held.
func (e *Engine) dequeue(j *job) {
	e.queues[j.req.Priority].Remove(j.elem)
	j.elem = nil
	e.queued--
	j.state = StateCancelled // so no worker or Cancel takes it meanwhile
}

// endQueued finishes a job that never ran, with err.
func (e *Engine) endQueued(j *job, err error) {
	now := e.cfg.now()
	j.queueSpan.End(trace.WithTimestamp(now))
	recordError(j.span, err)
	j.span.End(trace.WithTimestamp(now))
	e.mu.Lock()
	j.err = err
	j.finished = now
	e.cancelled++
	e.keep(j, now)
	info := j.info()
	e.mu.Unlock()
	if e.cfg.onFinish != nil {
		e.cfg.onFinish(info)
	}
	close(j.done)
}

func recordError(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(otelcuzk.KeyErrorType.String(errorType(err)))
}

// keep moves a finished job to the kept results; e.mu must be held.
func (e *Engine) keep(j *job, now time.Time) {
	j.finElem = e.finished.PushBack(j)
	e.prune(now)
}

// prune forgets finished jobs beyond the count bound or older than the
// TTL, and their request ids; e.mu must be held.
func (e *Engine) prune(now time.Time) {
	for el := e.finished.Front(); el != nil; el = e.finished.Front() {
		j := el.Value.(*job)
		if e.finished.Len() <= e.cfg.maxResults && now.Sub(j.finished) < e.cfg.resultTTL {
			return
		}
		e.finished.Remove(el)
		delete(e.jobs, j.id)
		if e.byRequest[j.req.RequestID] == j {
			delete(e.byRequest, j.req.RequestID)
		}
	}
}

// work is worker i's loop: take the first job of the highest non-empty
// priority, run it, record the outcome; return once Shutdown began.
func (e *Engine) work(i int) {
	defer e.wg.Done()
	w := e.workers[i]
	for {
		e.mu.Lock()
		for e.queued == 0 && !e.closing {
			e.cond.Wait()
		}
		if e.closing {
			e.mu.Unlock()
			return
		}
		var j *job
		for p := len(e.queues) - 1; p >= 0; p-- {
			if el := e.queues[p].Front(); el != nil {
				j = el.Value.(*job)
				break
			}
		}
		e.queues[j.req.Priority].Remove(j.elem)
		j.elem = nil
		e.queued--
		now := e.cfg.now()
		j.state = StateRunning
		j.worker = w.Name
		j.started = now
		runCtx, cancel := context.WithCancel(trace.ContextWithSpan(context.Background(), j.span))
		j.cancelRun = cancel
		e.running[j.id] = j
		e.wstats[i].JobID = j.id
		e.mu.Unlock()

		j.queueSpan.End(trace.WithTimestamp(now))
		if len(w.Attributes) > 0 {
			j.span.SetAttributes(w.Attributes...)
		}
		req := j.req
		res, err := runSafely(runCtx, w.Runner, &req)
		cancel()
		e.finish(i, j, res, err)
	}
}

// runSafely calls r.Run and turns a panic into an error, so one bad proof
// does not take the daemon down.
func runSafely(ctx context.Context, r prover.Runner, req *prover.Request) (res *prover.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("engine: runner panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return r.Run(ctx, req)
}

func (e *Engine) finish(i int, j *job, res *prover.Result, err error) {
	now := e.cfg.now()
	e.mu.Lock()
	cancelled, cause := j.cancelled, j.cancelCause
	e.mu.Unlock()

	state := StateSucceeded
	switch {
	case cancelled:
		state, res, err = StateCancelled, nil, cause
	case err != nil:
		state, res = StateFailed, nil
		err = fmt.Errorf("engine: job %s: %w", j.id, err)
	case res == nil:
		state, err = StateFailed, fmt.Errorf("engine: job %s: runner returned no result", j.id)
	default:
		res.Timings.QueueWait = j.started.Sub(j.submitted)
		res.Timings.Total = now.Sub(j.submitted)
		res.TraceID = j.traceID
		if res.Backend != "" {
			j.span.SetAttributes(otelcuzk.KeyBackend.String(res.Backend))
		}
		if j.req.Verify {
			j.span.SetAttributes(otelcuzk.KeyProofVerified.Bool(res.Verified))
		}
	}
	if err != nil {
		recordError(j.span, err)
	}
	j.span.End(trace.WithTimestamp(now))

	e.mu.Lock()
	j.state, j.result, j.err, j.finished = state, res, err, now
	j.cancelRun = nil
	delete(e.running, j.id)
	e.wstats[i].JobID = ""
	switch state {
	case StateSucceeded:
		e.succeeded++
		e.wstats[i].Succeeded++
	case StateFailed:
		e.failed++
		e.wstats[i].Failed++
	case StateCancelled:
		e.cancelled++
		e.wstats[i].Cancelled++
	}
	e.keep(j, now)
	info := j.info()
	e.mu.Unlock()
	if e.cfg.onFinish != nil {
		e.cfg.onFinish(info)
	}
	close(j.done)
}
