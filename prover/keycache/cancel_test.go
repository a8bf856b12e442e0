package keycache

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark/constraint"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// cancelOnStart cancels when a span of its name starts: a step cancelled
// while it runs, with no timing.
type cancelOnStart struct {
	name   string
	cancel context.CancelFunc
}

func (p cancelOnStart) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if s.Name() == p.name {
		p.cancel()
	}
}
func (cancelOnStart) OnEnd(sdktrace.ReadOnlySpan)      {}
func (cancelOnStart) Shutdown(context.Context) error   { return nil }
func (cancelOnStart) ForceFlush(context.Context) error { return nil }

// A load cancelled during its setup returns ctx's error without waiting
// for groth16.Setup, with keys.setup and keys.load ended (so keys.read and
// keys.hash are exported under their parent); the setup still stores its
// keys, which the next load reuses.
func TestALoadCancelledDuringSetupEndsItsSpansAndKeepsTheKeys(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(cancelOnStart{semconv.SpanKeysSetup, cancel}), sdktrace.WithSpanProcessor(rec))
	c, err := New(dir, WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	ccs := compile(t, 1<<10)
	ctx, job := tp.Tracer("test").Start(ctx, "engine.job")
	_, err = c.Load(ctx, ccs)
	job.End()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Load cancelled during its setup: %v, want context.Canceled", err)
	}
	ids := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		ids[s.SpanContext().SpanID().String()] = s
	}
	parent := func(s sdktrace.ReadOnlySpan) string {
		if p, ok := ids[s.Parent().SpanID().String()]; ok {
			return p.Name()
		}
		return "(not exported)"
	}
	want := map[string]string{
		semconv.SpanKeyLoad: "engine.job", semconv.SpanKeysHash: semconv.SpanKeyLoad,
		semconv.SpanKeysRead: semconv.SpanKeyLoad, semconv.SpanKeysSetup: semconv.SpanKeyLoad,
	}
	seen := map[string]bool{}
	for _, s := range rec.Ended() {
		if w, ok := want[s.Name()]; ok {
			seen[s.Name()] = true
			if got := parent(s); got != w {
				t.Errorf("%s is under %s, want %s", s.Name(), got, w)
			}
		}
		if s.Name() == semconv.SpanKeysSetup && s.Status().Code.String() != "Error" {
			t.Errorf("keys.setup status %v, want an error (cancelled)", s.Status())
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s was not ended", name)
		}
	}

	// The abandoned setup stores the keys, and Wait returns once it has:
	// a later load finds them.
	path := c.path(mustHash(t, ccs))
	wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer wcancel()
	if err := c.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the cancelled setup stored no keys by the time Wait returned: %v", err)
	}
	// Nothing left to wait for: Wait returns at once.
	if err := c.Wait(context.Background()); err != nil {
		t.Fatalf("Wait with nothing running: %v", err)
	}
	k, err := c.Load(context.Background(), ccs)
	if err != nil || !k.CacheHit {
		t.Fatalf("load after the cancelled setup: %v, cache hit %v; want the stored keys", err, k != nil && k.CacheHit)
	}
}

