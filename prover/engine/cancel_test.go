package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/frontend"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// heldBackend is the CPU backend whose ComputeH, while hold is set, says
// so on started and waits for one value on (or the close of) release
// whatever its context says: a device step that cannot stop. When keys is
// set it is a KeyPreparer whose preparation (a keys.preload span, as the
// CUDA backend's) waits for keysRelease: a key load that outlasts the
// synthesis beside it.
type heldBackend struct {
	*cpu.Backend
	tp          trace.TracerProvider
	hold        atomic.Bool
	started     chan string
	release     chan struct{}
	keysStarted chan struct{}
	keysRelease chan struct{}
	keysOnce    sync.Once
}

func (b *heldBackend) ComputeH(ctx context.Context, keyID string, domain *fft.Domain, a, bb, c []fr.Element) error {
	if b.hold.Load() {
		b.started <- "compute_h"
		<-b.release
	}
	return b.Backend.ComputeH(ctx, keyID, domain, a, bb, c)
}

func (b *heldBackend) PrepareKey(ctx context.Context, _ string, _ gnarkgroth16.ProvingKey) error {
	if b.keysRelease == nil {
		return nil
	}
	_, span := b.tp.Tracer("test").Start(ctx, semconv.SpanKeysPreload)
	defer span.End()
	b.keysOnce.Do(func() { close(b.keysStarted) })
	<-b.keysRelease
	return nil
}

// realProver is a CPU Prover over a heldBackend, recording into tp, its
// keys cached in dir; closed when the test ends.
func realProver(t *testing.T, tp trace.TracerProvider, dir string, be *heldBackend) *prover.Prover {
	t.Helper()
	name := fmt.Sprintf("test-engine-held-%d", time.Now().UnixNano())
	be.tp = tp
	backend.Register(name, func(_ context.Context, o backend.Options) (backend.Backend, error) {
		be.Backend = cpu.New(o.TracerProvider)
		return be, nil
	})
	rel, err := buffer.NewReleaser(buffer.ReleaseAsync, buffer.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	p, err := prover.New(context.Background(), name, prover.WithTracerProvider(tp), prover.WithKeyCacheDir(dir), prover.WithReleaser(rel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close(context.Background())
		rel.Close(context.Background())
	})
	return p
}

// traceOf returns the recorded spans of the trace of job info.
func traceOf(exp *tracetest.InMemoryExporter, info JobInfo) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID().String() == info.TraceID {
			out = append(out, s)
		}
	}
	return out
}

func countNamed(spans []tracetest.SpanStub, name string) int {
	n := 0
	for _, s := range spans {
		if s.Name == name {
			n++
		}
	}
	return n
}

// cancelledEvent returns the cuzk.job.state of the "cancelled" event of
// span s, "" when it has none.
func cancelledEvent(s tracetest.SpanStub) string {
	for _, ev := range s.Events {
		if ev.Name != "cancelled" {
			continue
		}
		for _, a := range ev.Attributes {
			if a.Key == semconv.KeyJobState {
				return a.Value.AsString()
			}
		}
	}
	return ""
}

