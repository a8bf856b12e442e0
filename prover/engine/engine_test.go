package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// fakeRunner records the requests it runs, in order, and behaves as its
// fields say.
type fakeRunner struct {
	mu    sync.Mutex
	ran   []string
	gate  chan struct{} // when non-nil, Run waits for it (or ctx)
	delay time.Duration
	err   error
	// started receives the request id when Run begins, if non-nil.
	started chan string
	// ignoreCtx makes Run wait for gate even when ctx is cancelled.
	ignoreCtx bool
	span      string // when set, Run records a child span of this name
	tp        trace.TracerProvider
}

func (f *fakeRunner) Run(ctx context.Context, req *prover.Request) (*prover.Result, error) {
	f.mu.Lock()
	f.ran = append(f.ran, req.RequestID)
	f.mu.Unlock()
	if f.started != nil {
		f.started <- req.RequestID
	}
	if f.span != "" {
		var s trace.Span
		_, s = f.tp.Tracer("test").Start(ctx, f.span)
		defer s.End()
	}
	if f.gate != nil {
		if f.ignoreCtx {
			<-f.gate
		} else {
			select {
			case <-f.gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return &prover.Result{Proof: []byte("proof:" + req.RequestID), Backend: "fake", Verified: req.Verify}, nil
}

func (f *fakeRunner) order() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ran...)
}

// noLeak fails the test if goroutines started during it are still alive
// shortly after it (engine workers, timers, hooks).
func noLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("goroutine leak: %d before, %d after\n%s", before, n, buf)
		}
	})
}

func newEngine(t *testing.T, runners []prover.Runner, opts ...Option) *Engine {
	t.Helper()
	var ws []Worker
	for i, r := range runners {
		ws = append(ws, Worker{Name: fmt.Sprintf("w%d", i), Runner: r})
	}
	return newEngineOf(t, ws, opts...)
}

// newEngineOf starts an engine on workers ws, shut down (5 s) when the
// test ends.
func newEngineOf(t *testing.T, ws []Worker, opts ...Option) *Engine {
	t.Helper()
	e, err := New(ws, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
	return e
}

// busyEngine starts a one-worker engine (with opts) whose runner holds
// each Run until r.gate closes or the run's context ends, submits the
// Normal job id and returns once the runner began it: the worker is busy,
// later jobs queue. The test fails if goroutines outlive it (noLeak).
func busyEngine(t *testing.T, id string, opts ...Option) (*fakeRunner, *Engine, JobInfo) {
	t.Helper()
	noLeak(t)
	r := &fakeRunner{gate: make(chan struct{}), started: make(chan string, 16)}
	e := newEngine(t, []prover.Runner{r}, opts...)
	j := mustSubmit(t, e, req(id, priority.Normal))
	<-r.started
	return r, e, j
}

// recorder is a provider whose spans end in exp, shut down when the test
// ends.
func recorder(t *testing.T) (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return exp, tp
}

func req(id string, p priority.Priority) *prover.Request {
	return &prover.Request{RequestID: id, Circuit: "mulchain", Constraints: 256, Priority: p}
}

func mustSubmit(t *testing.T, e *Engine, r *prover.Request) JobInfo {
	t.Helper()
	info, err := e.Submit(context.Background(), r)
	if err != nil {
		t.Fatalf("submit %s: %v", r.RequestID, err)
	}
	return info
}

func await(t *testing.T, e *Engine, id string) (JobInfo, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return e.Await(ctx, id)
}

func TestNewRejectsBadWorkers(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("no workers: want error")
	}
	if _, err := New([]Worker{{Name: "a"}}); err == nil {
		t.Error("nil runner: want error")
	}
	r := &fakeRunner{}
	if _, err := New([]Worker{{Name: "a", Runner: r}, {Name: "a", Runner: r}}); err == nil {
		t.Error("duplicate names: want error")
	}
}

