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

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// interval is when one stage of one request ran, by the fake's clock.
type interval struct {
	id         string
	start, end time.Time
}

func (a interval) overlaps(b interval) bool { return a.start.Before(b.end) && b.start.Before(a.end) }

// stagedFake is a prover.StagedRunner whose stages sleep, wait for gates,
// fail as the request asks, and record when they ran. Its "memory" is the
// bytes it really holds: taken when a synthesis starts, given back when a
// synthesized proof's Freed closes (releaseDelay after its prove or
// Release, as an async releaser frees late).
type stagedFake struct {
	synthDelay, proveDelay, releaseDelay time.Duration
	synthGate, proveGate                 chan struct{} // when non-nil, each stage waits for one value (or a close)
	synthStarted, proveStarted           chan string   // when non-nil, receive the request id at each start
	bytes                                uint64        // held per proof
	tp                                   trace.TracerProvider

	mu                 sync.Mutex
	synth, prove       []interval
	live, peakLive     uint64
	proving, peakProve int
	released           map[string]bool // Release called before a prove
	freedAt            map[string]time.Time
}

type fakeSyn struct {
	f        *stagedFake
	id       string
	witness  string
	once     sync.Once
	freed    chan struct{}
	released bool
}

func (s *fakeSyn) Freed() <-chan struct{} { return s.freed }

func (s *fakeSyn) Prove(ctx context.Context, dev prover.Device) (*prover.Result, error) {
	return proveOnFake(ctx, s, dev)
}

// fakeDevice is the device side of this package's fake runners: their
// Synthesized proves on the Device it is given by calling its proveOn,
// so that the device decides (faults, gates, records) as a real one's
// backend would.
type fakeDevice interface {
	prover.Device
	proveOn(ctx context.Context, s prover.Synthesized) (*prover.Result, error)
}

// proveOnFake is the Prove of the fakes' Synthesized: dev's proveOn.
func proveOnFake(ctx context.Context, s prover.Synthesized, dev prover.Device) (*prover.Result, error) {
	d, ok := dev.(fakeDevice)
	if !ok {
		return nil, fmt.Errorf("a fake's synthesized proof proved on %T, not a fake device", dev)
	}
	return d.proveOn(ctx, s)
}

func (s *fakeSyn) Release(ctx context.Context) error {
	s.free(ctx, true)
	return nil
}

// free gives the proof's memory back after releaseDelay; its first caller
// decides whether it was released unproved.
func (s *fakeSyn) free(ctx context.Context, unproved bool) {
	s.once.Do(func() {
		f := s.f
		if f.tp != nil {
			_, span := f.tp.Tracer("test").Start(ctx, semconv.SpanBufferRelease)
			span.End()
		}
		f.mu.Lock()
		if unproved {
			f.released[s.id] = true
		}
		f.mu.Unlock()
		go func() {
			time.Sleep(f.releaseDelay)
			f.mu.Lock()
			f.live -= f.bytes
			f.freedAt[s.id] = time.Now()
			f.mu.Unlock()
			close(s.freed)
		}()
	})
}

func newStagedFake() *stagedFake {
	return &stagedFake{released: map[string]bool{}, freedAt: map[string]time.Time{}}
}

// gate makes each synthesis and prove of f report its start and wait for a
// value on (or the close of) its gate.
func (f *stagedFake) gate() {
	f.synthGate, f.proveGate = make(chan struct{}), make(chan struct{})
	f.synthStarted, f.proveStarted = make(chan string, 8), make(chan string, 8)
}

// fillStages submits the jobs "proving", "waiting" and "synthesizing" to e
// over a gated f and steps them until the first proves (held at its gate),
// the second is synthesized and waits for the device, and the third is
// synthesizing (held at its gate).
func (f *stagedFake) fillStages(t *testing.T, e *Engine) (proving, waiting, synthesizing JobInfo) {
	t.Helper()
	proving = mustSubmit(t, e, req("proving", priority.Normal))
	<-f.synthStarted
	f.synthGate <- struct{}{}
	<-f.proveStarted
	waiting = mustSubmit(t, e, req("waiting", priority.Normal))
	<-f.synthStarted
	f.synthGate <- struct{}{}
	synthesizing = mustSubmit(t, e, req("synthesizing", priority.Normal))
	<-f.synthStarted
	return proving, waiting, synthesizing
}