func mustHash(t *testing.T, ccs constraint.ConstraintSystem) string {
	t.Helper()
	h, err := Hash(ccs)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A Compile cancelled while gnark compiles (frontend.Compile cannot stop)
// returns an *AbandonedError at once, with circuit.frontend and
// circuit.compile ended canceled; a second Compile of the same circuit
// meanwhile joins the one left running (compile runs once), and the
// compile left running stores the circuit for the next Compile.
func TestACancelledCompileReturnsAtOnceAndASecondJoinsTheOneLeftRunning(t *testing.T) {
	dir := t.TempDir()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c, err := New(dir, WithRevision("rev1"), WithTracerProvider(tp), WithProgress(nil, false))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	comp := &compiler{n: 1 << 10}
	// started: the compile runs (a call that ends before, while its work
	// takes the lock, leaves nothing running and returns ctx's error).
	started := make(chan struct{})
	var once sync.Once
	slow := func() (constraint.ConstraintSystem, error) {
		once.Do(func() { close(started) })
		<-release
		return comp.compile()
	}

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Compile(ctx, "mulchain", 1<<10, slow); errc <- err }()
	<-started
	cancel()
	var ab *AbandonedError
	select {
	case err := <-errc:
		if !errors.As(err, &ab) || !errors.Is(err, context.Canceled) || ab.AbandonedStep() != semconv.SpanCircuitCompile {
			t.Fatalf("cancelled Compile: %v, want an *AbandonedError of circuit.compile wrapping context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled Compile waited for the compile it cannot stop")
	}
	for _, name := range []string{semconv.SpanCircuitFrontend, semconv.SpanCircuitCompile} {
		s := endedSpan(t, rec, name)
		if et := errorTypeOf(s); et != semconv.ErrorTypeCanceled {
			t.Errorf("%s ended with error.type %q, want canceled", name, et)
		}
	}

	// A second Compile while the first runs on joins it.
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { _, err := c.Compile(ctx2, "mulchain", 1<<10, slow); errc <- err }()
	time.Sleep(50 * time.Millisecond)
	if n := c.Running(); n != 1 {
		t.Errorf("%d compiles running after a second Compile of the same circuit, want 1 (joined)", n)
	}
	cancel2()
	if err := <-errc; !errors.As(err, &ab) {
		t.Fatalf("second cancelled Compile: %v", err)
	}
	close(release)
	select {
	case <-ab.AbandonedDone():
	case <-time.After(2 * time.Minute):
		t.Fatal("the abandoned compile never ended")
	}
	if n := comp.calls.Load(); n != 1 {
		t.Errorf("compile ran %d times for two Compiles of one circuit, want 1", n)
	}
	rec.Reset()
	got, err := c.Compile(context.Background(), "mulchain", 1<<10, comp.compile)
	if err != nil || !got.CacheHit {
		t.Fatalf("Compile after the abandoned one ended: %v, cache hit %v; want the circuit it stored", err, got != nil && got.CacheHit)
	}
	if n := comp.calls.Load(); n != 1 {
		t.Errorf("compile ran again (%d calls) although the abandoned compile stored the circuit", n)
	}
}

// Two loads of one key cancelled during its setup run one groth16.Setup:
// the second joins the one the first left running (Running is 1), so N
// cancels of one key never start N setups.
func TestLoadsOfOneKeyCancelledDuringSetupShareOneSetup(t *testing.T) {
	dir := t.TempDir()
	ccs := compile(t, 1<<12)
	var abs []*AbandonedError
	c, err := New(dir, WithProgress(nil, false))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(cancelOnStart{semconv.SpanKeysSetup, cancel}))
		c.tracer = tp.Tracer("test")
		_, err := c.Load(ctx, ccs)
		var ab *AbandonedError
		if !errors.As(err, &ab) || ab.AbandonedStep() != semconv.SpanKeysSetup {
			t.Fatalf("load %d cancelled during setup: %v, want an *AbandonedError of keys.setup", i, err)
		}
		abs = append(abs, ab)
		if n := c.Running(); n != 1 {
			t.Errorf("after %d cancelled loads of one key %d setups run, want 1", i+1, n)
		}
	}
	if abs[0].AbandonedDone() != abs[1].AbandonedDone() {
		t.Error("the two cancelled loads were left with different setups")
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer wcancel()
	if err := c.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.path(mustHash(t, ccs))); err != nil {
		t.Fatalf("the shared setup stored no keys: %v", err)
	}
}

func endedSpan(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range rec.Ended() {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("%s was not ended", name)
	return nil
}

func errorTypeOf(s sdktrace.ReadOnlySpan) string {
	for _, a := range s.Attributes() {
		if a.Key == semconv.KeyErrorType {
			return a.Value.AsString()
		}
	}
	return ""
}
