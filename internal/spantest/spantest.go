// Package spantest records spans for tests: a TracerProvider that records
// into a tracetest.SpanRecorder, and look-ups of the ended spans by name
// and of a span's attributes (the GPU side: cudaspans, cupti, prover/gpu);
// and a TracerProvider that exports into a tracetest.InMemoryExporter,
// with the same look-ups over its span stubs (otelcuzk, semconv, cupti's
// fake) and a Tree of them for parent checks (prover, prover/groth16).
// For tests only.
package spantest

import (
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// New returns a span recorder and a TracerProvider that records into it;
// a span is in rec.Ended() as soon as it ends.
func New() (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	rec := tracetest.NewSpanRecorder()
	return rec, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
}

// Named returns the spans of rec that ended with the name name, in the
// order they ended.
func Named(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// ByName returns the ended spans of rec by name; of several with one
// name, the last to end.
func ByName(rec *tracetest.SpanRecorder) map[string]sdktrace.ReadOnlySpan {
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = s
	}
	return byName
}

// Attr returns the value of s's attribute key as Go value
// (attribute.Value.AsInterface: int64, float64, string, bool or a slice
// of them); nil and false when s has no such attribute.
func Attr(s sdktrace.ReadOnlySpan, key attribute.Key) (any, bool) {
	set := attribute.NewSet(s.Attributes()...)
	v, ok := set.Value(key)
	if !ok {
		return nil, false
	}
	return v.AsInterface(), true
}
