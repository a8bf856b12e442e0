package engine

import (
	"context"
	"errors"
	"fmt"
)

// Errors the engine returns; callers branch on them with errors.Is.
var (
	// ErrQueueFull is returned by Submit when the queue holds its maximum
	// number of jobs (the daemon answers RESOURCE_EXHAUSTED).
	ErrQueueFull = errors.New("engine: queue full")
	// ErrOverBudget is returned by Submit for a job whose estimated host
	// memory, beside the proving keys held, exceeds the whole memory
	// budget (WithMemoryBudget): it could never be admitted (the daemon
	// answers RESOURCE_EXHAUSTED, the message names both numbers).
	ErrOverBudget = errors.New("engine: job larger than the memory budget")
	// ErrNoDevice is the error of jobs that were waiting when the last
	// healthy device worker faulted (prover.ErrDeviceFault), and of Submit
	// from then on (the daemon answers UNAVAILABLE).
	ErrNoDevice = errors.New("engine: no healthy device worker left")
	// ErrEmptyRequestID is returned by Submit for a request without a
	// request id: the id is the idempotency key and cannot be made up.
	ErrEmptyRequestID = errors.New("engine: empty request id")
	// ErrInvalidRequest is wrapped by Submit's errors for requests it
	// refuses before queueing (nil request, unknown priority, or what the
	// validator of WithValidator rejects).
	ErrInvalidRequest = errors.New("engine: invalid request")
	// ErrUnknownJob is returned for a job id the engine does not know, or
	// whose result it no longer keeps.
	ErrUnknownJob = errors.New("engine: unknown job")
	// ErrCancelled is the error of a job cancelled by Cancel or by Shutdown.
	ErrCancelled = errors.New("engine: job cancelled")
	// ErrClosed is returned by Submit after Shutdown began; jobs still
	// queued when Shutdown began fail with an error wrapping both
	// ErrCancelled and ErrClosed.
	ErrClosed = errors.New("engine: shut down")
	// ErrJobFinished is returned by Cancel for a job that already ended.
	ErrJobFinished = errors.New("engine: job already finished")
	// ErrRequestConflict is returned by Submit for a request id the engine
	// already has a job for with another circuit, size or witness: an
	// idempotency key names one proof, and answering with the other
	// proof's result would be wrong (the daemon answers ALREADY_EXISTS).
	ErrRequestConflict = errors.New("engine: request id already used for another proof")
)

// errorType is the error.type attribute for err: a fixed, low-cardinality
// name for what callers branch on, else the Go type of the innermost error.
func errorType(err error) string {
	switch {
	case errors.Is(err, ErrCancelled), errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, ErrQueueFull):
		return "queue_full"
	case errors.Is(err, ErrOverBudget):
		return "over_budget"
	case errors.Is(err, ErrInvalidRequest):
		return "invalid_request"
	}
	for {
		u := errors.Unwrap(err)
		if multi, ok := err.(interface{ Unwrap() []error }); ok && u == nil && len(multi.Unwrap()) > 0 {
			u = multi.Unwrap()[0] // fmt.Errorf with several %w: the first names the kind
		}
		if u == nil {
			return fmt.Sprintf("%T", err)
		}
		err = u
	}
}