func wait(ctx context.Context, gate chan struct{}, d time.Duration) error {
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (f *stagedFake) Synthesize(ctx context.Context, req *prover.Request) (prover.Synthesized, error) {
	start := time.Now()
	f.mu.Lock()
	f.live += f.bytes
	f.peakLive = max(f.peakLive, f.live)
	f.mu.Unlock()
	if f.synthStarted != nil {
		f.synthStarted <- req.RequestID
	}
	if f.tp != nil {
		var span trace.Span
		_, span = f.tp.Tracer("test").Start(ctx, semconv.SpanPipelineSynthesize)
		defer span.End()
	}
	s := &fakeSyn{f: f, id: req.RequestID, witness: string(req.Witness), freed: make(chan struct{})}
	err := wait(ctx, f.synthGate, f.synthDelay)
	if err == nil && string(req.Witness) == "unsat" {
		err = fmt.Errorf("%w: constraint 7 is not satisfied", groth16.ErrUnsatisfied)
	}
	f.mu.Lock()
	f.synth = append(f.synth, interval{req.RequestID, start, time.Now()})
	f.mu.Unlock()
	if err != nil {
		s.free(ctx, false)
		return nil, err
	}
	return s, nil
}

func (f *stagedFake) Proving() prover.Proving { return prover.Proving{} }

func (f *stagedFake) proveOn(ctx context.Context, sz prover.Synthesized) (*prover.Result, error) {
	s := sz.(*fakeSyn)
	defer s.free(ctx, false)
	start := time.Now()
	f.mu.Lock()
	f.proving++
	f.peakProve = max(f.peakProve, f.proving)
	f.mu.Unlock()
	if f.proveStarted != nil {
		f.proveStarted <- s.id
	}
	err := wait(ctx, f.proveGate, f.proveDelay)
	f.mu.Lock()
	f.proving--
	f.prove = append(f.prove, interval{s.id, start, time.Now()})
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	proof := "proof:" + s.id
	if s.witness != "" {
		proof += ":" + s.witness
	}
	return &prover.Result{Proof: []byte(proof), Backend: "fake"}, nil
}

func (f *stagedFake) Run(ctx context.Context, req *prover.Request) (*prover.Result, error) {
	s, err := f.Synthesize(ctx, req)
	if err != nil {
		return nil, err
	}
	return s.Prove(ctx, f)
}

func (f *stagedFake) order(stage *[]interval) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, iv := range *stage {
		ids = append(ids, iv.id)
	}
	return ids
}

func newPipelined(t *testing.T, f *stagedFake, devices, synth int, opts ...Option) *Engine {
	t.Helper()
	var runners []prover.Runner
	for range devices {
		runners = append(runners, f)
	}
	return newEngine(t, runners, append([]Option{WithSynthesisWorkers(synth)}, opts...)...)
}

func TestNewRefusesPipelineWithoutStagedRunner(t *testing.T) {
	if _, err := New([]Worker{{Name: "a", Runner: &fakeRunner{}}}, WithSynthesisWorkers(2)); err == nil || !strings.Contains(err.Error(), "StagedRunner") {
		t.Errorf("pipelined engine over a plain Runner: %v, want an error naming StagedRunner", err)
	}
}

func TestSynthesisOverlapsTheDevice(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	f.synthDelay, f.proveDelay = 60*time.Millisecond, 60*time.Millisecond
	e := newPipelined(t, f, 1, 2)
	start := time.Now()
	ids := submitN(t, e, "j", 6)
	awaitAll(t, e, ids)
	wall := time.Since(start)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.peakProve != 1 {
		t.Errorf("%d proofs on the one device at once, want 1", f.peakProve)
	}
	overlaps := 0
	for _, s := range f.synth {
		for _, p := range f.prove {
			if s.id != p.id && s.overlaps(p) {
				overlaps++
			}
		}
	}
	// Serial: 6 × (60 + 60) ms = 720 ms. Pipelined the device is the
	// bound: about 60 + 6 × 60 = 420 ms, 42 % less. The serial time is
	// taken from what the stages took in this run: under load their
	// sleeps overshoot (a wall of 658-670 ms failed a fixed 650 ms bound
	// with 7 to 9 overlaps).
	var serial time.Duration
	for _, iv := range append(append([]interval(nil), f.synth...), f.prove...) {
		serial += iv.end.Sub(iv.start)
	}
	if overlaps < 4 || wall > serial*85/100 {
		t.Errorf("synthesis overlapped a prove %d times, wall %v against %v serial; want the next syntheses to run while the device proves, "+
			"saving at least 15 %%", overlaps, wall, serial)
	}
	// Two synthesis slots: some two syntheses ran at once.
	two := false
	for i, a := range f.synth {
		for _, b := range f.synth[i+1:] {
			two = two || a.overlaps(b)
		}
	}
	if !two {
		t.Error("no two syntheses ran at once with 2 synthesis workers")
	}
}

func TestSerialEngineDoesNotOverlap(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	f.synthDelay, f.proveDelay = 20*time.Millisecond, 20*time.Millisecond
	e := newPipelined(t, f, 1, 0)
	ids := submitN(t, e, "j", 4)
	awaitAll(t, e, ids)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.synth {
		for _, p := range f.prove {
			if s.id != p.id && s.overlaps(p) {
				t.Fatalf("serial engine: synthesis of %s overlapped the prove of %s", s.id, p.id)
			}
		}
	}
}