func TestCriticalOvertakesAndFIFOWithinPriority(t *testing.T) {
	r, e, _ := busyEngine(t, "first")
	var last JobInfo
	for _, s := range []struct {
		id string
		p  priority.Priority
	}{
		{"low", priority.Low}, {"n1", priority.Normal}, {"h1", priority.High},
		{"c1", priority.Critical}, {"n2", priority.Normal}, {"c2", priority.Critical},
	} {
		last = mustSubmit(t, e, req(s.id, s.p))
	}
	st := e.Status()
	if want := map[priority.Priority]int{priority.Low: 1, priority.Normal: 2, priority.High: 1, priority.Critical: 2}; !maps.Equal(st.Queued, want) {
		t.Errorf("queued per priority %v, want %v", st.Queued, want)
	}
	if len(st.Running) != 1 || st.Running[0].RequestID != "first" {
		t.Errorf("running %+v, want the first job", st.Running)
	}
	close(r.gate)
	if _, err := await(t, e, last.ID); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		<-r.started
	}
	if info, _ := e.JobByRequest("low"); true {
		if _, err := await(t, e, info.ID); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.Join(r.order(), " ")
	if want := "first c1 c2 h1 n1 n2 low"; got != want {
		t.Errorf("run order %q, want %q", got, want)
	}
}

func TestSubmitIsIdempotentByRequestID(t *testing.T) {
	noLeak(t)
	r := &fakeRunner{}
	e := newEngine(t, []prover.Runner{r})
	a := mustSubmit(t, e, req("same", priority.Normal))
	b := mustSubmit(t, e, req("same", priority.Critical))
	if a.ID != b.ID || a.Existing || !b.Existing {
		t.Fatalf("first %+v second %+v: want one job, second marked existing", a, b)
	}
	if _, err := await(t, e, a.ID); err != nil {
		t.Fatal(err)
	}
	// Finished and kept: still the same job, not proved again.
	c, err := e.Prove(context.Background(), req("same", priority.Normal))
	if err != nil || c.ID != a.ID || c.Result == nil || string(c.Result.Proof) != "proof:same" {
		t.Fatalf("prove after finish: %+v, %v", c, err)
	}
	if n := len(r.order()); n != 1 {
		t.Errorf("runner ran %d times, want 1", n)
	}
	// The same id for another proof is refused, and the first job stays.
	for _, change := range []func(*prover.Request){
		func(r *prover.Request) { r.Constraints = 512 },
		func(r *prover.Request) { r.Circuit = "merkle" },
		func(r *prover.Request) { r.Witness = []byte{1} },
	} {
		other := req("same", priority.Normal)
		change(other)
		if info, err := e.Submit(context.Background(), other); !errors.Is(err, ErrRequestConflict) || info.ID != a.ID {
			t.Errorf("same id, other proof %+v: %v (job %s), want ErrRequestConflict naming job %s", other, err, info.ID, a.ID)
		}
	}
	if n := len(r.order()); n != 1 {
		t.Errorf("runner ran %d times after conflicting submits, want 1", n)
	}
	// The refusal names the witnesses truly: an empty one is the sample
	// (its size is the runner's to know), not "a witness of 0 bytes".
	for _, tc := range []struct {
		change func(*prover.Request)
		want   string
	}{
		{func(r *prover.Request) { r.Constraints = 512 }, `"same" is mulchain with 256 constraints (the sample witness), not mulchain with 512 (the sample witness)`},
		{func(r *prover.Request) { r.Witness = []byte{1, 2} }, `(the sample witness), not mulchain with 256 (witness of 2 bytes)`},
		{func(r *prover.Request) { r.Partitions = make([][]byte, 3) }, `not mulchain with 256 (3 partitions of the sample witness)`},
		{func(r *prover.Request) { r.Partitions = [][]byte{nil, {1, 2, 3}} }, `(2 partitions, 1 of the sample witness, the others' witnesses of 3 bytes in all)`},
	} {
		other := req("same", priority.Normal)
		tc.change(other)
		if _, err := e.Submit(context.Background(), other); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "0 bytes") {
			t.Errorf("same id, other proof %+v: %v, want it to say %q", other, err, tc.want)
		}
	}
	if _, err := e.Submit(context.Background(), req("", priority.Normal)); !errors.Is(err, ErrEmptyRequestID) {
		t.Errorf("empty id: %v, want ErrEmptyRequestID", err)
	}
	if _, err := e.Submit(context.Background(), nil); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("nil request: %v, want ErrInvalidRequest", err)
	}
	if _, err := e.Submit(context.Background(), req("p", priority.Priority(9))); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("priority 9: %v, want ErrInvalidRequest", err)
	}
}

