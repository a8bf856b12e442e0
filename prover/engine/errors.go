package engine

import "github.com/otelcuzk/otelcuzk/otelcuzk/semconv"

// Errors the engine returns; callers branch on them with errors.Is. Each
// declares its error.type (semconv.NewError), from which the daemon's gRPC
// code follows (cuzkv1.CodeOf); ErrClosed reaches a span only beside
// ErrCancelled, which names it. Their texts, and the engine's other
// errors, name what happened, not the package: a user reads them at the
// end of a chain ("Canceled: engine: job cancelled: engine: shut down"
// named it twice).
var (
	// ErrQueueFull is returned by Submit when as many partitions wait as
	// the queue size allows (WithQueueSize; the daemon answers
	// RESOURCE_EXHAUSTED, the message names the count and the size).
	ErrQueueFull = semconv.NewError(semconv.ErrorTypeQueueFull, "queue full")
	// ErrOverBudget is returned by Submit for a job whose estimated host
	// memory, beside the proving keys held, exceeds the whole memory
	// budget (WithMemoryBudget): it could never be admitted (the daemon
	// answers RESOURCE_EXHAUSTED, the message names both numbers).
	ErrOverBudget = semconv.NewError(semconv.ErrorTypeOverBudget, "job larger than the memory budget")
	// ErrNoWorker is the error of jobs that were waiting when the last
	// healthy device worker faulted (backend.ErrDeviceFault), and of Submit
	// from then on (the daemon answers UNAVAILABLE).
	ErrNoWorker = semconv.NewError(semconv.ErrorTypeNoDevice, "no healthy device worker left")
	// ErrEmptyRequestID is returned by Submit for a request without a
	// request id: the id is the idempotency key and cannot be made up.
	ErrEmptyRequestID = semconv.NewError(semconv.ErrorTypeInvalidRequest, "empty request id")
	// ErrInvalidRequest is wrapped by Submit's errors for requests it
	// refuses before queueing (nil request, unknown priority, or what the
	// validator of WithValidator rejects).
	ErrInvalidRequest = semconv.NewError(semconv.ErrorTypeInvalidRequest, "invalid request")
	// ErrUnknownJob is returned for a job id the engine does not know, or
	// whose result it no longer keeps.
	ErrUnknownJob = semconv.NewError(semconv.ErrorTypeNotFound, "unknown job")
	// ErrCancelled is the error of a job cancelled by Cancel or by Shutdown.
	ErrCancelled = semconv.NewError(semconv.ErrorTypeCanceled, "job cancelled")
	// ErrClosed is returned by Submit after Shutdown began; jobs still
	// queued when Shutdown began fail with an error wrapping both
	// ErrCancelled and ErrClosed.
	ErrClosed = semconv.NewError(semconv.ErrorTypeUnavailable, "the engine is shutting down")
	// ErrJobFinished is returned by Cancel for a job that already ended.
	ErrJobFinished = semconv.NewError(semconv.ErrorTypeFinished, "job already finished")
	// ErrRequestConflict is returned by Submit for a request id the engine
	// already has a job for with another circuit, size or witness: an
	// idempotency key names one proof, and answering with the other
	// proof's result would be wrong (the daemon answers ALREADY_EXISTS).
	// ErrInterrupted is the error of a job the journal (WithJournal) found
	// unfinished at start: the daemon stopped (crashed, was killed or
	// restarted) while it ran. Submitting the same request id proves it
	// again (the daemon answers ABORTED: retry).
	ErrInterrupted     = semconv.NewError(semconv.ErrorTypeInterrupted, "interrupted by a restart")
	ErrRequestConflict = semconv.NewError(semconv.ErrorTypeConflict, "request id already used for another proof")
)

// errCancelledAtShutdown is the cause of the jobs Shutdown cancels: it
// wraps ErrCancelled and ErrClosed (errors.Is holds for both, error.type
// canceled) and says so once ("job cancelled: the engine is shutting
// down", not the two sentinels' texts joined).
var errCancelledAtShutdown error = &bothErrors{msg: "job cancelled: the engine is shutting down", errs: []error{ErrCancelled, ErrClosed}}

// bothErrors reads as msg and wraps each of errs.
type bothErrors struct {
	msg  string
	errs []error
}

func (e *bothErrors) Error() string   { return e.msg }
func (e *bothErrors) Unwrap() []error { return e.errs }