func TestPrioritiesHoldAtBothStages(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	f.gate()
	e := newPipelined(t, f, 1, 1)
	var ids []string
	ids = append(ids, mustSubmit(t, e, req("first", priority.Normal)).ID)
	<-f.synthStarted
	f.synthGate <- struct{}{}
	<-f.proveStarted // first holds the device until proveGate closes
	ids = append(ids, mustSubmit(t, e, req("low1", priority.Low)).ID)
	<-f.synthStarted
	ids = append(ids, mustSubmit(t, e, req("low2", priority.Low)).ID)
	ids = append(ids, mustSubmit(t, e, req("crit", priority.Critical)).ID)
	for range 3 {
		f.synthGate <- struct{}{}
	}
	// All three wait for the device now.
	deadline := time.Now().Add(5 * time.Second)
	for e.Status().DeviceQueueDepth() != 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if st := e.Status(); st.WaitingDevice[priority.Low] != 2 || st.WaitingDevice[priority.Critical] != 1 {
		t.Fatalf("device queue %v, want 2 LOW and 1 CRITICAL", st.WaitingDevice)
	}
	if got := e.Job(ids[3]).State; got != StateWaitingDevice {
		t.Errorf("crit is %v, want WAITING_DEVICE", got)
	}
	close(f.proveGate)
	awaitAll(t, e, ids)
	if got, want := strings.Join(f.order(&f.synth), ","), "first,low1,crit,low2"; got != want {
		t.Errorf("synthesis order %s, want %s (CRITICAL synthesized first of those queued)", got, want)
	}
	if got, want := strings.Join(f.order(&f.prove), ","), "first,crit,low1,low2"; got != want {
		t.Errorf("device order %s, want %s (CRITICAL takes the device next)", got, want)
	}
}

// budgetOf returns a memory budget option of budget bytes, each proof
// estimated at per bytes, with held bytes of keys.
func budgetOf(budget, per, held uint64) Option {
	return WithMemoryBudget(budget, func(*prover.Request) (uint64, error) { return per, nil },
		func() uint64 { return held })
}

func TestBudgetNeverExceededUnderHundredConcurrentJobs(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	f.synthDelay, f.proveDelay, f.releaseDelay = 3*time.Millisecond, 2*time.Millisecond, 4*time.Millisecond
	f.bytes = 100 << 20
	const held, budget = 50 << 20, 450 << 20 // room for 4 proofs beside the keys
	e := newPipelined(t, f, 2, 8, budgetOf(budget, f.bytes, held), WithQueueSize(200))
	var wg sync.WaitGroup
	var failures atomic.Int64
	var waited atomic.Int64
	for i := range 100 {
		wg.Go(func() {
			info, err := e.Prove(context.Background(), req(fmt.Sprintf("j%d", i), priority.All[i%len(priority.All)]))
			if err != nil {
				failures.Add(1)
				t.Error(err)
				return
			}
			if info.Result.Timings.MemoryWait > 0 {
				waited.Add(1)
			}
		})
	}
	wg.Wait()
	f.mu.Lock()
	peakLive := f.peakLive
	f.mu.Unlock()
	if peakLive+held > budget {
		t.Errorf("the runner held %d MiB at its peak beside %d MiB of keys, over the %d MiB budget", peakLive>>20, held>>20, budget>>20)
	}
	st := e.Status()
	if st.MemoryPeak > budget || st.MemoryPeak < 2*f.bytes {
		t.Errorf("engine's peak %d MiB: want within the budget %d MiB and using it", st.MemoryPeak>>20, budget>>20)
	}
	if waited.Load() == 0 {
		t.Error("no job waited for the budget: the test does not exercise it")
	}
	// Every reservation is given back once the buffers are freed.
	deadline := time.Now().Add(2 * time.Second)
	for e.Status().MemoryReserved != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if r := e.Status().MemoryReserved; r != 0 {
		t.Errorf("%d bytes still reserved after every job ended and freed", r)
	}
}

func TestBudgetCountsBuffersUntilFreed(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	f.releaseDelay = 150 * time.Millisecond
	f.bytes = 10
	e := newPipelined(t, f, 1, 2, budgetOf(15, 10, 0))
	a := mustSubmit(t, e, req("a", priority.Normal))
	if _, err := await(t, e, a.ID); err != nil {
		t.Fatal(err)
	}
	b := mustSubmit(t, e, req("b", priority.Normal))
	if _, err := await(t, e, b.ID); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	freedA := f.freedAt["a"]
	var startB time.Time
	for _, s := range f.synth {
		if s.id == "b" {
			startB = s.start
		}
	}
	f.mu.Unlock()
	if startB.Before(freedA) {
		t.Errorf("b's synthesis began %v before a's buffers were freed: the budget let go of a too early", freedA.Sub(startB))
	}
	if w := e.Job(b.ID).Result.Timings.MemoryWait; w < 50*time.Millisecond {
		t.Errorf("b's MemoryWait %v, want most of a's release delay", w)
	}
}

func TestJobLargerThanTheBudgetIsRefusedAtSubmit(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	e := newPipelined(t, f, 1, 1, budgetOf(3<<30, 2<<30, 1536<<20))
	_, err := e.Submit(context.Background(), req("big", priority.Normal))
	if !errors.Is(err, ErrOverBudget) {
		t.Fatalf("job over the budget: %v, want ErrOverBudget", err)
	}
	for _, want := range []string{"2.0 GiB", "3.0 GiB", "1.5 GiB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	if _, ok := e.JobByRequest("big"); ok {
		t.Error("a refused job was kept")
	}
}

