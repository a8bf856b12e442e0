package engine

import (
	"container/list"
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/prover"
)

// State is where a job is in its life.
type State int

// Job states. A job moves Queued → Running → Succeeded | Failed | Cancelled,
// or Queued → Cancelled.
const (
	StateQueued State = iota
	StateRunning
	StateSucceeded
	StateFailed
	StateCancelled
)

// String returns QUEUED, RUNNING, SUCCEEDED, FAILED or CANCELLED.
func (s State) String() string {
	switch s {
	case StateQueued:
		return "QUEUED"
	case StateRunning:
		return "RUNNING"
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
func (s State) Finished() bool { return s >= StateSucceeded }

// JobInfo is a snapshot of one job, safe to keep and read after the call
// that returned it.
type JobInfo struct {
	ID        string
	RequestID string
	Circuit   string
	// Constraints is the requested size (prover.Request.Constraints).
	Constraints int
	Priority    prover.Priority
	prover.Correlation
	State State
	// Worker names the worker that ran the job ("" while queued).
	Worker string
	// TraceID is the hex W3C trace id of the job's engine.job span.
	TraceID string
	// Submitted, Started and Finished are wall clock times; zero until the
	// job gets there.
	Submitted, Started, Finished time.Time
	// Result is the proof of a Succeeded job, nil otherwise. Every
	// snapshot of the job shares it: treat it as read-only.
	Result *prover.Result
	// Err says why a Failed or Cancelled job ended.
	Err error
	// Existing is set by Submit when the request id named a job that
	// already existed, so this call made no new job.
	Existing bool
}

// job is the engine's record of one request; fields below mu in Engine are
// guarded by Engine.mu.
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

	elem        *list.Element // in its priority's queue while queued
	finElem     *list.Element // in Engine.finished once final
	cancelRun   context.CancelFunc
	cancelled   bool // Cancel (or Shutdown) asked for it
	span        trace.Span
	queueSpan   trace.Span
	traceID     string
	cancelCause error
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
		Result:      j.result,
		Err:         j.err,
	}
}
