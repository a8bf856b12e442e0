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
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// levels is the number of priorities; the engine's queues of one stage
// are an array indexed by slot.
const levels = int(priority.Critical-priority.Low) + 1

// slot is p's index in an array of queues: 0 for Low up to levels-1 for
// Critical, so a walk down the indices serves the highest first.
func slot(p priority.Priority) int { return int(p - priority.Low) }

// Worker is one device slot that proves: one per GPU (its Runner bound to
// the device) and any number on the CPU. In a pipelined engine its Runner
// must be a prover.StagedRunner, and the worker runs only the device stage.
type Worker struct {
	// Name identifies the worker in Status and JobInfo ("cuda:0", "cpu:1").
	Name string
	// Runner makes the proofs of this worker, one at a time.
	Runner prover.Runner
	// Attributes are set on the engine.job span (engine.partition for a
	// partition) of every job this worker proves (for a GPU worker:
	// cuda.device.ordinal).
	Attributes []attribute.KeyValue
}

// WorkerStatus is a snapshot of one device worker.
type WorkerStatus struct {
	Name string
	// JobID is the job it proves now, "" when idle.
	JobID string
	// Succeeded, Failed and Cancelled count the proofs (partitions) it
	// ended.
	Succeeded, Failed, Cancelled uint64
	// Busy is the time it spent proving (Run in a serial engine,
	// Synthesized.Prove in a pipelined one) since New, the current proof
	// included.
	Busy time.Duration
	// Healthy is false once its runner reported a device fault
	// (backend.ErrDeviceFault); Fault is that error. An unhealthy worker
	// takes no more work.
	Healthy bool
	Fault   string
}

// Status is a snapshot of the engine. Counts of waiting and working count
// partitions (a one-witness job is one).
type Status struct {
	// Queued is the number of partitions waiting for a synthesis slot (in
	// a serial engine: for a worker), per priority; every priority has an
	// entry.
	Queued map[priority.Priority]int
	// QueueCapacity is the bound set by WithQueueSize: of the partitions
	// Queued, WaitingMemory and WaitingDevice together.
	QueueCapacity int
	// WaitingMemory is the number of partitions holding a synthesis slot
	// and waiting for the memory budget; Synthesizing those being
	// synthesized (WaitingMemory not included).
	WaitingMemory, Synthesizing int
	// WaitingDevice is the number of synthesized partitions waiting for a
	// device worker, per priority; every priority has an entry.
	WaitingDevice map[priority.Priority]int
	// Proving is the number of partitions on a device worker.
	Proving int
	// SynthesisWorkers is the number of synthesis slots; 0 for a serial
	// engine. With a tuner, the most; Tuning says how many each circuit
	// and size gets.
	SynthesisWorkers int
	// Tuning is the tuner's choice per circuit and size seen (WithTuner),
	// nil without a tuner.
	Tuning []Tuning
	// Running are the jobs past the queue and not ended, in no particular
	// order.
	Running []JobInfo
	// Waiting are the jobs not started yet (StateQueued), in the order the
	// engine takes them up: first those holding a synthesis slot while
	// they wait for the memory budget (MemoryWait), oldest first, then the
	// queue's, highest priority first and in submission order within one.
	Waiting []WaitingJob
	Workers []WorkerStatus
	// MemoryBudget is the budget of WithMemoryBudget in bytes (0: none);
	// MemoryReserved the estimates of the partitions in flight (counted
	// until their buffers are freed), MemoryHeld what the held function
	// reports now (proving keys), MemoryPeak the largest MemoryReserved +
	// MemoryHeld seen at an admission.
	MemoryBudget, MemoryReserved, MemoryHeld, MemoryPeak uint64
	// ReleaseMode is how the runners free their large host buffers (the
	// first Releaser's mode of WithReleasers; "" without). In pool mode
	// (buffer.ReleasePool) PoolLimit is the bytes all their pools may keep
	// and PoolHeld the bytes of the idle buffers they keep now for reuse,
	// both outside the memory budget; in other modes both are 0.
	ReleaseMode         buffer.ReleaseMode
	PoolLimit, PoolHeld uint64
	// Ready is false until the channel of WithReady is closed.
	Ready bool
	// Succeeded, Failed and Cancelled count jobs ended since New.
	Succeeded, Failed, Cancelled uint64
	// Started is when New returned; Uptime is the time since.
	Started time.Time
	Uptime  time.Duration
	// Closing is set once Shutdown began.
	Closing bool
	// Abandoned is the work cancelled jobs' runners left running (a key
	// setup or compile that cannot stop), each holding its worker and its
	// job's memory reservation until it ends; oldest first.
	Abandoned []Abandoned
	// JournalErrors counts the journal writes (WithJournal) that failed,
	// JournalError is the last one's error ("" when none).
	JournalErrors uint64
	JournalError  string
}

