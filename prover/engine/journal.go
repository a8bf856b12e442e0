package engine

import (
	"fmt"
	"strings"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/journal"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// WithJournal keeps every job in j as well (prover/journal): a record at
// submit and one when the job ends, and at New the jobs j kept are the
// engine's finished jobs again, so after a restart a request id returns
// its job (by request id or job id, for Await and for idempotent
// resubmission, until the result TTL). A job j found unfinished is Failed
// with ErrInterrupted; a Submit of its request id with the same proof
// proves it again. The caller opens and closes j (after Shutdown).
func WithJournal(j *journal.Journal) Option {
	return optionFunc(func(c *config) { c.journal = j })
}

var stateOfRecord = map[journal.State]State{
	journal.StateSucceeded:   StateSucceeded,
	journal.StateFailed:      StateFailed,
	journal.StateCancelled:   StateCancelled,
	journal.StateInterrupted: StateFailed,
}

var recordState = map[State]journal.State{
	StateSucceeded: journal.StateSucceeded,
	StateFailed:    journal.StateFailed,
	StateCancelled: journal.StateCancelled,
}

// paramsOf is the journal's hash of what makes req its proof.
func paramsOf(req *prover.Request) string {
	return journal.ParamsHash(req.Circuit, req.Constraints, partitionsOf(req))
}

// restore makes the journal's records finished jobs; called by New before
// any worker runs.
func (e *Engine) restore() error {
	recs, err := e.cfg.journal.All()
	if err != nil {
		return fmt.Errorf("restore jobs: %w", err)
	}
	for _, r := range recs {
		if r.JobID == "" || e.jobs[r.JobID] != nil {
			continue
		}
		st, ok := stateOfRecord[r.State]
		if !ok {
			st, r.State, r.Error = StateFailed, journal.StateInterrupted, journal.InterruptedError
		}
		j := &job{
			id:          r.JobID,
			req:         prover.Request{RequestID: r.RequestID, Circuit: r.Circuit, Constraints: r.Constraints, Priority: priority.Priority(r.Priority)},
			params:      r.ParamsHash,
			done:        make(chan struct{}),
			state:       st,
			worker:      r.Worker,
			submitted:   r.Submitted,
			started:     r.Started,
			finished:    r.Finished,
			result:      r.Result,
			traceID:     r.TraceID,
			parts:       r.Partitions,
			interrupted: r.State == journal.StateInterrupted,
		}
		switch {
		case j.interrupted:
			j.err = fmt.Errorf("%w: %s", ErrInterrupted, strings.TrimPrefix(r.Error, "interrupted by a restart: "))
		case st == StateCancelled:
			j.err = fmt.Errorf("%w: %s", ErrCancelled, r.Error)
		case st == StateFailed:
			j.err = &restoredError{msg: r.Error, typ: r.ErrorType}
		}
		close(j.done)
		e.jobs[j.id] = j
		e.byRequest[r.RequestID] = j
		j.finElem = e.finished.PushBack(j)
	}
	e.prune(e.cfg.now())
	return nil
}

// record is j as the journal keeps it; e.mu must be held.
func (e *Engine) record(j *job) journal.Record {
	r := journal.Record{
		RequestID: j.req.RequestID, JobID: j.id, ParamsHash: j.params,
		Circuit: j.req.Circuit, Constraints: j.req.Constraints, Partitions: max(len(j.tasks), j.parts),
		Priority: int(j.req.Priority), State: journal.StateSubmitted, TraceID: j.traceID, Worker: j.worker,
		Submitted: j.submitted, Started: j.started, Finished: j.finished, Result: j.result,
	}
	if s, ok := recordState[j.state]; ok {
		r.State = s
	}
	if j.err != nil {
		r.Error = j.err.Error()
		r.ErrorType = semconv.ErrorType(j.err)
	}
	return r
}

// restoredError is the error of a failed job read back from the journal:
// its message, and the error.type it had (the record's), which it
// declares (semconv.ErrorType) and matches with errors.Is against any
// error of that type, so the restored job fails as it did: its error.type
// and its gRPC code (an unsatisfied witness stays INVALID_ARGUMENT, not
// INTERNAL). A record without a type reads as ErrorTypeOther.
type restoredError struct{ msg, typ string }

func (e *restoredError) Error() string { return e.msg }

func (e *restoredError) ErrorType() string {
	if e.typ == "" {
		return semconv.ErrorTypeOther
	}
	return e.typ
}

// Is reports whether target declares this error's type (other than
// ErrorTypeOther, which says nothing of the kind).
func (e *restoredError) Is(target error) bool {
	t, ok := target.(interface{ ErrorType() string })
	return ok && e.typ != "" && e.typ != semconv.ErrorTypeOther && t.ErrorType() == e.typ
}

// journalPut writes r, counting a failure (Status.JournalErrors, and the
// error kept in Status.JournalError).
func (e *Engine) journalPut(r journal.Record) {
	if e.cfg.journal == nil {
		return
	}
	if err := e.cfg.journal.Put(r); err != nil {
		e.journalErrs.Add(1)
		e.journalErr.Store(err.Error())
	}
}

// sameAs is nil when req asks for the proof job j asks for; a restored job
// (no witnesses held) compares by the journal's hash.
func sameAs(j *job, req *prover.Request) error {
	if j.params == "" || len(j.tasks) > 0 {
		return sameProof(&j.req, req)
	}
	if paramsOf(req) == j.params {
		return nil
	}
	return fmt.Errorf("%w: %q is %s with %d constraints (a job kept from before the restart), not %s with %d or not these witnesses",
		ErrRequestConflict, req.RequestID, j.req.Circuit, j.req.Constraints, req.Circuit, req.Constraints)
}

// forgetLocked drops finished job j (one to prove again); e.mu must be held.
func (e *Engine) forgetLocked(j *job) {
	if j.finElem != nil {
		e.finished.Remove(j.finElem)
		j.finElem = nil
	}
	delete(e.jobs, j.id)
	if e.byRequest[j.req.RequestID] == j {
		delete(e.byRequest, j.req.RequestID)
	}
}
