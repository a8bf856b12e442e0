package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
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

// waitAbandoned polls until e lists n abandoned works (5 s at most).
func waitAbandoned(t *testing.T, e *Engine, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(e.Status().Abandoned) != n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := len(e.Status().Abandoned); got != n {
		t.Fatalf("Status.Abandoned has %d works, want %d", got, n)
	}
}

// stubOf returns the only span named name in spans (one job's trace); it
// fails t when there is not exactly one.
func stubOf(t *testing.T, spans []tracetest.SpanStub, name string) tracetest.SpanStub {
	t.Helper()
	found := spantest.NamedStubs(spans, name)
	if len(found) != 1 {
		t.Fatalf("%d %s spans in the trace, want 1", len(found), name)
	}
	return found[0]
}

// The work a cancelled job's runner left running is a span of its own in
// that job's trace, engine.abandoned under its engine.job, from the
// job's end until the work really ended (not the cancel), naming the job,
// the step and what it holds; the next job, which waited in engine.queue
// for the slot it held, says so: a "waiting for abandoned work" event
// naming the job and step, and the time waited (cuzk.abandoned.wait_ms).
// Serial and pipelined, the next job queued before or after the cancel.
func TestAbandonedWorkIsASpanAndTheJobItDelaysSaysWhy(t *testing.T) {
	const hold = 150 * time.Millisecond
	for _, c := range []struct {
		name   string
		opts   []Option
		worker string
		before bool // the next job queued before the cancel
	}{
		{"serial", nil, "w0", false},
		{"serial/queued-before", nil, "w0", true},
		{"pipelined", []Option{WithSynthesisWorkers(1)}, "", false},
		{"pipelined/queued-before", []Option{WithSynthesisWorkers(1)}, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			noLeak(t)
			exp, tp := recorder(t)
			r := &setupRunner{started: make(chan string, 4), setupDone: make(chan struct{})}
			e := newEngine(t, []prover.Runner{r}, append(c.opts, WithTracerProvider(tp))...)
			j := mustSubmit(t, e, req("setup", priority.Normal))
			<-r.started
			var next JobInfo
			if c.before {
				next = mustSubmit(t, e, req("next", priority.Normal))
			}
			if err := e.Cancel(j.ID); err != nil {
				t.Fatal(err)
			}
			if info, _ := await(t, e, j.ID); info.State != StateCancelled {
				t.Fatalf("cancelled job: %v, want Cancelled at once", info.State)
			}
			waitAbandoned(t, e, 1)
			if !c.before {
				next = mustSubmit(t, e, req("next", priority.Normal))
			}
			if spans := spantest.NamedStubs(exp.GetSpans(), semconv.SpanEngineAbandoned); len(spans) != 0 {
				t.Fatalf("engine.abandoned ended while its work still ran")
			}
			time.Sleep(hold) // the setup runs on
			workEnd := time.Now()
			close(r.setupDone)
			if info, err := await(t, e, next.ID); err != nil || info.State != StateSucceeded {
				t.Fatalf("next job after the setup ended: %v, %v", info.State, err)
			}
			<-r.started
			waitAbandoned(t, e, 0)

			spans := traceOf(exp, j)
			job := stubOf(t, spans, semconv.SpanEngineJob)
			ab := stubOf(t, spans, semconv.SpanEngineAbandoned)
			if ab.Parent.SpanID() != job.SpanContext.SpanID() {
				t.Errorf("engine.abandoned's parent is %s, want the cancelled job's engine.job %s", ab.Parent.SpanID(), job.SpanContext.SpanID())
			}
			if ab.StartTime.After(job.EndTime) || ab.StartTime.Before(job.StartTime) {
				t.Errorf("engine.abandoned starts at %v, want when its job ended (%v)", ab.StartTime, job.EndTime)
			}
			if ab.EndTime.Before(workEnd) {
				t.Errorf("engine.abandoned ended %v before the work did (its job ended at the cancel)", workEnd.Sub(ab.EndTime))
			}
			if d := ab.EndTime.Sub(ab.StartTime); d < hold {
				t.Errorf("engine.abandoned lasts %v, want at least the %v the setup ran on", d, hold)
			}
			attrs := spantest.StubAttrs(ab)
			if attrs[semconv.KeyJobID].AsString() != j.ID || attrs[semconv.KeyAbandonedStep].AsString() != "keys.setup" ||
				attrs[semconv.KeyAbandonedSynthesisSlot].AsBool() != (c.worker == "") ||
				attrs[semconv.KeyAbandonedWorker].AsString() != c.worker {
				t.Errorf("engine.abandoned attributes %v, want job %s, keys.setup, synthesis slot %v, worker %q",
					ab.Attributes, j.ID, c.worker == "", c.worker)
			}

			queue := stubOf(t, traceOf(exp, next), semconv.SpanEngineQueue)
			var events []string
			for _, ev := range queue.Events {
				if ev.Name != semconv.EventWaitingForAbandoned {
					continue
				}
				m := map[attribute.Key]string{}
				for _, a := range ev.Attributes {
					m[a.Key] = a.Value.AsString()
				}
				events = append(events, m[semconv.KeyAbandonedJobID]+" "+m[semconv.KeyAbandonedStep])
				if ev.Time.Before(queue.StartTime) || ev.Time.After(ab.StartTime.Add(time.Second)) {
					t.Errorf("event at %v, want when the wait for the work began (%v)", ev.Time, ab.StartTime)
				}
			}
			if want := j.ID + " keys.setup"; len(events) != 1 || events[0] != want {
				t.Errorf("next job's engine.queue events %q, want one %q naming the abandoned work", events, want)
			}
			qa := spantest.StubAttrs(queue)
			waited := qa[semconv.KeyAbandonedWaitMS].AsFloat64()
			queued := float64(queue.EndTime.Sub(queue.StartTime)) / float64(time.Millisecond)
			if waited < float64(hold/time.Millisecond) || waited > queued {
				t.Errorf("next job's cuzk.abandoned.wait_ms %.3f, want at least %v and at most its %.3f ms in the queue", waited, hold, queued)
			}
			if qa[semconv.KeyAbandonedJobID].AsString() != j.ID || qa[semconv.KeyAbandonedStep].AsString() != "keys.setup" {
				t.Errorf("next job's engine.queue names abandoned work %v", queue.Attributes)
			}
		})
	}
}