// Abandoned is work a cancelled (or timed-out) job's runner left running:
// a key setup or circuit compile that gnark cannot stop (the runner's error
// implements prover.AbandonedWork). The job has ended, but until the work
// ends it holds the job's worker (its device worker in a serial engine, its
// synthesis slot in a pipelined one: not handed to another job) and the
// job's memory reservation in the budget.
type Abandoned struct {
	// Step is the work left running: "keys.setup" or "circuit.compile".
	Step string
	// JobID, RequestID, Circuit and Constraints are of the job that
	// started it.
	JobID, RequestID, Circuit string
	Constraints               int
	// Worker is the device worker held ("" for a synthesis slot).
	Worker string
	// Since is when the job's runner returned, leaving the work running.
	Since time.Time
	// MemoryBytes is what it keeps reserved in the budget (0 without one).
	MemoryBytes uint64

	span trace.Span // engine.abandoned, under the job's span
}

// WaitingJob is a job of Status.Waiting.
type WaitingJob struct {
	JobInfo
	// MemoryWait is set while it holds a synthesis slot and waits for the
	// memory budget (an engine.budget span); otherwise it is in the queue.
	MemoryWait bool
}

// QueueDepth is the number of partitions waiting for a synthesis slot (or
// a worker) over all priorities.
func (s Status) QueueDepth() int {
	n := 0
	for _, q := range s.Queued {
		n += q
	}
	return n
}

// DeviceQueueDepth is the number of synthesized partitions waiting for a
// device over all priorities.
func (s Status) DeviceQueueDepth() int {
	n := 0
	for _, q := range s.WaitingDevice {
		n += q
	}
	return n
}

// Engine queues proof requests and runs them through its stages. All
// methods are safe for concurrent use.
//
// Serial (the default): a worker takes the first queued job of the highest
// priority and runs it whole (Runner.Run). Pipelined
// (WithSynthesisWorkers n > 0): n synthesis workers take queued jobs by
// priority, wait for the memory budget, and synthesize them on the CPU
// (prover.StagedRunner.Synthesize); the synthesized jobs wait, by priority
// again, for a device worker, which proves them on its device
// (prover.Synthesized.Prove). So the
// next jobs are synthesized while a device proves.
type Engine struct {
	cfg     config
	tracer  trace.Tracer
	workers []Worker
	synth   prover.StagedRunner // nil: serial
	started time.Time
	prefix  string

	wg          sync.WaitGroup
	workersDone chan struct{}

	mu            sync.Mutex
	cond          *sync.Cond         // broadcast on every change a waiter may need
	queues        [levels]*list.List // by slot
	queued        int
	devQueues     [levels]*list.List // by slot
	devQueued     int
	synthesizing  int // tasks held by synthesis workers (budget wait included)
	budgetWaiting int
	proving       int
	jobs          map[string]*job // by job id, queued, running and kept
	byRequest     map[string]*job
	finished      *list.List // finished jobs kept for Await, oldest first
	running       map[string]*job
	wstats        []WorkerStatus
	busySince     []time.Time // when worker i began its current proof
	closing       bool
	ready         bool
	healthy       int // device workers not faulted
	reserved      uint64
	peak          uint64
	abandoned     []*Abandoned // work left running by cancelled jobs' runners, oldest first
	abandonedSlot int          // of abandoned, those holding a synthesis slot
	seq           uint64
	succeeded     uint64
	failed        uint64
	cancelled     uint64

	// abandonedTotal is the time since New during which abandoned work
	// held a slot, up to abandonedFrom: when the current such time began
	// (zero while abandoned is empty). abandonedClockLocked reads both.
	abandonedTotal time.Duration
	abandonedFrom  time.Time

	journalErrs atomic.Uint64
	journalErr  atomic.Value // string: the last journal write error
}