// A job cancelled while its device prove runs (a step that cannot stop)
// ends CANCELLED when the prove returns: no pipeline.serialize, no
// proof.verify, its buffers released (buffer.release), its engine.job
// span in error (canceled) with a "cancelled" event naming PROVING; the
// counters say so, and the next job is proved and verified as ever. A
// cancel after a job succeeded changes nothing.
func TestACancelDuringTheProveSkipsSerializeAndVerify(t *testing.T) {
	noLeak(t)
	exp, tp := recorder(t)
	be := &heldBackend{started: make(chan string, 1), release: make(chan struct{})}
	be.hold.Store(true)
	p := realProver(t, tp, t.TempDir(), be)
	e := newEngine(t, []prover.Runner{p}, WithSynthesisWorkers(1), WithTracerProvider(tp))

	r := req("cancelled", priority.Normal)
	r.Verify = true
	a := mustSubmit(t, e, r)
	<-be.started
	if err := e.Cancel(a.ID); err != nil {
		t.Fatal(err)
	}
	be.hold.Store(false)
	close(be.release)
	info, err := await(t, e, a.ID)
	if info.State != StateCancelled || !errors.Is(err, ErrCancelled) || info.Result != nil {
		t.Fatalf("cancelled while proving: %v %v (result %v), want CANCELLED", info.State, err, info.Result)
	}
	st := e.Status()
	if st.Cancelled != 1 || st.Succeeded != 0 || st.Failed != 0 || st.Workers[0].Cancelled != 1 {
		t.Errorf("counters: cancelled %d succeeded %d failed %d, worker's cancelled %d; want 1 cancelled",
			st.Cancelled, st.Succeeded, st.Failed, st.Workers[0].Cancelled)
	}

	r = req("next", priority.Normal)
	r.Verify = true
	b := mustSubmit(t, e, r)
	next, err := await(t, e, b.ID)
	if err != nil || next.State != StateSucceeded || !next.Result.Verified {
		t.Fatalf("the next job: %v %v", next.State, err)
	}
	// Cancelled job a's spans ended before b's did (b ran after a's end).
	spans := traceOf(exp, a)
	for _, n := range []string{semconv.SpanPipelineSerialize, semconv.SpanProofVerify} {
		if c := countNamed(spans, n); c != 0 {
			t.Errorf("%d %s spans in the cancelled job's trace, want none", c, n)
		}
	}
	for _, n := range []string{semconv.SpanPipelineProve, semconv.SpanBufferRelease} {
		if countNamed(spans, n) == 0 {
			t.Errorf("no %s span in the cancelled job's trace", n)
		}
	}
	for _, s := range spans {
		if s.Name != semconv.SpanEngineJob {
			continue
		}
		if s.Status.Code != codes.Error || cancelledEvent(s) != "PROVING" {
			t.Errorf("engine.job: status %v, cancelled event %q; want an error and PROVING", s.Status, cancelledEvent(s))
		}
		for _, kv := range s.Attributes {
			if kv.Key == semconv.KeyErrorType && kv.Value.AsString() != semconv.ErrorTypeCanceled {
				t.Errorf("engine.job error.type %q, want %q", kv.Value.AsString(), semconv.ErrorTypeCanceled)
			}
		}
	}
	if spans := traceOf(exp, next); countNamed(spans, semconv.SpanPipelineSerialize) != 1 || countNamed(spans, semconv.SpanProofVerify) != 1 {
		t.Errorf("the next job's trace: want one pipeline.serialize and one proof.verify")
	}

	// Delivered: a cancel changes nothing.
	if err := e.Cancel(b.ID); !errors.Is(err, ErrJobFinished) {
		t.Errorf("cancel of a succeeded job: %v, want ErrJobFinished", err)
	}
	if info := e.Job(b.ID); info.State != StateSucceeded || info.Result == nil || len(info.Result.Proof) == 0 {
		t.Errorf("a succeeded job after a cancel: %v (result %v)", info.State, info.Result)
	}
	if st := e.Status(); st.Cancelled != 1 || st.Succeeded != 1 {
		t.Errorf("after a cancel of a succeeded job: cancelled %d succeeded %d, want 1 and 1", st.Cancelled, st.Succeeded)
	}
}

