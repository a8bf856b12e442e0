package keycache

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/consensys/gnark/constraint"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
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
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(cancelOnStart{otelcuzk.SpanKeysSetup, cancel}), sdktrace.WithSpanProcessor(rec))
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
		otelcuzk.SpanKeyLoad: "engine.job", otelcuzk.SpanKeysHash: otelcuzk.SpanKeyLoad,
		otelcuzk.SpanKeysRead: otelcuzk.SpanKeyLoad, otelcuzk.SpanKeysSetup: otelcuzk.SpanKeyLoad,
	}
	seen := map[string]bool{}
	for _, s := range rec.Ended() {
		if w, ok := want[s.Name()]; ok {
			seen[s.Name()] = true
			if got := parent(s); got != w {
				t.Errorf("%s is under %s, want %s", s.Name(), got, w)
			}
		}
		if s.Name() == otelcuzk.SpanKeysSetup && s.Status().Code.String() != "Error" {
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
