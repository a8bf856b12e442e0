package otelcuzk

import (
	"context"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func TestRecorderKeepsEndedSpansInOrderUntilReset(t *testing.T) {
	rec := NewRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := tp.Tracer("test")
	ctx, parent := tr.Start(context.Background(), "parent")
	_, child := tr.Start(ctx, "child")
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans recorded before any ended", n)
	}
	child.End()
	parent.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := rec.Ended()
	if len(got) != 2 || got[0].Name() != "child" || got[1].Name() != "parent" {
		t.Fatalf("Ended after Shutdown = %v, want child then parent", names(got))
	}
	if got[0].Parent().SpanID() != got[1].SpanContext().SpanID() {
		t.Error("child's parent is not the parent span")
	}
	got[0] = nil // a copy: the recorder's list is untouched
	if rec.Ended()[0] == nil {
		t.Error("Ended returned the recorder's own slice")
	}
	rec.Reset()
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans after Reset", n)
	}
}

func TestRecorderIsSafeForConcurrentEnds(t *testing.T) {
	rec := NewRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				_, s := tp.Tracer("test").Start(context.Background(), "s")
				s.End()
				_ = rec.Ended()
			}
		}()
	}
	wg.Wait()
	if n := len(rec.Ended()); n != 400 {
		t.Errorf("%d spans recorded, want 400", n)
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}