func TestOverBudgetRefusalShowsSmallBudgetsAndSaysWhatToRaise(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	// --memory-budget 1KiB: a budget below 1 MiB must not print as 0.0 MiB.
	e := newPipelined(t, f, 1, 1, budgetOf(1<<10, 17<<20, 0))
	_, err := e.Submit(context.Background(), req("big", priority.Normal))
	if !errors.Is(err, ErrOverBudget) {
		t.Fatalf("job over the budget: %v, want ErrOverBudget", err)
	}
	for _, want := range []string{"17.0 MiB", "the budget is 1.0 KiB", "0 B of it held", "--memory-budget"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %s", err, want)
		}
	}
}

func TestCancelInEveryStage(t *testing.T) {
	noLeak(t)
	exp, tp := recorder(t)
	f := newStagedFake()
	f.tp = tp
	f.bytes = 10
	f.gate()
	// Room for three proofs: proving, waiting for the device,
	// synthesizing; the fourth waits for memory, the fifth in the queue
	// (two synthesis slots).
	e := newPipelined(t, f, 1, 2, budgetOf(30, 10, 0), WithTracerProvider(tp))
	proving, waiting, synthesizing := f.fillStages(t, e)
	memory := mustSubmit(t, e, req("memory", priority.Normal))
	queued := mustSubmit(t, e, req("queued", priority.Normal))
	deadline := time.Now().Add(5 * time.Second)
	for st := e.Status(); (st.WaitingMemory != 1 || st.DeviceQueueDepth() != 1) && time.Now().Before(deadline); st = e.Status() {
		time.Sleep(time.Millisecond)
	}
	want := map[string]State{proving.ID: StateProving, waiting.ID: StateWaitingDevice,
		synthesizing.ID: StateSynthesizing, memory.ID: StateQueued, queued.ID: StateQueued}
	for id, s := range want {
		if got := e.Job(id).State; got != s {
			t.Fatalf("%s is %v, want %v", e.Job(id).RequestID, got, s)
		}
	}
	if st := e.Status(); st.WaitingMemory != 1 || st.MemoryReserved != 30 {
		t.Fatalf("status: %d waiting for memory, %d reserved; want 1 and 30", st.WaitingMemory, st.MemoryReserved)
	}

	for _, id := range []string{queued.ID, memory.ID, waiting.ID, synthesizing.ID, proving.ID} {
		if err := e.Cancel(id); err != nil {
			t.Fatalf("cancel %s: %v", e.Job(id).RequestID, err)
		}
		info, err := await(t, e, id)
		if !errors.Is(err, ErrCancelled) || info.State != StateCancelled {
			t.Errorf("%s after cancel: %v %v", info.RequestID, info.State, err)
		}
	}
	f.mu.Lock()
	if !f.released["waiting"] {
		t.Error("the synthesized job waiting for the device was not released")
	}
	f.mu.Unlock()
	deadline = time.Now().Add(2 * time.Second)
	for e.Status().MemoryReserved != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if r := e.Status().MemoryReserved; r != 0 {
		t.Errorf("%d bytes reserved after every job was cancelled", r)
	}
	// The released buffers' spans are under the waiting job's engine.job.
	var jobSpan trace.SpanID
	for _, s := range exp.GetSpans() {
		if s.Name == semconv.SpanEngineJob && hasAttr(s, semconv.KeyRequestID, "waiting") {
			jobSpan = s.SpanContext.SpanID()
		}
	}
	found := false
	for _, s := range exp.GetSpans() {
		found = found || s.Name == semconv.SpanBufferRelease && s.Parent.SpanID() == jobSpan
	}
	if !found {
		t.Error("no buffer.release span under the cancelled waiting job's engine.job")
	}
}

func hasAttr(s tracetest.SpanStub, k attribute.Key, v string) bool {
	for _, a := range s.Attributes {
		if a.Key == k && a.Value.Emit() == v {
			return true
		}
	}
	return false
}

func TestFailingWitnessFailsOnlyItsJob(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	e := newPipelined(t, f, 1, 2)
	bad := req("bad", priority.Normal)
	bad.Witness = []byte("unsat")
	ids := submitN(t, e, "good", 3)
	badInfo := mustSubmit(t, e, bad)
	if _, err := await(t, e, badInfo.ID); !errors.Is(err, groth16.ErrUnsatisfied) {
		t.Errorf("unsatisfied witness: %v, want ErrUnsatisfied", err)
	}
	for _, id := range ids {
		if info, err := await(t, e, id); err != nil || info.State != StateSucceeded {
			t.Errorf("%s beside a failing job: %v %v", info.RequestID, info.State, err)
		}
	}
}

