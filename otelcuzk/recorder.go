package otelcuzk

import (
	"context"
	"slices"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Recorder is a span processor that keeps every span that ends in memory,
// in the order they ended, so a command can show the trace it just sent
// over OTLP (cuzk prove's waterfall) or a benchmark can read its spans
// back. It holds the spans until Reset: memory grows with the spans of a
// run. The SDK's tracetest.SpanRecorder does the same for tests; this one
// is for production code, which does not import test packages.
//
// A Recorder is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	ended []sdktrace.ReadOnlySpan
}

var _ sdktrace.SpanProcessor = (*Recorder)(nil)

// NewRecorder returns an empty Recorder; register it with
// WithSpanProcessor or sdktrace.WithSpanProcessor.
func NewRecorder() *Recorder { return &Recorder{} }

// OnStart does nothing: only ended spans are kept.
func (r *Recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd keeps s.
func (r *Recorder) OnEnd(s sdktrace.ReadOnlySpan) {
	if s == nil {
		return
	}
	r.mu.Lock()
	r.ended = append(r.ended, s)
	r.mu.Unlock()
}

// Shutdown does nothing and keeps the spans: they are read after the
// provider's Shutdown has ended the last of them.
func (r *Recorder) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing: spans are kept as they end.
func (r *Recorder) ForceFlush(context.Context) error { return nil }

// Ended returns a copy of the list of spans ended so far, oldest first.
func (r *Recorder) Ended() []sdktrace.ReadOnlySpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ended)
}

// Reset forgets the spans ended so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.ended = nil
	r.mu.Unlock()
}
