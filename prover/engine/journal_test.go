package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/journal"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

func openJournal(t *testing.T, dir string) *journal.Journal {
	t.Helper()
	j, _, err := journal.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// The finding: after a restart every request id was NOT_FOUND, and
// resubmitting the same ids proved them a second time.
func TestJobsOutliveARestartThroughTheJournal(t *testing.T) {
	dir := t.TempDir()
	jr := openJournal(t, dir)
	r1 := &fakeRunner{gate: make(chan struct{}), started: make(chan string, 4)}
	e1, err := New([]Worker{{Name: "w0", Runner: r1}}, WithJournal(jr))
	if err != nil {
		t.Fatal(err)
	}
	close(r1.gate)
	done := mustSubmit(t, e1, req("done", priority.Normal))
	<-r1.started
	if _, err := await(t, e1, done.ID); err != nil {
		t.Fatal(err)
	}
	r1.gate = make(chan struct{}) // the next run holds
	running := mustSubmit(t, e1, req("running", priority.Normal))
	<-r1.started
	// A crash: the journal is closed under the running job, which never
	// gets its end written.
	jr.Close()
	defer func() { close(r1.gate); _ = e1.Shutdown(context.Background()) }()

	r2 := &fakeRunner{}
	e2 := newEngine(t, []prover.Runner{r2}, WithJournal(openJournal(t, dir)))
	info, ok := e2.JobByRequest("done")
	if !ok || info.State != StateSucceeded || info.ID != done.ID || info.Result == nil || !bytes.Equal(info.Result.Proof, []byte("proof:done")) || info.TraceID != done.TraceID {
		t.Fatalf("done after the restart: %+v %v", info, ok)
	}
	if got, err := await(t, e2, done.ID); err != nil || got.State != StateSucceeded {
		t.Errorf("await done by its job id: %v %v", got.State, err)
	}
	info, ok = e2.JobByRequest("running")
	if !ok || info.State != StateFailed || !errors.Is(info.Err, ErrInterrupted) || !strings.Contains(info.Err.Error(), "interrupted by a restart") {
		t.Fatalf("running after the restart: %+v %v, want Failed interrupted by a restart", info, ok)
	}
	if _, err := await(t, e2, running.ID); !errors.Is(err, ErrInterrupted) {
		t.Errorf("await running: %v", err)
	}

	// Resubmitting: the finished one is not proved again, the interrupted one is.
	again := mustSubmit(t, e2, req("done", priority.Normal))
	if !again.Existing || again.ID != done.ID {
		t.Errorf("resubmitted done: %+v, want the existing job", again)
	}
	retry := mustSubmit(t, e2, req("running", priority.High))
	if retry.Existing || retry.ID == running.ID {
		t.Errorf("resubmitted running: %+v, want a new job", retry)
	}
	if got, err := await(t, e2, retry.ID); err != nil || got.State != StateSucceeded {
		t.Errorf("retried job: %v %v", got.State, err)
	}
	if ran := r2.order(); len(ran) != 1 || ran[0] != "running" {
		t.Errorf("after the restart the runner ran %v, want [running]", ran)
	}
	// The same id for another proof is today's conflict, restored job or not.
	other := req("done", priority.Normal)
	other.Constraints = 512
	if _, err := e2.Submit(context.Background(), other); !errors.Is(err, ErrRequestConflict) {
		t.Errorf("done with other parameters: %v, want ErrRequestConflict", err)
	}
	if st := e2.Status(); st.JournalErrors != 0 {
		t.Errorf("journal errors: %d (%s)", st.JournalErrors, st.JournalError)
	}
}

// A failed job read back from the journal fails as it did: its error.type
// (unsatisfied here) and what callers branch on (errors.Is with
// groth16.ErrUnsatisfied, which the daemon answers INVALID_ARGUMENT), not a
// bare message of type _OTHER that the daemon answered INTERNAL.
func TestARestoredFailedJobKeepsItsErrorType(t *testing.T) {
	dir := t.TempDir()
	jr := openJournal(t, dir)
	bad := runnerFunc(func(context.Context, *prover.Request) (*prover.Result, error) {
		return nil, fmt.Errorf("synthesize: %w: constraint #3 is not satisfied", groth16.ErrUnsatisfied)
	})
	e1, err := New([]Worker{{Name: "w0", Runner: bad}}, WithJournal(jr))
	if err != nil {
		t.Fatal(err)
	}
	j := mustSubmit(t, e1, req("unsat", priority.Normal))
	before, _ := await(t, e1, j.ID)
	if err := e1.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	jr.Close()
	e2 := newEngine(t, []prover.Runner{bad}, WithJournal(openJournal(t, dir)))
	after, ok := e2.JobByRequest("unsat")
	if !ok || after.State != StateFailed {
		t.Fatalf("after the restart: %+v %v, want the failed job", after, ok)
	}
	if got, want := semconv.ErrorType(after.Err), semconv.ErrorType(before.Err); got != want || got != semconv.ErrorTypeUnsatisfied {
		t.Errorf("error.type after the restart %q, before %q; want %q", got, want, semconv.ErrorTypeUnsatisfied)
	}
	if !errors.Is(after.Err, groth16.ErrUnsatisfied) || errors.Is(after.Err, groth16.ErrBadWitness) {
		t.Errorf("restored error %v: errors.Is ErrUnsatisfied %v, ErrBadWitness %v; want true, false",
			after.Err, errors.Is(after.Err, groth16.ErrUnsatisfied), errors.Is(after.Err, groth16.ErrBadWitness))
	}
	if after.Err.Error() != before.Err.Error() {
		t.Errorf("message %q after the restart, %q before", after.Err, before.Err)
	}
}