// The "cancelled" event names the stage each cancelled job was in:
// proving, waiting for the device, synthesizing, queued.
func TestTheCancelledEventNamesTheStage(t *testing.T) {
	noLeak(t)
	exp, tp := recorder(t)
	f := newStagedFake()
	f.gate()
	e := newPipelined(t, f, 1, 1, WithTracerProvider(tp))
	proving, waiting, synthesizing := f.fillStages(t, e)
	queued := mustSubmit(t, e, req("queued", priority.Normal))
	want := map[string]string{proving.ID: "PROVING", waiting.ID: "WAITING_DEVICE", synthesizing.ID: "SYNTHESIZING", queued.ID: "QUEUED"}
	for _, j := range []JobInfo{queued, synthesizing, waiting, proving} {
		if err := e.Cancel(j.ID); err != nil {
			t.Fatal(err)
		}
		if info, err := await(t, e, j.ID); info.State != StateCancelled || !errors.Is(err, ErrCancelled) {
			t.Fatalf("%s: %v %v, want CANCELLED", j.RequestID, info.State, err)
		}
	}
	for _, j := range []JobInfo{queued, synthesizing, waiting, proving} {
		var got []string
		for _, s := range traceOf(exp, j) {
			if s.Name == semconv.SpanEngineJob {
				got = append(got, cancelledEvent(s))
			}
		}
		if len(got) != 1 || got[0] != want[j.ID] {
			t.Errorf("%s: cancelled events %q, want %s", j.RequestID, got, want[j.ID])
		}
	}
	if st := e.Status(); st.Cancelled != 4 {
		t.Errorf("cancelled %d, want 4", st.Cancelled)
	}
}