func TestFullStageNeverBlocksSubmit(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	f.synthGate, f.proveGate = make(chan struct{}), make(chan struct{})
	f.synthStarted = make(chan string, 8)
	e := newPipelined(t, f, 1, 1, WithQueueSize(2))
	mustSubmit(t, e, req("s", priority.Normal))
	<-f.synthStarted
	mustSubmit(t, e, req("q1", priority.Normal))
	mustSubmit(t, e, req("q2", priority.Normal))
	start := time.Now()
	_, err := e.Submit(context.Background(), req("q3", priority.Normal))
	if !errors.Is(err, ErrQueueFull) || time.Since(start) > 100*time.Millisecond {
		t.Errorf("submit to a full engine: %v after %v, want ErrQueueFull at once", err, time.Since(start))
	}
	close(f.synthGate)
	close(f.proveGate)
}

// The queue size bounds the proofs synthesized and waiting for a device as
// it bounds the queued ones: with the device held and one proof waiting
// for it, a queue of 1 refuses the next submit, naming the count and the
// size, though the synthesis worker is free to take it (--queue-size 1
// refused none of four submits on a CPU daemon: each left the queue for
// synthesis at once and waited before the device).
func TestQueueSizeBoundsTheProofsWaitingForTheDevice(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	f.gate()
	e := newPipelined(t, f, 1, 1, WithQueueSize(1))
	mustSubmit(t, e, req("proving", priority.Normal))
	<-f.synthStarted
	f.synthGate <- struct{}{}
	<-f.proveStarted
	waiting := mustSubmit(t, e, req("waiting", priority.Normal))
	<-f.synthStarted
	f.synthGate <- struct{}{}
	for deadline := time.Now().Add(5 * time.Second); e.Status().DeviceQueueDepth() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the second job never waited for the device: %+v", e.Status())
		}
	}
	_, err := e.Submit(context.Background(), req("third", priority.Critical))
	if !errors.Is(err, ErrQueueFull) || !strings.Contains(err.Error(), "1 proof waiting (1 for a device), queue size 1") {
		t.Fatalf("a third job beside one waiting for the device: %v, want ErrQueueFull naming 1 waiting for a device and queue size 1", err)
	}
	if st := e.Status(); st.QueueCapacity != 1 {
		t.Errorf("QueueCapacity %d, want 1", st.QueueCapacity)
	}
	close(f.proveGate)
	close(f.synthGate)
	if _, err := await(t, e, waiting.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Submit(context.Background(), req("third", priority.Critical)); err != nil {
		t.Errorf("once none waits: %v", err)
	}
}

func TestShutdownFinishesStartedStagesAndCancelsTheRest(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	f.gate()
	e := newPipelined(t, f, 1, 1)
	proving, waiting, synthesizing := f.fillStages(t, e)
	queued := mustSubmit(t, e, req("queued", priority.Normal))

	done := make(chan error, 1)
	go func() { done <- e.Shutdown(context.Background()) }()
	if info, err := await(t, e, queued.ID); !errors.Is(err, ErrClosed) || info.State != StateCancelled {
		t.Errorf("queued at shutdown: %v %v, want cancelled at once", info.State, err)
	}
	f.synthGate <- struct{}{}
	close(f.proveGate)
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	for _, id := range []string{proving.ID, waiting.ID, synthesizing.ID} {
		if info, err := await(t, e, id); err != nil || info.State != StateSucceeded {
			t.Errorf("%s started before shutdown: %v %v, want it finished", info.RequestID, info.State, err)
		}
	}
}

