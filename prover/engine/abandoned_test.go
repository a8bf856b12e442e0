package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// abandonedErr is the error of a key setup left running when its job was
// cancelled (keycache.AbandonedError's shape): it wraps ctx's error and
// says when the setup ends.
type abandonedErr struct {
	err  error
	done chan struct{}
}

func (e abandonedErr) Error() string                  { return e.err.Error() }
func (e abandonedErr) Unwrap() error                  { return e.err }
func (abandonedErr) AbandonedStep() string            { return "keys.setup" }
func (e abandonedErr) AbandonedDone() <-chan struct{} { return e.done }

// setupRunner runs the job "setup" as a key setup that cannot stop: when
// its context ends it returns an abandonedErr whose setup ends only when
// setupDone closes. Every other job proves at once. Serial (Run) and
// staged (Synthesize, then the Synthesized's Prove on its Device).
type setupRunner struct {
	started   chan string
	setupDone chan struct{}
}

type doneSyn struct{ freed chan struct{} }

func (s doneSyn) Release(context.Context) error { return nil }
func (s doneSyn) Freed() <-chan struct{}        { return s.freed }
func (s doneSyn) Prove(ctx context.Context, dev prover.Device) (*prover.Result, error) {
	return proveOnFake(ctx, s, dev)
}

func (r *setupRunner) Synthesize(ctx context.Context, req *prover.Request) (prover.Synthesized, error) {
	r.started <- req.RequestID
	if req.RequestID == "setup" {
		<-ctx.Done()
		return nil, fmt.Errorf("keys of mulchain (256 constraints): groth16 setup: %w", abandonedErr{ctx.Err(), r.setupDone})
	}
	freed := make(chan struct{})
	close(freed)
	return doneSyn{freed}, nil
}

func (r *setupRunner) Proving() prover.Proving { return prover.Proving{} }

func (r *setupRunner) proveOn(context.Context, prover.Synthesized) (*prover.Result, error) {
	return &prover.Result{Proof: []byte("proof")}, nil
}

func (r *setupRunner) Run(ctx context.Context, req *prover.Request) (*prover.Result, error) {
	s, err := r.Synthesize(ctx, req)
	if err != nil {
		return nil, err
	}
	return s.Prove(ctx, r)
}

// A job cancelled during a key setup that cannot stop ends Cancelled at
// once, but the setup it left running keeps its worker (not handed to the
// next job) and its memory reservation, and is listed in Status.Abandoned,
// until it ends; then the next job runs. Serial (the device worker held)
// and pipelined (the synthesis slot held).
func TestAnAbandonedSetupKeepsItsWorkerAndMemoryUntilItEnds(t *testing.T) {
	const per = 1 << 30
	for _, c := range []struct {
		name   string
		opts   []Option
		worker string
	}{
		{"serial", nil, "w0"},
		{"pipelined", []Option{WithSynthesisWorkers(1)}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			noLeak(t)
			r := &setupRunner{started: make(chan string, 4), setupDone: make(chan struct{})}
			e := newEngine(t, []prover.Runner{r}, append(c.opts, budgetOf(8*per, per, 0))...)
			j := mustSubmit(t, e, req("setup", priority.Normal))
			<-r.started
			if err := e.Cancel(j.ID); err != nil {
				t.Fatal(err)
			}
			if info, _ := await(t, e, j.ID); info.State != StateCancelled {
				t.Fatalf("cancelled job: %v, want Cancelled at once", info.State)
			}
			deadline := time.Now().Add(5 * time.Second)
			for len(e.Status().Abandoned) == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			st := e.Status()
			if len(st.Abandoned) != 1 {
				t.Fatalf("Status.Abandoned = %+v, want the one setup left running", st.Abandoned)
			}
			a := st.Abandoned[0]
			if a.Step != "keys.setup" || a.JobID != j.ID || a.RequestID != "setup" || a.Circuit != "mulchain" ||
				a.Constraints != 256 || a.Worker != c.worker || a.MemoryBytes != per || a.Since.IsZero() {
				t.Errorf("abandoned %+v, want keys.setup of job %s (request setup, mulchain/256) on %q holding %d bytes", a, j.ID, c.worker, per)
			}
			if st.MemoryReserved != per {
				t.Errorf("MemoryReserved %d while the setup runs on, want its job's %d", st.MemoryReserved, per)
			}
			if st.Synthesizing != 0 {
				t.Errorf("Synthesizing %d, want 0 (the held slot is abandoned work, not a synthesis)", st.Synthesizing)
			}

			next := mustSubmit(t, e, req("next", priority.Normal))
			select {
			case id := <-r.started:
				t.Fatalf("%s started while the abandoned setup held the only worker", id)
			case <-time.After(300 * time.Millisecond):
			}
			close(r.setupDone)
			if info, err := await(t, e, next.ID); err != nil || info.State != StateSucceeded {
				t.Fatalf("next job after the setup ended: %v, %v", info.State, err)
			}
			<-r.started
			for time.Now().Before(deadline) && (len(e.Status().Abandoned) != 0 || e.Status().MemoryReserved != 0) {
				time.Sleep(time.Millisecond)
			}
			if st := e.Status(); len(st.Abandoned) != 0 || st.MemoryReserved != 0 {
				t.Errorf("after the setup ended: abandoned %+v, reserved %d; want none", st.Abandoned, st.MemoryReserved)
			}
		})
	}
}

// The abandoned error still reads as its cause: the job is Cancelled with
// the cancel's reason, not failed.
func TestAnAbandonedSetupsJobIsCancelledNotFailed(t *testing.T) {
	noLeak(t)
	r := &setupRunner{started: make(chan string, 4), setupDone: make(chan struct{})}
	close(r.setupDone)
	e := newEngine(t, []prover.Runner{r})
	j := mustSubmit(t, e, req("setup", priority.Normal))
	<-r.started
	_ = e.Cancel(j.ID)
	info, _ := await(t, e, j.ID)
	if info.State != StateCancelled || !errors.Is(info.Err, ErrCancelled) {
		t.Errorf("job %v, %v; want Cancelled wrapping ErrCancelled", info.State, info.Err)
	}
	if st := e.Status(); st.Failed != 0 || st.Cancelled != 1 {
		t.Errorf("totals failed %d cancelled %d, want 0 and 1", st.Failed, st.Cancelled)
	}
}