// A circuit's first synthesis that fails while the keys' load it started
// runs beside it (a slow keys.preload) ends its job FAILED only once the
// load ended, which goes on for the jobs after it: every span of the
// trace ends within its parent, and the next job proves with those keys.
func TestAFailedFirstSynthesisEndsItsJobAfterItsKeyLoad(t *testing.T) {
	noLeak(t)
	dir := t.TempDir()
	// The keys into the cache first, by another Prover: the engine's then
	// reads them beside its first synthesis.
	maker := realProver(t, sdktrace.NewTracerProvider(), dir, &heldBackend{})
	if err := maker.LoadCircuit(context.Background(), "mulchain", 256); err != nil {
		t.Fatal(err)
	}
	exp, tp := recorder(t)
	be := &heldBackend{keysStarted: make(chan struct{}), keysRelease: make(chan struct{})}
	p := realProver(t, tp, dir, be)
	e := newEngine(t, []prover.Runner{p}, WithSynthesisWorkers(1), WithTracerProvider(tp))

	bad := req("unsatisfied", priority.Normal)
	w, err := frontend.NewWitness(&circuits.MulChain{X: 2, Out: 2}, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	if bad.Witness, err = w.MarshalBinary(); err != nil {
		t.Fatal(err)
	}
	a := mustSubmit(t, e, bad)
	<-be.keysStarted
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	info, err := e.Await(ctx, a.ID)
	cancel()
	if err == nil || info.State.Finished() {
		t.Errorf("the job ended %v (%v) while the keys it started loading were still being prepared", info.State, err)
	}
	close(be.keysRelease)
	if info, err := await(t, e, a.ID); info.State != StateFailed || !errors.Is(err, groth16.ErrUnsatisfied) {
		t.Fatalf("unsatisfied witness: %v %v, want FAILED", info.State, err)
	}
	spans := traceOf(exp, a)
	if countNamed(spans, semconv.SpanKeysPreload) != 1 || countNamed(spans, semconv.SpanKeyLoad) == 0 {
		t.Fatalf("the failed job's trace lacks its keys' load (keys.load, keys.preload): %d spans", len(spans))
	}
	spantest.ChildrenEndInTheirParents(t, spans)

	if info, err := await(t, e, mustSubmit(t, e, req("next", priority.Normal)).ID); err != nil || info.State != StateSucceeded {
		t.Fatalf("the next job: %v %v", info.State, err)
	}
}

// An engine whose devices never got ready leaves no goroutine behind once
// shut down.
func TestShutdownOfAnEngineNeverReadyLeavesNothingRunning(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	e, err := New([]Worker{{Name: "w", Runner: f}}, WithSynthesisWorkers(1), WithReady(make(chan struct{})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// firstCostFake is a prover.StagedRunner whose syntheses report their own
// time (prover.SynthesisTimer) and whose first synthesis carries a large
// one-time cost: on "load", 300 ms outside its own time (a compile and
// key load, in the wall time only); on "plan", 300 ms of its own time
// flagged as a first solve (synthesize.plan). "none" has neither.
type firstCostFake struct {
	oneTime       string
	synth, device time.Duration
	n             atomic.Int32
}

type firstCostSyn struct {
	timing prover.SynthesisTiming
	freed  chan struct{}
}

func (s *firstCostSyn) Release(context.Context) error           { return nil }
func (s *firstCostSyn) Freed() <-chan struct{}                  { return s.freed }
func (s *firstCostSyn) SynthesisTiming() prover.SynthesisTiming { return s.timing }
func (s *firstCostSyn) Prove(ctx context.Context, dev prover.Device) (*prover.Result, error) {
	return proveOnFake(ctx, s, dev)
}

func (f *firstCostFake) Synthesize(context.Context, *prover.Request) (prover.Synthesized, error) {
	s := &firstCostSyn{timing: prover.SynthesisTiming{Synthesis: f.synth}, freed: make(chan struct{})}
	close(s.freed)
	wall := f.synth
	if f.n.Add(1) == 1 && f.oneTime != "none" {
		const cost = 300 * time.Millisecond
		wall += cost
		if f.oneTime == "plan" {
			s.timing = prover.SynthesisTiming{Synthesis: f.synth + cost, FirstSolve: true}
		}
	}
	time.Sleep(wall)
	return s, nil
}

func (f *firstCostFake) Proving() prover.Proving { return prover.Proving{} }

func (f *firstCostFake) proveOn(context.Context, prover.Synthesized) (*prover.Result, error) {
	time.Sleep(f.device)
	return &prover.Result{Proof: []byte("p"), Backend: "fake"}, nil
}

func (f *firstCostFake) Run(ctx context.Context, r *prover.Request) (*prover.Result, error) {
	s, err := f.Synthesize(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.Prove(ctx, f)
}

// issue 26: the tuner measures a synthesis by its own time, so a first
// synthesis that carried one-time work (the circuit's compile and keys'
// load, or its solver's plan) leaves the choice where a batch without it
// puts it. Synthesis 40 ms against a 100 ms device: one synthesis at a
// time keeps the device fed (1.25/0.9 x 40/100 = 0.56, whatever the
// device's sleeps overshoot); the 340 ms first sample, averaged in, would
// have asked for two (0.3 weight: 90 ms after five more).
func TestTheTunersChoiceIgnoresAFirstSynthesissOneTimeCost(t *testing.T) {
	noLeak(t)
	chosen := map[string]Tuning{}
	for _, oneTime := range []string{"none", "load", "plan"} {
		f := &firstCostFake{oneTime: oneTime, synth: 40 * time.Millisecond, device: 100 * time.Millisecond}
		tuner := NewTuner(4, 1, 4)
		e := newEngine(t, []prover.Runner{f}, WithSynthesisWorkers(1), WithTuner(tuner))
		for i := range 6 {
			// One at a time: each synthesis measured before the next.
			if info, err := e.Prove(context.Background(), req(fmt.Sprintf("%s-%d", oneTime, i), priority.Normal)); err != nil {
				t.Fatalf("%s: job %d: %v %v", oneTime, i, info.State, err)
			}
			if i == 0 && oneTime == "plan" {
				// Shown as measured, not yet used.
				tu := e.Status().Tuning[0]
				if tu.SynthesisMs != 340 || tu.Workers != 2 || tu.Synthesized != 1 ||
					!strings.Contains(tu.Reason, "not measured yet") || !strings.Contains(tu.Reason, "340 ms") {
					t.Errorf("after a first solve alone: %+v, want its 340 ms shown, cores/2 = 2 workers and why", tu)
				}
			}
		}
		chosen[oneTime] = e.Status().Tuning[0]
	}
	for oneTime, tu := range chosen {
		if tu.Workers != 1 || tu.SynthesisMs != 40 || tu.Synthesized != 6 || tu.Proved != 6 || !strings.Contains(tu.Reason, "synthesis 40 ms") {
			t.Errorf("first synthesis with one-time cost %q: tuning %+v, want 1 worker from synthesis 40 ms, 6 measured", oneTime, tu)
		}
	}
}