// A job that waited in the queue behind a job at work, with no work
// abandoned, names none.
func TestAQueueWaitWithoutAbandonedWorkNamesNone(t *testing.T) {
	exp, tp := recorder(t)
	r, e, _ := busyEngine(t, "a", WithTracerProvider(tp))
	b := mustSubmit(t, e, req("b", priority.Normal))
	time.Sleep(20 * time.Millisecond)
	close(r.gate)
	if _, err := await(t, e, b.ID); err != nil {
		t.Fatal(err)
	}
	queue := stubOf(t, traceOf(exp, b), semconv.SpanEngineQueue)
	qa := spantest.StubAttrs(queue)
	if _, ok := qa[semconv.KeyAbandonedWaitMS]; ok || len(queue.Events) != 0 || queue.EndTime.Sub(queue.StartTime) < 20*time.Millisecond {
		t.Errorf("b's engine.queue (%v): events %v, attributes %v; want a wait naming no abandoned work",
			queue.EndTime.Sub(queue.StartTime), queue.Events, queue.Attributes)
	}
}

// A shutdown whose cancel grace passes while abandoned work still runs
// ends that work's engine.abandoned span with a "still running at
// shutdown" event, so the process's last export has it; the work's end
// afterwards changes nothing.
func TestShutdownEndsTheSpanOfAbandonedWorkStillRunning(t *testing.T) {
	noLeak(t)
	exp, tp := recorder(t)
	r := &setupRunner{started: make(chan string, 4), setupDone: make(chan struct{})}
	e := newEngine(t, []prover.Runner{r}, WithTracerProvider(tp), WithCancelGrace(20*time.Millisecond))
	j := mustSubmit(t, e, req("setup", priority.Normal))
	<-r.started
	_ = e.Cancel(j.ID)
	waitAbandoned(t, e, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Shutdown(ctx); err == nil {
		t.Error("Shutdown returned nil while abandoned work held a worker")
	}
	ab := stubOf(t, traceOf(exp, j), semconv.SpanEngineAbandoned)
	if len(ab.Events) != 1 || ab.Events[0].Name != "still running at shutdown" {
		t.Errorf("engine.abandoned events %v, want one saying it still ran at shutdown", ab.Events)
	}
	close(r.setupDone)
	waitAbandoned(t, e, 0)
	if n := len(spantest.NamedStubs(exp.GetSpans(), semconv.SpanEngineAbandoned)); n != 1 {
		t.Errorf("%d engine.abandoned spans exported, want the one ended at shutdown", n)
	}
}