func TestValidatorRefusesBeforeQueueing(t *testing.T) {
	noLeak(t)
	r := &fakeRunner{}
	bad := errors.New("witness too short")
	e := newEngine(t, []prover.Runner{r}, WithValidator(func(q *prover.Request) error {
		if q.Circuit == "bad" {
			return bad
		}
		return nil
	}))
	q := req("v", priority.Normal)
	q.Circuit = "bad"
	if _, err := e.Submit(context.Background(), q); !errors.Is(err, bad) || !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("got %v, want the validator's error wrapped with ErrInvalidRequest", err)
	}
	if _, ok := e.JobByRequest("v"); ok {
		t.Error("a refused request made a job")
	}
	if _, err := e.Prove(context.Background(), req("v", priority.Normal)); err != nil {
		t.Errorf("same id after refusal: %v", err)
	}
}

func TestCancelQueuedJobNeverRuns(t *testing.T) {
	r, e, _ := busyEngine(t, "busy")
	q := mustSubmit(t, e, req("queued", priority.Normal))
	if err := e.Cancel(q.ID); err != nil {
		t.Fatal(err)
	}
	info, err := await(t, e, q.ID)
	if !errors.Is(err, ErrCancelled) || info.State != StateCancelled {
		t.Fatalf("cancelled queued job: state %v err %v", info.State, err)
	}
	if d := e.Status().QueueDepth(); d != 0 {
		t.Errorf("queue depth %d after cancel, want 0", d)
	}
	if err := e.Cancel(q.ID); !errors.Is(err, ErrJobFinished) {
		t.Errorf("second cancel: %v, want ErrJobFinished", err)
	}
	if err := e.Cancel("nope"); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("unknown job: %v, want ErrUnknownJob", err)
	}
	close(r.gate)
	b, _ := e.JobByRequest("busy")
	if _, err := await(t, e, b.ID); err != nil {
		t.Fatal(err)
	}
	if got := r.order(); len(got) != 1 {
		t.Errorf("runner ran %v, want only the busy job", got)
	}
	if st := e.Status(); st.Cancelled != 1 || st.Succeeded != 1 {
		t.Errorf("totals %+v, want 1 cancelled, 1 succeeded", st)
	}
}

func TestCancelRunningJobCancelsItsContext(t *testing.T) {
	r, e, j := busyEngine(t, "run")
	if err := e.Cancel(j.ID); err != nil {
		t.Fatal(err)
	}
	info, err := await(t, e, j.ID)
	if !errors.Is(err, ErrCancelled) || info.State != StateCancelled || info.Result != nil {
		t.Fatalf("state %v err %v result %v: want cancelled", info.State, err, info.Result)
	}
	if info.Worker != "w0" {
		t.Errorf("worker %q, want w0", info.Worker)
	}
	// The worker is free again.
	close(r.gate)
	if info, err := e.Prove(context.Background(), req("next", priority.Normal)); err != nil || info.Worker != "w0" {
		t.Errorf("next job after a cancel: %+v %v", info, err)
	}
}

func TestFullQueueIsRefused(t *testing.T) {
	r, e, _ := busyEngine(t, "run", WithQueueSize(2))
	mustSubmit(t, e, req("q1", priority.Normal))
	mustSubmit(t, e, req("q2", priority.Low))
	if _, err := e.Submit(context.Background(), req("q3", priority.Critical)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third queued: %v, want ErrQueueFull", err)
	}
	// A duplicate of a queued request is not new work: still answered.
	if info, err := e.Submit(context.Background(), req("q1", priority.Normal)); err != nil || !info.Existing {
		t.Errorf("duplicate while full: %+v %v", info, err)
	}
	close(r.gate)
	q2, _ := e.JobByRequest("q2")
	if _, err := await(t, e, q2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Prove(context.Background(), req("q3", priority.Critical)); err != nil {
		t.Errorf("after the queue drained: %v", err)
	}
}

func TestAwaitTimeoutLeavesJobRunning(t *testing.T) {
	r, e, j := busyEngine(t, "slow")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	info, err := e.Await(ctx, j.ID)
	if !errors.Is(err, context.DeadlineExceeded) || info.State != StateRunning {
		t.Fatalf("await timeout: state %v err %v", info.State, err)
	}
	close(r.gate)
	if info, err := await(t, e, j.ID); err != nil || info.State != StateSucceeded {
		t.Fatalf("after timeout the job should finish: %v %v", info.State, err)
	}
	if _, err := await(t, e, "job-none"); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("await unknown: %v", err)
	}
}

