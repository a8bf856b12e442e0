package engine

import (
	"container/list"
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// State is where a job is in its life.
type State int

// Job states. In a pipelined engine (WithSynthesisWorkers) a job moves
// Queued → Synthesizing → WaitingDevice → Proving → Succeeded | Failed |
// Cancelled; in a serial one Queued → Running → the same ends. Any state
// before the end may go to Cancelled (and Failed, from a stage that fails).
// A multi-partition job is Proving while any partition proves, else
// WaitingDevice while any waits for a device, else Synthesizing while any
// is synthesized, else Running or Queued.
const (
	StateQueued State = iota
	StateRunning
	StateSucceeded
	StateFailed
	StateCancelled
	StateSynthesizing
	StateWaitingDevice
	StateProving
)

// String returns QUEUED, RUNNING, SYNTHESIZING, WAITING_DEVICE, PROVING,
// SUCCEEDED, FAILED or CANCELLED.
func (s State) String() string {
	switch s {
	case StateQueued:
		return "QUEUED"
	case StateRunning:
		return "RUNNING"
	case StateSynthesizing:
		return "SYNTHESIZING"
	case StateWaitingDevice:
		return "WAITING_DEVICE"
	case StateProving:
		return "PROVING"
	case StateSucceeded:
		return "SUCCEEDED"
	case StateFailed:
		return "FAILED"
	case StateCancelled:
		return "CANCELLED"
	}
	return "State(?)"
}

// Finished reports whether s is a final state.
func (s State) Finished() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCancelled
}

// JobInfo is a snapshot of one job, safe to keep and read after the call
// that returned it.
type JobInfo struct {
	ID        string
	RequestID string
	Circuit   string
	// Constraints is the requested size (prover.Request.Constraints).
	Constraints int
	Priority    priority.Priority
	prover.Correlation
	State State
	// Worker names the device worker that proved the job, or its last
	// partition ("" until a worker took it).
	Worker string
	// TraceID is the hex W3C trace id of the job's engine.job span.
	TraceID string
	// Submitted, Started and Finished are wall clock times; zero until the
	// job gets there. Started is when its first stage began.
	Submitted, Started, Finished time.Time
	// Partitions is the number of partitions (1 for a one-witness request).
	Partitions int
	// MemoryBytes is the host memory estimated for one partition of the
	// job (0 without a memory budget).
	MemoryBytes uint64
	// Result is the proof of a Succeeded job, nil otherwise. Every
	// snapshot of the job shares it: treat it as read-only.
	Result *prover.Result
	// Err says why a Failed or Cancelled job ended.
	Err error
	// Existing is set by Submit when the request id named a job that
	// already existed, so this call made no new job.
	Existing bool
}

// job is the engine's record of one request; its fields (and its tasks')
// are guarded by Engine.mu, except those set before the job is shared.
type job struct {
	id   string
	req  prover.Request
	done chan struct{} // closed when the job reaches a final state

	state     State
	worker    string
	submitted time.Time
	started   time.Time
	finished  time.Time
	result    *prover.Result
	err       error
	memory    uint64 // estimate per task

	tasks       []*task
	pending     int           // tasks not yet ended
	finElem     *list.Element // in Engine.finished once final
	cancelled   bool          // Cancel (or Shutdown) asked for it
	cause       error         // why it was cancelled
	failed      error         // the first task failure, which ends the others
	failedIndex int           // the partition of failed
	span        trace.Span
	ctx         context.Context // holds span
	traceID     string
	params      string // journal.ParamsHash of req; "" without a journal
	parts       int    // partitions of a job restored from the journal (no tasks)
	interrupted bool   // restored unfinished: Submit proves it again
}

// task is one partition of a job (the job itself for one witness): the
// unit the stages schedule.
type task struct {
	job   *job
	index int // partition index; -1 for a one-witness job
	req   prover.Request
	ctx   context.Context // the span the task's stage spans go under
	span  trace.Span      // engine.partition, nil for a one-witness job
	seq   uint64          // FIFO order within a priority

	state    State
	ended    bool
	elem     *list.Element // in a stage queue while waiting there
	syn      prover.Synthesized
	reserved uint64 // budget held
	// waitingMemory: popped from the queue, waiting in admit for the
	// memory budget.
	waitingMemory bool
	cancelRun     context.CancelFunc
	worker        string
	// stoppedIn is the state the task was in when its job was cancelled
	// (or failed in another partition); valid once stopped is set.
	stoppedIn State
	stopped   bool
	// abandonedMark is Engine.abandonedClockLocked when the task entered
	// the queue; waitedFor the first abandoned work that held a slot while
	// it waited there (nil: none).
	abandonedMark time.Duration
	waitedFor     *Abandoned

	queueSpan, budgetSpan, gpuSpan, warmSpan trace.Span
	queued, synthStart, synthEnd, proveStart time.Time
	memoryWait                               time.Duration
	result                                   *prover.Result
	err                                      error
}

// taskState ranks the states a multi-partition job reports.
var taskRank = map[State]int{StateQueued: 0, StateRunning: 1, StateSynthesizing: 2, StateWaitingDevice: 3, StateProving: 4}

// refresh sets j.state from its tasks while it is not final.
func (j *job) refresh() {
	if j.state.Finished() {
		return
	}
	best := StateQueued
	for _, t := range j.tasks {
		if !t.ended && taskRank[t.state] > taskRank[best] {
			best = t.state
		}
	}
	j.state = best
}

func (j *job) info() JobInfo {
	return JobInfo{
		ID:          j.id,
		RequestID:   j.req.RequestID,
		Circuit:     j.req.Circuit,
		Constraints: j.req.Constraints,
		Priority:    j.req.Priority,
		Correlation: j.req.Correlation,
		State:       j.state,
		Worker:      j.worker,
		TraceID:     j.traceID,
		Submitted:   j.submitted,
		Started:     j.started,
		Finished:    j.finished,
		Partitions:  max(len(j.tasks), j.parts),
		MemoryBytes: j.memory,
		Result:      j.result,
		Err:         j.err,
	}
}
