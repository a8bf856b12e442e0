package cupti

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The message NVTXMessage makes is the one the builder reads back: the
// range joins the span's trace, under that span, named by the rest.
func TestNVTXMessageRoundTrips(t *testing.T) {
	ctx, span := sdktrace.NewTracerProvider().Tracer("t").Start(context.Background(), "job")
	msg := NVTXMessage(ctx, "prove")
	name, sc, ok := traceparentIn(msg)
	if !ok || name != "prove" || sc.TraceID() != span.SpanContext().TraceID() || sc.SpanID() != span.SpanContext().SpanID() {
		t.Fatalf("message %q read back as %q, %v, %v", msg, name, sc, ok)
	}
	if got := NVTXMessage(context.Background(), "prove"); got != "prove" {
		t.Fatalf("without a span: %q, want the name alone", got)
	}
}
