package otelcuzk

import (
	"context"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// JobSteps are the span names StepTracker reports by default: the steps of
// a job that can each last seconds to minutes, so that a daemon's status
// says a job is in keys.setup rather than only that a worker holds it.
var JobSteps = []string{
	semconv.SpanEngineWarmup, semconv.SpanEngineBudget, semconv.SpanCircuitBuild, semconv.SpanCircuitCompile,
	semconv.SpanCircuitCacheLock, semconv.SpanKeyLoad, semconv.SpanKeysLock, semconv.SpanKeysSetup, semconv.SpanKeysStore, semconv.SpanKeysPreload,
	semconv.SpanPipelineSynthesize, semconv.SpanGPUQueue, semconv.SpanPipelineProve, semconv.SpanGPULock,
	semconv.SpanPipelineSerialize, semconv.SpanProofVerify,
}

// StepTracker is a span processor that knows, for each trace, the step a
// job is in now: the most recently started span of one of its names that
// has not ended. Register it with WithSpanProcessor; it sees the spans
// that are recorded (a trace a sampler drops has no step). Safe for
// concurrent use.
type StepTracker struct {
	names map[string]bool
	mu    sync.Mutex
	seq   uint64
	open  map[trace.TraceID]map[trace.SpanID]openStep
}

type openStep struct {
	seq  uint64
	name string
}

// NewStepTracker returns a StepTracker of the spans named names (JobSteps
// when none are given).
func NewStepTracker(names ...string) *StepTracker {
	if len(names) == 0 {
		names = JobSteps
	}
	t := &StepTracker{names: map[string]bool{}, open: map[trace.TraceID]map[trace.SpanID]openStep{}}
	for _, n := range names {
		t.names[n] = true
	}
	return t
}

// OnStart implements sdktrace.SpanProcessor.
func (t *StepTracker) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if !t.names[s.Name()] {
		return
	}
	sc := s.SpanContext()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	m := t.open[sc.TraceID()]
	if m == nil {
		m = map[trace.SpanID]openStep{}
		t.open[sc.TraceID()] = m
	}
	m[sc.SpanID()] = openStep{t.seq, s.Name()}
}

// OnEnd implements sdktrace.SpanProcessor.
func (t *StepTracker) OnEnd(s sdktrace.ReadOnlySpan) {
	if !t.names[s.Name()] {
		return
	}
	sc := s.SpanContext()
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.open[sc.TraceID()]; m != nil {
		delete(m, sc.SpanID())
		if len(m) == 0 {
			delete(t.open, sc.TraceID())
		}
	}
}

// Shutdown implements sdktrace.SpanProcessor.
func (*StepTracker) Shutdown(context.Context) error { return nil }

// ForceFlush implements sdktrace.SpanProcessor.
func (*StepTracker) ForceFlush(context.Context) error { return nil }

// Step returns the name of the step the trace of hex id traceID is in
// (the latest started of its open step spans), or "" when none is open,
// the id is not one, or t is nil.
func (t *StepTracker) Step(traceID string) string {
	if t == nil {
		return ""
	}
	id, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	best := openStep{}
	for _, s := range t.open[id] {
		if s.seq > best.seq {
			best = s
		}
	}
	return best.name
}