func TestShutdownDeadlineCancelsEveryStage(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	f.gate()
	f.bytes = 1
	e := newPipelined(t, f, 1, 1, budgetOf(10, 1, 0))
	proving, waiting, synthesizing := f.fillStages(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown: %v, want the deadline", err)
	}
	for _, id := range []string{proving.ID, waiting.ID, synthesizing.ID} {
		if info, err := await(t, e, id); !errors.Is(err, ErrClosed) || info.State != StateCancelled {
			t.Errorf("%s at the shutdown deadline: %v %v, want cancelled", info.RequestID, info.State, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.released["waiting"] {
		t.Error("the synthesized job waiting for the device was not released at the deadline")
	}
}

func TestWarmupHoldsTheDeviceNotSynthesis(t *testing.T) {
	noLeak(t)
	exp, tp := recorder(t)
	f := newStagedFake()
	ready := make(chan struct{})
	e := newPipelined(t, f, 1, 2, WithReady(ready), WithTracerProvider(tp))
	a := mustSubmit(t, e, req("a", priority.Normal))
	deadline := time.Now().Add(5 * time.Second)
	for e.Job(a.ID).State != StateWaitingDevice && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if st := e.Status(); st.Ready || e.Job(a.ID).State != StateWaitingDevice {
		t.Fatalf("before ready: ready %v, job %v; want not ready and the job synthesized, waiting", st.Ready, e.Job(a.ID).State)
	}
	time.Sleep(20 * time.Millisecond)
	close(ready)
	if _, err := await(t, e, a.ID); err != nil {
		t.Fatal(err)
	}
	if !e.Status().Ready {
		t.Error("status not ready after the channel closed")
	}
	// The span ends on the goroutine that saw readiness, which may come
	// after the job's own end.
	var warm *tracetest.SpanStub
	for deadline := time.Now().Add(2 * time.Second); warm == nil && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, s := range exp.GetSpans() {
			if s.Name == semconv.SpanEngineWarmup {
				warm = &s
			}
		}
	}
	if warm == nil || warm.EndTime.Sub(warm.StartTime) < 15*time.Millisecond {
		t.Fatalf("engine.warmup span %+v, want one covering the wait for readiness", warm)
	}
}

func spanByName(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func TestPipelineSpanTree(t *testing.T) {
	noLeak(t)
	exp, tp := recorder(t)
	f := newStagedFake()
	f.tp, f.bytes, f.releaseDelay = tp, 10, 30*time.Millisecond
	f.proveDelay = 20 * time.Millisecond
	e := newPipelined(t, f, 1, 2, budgetOf(10, 10, 0), WithTracerProvider(tp))
	a := mustSubmit(t, e, req("a", priority.Normal))
	b := mustSubmit(t, e, req("b", priority.Normal))
	for _, id := range []string{a.ID, b.ID} {
		if _, err := await(t, e, id); err != nil {
			t.Fatal(err)
		}
	}
	spans := exp.GetSpans()
	jobs := map[trace.SpanID]string{}
	for _, s := range spanByName(spans, semconv.SpanEngineJob) {
		for _, kv := range s.Attributes {
			if kv.Key == semconv.KeyRequestID {
				jobs[s.SpanContext.SpanID()] = kv.Value.AsString()
			}
		}
	}
	count := map[string]int{}
	for _, name := range []string{semconv.SpanEngineQueue, semconv.SpanEngineBudget, semconv.SpanPipelineSynthesize, semconv.SpanGPUQueue} {
		for _, s := range spanByName(spans, name) {
			if _, ok := jobs[s.Parent.SpanID()]; !ok {
				t.Errorf("%s is not a child of an engine.job", name)
			}
			count[name]++
		}
	}
	// One waits for the other's memory (which, the synthesis workers
	// decide): one engine.budget span, of that job.
	if count[semconv.SpanEngineQueue] != 2 || count[semconv.SpanGPUQueue] != 2 || count[semconv.SpanEngineBudget] != 1 {
		t.Errorf("span counts %v, want engine.queue and gpu.queue per job and one engine.budget", count)
	}
	for _, s := range spanByName(spans, semconv.SpanEngineBudget) {
		waiter := jobs[s.Parent.SpanID()]
		if !hasAttr(s, semconv.KeyMemoryBudget, "10") {
			t.Errorf("engine.budget of %q with %v, want the budget on it", waiter, s.Attributes)
		}
		info, _ := e.JobByRequest(waiter)
		if res := info.Result; res == nil || res.Timings.MemoryWait <= 0 || res.Timings.Total < res.Timings.MemoryWait {
			t.Errorf("the waiting job %q has timings %+v: want the memory wait inside the total", waiter, res)
		}
	}
}

func partReq(id string, witnesses ...string) *prover.Request {
	r := req(id, priority.Normal)
	for _, w := range witnesses {
		r.Partitions = append(r.Partitions, []byte(w))
	}
	return r
}

func TestMultiPartitionRequestFlowsThroughTheStages(t *testing.T) {
	noLeak(t)
	exp, tp := recorder(t)
	f := newStagedFake()
	f.tp = tp
	f.synthDelay, f.proveDelay = 40*time.Millisecond, 40*time.Millisecond
	e := newPipelined(t, f, 1, 2, WithTracerProvider(tp))
	r := partReq("porep", "w0", "w1", "w2", "w3")
	info, err := e.Prove(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if info.Partitions != 4 || len(info.Result.Partitions) != 4 {
		t.Fatalf("%d partitions, %d proofs; want 4 and 4", info.Partitions, len(info.Result.Partitions))
	}
	// Each partition's proof is its own, in order.
	for k, p := range info.Result.Partitions {
		if string(p.Proof) != fmt.Sprintf("proof:porep:w%d", k) {
			t.Errorf("partition %d proof %q", k, p.Proof)
		}
	}
	f.mu.Lock()
	overlap := false
	for i, s := range f.synth {
		for j, p := range f.prove {
			overlap = overlap || i != j && s.overlaps(p)
		}
	}
	f.mu.Unlock()
	if !overlap {
		t.Error("no partition was synthesized while another proved")
	}
	spans := exp.GetSpans()
	jobSpans := spanByName(spans, semconv.SpanEngineJob)
	if len(jobSpans) != 1 {
		t.Fatalf("%d engine.job spans, want 1 for the request", len(jobSpans))
	}
	parts := spanByName(spans, semconv.SpanEnginePartition)
	seen := map[int64]bool{}
	for _, p := range parts {
		if p.Parent.SpanID() != jobSpans[0].SpanContext.SpanID() {
			t.Error("engine.partition not under the request's engine.job")
		}
		for _, kv := range p.Attributes {
			if kv.Key == semconv.KeyPartitionIndex {
				seen[kv.Value.AsInt64()] = true
			}
		}
	}
	if len(parts) != 4 || len(seen) != 4 {
		t.Errorf("%d engine.partition spans with indices %v, want 4 with 0..3", len(parts), seen)
	}
	partIDs := map[trace.SpanID]bool{}
	for _, p := range parts {
		partIDs[p.SpanContext.SpanID()] = true
	}
	for _, name := range []string{semconv.SpanEngineQueue, semconv.SpanPipelineSynthesize, semconv.SpanGPUQueue} {
		for _, s := range spanByName(spans, name) {
			if !partIDs[s.Parent.SpanID()] {
				t.Errorf("%s not under an engine.partition", name)
			}
		}
	}
}

func TestOneFailingPartitionFailsTheRequestNamingIt(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	f.synthDelay = 10 * time.Millisecond
	e := newPipelined(t, f, 1, 1)
	info, err := e.Prove(context.Background(), partReq("porep", "w0", "w1", "unsat", "w3", "w4"))
	if !errors.Is(err, groth16.ErrUnsatisfied) || !strings.Contains(err.Error(), "partition 2") || info.State != StateFailed {
		t.Fatalf("request with a bad partition: %v %v, want FAILED naming partition 2", info.State, err)
	}
	// The partitions after it were not all proved: the failure stopped them.
	f.mu.Lock()
	proved := len(f.prove)
	f.mu.Unlock()
	if proved >= 4 {
		t.Errorf("%d partitions proved after partition 2 failed, want the rest stopped", proved)
	}
	if st := e.Status(); st.Failed != 1 || st.Cancelled != 0 || st.Succeeded != 0 {
		t.Errorf("counts %d/%d/%d, want the one request counted failed", st.Succeeded, st.Failed, st.Cancelled)
	}
}

func TestMultiPartitionOnASerialEngine(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	e := newPipelined(t, f, 2, 0)
	info, err := e.Prove(context.Background(), partReq("p", "a", "b", "c"))
	if err != nil || len(info.Result.Partitions) != 3 {
		t.Fatalf("serial multi-partition: %v, %d proofs", err, len(info.Result.Partitions))
	}
	// Same id and witnesses: the same job; other witnesses: a conflict.
	if again, err := e.Submit(context.Background(), partReq("p", "a", "b", "c")); err != nil || !again.Existing {
		t.Errorf("resubmit: %+v %v", again, err)
	}
	if _, err := e.Submit(context.Background(), partReq("p", "a", "b", "x")); !errors.Is(err, ErrRequestConflict) {
		t.Errorf("resubmit with another partition: %v, want ErrRequestConflict", err)
	}
}

// faultyFake is a stagedFake whose device stage faults (backend.ErrDeviceFault)
// on the workers named in faulty, once they have proved after proofs.
type faultyFake struct {
	*stagedFake
	name string
	mu   *sync.Mutex
	bad  map[string]bool // worker names whose device faults
	hold chan struct{}   // when not nil, a prove waits for it to close
}

func (f *faultyFake) proveOn(ctx context.Context, sz prover.Synthesized) (*prover.Result, error) {
	if f.hold != nil {
		<-f.hold
	}
	f.mu.Lock()
	bad := f.bad[f.name]
	f.mu.Unlock()
	if bad {
		sz.Release(ctx)
		return nil, fmt.Errorf("cuda: launch msm: %w: an illegal memory access was encountered", backend.ErrDeviceFault)
	}
	res, err := f.stagedFake.proveOn(ctx, sz)
	if res != nil {
		res.Backend = f.name
	}
	return res, err
}

func (f *faultyFake) Run(ctx context.Context, req *prover.Request) (*prover.Result, error) {
	s, err := f.Synthesize(ctx, req)
	if err != nil {
		return nil, err
	}
	return s.Prove(ctx, f)
}

func faultyEngine(t *testing.T, synth int, bad map[string]bool, hold chan struct{}, opts ...Option) (*Engine, *stagedFake) {
	t.Helper()
	f := newStagedFake()
	f.proveDelay = 5 * time.Millisecond
	mu := &sync.Mutex{}
	var ws []Worker
	for _, n := range []string{"gpu0", "gpu1"} {
		ws = append(ws, Worker{Name: n, Runner: &faultyFake{stagedFake: f, name: n, mu: mu, bad: bad, hold: hold}})
	}
	return newEngineOf(t, ws, append([]Option{WithSynthesisWorkers(synth)}, opts...)...), f
}

func TestDeviceFaultMarksTheWorkerAndRequeuesItsJob(t *testing.T) {
	for _, synth := range []int{0, 2} {
		t.Run(fmt.Sprintf("synthesis-workers=%d", synth), func(t *testing.T) {
			noLeak(t)
			var faults []string
			var mu sync.Mutex
			hook := WithFaultHook(func(w string, err error) {
				mu.Lock()
				defer mu.Unlock()
				faults = append(faults, w+": "+err.Error())
			})
			e, _ := faultyEngine(t, synth, map[string]bool{"gpu0": true}, nil, hook)
			ids := submitN(t, e, "j", 6)
			for _, id := range ids {
				info, err := await(t, e, id)
				if err != nil || info.Result.Backend != "gpu1" {
					t.Fatalf("%s: %v on %v, want proved on the healthy gpu1", info.RequestID, err, info.Result)
				}
			}
			st := e.Status()
			if st.Workers[0].Healthy || !strings.Contains(st.Workers[0].Fault, "illegal memory access") || !st.Workers[1].Healthy {
				t.Errorf("workers %+v: want gpu0 unhealthy with its fault, gpu1 healthy", st.Workers)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(faults) != 1 || !strings.HasPrefix(faults[0], "gpu0: ") {
				t.Errorf("fault hook calls %v, want one for gpu0", faults)
			}
		})
	}
}

func TestLastDeviceFaultFailsTheWaitingJobsClearly(t *testing.T) {
	noLeak(t)
	// The devices fault only once every job is queued: otherwise both can
	// fault on j0 before j1 is submitted, and Submit refuses j1 (tested last).
	hold := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(hold) }) }
	defer release() // a failed submit still lets the workers stop
	e, _ := faultyEngine(t, 1, map[string]bool{"gpu0": true, "gpu1": true}, hold)
	ids := submitN(t, e, "j", 4)
	release()
	for _, id := range ids {
		info, err := await(t, e, id)
		if !errors.Is(err, ErrNoWorker) || !strings.Contains(err.Error(), "faulted") {
			t.Errorf("%s with every device faulted: %v %v, want ErrNoWorker naming the fault", info.RequestID, info.State, err)
		}
		if info.State != StateFailed {
			t.Errorf("%s is %v, want FAILED", info.RequestID, info.State)
		}
	}
	if _, err := e.Submit(context.Background(), req("late", priority.Normal)); !errors.Is(err, ErrNoWorker) {
		t.Errorf("submit with no healthy device: %v, want ErrNoWorker", err)
	}
}

func TestSerialEngineHoldsTheBudgetToo(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	f.bytes, f.synthDelay, f.proveDelay = 10, 5*time.Millisecond, 5*time.Millisecond
	// Two workers, room for one proof: they never run two at once.
	e := newPipelined(t, f, 2, 0, budgetOf(15, 10, 0))
	ids := submitN(t, e, "j", 6)
	awaitAll(t, e, ids)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.peakLive > 10 {
		t.Errorf("the runner held %d bytes at once under a budget of 15 (10 per proof)", f.peakLive)
	}
}

// submitN submits n requests of Normal priority with the request ids
// prefix0, prefix1, ... and gives their job ids in that order.
func submitN(t *testing.T, e *Engine, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = mustSubmit(t, e, req(fmt.Sprintf("%s%d", prefix, i), priority.Normal)).ID
	}
	return ids
}

// awaitAll waits for each job and fails the test at the first that fails.
func awaitAll(t *testing.T, e *Engine, ids []string) {
	t.Helper()
	for _, id := range ids {
		if _, err := await(t, e, id); err != nil {
			t.Fatal(err)
		}
	}
}

// Status.Waiting lists the jobs not started yet in the order the engine
// takes them up: a job holding a synthesis slot while it waits for the
// memory budget first (MemoryWait), then the queue's, CRITICAL first and
// FIFO within a priority; a job leaves the list once it starts.
func TestStatusListsWaitingJobsInTheOrderTheyStart(t *testing.T) {
	noLeak(t)
	f := newStagedFake()
	f.gate()
	f.bytes = 10
	// Room for one proof in memory, one synthesis slot: the first job
	// holds the budget while it proves, the second holds the slot waiting
	// for memory, the rest stay in the queue.
	e := newPipelined(t, f, 1, 1, budgetOf(15, 10, 0))
	first := mustSubmit(t, e, req("first", priority.Normal))
	<-f.synthStarted
	f.synthGate <- struct{}{}
	<-f.proveStarted
	mem := mustSubmit(t, e, req("mem", priority.Low))
	deadline := time.Now().Add(5 * time.Second)
	for e.Status().WaitingMemory != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	var ids []string
	for _, s := range []struct {
		id string
		p  priority.Priority
	}{{"low", priority.Low}, {"n1", priority.Normal}, {"c1", priority.Critical}, {"n2", priority.Normal}} {
		ids = append(ids, mustSubmit(t, e, req(s.id, s.p)).ID)
	}
	var got []string
	for _, w := range e.Status().Waiting {
		if w.State != StateQueued || w.Submitted.IsZero() {
			t.Errorf("waiting job %s: state %v, submitted %v", w.RequestID, w.State, w.Submitted)
		}
		s := w.RequestID + ":" + w.Priority.String()
		if w.MemoryWait {
			s += ":memory"
		}
		got = append(got, s)
	}
	if want := "mem:LOW:memory c1:CRITICAL n1:NORMAL n2:NORMAL low:LOW"; strings.Join(got, " ") != want {
		t.Errorf("waiting %q, want %q", strings.Join(got, " "), want)
	}
	close(f.synthGate)
	close(f.proveGate)
	awaitAll(t, e, append([]string{first.ID, mem.ID}, ids...))
	if w := e.Status().Waiting; len(w) != 0 {
		t.Errorf("after every job ended, waiting %+v", w)
	}
}
