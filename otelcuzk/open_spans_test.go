package otelcuzk

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// A run cut short leaves spans open (a compile that cannot stop, its
// parents waiting on it): EndOpenSpans ends each as failed with
// error.type canceled, children before parents, so the exported trace is
// whole; spans ended already are untouched and a late End is a no-op.
func TestEndOpenSpansEndsEveryOpenSpanCanceledChildrenFirst(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel := newTel(t, WithExporter(exp), WithSyncExport(), WithLogWriter(nil), WithoutUntraced())
	tr := tel.Provider().Tracer("test")
	ctx, job := tr.Start(context.Background(), "engine.job")
	cctx, compile := tr.Start(ctx, "circuit.compile")
	_, read := tr.Start(cctx, "circuit.cache.read")
	read.End()
	_, frontend := tr.Start(cctx, "circuit.frontend")
	if n := tel.OpenSpans(); n != 3 {
		t.Fatalf("OpenSpans = %d, want 3 (job, compile, frontend)", n)
	}
	if n := tel.EndOpenSpans(context.Canceled); n != 3 {
		t.Fatalf("EndOpenSpans ended %d spans, want 3", n)
	}
	frontend.End() // the step that could not stop ends later: no second span
	compile.End()
	job.End()
	if n := tel.OpenSpans(); n != 0 {
		t.Errorf("OpenSpans = %d after EndOpenSpans, want 0", n)
	}
	got := exp.GetSpans()
	var order []string
	for _, s := range got {
		order = append(order, s.Name)
		if s.Name == "circuit.cache.read" {
			if s.Status.Code == codes.Error {
				t.Errorf("the span ended before the interrupt was marked failed: %v", s.Status)
			}
			continue
		}
		et := ""
		for _, a := range s.Attributes {
			if a.Key == semconv.KeyErrorType {
				et = a.Value.AsString()
			}
		}
		if s.Status.Code != codes.Error || et != semconv.ErrorTypeCanceled {
			t.Errorf("%s: status %v, error.type %q; want Error, %q", s.Name, s.Status, et, semconv.ErrorTypeCanceled)
		}
	}
	want := []string{"circuit.cache.read", "circuit.frontend", "circuit.compile", "engine.job"}
	if len(order) != len(want) {
		t.Fatalf("exported %v, want %v (each once)", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("exported %v, want %v (children before parents)", order, want)
		}
	}
	var nilTel *Telemetry
	if nilTel.EndOpenSpans(context.Canceled) != 0 || nilTel.OpenSpans() != 0 {
		t.Error("a nil Telemetry has open spans")
	}
}