func TestFailedAndPanickingRunsFail(t *testing.T) {
	noLeak(t)
	boom := errors.New("synthesis: unsatisfied constraint")
	e := newEngine(t, []prover.Runner{&fakeRunner{err: boom}})
	info, err := e.Prove(context.Background(), req("f", priority.Normal))
	if !errors.Is(err, boom) || info.State != StateFailed {
		t.Fatalf("failed run: %v %v", info.State, err)
	}
	p := newEngine(t, []prover.Runner{panicRunner{}})
	info, err = p.Prove(context.Background(), req("p", priority.Normal))
	if err == nil || !strings.Contains(err.Error(), "panicked") || info.State != StateFailed {
		t.Fatalf("panicking run: %v %v", info.State, err)
	}
	if st := p.Status(); st.Failed != 1 {
		t.Errorf("failed total %d, want 1", st.Failed)
	}
	// The worker survived the panic.
	p2, err := p.Prove(context.Background(), req("p2", priority.Normal))
	if err == nil || p2.Worker != "w0" {
		t.Errorf("worker after panic: %+v %v", p2, err)
	}
}

type panicRunner struct{}

func (panicRunner) Run(context.Context, *prover.Request) (*prover.Result, error) { panic("bad") }

func TestTimingsAndResult(t *testing.T) {
	r, e, _ := busyEngine(t, "a")
	b := mustSubmit(t, e, req("b", priority.Normal))
	time.Sleep(30 * time.Millisecond)
	close(r.gate)
	info, err := await(t, e, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	tm := info.Result.Timings
	if tm.QueueWait < 30*time.Millisecond || tm.Total < tm.QueueWait {
		t.Errorf("timings %+v: queue wait should cover the 30 ms wait and be within total", tm)
	}
	if info.Result.TraceID != info.TraceID || info.Result.Backend != "fake" {
		t.Errorf("result %+v", info.Result)
	}
}

func TestWorkersSpreadJobs(t *testing.T) {
	noLeak(t)
	// Each runner waits until both have started: with a single worker busy
	// this would block forever, so finishing proves both GPUs worked at once.
	var barrier sync.WaitGroup
	barrier.Add(2)
	both := make(chan struct{})
	go func() { barrier.Wait(); close(both) }()
	mk := func() *spreadRunner { return &spreadRunner{arrive: barrier.Done, both: both} }
	g0, g1 := mk(), mk()
	e, err := New([]Worker{
		{Name: "cuda:0", Runner: g0, Attributes: []attribute.KeyValue{semconv.KeyCUDADeviceOrdinal.Int(0)}},
		{Name: "cuda:1", Runner: g1, Attributes: []attribute.KeyValue{semconv.KeyCUDADeviceOrdinal.Int(1)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	a := mustSubmit(t, e, req("a", priority.Normal))
	b := mustSubmit(t, e, req("b", priority.Normal))
	ia, err := await(t, e, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	ib, err := await(t, e, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ia.Worker == ib.Worker {
		t.Errorf("both jobs on %s, want one per GPU", ia.Worker)
	}
	ws := e.Status().Workers
	if ws[0].Succeeded != 1 || ws[1].Succeeded != 1 {
		t.Errorf("worker totals %+v, want one each", ws)
	}
}

type spreadRunner struct {
	once   sync.Once
	arrive func()
	both   chan struct{}
}

func (s *spreadRunner) Run(ctx context.Context, r *prover.Request) (*prover.Result, error) {
	s.once.Do(s.arrive)
	select {
	case <-s.both:
	case <-time.After(3 * time.Second):
		return nil, errors.New("the other worker never started")
	}
	return &prover.Result{Proof: []byte(r.RequestID)}, nil
}

func TestKeptResultsAreBounded(t *testing.T) {
	noLeak(t)
	r := &fakeRunner{}
	e := newEngine(t, []prover.Runner{r}, WithMaxResults(2))
	first, err := e.Prove(context.Background(), req("r1", priority.Normal))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r2", "r3"} {
		if _, err := e.Prove(context.Background(), req(id, priority.Normal)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Await(context.Background(), first.ID); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("oldest result: %v, want ErrUnknownJob after the bound", err)
	}
	again, err := e.Prove(context.Background(), req("r1", priority.Normal))
	if err != nil || again.ID == first.ID || again.Existing {
		t.Errorf("resubmitted after expiry: %+v %v, want a new job", again, err)
	}

	// TTL: a clock the test moves.
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := optionFunc(func(c *config) { c.now = func() time.Time { return time.Unix(0, now.Load()) } })
	e2 := newEngine(t, []prover.Runner{r}, WithResultTTL(time.Minute), clock)
	j, err := e2.Prove(context.Background(), req("t", priority.Normal))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e2.JobByRequest("t"); !ok {
		t.Fatal("result gone before its TTL")
	}
	now.Add(int64(2 * time.Minute))
	if _, ok := e2.JobByRequest("t"); ok {
		t.Error("result kept past its TTL")
	}
	if info := e2.Job(j.ID); info.ID != "" {
		t.Error("job kept past its TTL")
	}
}

func TestShutdownLetsRunningFinishAndCancelsQueued(t *testing.T) {
	r, e, run := busyEngine(t, "run")
	queued := mustSubmit(t, e, req("queued", priority.Normal))

	done := make(chan error, 1)
	go func() { done <- e.Shutdown(context.Background()) }()
	info, err := await(t, e, queued.ID)
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, ErrClosed) || info.State != StateCancelled {
		t.Fatalf("queued at shutdown: %v %v", info.State, err)
	}
	if _, err := e.Submit(context.Background(), req("late", priority.Normal)); !errors.Is(err, ErrClosed) {
		t.Errorf("submit during shutdown: %v, want ErrClosed", err)
	}
	select {
	case err := <-done:
		t.Fatalf("shutdown returned (%v) while a job was running", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(r.gate)
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if info, err := await(t, e, run.ID); err != nil || info.State != StateSucceeded {
		t.Errorf("running job at shutdown: %v %v, want succeeded", info.State, err)
	}
	if !e.Status().Closing {
		t.Error("status does not say closing")
	}
}

func TestShutdownDeadlineCancelsRunning(t *testing.T) {
	_, e, run := busyEngine(t, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := e.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown: %v, want deadline exceeded", err)
	}
	info, err := await(t, e, run.ID)
	if !errors.Is(err, ErrClosed) || info.State != StateCancelled {
		t.Errorf("running job after deadline: %v %v, want cancelled", info.State, err)
	}
}

// An idle engine shut down with a context already done (cuzk serve
// --shutdown-timeout 0) cancels nothing, and says no error: it said
// "cancelled 0 running jobs: context deadline exceeded" when the deadline
// won the race with the idle workers' exit.
func TestShutdownOfAnIdleEngineWithNoTimeLeftIsNoError(t *testing.T) {
	for i := 0; i < 20; i++ {
		e, err := New([]Worker{{Name: "w0", Runner: &fakeRunner{}}, {Name: "w1", Runner: &fakeRunner{}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Fatalf("shutdown %d of an idle engine: %v, want nil", i, err)
		}
	}
}

func TestShutdownGivesUpOnRunnerIgnoringContext(t *testing.T) {
	exp, tp := recorder(t)
	r := &fakeRunner{gate: make(chan struct{}), started: make(chan string, 1), ignoreCtx: true}
	e, err := New([]Worker{{Name: "w", Runner: r}}, WithCancelGrace(20*time.Millisecond), WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	mustSubmit(t, e, req("stuck", priority.Normal))
	<-r.started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = e.Shutdown(ctx)
	if err == nil || !strings.Contains(err.Error(), "still running") || time.Since(start) > 2*time.Second {
		t.Errorf("shutdown with a stuck runner: %v after %v", err, time.Since(start))
	}
	// The abandoned job's root span has ended, with the reason, before
	// its runner returns: a process exiting now still exports it.
	var job *tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == semconv.SpanEngineJob {
			job = &s
		}
	}
	if job == nil {
		t.Fatal("no engine.job span ended for the abandoned job")
	}
	if job.Status.Code != codes.Error || !strings.Contains(job.Status.Description, "abandoned") {
		t.Errorf("engine.job status %v %q, want an error saying it was abandoned", job.Status.Code, job.Status.Description)
	}
	close(r.gate) // let the worker go
	<-e.workersDone
}

func TestSpanTree(t *testing.T) {
	noLeak(t)
	exp, tp := recorder(t)
	r := &fakeRunner{span: semconv.SpanPipelineProve, tp: tp}
	e := newEngine(t, []prover.Runner{r}, WithTracerProvider(tp))

	ctx, rpc := tp.Tracer("test").Start(context.Background(), "cuzk.v1.ProvingEngine/Prove")
	q := req("span-req", priority.High)
	q.Correlation = prover.Correlation{MinerID: "f01234", SectorNumber: 7, TaskID: 42, TaskName: "WdPost"}
	q.Verify = true
	info, err := e.Prove(ctx, q)
	rpc.End()
	if err != nil {
		t.Fatal(err)
	}

	byName := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byName[s.Name] = s
	}
	job, queue, prove := byName[semconv.SpanEngineJob], byName[semconv.SpanEngineQueue], byName[semconv.SpanPipelineProve]
	root := byName["cuzk.v1.ProvingEngine/Prove"]
	if job.Parent.SpanID() != root.SpanContext.SpanID() {
		t.Errorf("engine.job parent %v, want the rpc span", job.Parent.SpanID())
	}
	if queue.Parent.SpanID() != job.SpanContext.SpanID() || prove.Parent.SpanID() != job.SpanContext.SpanID() {
		t.Errorf("engine.queue and the runner's span must be children of engine.job")
	}
	if queue.EndTime.After(prove.StartTime) || job.EndTime.Before(prove.EndTime) || queue.StartTime.Before(job.StartTime) {
		t.Errorf("timestamps not nested: job %v..%v queue %v..%v prove %v..%v",
			job.StartTime, job.EndTime, queue.StartTime, queue.EndTime, prove.StartTime, prove.EndTime)
	}
	if info.TraceID != root.SpanContext.TraceID().String() || info.Result.TraceID != info.TraceID {
		t.Errorf("trace id %s, want the caller's %s", info.TraceID, root.SpanContext.TraceID())
	}
	want := map[attribute.Key]attribute.Value{
		semconv.KeyRequestID:          attribute.StringValue("span-req"),
		semconv.KeyJobID:              attribute.StringValue(info.ID),
		semconv.KeyCircuitID:          attribute.StringValue("mulchain"),
		semconv.KeyCircuitConstraints: attribute.IntValue(256),
		semconv.KeyPriority:           attribute.StringValue("HIGH"),
		semconv.KeyQueueDepth:         attribute.IntValue(0),
		semconv.KeyMinerID:            attribute.StringValue("f01234"),
		semconv.KeySectorNumber:       attribute.Int64Value(7),
		semconv.KeyTaskID:             attribute.Int64Value(42),
		semconv.KeyTaskName:           attribute.StringValue("WdPost"),
		semconv.KeyBackend:            attribute.StringValue("fake"),
		semconv.KeyProofVerified:      attribute.BoolValue(true),
	}
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range job.Attributes {
		got[kv.Key] = kv.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("engine.job %s = %v, want %v", k, got[k].Emit(), v.Emit())
		}
	}
	if job.Status.Code == codes.Error {
		t.Errorf("successful job has error status %v", job.Status)
	}
}

func TestFailedJobSpanRecordsError(t *testing.T) {
	noLeak(t)
	exp, tp := recorder(t)
	pathErr := &fs.PathError{Op: "open", Path: "key", Err: fs.ErrNotExist}
	e := newEngine(t, []prover.Runner{&fakeRunner{err: pathErr}}, WithTracerProvider(tp))
	if _, err := e.Prove(context.Background(), req("bad", priority.Normal)); err == nil {
		t.Fatal("want error")
	}
	// A job without a caller span is a root (a new trace).
	for _, s := range exp.GetSpans() {
		if s.Name != semconv.SpanEngineJob {
			continue
		}
		if s.Parent.IsValid() {
			t.Errorf("engine.job has parent %v without a caller span", s.Parent)
		}
		if s.Status.Code != codes.Error {
			t.Errorf("status %v, want Error", s.Status)
		}
		var et string
		for _, kv := range s.Attributes {
			if kv.Key == semconv.KeyErrorType {
				et = kv.Value.AsString()
			}
		}
		if et != semconv.ErrorTypeIO {
			t.Errorf("error.type %q", et)
		}
		if len(s.Events) == 0 || s.Events[0].Name != "exception" {
			t.Errorf("no exception event: %+v", s.Events)
		}
		return
	}
	t.Fatal("no engine.job span")
}

func TestManyConcurrentSubmitsNoneLostOrDoubled(t *testing.T) {
	noLeak(t)
	var runs sync.Map
	var doubled atomic.Int32
	rn := runnerFunc(func(ctx context.Context, q *prover.Request) (*prover.Result, error) {
		if _, dup := runs.LoadOrStore(q.RequestID, true); dup {
			doubled.Add(1)
		}
		time.Sleep(time.Millisecond)
		return &prover.Result{Proof: []byte(q.RequestID)}, nil
	})
	e := newEngine(t, []prover.Runner{rn, rn}, WithQueueSize(16))
	var ok, full atomic.Int32
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			id := fmt.Sprintf("load-%d", i)
			info, err := e.Prove(context.Background(), req(id, priority.All[i%len(priority.All)]))
			switch {
			case errors.Is(err, ErrQueueFull):
				full.Add(1)
			case err != nil:
				t.Errorf("%s: %v", id, err)
			case string(info.Result.Proof) != id:
				t.Errorf("%s answered with %q", id, info.Result.Proof)
			default:
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	n := 0
	runs.Range(func(any, any) bool { n++; return true })
	if int(ok.Load())+int(full.Load()) != 100 || n != int(ok.Load()) || doubled.Load() != 0 {
		t.Errorf("ok %d full %d ran %d doubled %d", ok.Load(), full.Load(), n, doubled.Load())
	}
	if st := e.Status(); st.Succeeded != uint64(ok.Load()) || st.QueueDepth() != 0 || len(st.Running) != 0 {
		t.Errorf("status after load %+v", st)
	}
}

type runnerFunc func(context.Context, *prover.Request) (*prover.Result, error)

func (f runnerFunc) Run(ctx context.Context, q *prover.Request) (*prover.Result, error) {
	return f(ctx, q)
}

func TestFinishHookSeesEveryEnd(t *testing.T) {
	noLeak(t)
	var mu sync.Mutex
	seen := map[State]int{}
	r := &fakeRunner{gate: make(chan struct{}), started: make(chan string, 4)}
	e := newEngine(t, []prover.Runner{r}, WithFinishHook(func(i JobInfo) {
		mu.Lock()
		seen[i.State]++
		mu.Unlock()
	}))
	a := mustSubmit(t, e, req("a", priority.Normal))
	<-r.started
	b := mustSubmit(t, e, req("b", priority.Normal))
	if err := e.Cancel(b.ID); err != nil {
		t.Fatal(err)
	}
	close(r.gate)
	if _, err := await(t, e, a.ID); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen[StateSucceeded] != 1 || seen[StateCancelled] != 1 {
		t.Errorf("hook saw %v", seen)
	}
}

func TestEngineErrorsDeclareTheirErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("a: %w", ErrQueueFull), semconv.ErrorTypeQueueFull},
		{fmt.Errorf("a: %w", ErrOverBudget), semconv.ErrorTypeOverBudget},
		{fmt.Errorf("%w: the last one, gpu0, faulted: x", ErrNoWorker), semconv.ErrorTypeNoDevice},
		{ErrEmptyRequestID, semconv.ErrorTypeInvalidRequest},
		{fmt.Errorf("%w: partition 1: %w", ErrInvalidRequest, groth16.ErrBadWitness), semconv.ErrorTypeInvalidRequest},
		{ErrRequestConflict, semconv.ErrorTypeConflict},
		{fmt.Errorf("job 3: %w", ErrInterrupted), semconv.ErrorTypeInterrupted},
		{ErrUnknownJob, semconv.ErrorTypeNotFound},
		{ErrJobFinished, semconv.ErrorTypeFinished},
		{ErrClosed, semconv.ErrorTypeUnavailable},
		{fmt.Errorf("load: %w", context.Canceled), semconv.ErrorTypeCanceled},
		// Shutdown's error for queued jobs wraps both; ErrCancelled names it.
		{fmt.Errorf("%w: %w", ErrCancelled, ErrClosed), semconv.ErrorTypeCanceled},
		{fmt.Errorf("run: %w", backend.ErrDeviceFault), semconv.ErrorTypeDeviceFault},
		{errors.New("runner returned no result"), semconv.ErrorTypeOther},
	} {
		if got := semconv.ErrorType(tc.err); got != tc.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