// New starts an engine with one goroutine per device worker (and per
// synthesis worker). It returns an error for an empty worker list, a
// worker without a Runner, two workers with the same name, or, for a
// pipelined engine, a worker whose Runner is not a prover.StagedRunner or
// no synthesizer. Call Shutdown to stop it.
func New(workers []Worker, opts ...Option) (*Engine, error) {
	if len(workers) == 0 {
		return nil, errors.New("no workers")
	}
	cfg := newConfig(opts)
	names := map[string]bool{}
	for i, w := range workers {
		if w.Runner == nil {
			return nil, fmt.Errorf("worker %d (%q) has no runner", i, w.Name)
		}
		if w.Name == "" {
			workers[i].Name = fmt.Sprintf("worker:%d", i)
		}
		if names[workers[i].Name] {
			return nil, fmt.Errorf("two workers named %q", w.Name)
		}
		names[workers[i].Name] = true
		if _, ok := w.Runner.(prover.StagedRunner); cfg.synthesisWorkers > 0 && !ok {
			return nil, fmt.Errorf("worker %q: runner %T cannot run the stages apart (not a prover.StagedRunner); use 0 synthesis workers", workers[i].Name, w.Runner)
		}
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	e := &Engine{
		cfg:         cfg,
		workers:     append([]Worker(nil), workers...),
		prefix:      hex.EncodeToString(b[:]),
		workersDone: make(chan struct{}),
		jobs:        map[string]*job{},
		byRequest:   map[string]*job{},
		finished:    list.New(),
		running:     map[string]*job{},
		wstats:      make([]WorkerStatus, len(workers)),
		busySince:   make([]time.Time, len(workers)),
		ready:       cfg.ready == nil,
		healthy:     len(workers),
	}
	if cfg.journal != nil {
		if err := e.restore(); err != nil {
			return nil, err
		}
	}
	if cfg.synthesisWorkers > 0 {
		e.synth = cfg.synthesizer
		if e.synth == nil {
			e.synth = workers[0].Runner.(prover.StagedRunner)
		}
	}
	e.tracer = semconv.Tracer(e.cfg.tp)
	e.started = e.cfg.now()
	e.cond = sync.NewCond(&e.mu)
	for p := range e.queues {
		e.queues[p] = list.New()
		e.devQueues[p] = list.New()
	}
	for i := range e.workers {
		e.wstats[i].Name = e.workers[i].Name
		e.wstats[i].Healthy = true
		e.wg.Add(1)
		go e.deviceWork(i)
	}
	if e.synth != nil {
		if cfg.tuner != nil {
			e.cfg.synthesisWorkers = cfg.tuner.MaxWorkers()
		}
		for range e.cfg.synthesisWorkers {
			e.wg.Add(1)
			go e.synthesisWork()
		}
	}
	if cfg.ready != nil {
		go e.awaitReady(cfg.ready)
	}
	go func() { e.wg.Wait(); close(e.workersDone) }()
	return e, nil
}

// partitionsOf returns the witnesses of req's partitions.
func partitionsOf(req *prover.Request) [][]byte {
	if len(req.Partitions) > 0 {
		return req.Partitions
	}
	return [][]byte{req.Witness}
}

// Submit queues req and returns its job without waiting for it. The span
// in ctx (the gRPC server span in the daemon) becomes the parent of the
// job's engine.job span; ctx's cancellation does not cancel the job. A
// request with several Partitions is one job whose partitions go through
// the stages on their own, each under an engine.partition span.
//
// If a job with req.RequestID exists (queued, running, or finished and
// still kept), Submit returns that job with Existing set and queues
// nothing, whatever the rest of req says. Errors: ErrEmptyRequestID,
// ErrInvalidRequest (nil request, unknown priority, the validator's
// verdict), ErrOverBudget, ErrQueueFull, ErrClosed.
func (e *Engine) Submit(ctx context.Context, req *prover.Request) (JobInfo, error) {
	if req == nil {
		return JobInfo{}, fmt.Errorf("%w: nil request", ErrInvalidRequest)
	}
	if req.RequestID == "" {
		return JobInfo{}, ErrEmptyRequestID
	}
	if !req.Priority.Valid() {
		return JobInfo{}, fmt.Errorf("%w: unknown priority %d", ErrInvalidRequest, int(req.Priority))
	}
	if info, ok, err := e.existing(req); ok {
		return info, err
	}
	parts := partitionsOf(req)
	params := ""
	if e.cfg.journal != nil {
		params = paramsOf(req)
	}
	// Validation may parse a witness: done outside the lock, then the
	// checks above are repeated under it.
	var memory uint64
	for k, w := range parts {
		preq := *req
		preq.Witness, preq.Partitions = w, nil
		if e.cfg.validate != nil {
			if err := e.cfg.validate(&preq); err != nil {
				if len(parts) > 1 {
					return JobInfo{}, fmt.Errorf("%w: partition %d: %w", ErrInvalidRequest, k, err)
				}
				return JobInfo{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
			}
		}
		if e.cfg.budget > 0 && e.cfg.estimate != nil {
			m, err := e.cfg.estimate(&preq)
			if err != nil {
				return JobInfo{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
			}
			memory = max(memory, m)
		}
	}
	if e.cfg.budget > 0 {
		if held := e.held(); memory+held > e.cfg.budget {
			return JobInfo{}, fmt.Errorf("%w: %s with %d constraints needs about %s of host memory per proof, the budget is %s (%s of it held by proving keys); raise the daemon's --memory-budget",
				ErrOverBudget, req.Circuit, req.Constraints, human.Bytes(memory), human.Bytes(e.cfg.budget), human.Bytes(held))
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.cfg.now()
	e.prune(now)
	if j, ok := e.byRequest[req.RequestID]; ok {
		err := sameAs(j, req)
		if !j.interrupted || err != nil {
			info := j.info()
			info.Existing = true
			return info, err
		}
		e.forgetLocked(j) // interrupted by a restart: prove it again
	}
	if e.closing {
		return JobInfo{}, ErrClosed
	}
	if e.healthy == 0 {
		return JobInfo{}, fmt.Errorf("%w: every device worker faulted", ErrNoWorker)
	}
	if waiting := e.waitingCountLocked(); waiting > 0 && waiting+len(parts) > e.cfg.queueSize {
		return JobInfo{}, fmt.Errorf("%w: %s, queue size %d", ErrQueueFull, e.waitingText(), e.cfg.queueSize)
	}

	e.seq++
	j := &job{
		id:        fmt.Sprintf("job-%s-%d", e.prefix, e.seq),
		req:       *req,
		done:      make(chan struct{}),
		state:     StateQueued,
		submitted: now,
		memory:    memory,
		pending:   len(parts),
		params:    params,
	}
	ahead := 0
	for p := req.Priority; p <= priority.Critical; p++ {
		ahead += e.queues[slot(p)].Len()
	}
	attrs := []attribute.KeyValue{
		semconv.KeyRequestID.String(req.RequestID),
		semconv.KeyJobID.String(j.id),
		semconv.KeyCircuitID.String(req.Circuit),
		semconv.KeyCircuitConstraints.Int(req.Constraints),
		semconv.KeyPriority.String(req.Priority.String()),
		semconv.KeyQueueDepth.Int(ahead),
	}
	if len(parts) > 1 {
		attrs = append(attrs, semconv.KeyPartitions.Int(len(parts)))
	}
	if e.cfg.budget > 0 {
		attrs = append(attrs, semconv.KeyMemoryBytes.Int64(int64(memory)), semconv.KeyMemoryBudget.Int64(int64(e.cfg.budget)))
	}
	attrs = append(attrs, correlationAttrs(req.Correlation)...)
	_, span := e.tracer.Start(ctx, semconv.SpanEngineJob,
		trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	// The job outlives the call that submitted it: its stages get the
	// span, not the caller's cancellation.
	jobCtx := trace.ContextWithSpan(context.Background(), span)
	j.span, j.ctx = span, jobCtx
	j.traceID = span.SpanContext().TraceID().String()
	if !span.SpanContext().TraceID().IsValid() {
		j.traceID = ""
	}
	for k, w := range parts {
		e.seq++
		t := &task{job: j, index: -1, req: *req, ctx: jobCtx, seq: e.seq, state: StateQueued, queued: now}
		t.req.Witness, t.req.Partitions = w, nil
		if len(parts) > 1 {
			t.index = k
			t.ctx, t.span = e.tracer.Start(jobCtx, semconv.SpanEnginePartition, trace.WithTimestamp(now),
				trace.WithAttributes(semconv.KeyPartitionIndex.Int(k)))
		}
		_, t.queueSpan = e.tracer.Start(t.ctx, semconv.SpanEngineQueue,
			trace.WithTimestamp(now), trace.WithAttributes(semconv.KeyQueueDepth.Int(ahead)))
		if e.synth == nil && !e.ready {
			_, t.warmSpan = e.tracer.Start(t.ctx, semconv.SpanEngineWarmup, trace.WithTimestamp(now))
		}
		j.tasks = append(j.tasks, t)
		t.elem = e.queues[slot(req.Priority)].PushBack(t)
		e.queued++
		e.queuedLocked(t, now)
	}
	e.jobs[j.id] = j
	e.byRequest[req.RequestID] = j
	// Written before any worker can take the job (they wait for e.mu), so
	// the record of its end is never overwritten by this one.
	e.journalPut(e.record(j))
	e.cond.Broadcast()
	return j.info(), nil
}

// waitingCountLocked is the number of partitions waiting, the count the queue
// size bounds: queued for a synthesis slot (a serial engine's: for a
// worker), holding one while they wait for the memory budget, or
// synthesized and waiting for a device worker. Those being synthesized or
// proved are at work, not waiting. A pipelined engine's synthesis workers
// empty the first queue at once: bounding it alone let synthesized proofs
// pile up before the device without limit (--queue-size 1 refused none of
// four submits). e.mu must be held.
func (e *Engine) waitingCountLocked() int { return e.queued + e.budgetWaiting + e.devQueued }

// waitingText says what waitingCountLocked counts: "2 proofs waiting (1
// queued, 1 for a device)"; e.mu must be held.
func (e *Engine) waitingText() string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{e.queued, "queued"}, {e.budgetWaiting, "for memory"}, {e.devQueued, "for a device"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	n := e.waitingCountLocked()
	return fmt.Sprintf("%d proof%s waiting (%s)", n, human.Plural(n), strings.Join(parts, ", "))
}

// held is the memory the held function reports; 0 without one.
func (e *Engine) held() uint64 {
	if e.cfg.held == nil {
		return 0
	}
	return e.cfg.held()
}

// pools is Status's ReleaseMode, PoolLimit and PoolHeld, read from the
// Releasers of WithReleasers (each under its own lock, not the engine's).
func (e *Engine) pools() (mode buffer.ReleaseMode, limit, held uint64) {
	if len(e.cfg.releasers) == 0 {
		return "", 0, 0
	}
	mode = e.cfg.releasers[0].Mode()
	if mode != buffer.ReleasePool {
		return mode, 0, 0
	}
	for _, r := range e.cfg.releasers {
		if r.Mode() == buffer.ReleasePool {
			limit += uint64(max(r.PoolLimit(), 0))
			held += uint64(max(r.PoolBytes(), 0))
		}
	}
	return mode, limit, held
}

// correlationAttrs returns the caller's ids as attributes, leaving out the
// ones the caller did not set (zero values).
func correlationAttrs(c prover.Correlation) []attribute.KeyValue {
	var a []attribute.KeyValue
	if c.MinerID != "" {
		a = append(a, semconv.KeyMinerID.String(c.MinerID))
	}
	// Sector 0 exists, so a sector is recorded whenever a miner is named.
	if c.SectorNumber != 0 || c.MinerID != "" {
		a = append(a, semconv.KeySectorNumber.Int64(c.SectorNumber))
	}
	if c.TaskID != 0 {
		a = append(a, semconv.KeyTaskID.Int64(c.TaskID))
	}
	if c.TaskName != "" {
		a = append(a, semconv.KeyTaskName.String(c.TaskName))
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
	err := sameAs(j, req)
	if j.interrupted && err == nil {
		return JobInfo{}, false, nil // Submit proves it again
	}
	info := j.info()
	info.Existing = true
	return info, true, err
}

// sameProof is nil when req asks for the proof that job (a request with the
// same id) asks for: same circuit, size and witnesses. Priority,
// correlation fields and Verify may differ (a retry at a higher priority is
// the same proof).
func sameProof(job, req *prover.Request) error {
	jp, rp := partitionsOf(job), partitionsOf(req)
	same := job.Circuit == req.Circuit && job.Constraints == req.Constraints && len(jp) == len(rp)
	for i := 0; same && i < len(jp); i++ {
		same = bytes.Equal(jp[i], rp[i])
	}
	if !same {
		return fmt.Errorf("%w: %q is %s with %d constraints (%s), not %s with %d (%s)",
			ErrRequestConflict, req.RequestID, job.Circuit, job.Constraints, witnessSizes(jp),
			req.Circuit, req.Constraints, witnessSizes(rp))
	}
	return nil
}

// witnessSizes names the witnesses of a request's partitions for
// sameProof's error: their size in bytes, or "the sample witness" for an
// empty one (the runner builds it; its size is not known here).
func witnessSizes(parts [][]byte) string {
	n, samples := 0, 0
	for _, p := range parts {
		n += len(p)
		if len(p) == 0 {
			samples++
		}
	}
	switch {
	case len(parts) == 1 && samples == 1:
		return "the sample witness"
	case len(parts) == 1:
		return fmt.Sprintf("witness of %d bytes", n)
	case samples == len(parts):
		return fmt.Sprintf("%d partitions of the sample witness", len(parts))
	case samples > 0:
		return fmt.Sprintf("%d partitions, %d of the sample witness, the others' witnesses of %d bytes in all", len(parts), samples, n)
	}
	return fmt.Sprintf("%d partitions, witnesses of %d bytes in all", len(parts), n)
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
		return e.Job(id), fmt.Errorf("await job %s: %w", id, ctx.Err())
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

// Cancel cancels job id in whatever stage its partitions are: a queued
// partition (or one waiting for the memory budget) ends at once; one
// synthesized and waiting for a device has its buffers released
// (buffer.release spans) and ends; a synthesizing, running or proving one
// has its context cancelled and ends when its Runner returns (whatever it
// returns). The job ends Cancelled once all its partitions ended. Errors:
// ErrUnknownJob, ErrJobFinished.
func (e *Engine) Cancel(id string) error {
	e.mu.Lock()
	j, ok := e.jobs[id]
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrUnknownJob, id)
	}
	if j.state.Finished() {
		e.mu.Unlock()
		return fmt.Errorf("%w: %s is %s", ErrJobFinished, id, j.state)
	}
	acts := e.cancelJobLocked(j, ErrCancelled)
	e.mu.Unlock()
	e.run(acts)
	return nil
}

// action is work decided under e.mu and done after it is released (ending
// spans, releasing buffers, finishing jobs).
type action func()

func (e *Engine) run(acts []action) {
	for _, a := range acts {
		a()
	}
}

// cancelJobLocked marks j cancelled with cause and cancels each of its
// tasks where it is; e.mu must be held.
func (e *Engine) cancelJobLocked(j *job, cause error) []action {
	if j.cancelled || j.failed != nil {
		return nil
	}
	j.cancelled, j.cause = true, cause
	return e.stopTasksLocked(j, cause)
}

// stopTasksLocked stops every task of j that has not ended; e.mu must be
// held. Queued and device-waiting tasks are taken out of their queues and
// end through the returned actions; running ones have their contexts
// cancelled; budget waiters are woken to end themselves.
func (e *Engine) stopTasksLocked(j *job, cause error) []action {
	var acts []action
	for _, t := range j.tasks {
		if t.ended {
			continue
		}
		if !t.stopped {
			t.stopped, t.stoppedIn = true, t.state
		}
		switch {
		case t.state == StateQueued && t.elem != nil:
			e.queues[slot(j.req.Priority)].Remove(t.elem)
			t.elem = nil
			e.queued--
			t.state = StateCancelled // no worker takes it meanwhile
			acts = append(acts, func() { e.endTask(t, -1, nil, cause) })
		case t.state == StateWaitingDevice && t.elem != nil:
			e.devQueues[slot(j.req.Priority)].Remove(t.elem)
			t.elem = nil
			e.devQueued--
			t.state = StateCancelled
			syn := t.syn
			t.syn = nil
			acts = append(acts, func() {
				_ = syn.Release(t.ctx)
				e.unreserveWhenFreed(t, syn)
				e.endTask(t, -1, nil, cause)
			})
		case t.cancelRun != nil:
			t.cancelRun()
		}
	}
	e.cond.Broadcast()
	return acts
}

// Status returns a snapshot of the stages, running jobs, workers, memory
// and totals.
func (e *Engine) Status() Status {
	held := e.held()
	mode, poolLimit, poolHeld := e.pools()
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.cfg.now()
	s := Status{
		ReleaseMode:      mode,
		PoolLimit:        poolLimit,
		PoolHeld:         poolHeld,
		QueueCapacity:    e.cfg.queueSize,
		WaitingMemory:    e.budgetWaiting,
		Synthesizing:     e.synthesizing - e.budgetWaiting - e.abandonedSlot,
		Proving:          e.proving,
		SynthesisWorkers: 0,
		Workers:          append([]WorkerStatus(nil), e.wstats...),
		MemoryBudget:     e.cfg.budget,
		MemoryReserved:   e.reserved,
		MemoryHeld:       held,
		MemoryPeak:       e.peak,
		Ready:            e.ready,
		Succeeded:        e.succeeded,
		Failed:           e.failed,
		Cancelled:        e.cancelled,
		Started:          e.started,
		Uptime:           now.Sub(e.started),
		Closing:          e.closing,
		JournalErrors:    e.journalErrs.Load(),
	}
	if v, ok := e.journalErr.Load().(string); ok {
		s.JournalError = v
	}
	if e.synth != nil {
		s.SynthesisWorkers = e.cfg.synthesisWorkers
	}
	if e.cfg.tuner != nil {
		s.Tuning = e.cfg.tuner.Snapshot()
	}
	for i := range s.Workers {
		if !e.busySince[i].IsZero() {
			s.Workers[i].Busy += now.Sub(e.busySince[i])
		}
	}
	s.Queued = make(map[priority.Priority]int, levels)
	s.WaitingDevice = make(map[priority.Priority]int, levels)
	for _, p := range priority.All {
		s.Queued[p] = e.queues[slot(p)].Len()
		s.WaitingDevice[p] = e.devQueues[slot(p)].Len()
	}
	for _, j := range e.running {
		s.Running = append(s.Running, j.info())
	}
	for _, a := range e.abandoned {
		s.Abandoned = append(s.Abandoned, *a)
	}
	s.Waiting = e.waitingLocked()
	return s
}

// waitingLocked lists the jobs not started yet, as Status.Waiting orders
// them; e.mu must be held.
func (e *Engine) waitingLocked() []WaitingJob {
	var out []WaitingJob
	seen := map[*job]bool{}
	for _, j := range e.jobs {
		if j.state != StateQueued {
			continue
		}
		for _, t := range j.tasks {
			if t.waitingMemory && !seen[j] {
				seen[j] = true
				out = append(out, WaitingJob{JobInfo: j.info(), MemoryWait: true})
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Submitted.Before(out[b].Submitted) })
	for p := levels - 1; p >= 0; p-- {
		for el := e.queues[p].Front(); el != nil; el = el.Next() {
			j := el.Value.(*task).job
			if j.state == StateQueued && !seen[j] {
				seen[j] = true
				out = append(out, WaitingJob{JobInfo: j.info()})
			}
		}
	}
	return out
}

// Workers returns the names of the device workers, in the order given to
// New.
func (e *Engine) Workers() []string {
	n := make([]string, len(e.workers))
	for i, w := range e.workers {
		n[i] = w.Name
	}
	return n
}

// Shutdown stops the engine: Submit refuses new work with ErrClosed at
// once; jobs not yet started (every partition still queued or waiting for
// the memory budget) end Cancelled at once (their error wraps ErrCancelled
// and ErrClosed); jobs already synthesizing, synthesized or proving may
// finish until ctx is done; then they are cancelled (synthesized ones
// waiting for a device have their buffers released) and Shutdown waits up
// to the cancel grace (WithCancelGrace) for their Runners to return. It
// returns nil when every started job finished in time, else an error
// wrapping ctx's error. Safe to call more than once.
func (e *Engine) Shutdown(ctx context.Context) error {
	closed := errCancelledAtShutdown
	e.mu.Lock()
	var acts []action
	if !e.closing {
		e.closing = true
		for _, j := range e.jobs {
			if !j.state.Finished() && j.started.IsZero() {
				acts = append(acts, e.cancelJobLocked(j, closed)...)
			}
		}
		e.cond.Broadcast()
	}
	e.mu.Unlock()
	e.run(acts)

	select {
	case <-e.workersDone:
		return nil
	case <-ctx.Done():
	}
	e.mu.Lock()
	n := 0
	acts = nil
	for _, j := range e.jobs {
		if !j.state.Finished() {
			n++
			acts = append(acts, e.cancelJobLocked(j, closed)...)
		}
	}
	e.mu.Unlock()
	e.run(acts)
	t := time.NewTimer(e.cfg.cancelGrace)
	defer t.Stop()
	select {
	case <-e.workersDone:
		if n == 0 {
			// The deadline passed while idle workers were still exiting
			// (--shutdown-timeout 0): nothing was cancelled.
			return nil
		}
		return fmt.Errorf("shutdown: cancelled %d running jobs: %w", n, ctx.Err())
	case <-t.C:
		// The runners that ignore their context are left behind, but their
		// jobs' engine.job spans end now, with the reason, so the traces
		// the process flushes on its way out keep their roots.
		e.mu.Lock()
		stuck := make([]*job, 0, len(e.running))
		for _, j := range e.running {
			stuck = append(stuck, j)
		}
		left := append([]*Abandoned(nil), e.abandoned...)
		e.mu.Unlock()
		now := e.cfg.now()
		for _, j := range stuck {
			semconv.SetError(j.span, fmt.Errorf("%w: abandoned, its runner did not return within %v",
				errCancelledAtShutdown, e.cfg.cancelGrace))
			j.span.End(trace.WithTimestamp(now))
		}
		// So do the engine.abandoned spans of work still running.
		for _, a := range left {
			a.span.AddEvent("still running at shutdown", trace.WithTimestamp(now))
			a.span.End(trace.WithTimestamp(now))
		}
		return fmt.Errorf("shutdown: workers still running %v after cancelling %d jobs: %w",
			e.cfg.cancelGrace, n, ctx.Err())
	}
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

// runSafely calls f and turns a panic into an error, so one bad proof
// does not take the daemon down.
func runSafely[T any](f func() (T, error)) (res T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			res, err = zero, fmt.Errorf("runner panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return f()
}
