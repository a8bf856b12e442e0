package msm

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// An MSM call's span (G1Resident, G2Resident, the batch addition, run)
// carries the size, the backend, the base set and the call's attributes
// (its Late ones added when it ends, once, after the work), is the parent of what runs under it, and records the call's error;
// without a span name nothing is recorded and the caller's span stays
// the parent.
func TestAnMSMCallsSpanCarriesItsAttributesAndError(t *testing.T) {
	rec, tp := spantest.New()
	tracer := tp.Tracer("test")
	lates := 0
	call := backend.Call{Span: semconv.SpanMSMG1A, KeyID: "k", Attributes: []attribute.KeyValue{attribute.Int("cuzk.msm.scalars.zero", 3)},
		Late: func() []attribute.KeyValue { lates++; return []attribute.KeyValue{semconv.KeyMSMScalarsSmall.Int(5)} }}
	ctx, end := startCall(context.Background(), tracer, call, 1024, semconv.KeyBaseSetID.String("k:g1.a"))
	inner := trace.SpanContextFromContext(ctx)
	if lates != 0 {
		t.Fatalf("Late called %d times before the call ended", lates)
	}
	end(errors.New("msm: launch: boom"))
	if lates != 1 {
		t.Errorf("Late called %d times by the end, want 1", lates)
	}
	spans := spantest.Named(rec, semconv.SpanMSMG1A)
	if len(spans) != 1 {
		t.Fatalf("%d %s spans, want 1", len(spans), semconv.SpanMSMG1A)
	}
	sp := spans[0]
	if sp.SpanContext().SpanID() != inner.SpanID() {
		t.Error("the context returned is not the call's span's")
	}
	want := map[attribute.Key]attribute.Value{
		semconv.KeyMSMSize:                     attribute.IntValue(1024),
		semconv.KeyBackend:                     attribute.StringValue("cuda"),
		semconv.KeyBaseSetID:                   attribute.StringValue("k:g1.a"),
		attribute.Key("cuzk.msm.scalars.zero"): attribute.IntValue(3),
		semconv.KeyMSMScalarsSmall:             attribute.IntValue(5),
	}
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range sp.Attributes() {
		got[kv.Key] = kv.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k].Emit(), v.Emit())
		}
	}
	if sp.Status().Code != codes.Error {
		t.Errorf("status %v after a failed call, want Error", sp.Status())
	}

	parentCtx, parent := tracer.Start(context.Background(), "caller")
	ctx, end = startCall(parentCtx, tracer, backend.Call{KeyID: "k"}, 8)
	end(nil)
	parent.End()
	if trace.SpanContextFromContext(ctx).SpanID() != parent.SpanContext().SpanID() {
		t.Error("a call without a span name changed the span in ctx")
	}
	if n := len(rec.Ended()); n != 2 {
		t.Errorf("%d spans ended, want the call's and the caller's only", n)
	}
}
