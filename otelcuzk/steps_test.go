package otelcuzk

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// The step of a trace is its latest started open step span: keys.setup
// inside keys.load, back to keys.load when the setup ends, nothing once
// the job's steps ended; spans of other names and other traces do not
// count, and a bad id has no step.
func TestStepTrackerNamesTheOpenStepOfEachTrace(t *testing.T) {
	steps := NewStepTracker()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(steps))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("test")
	ctx, job := tr.Start(context.Background(), semconv.SpanEngineJob)
	id := job.SpanContext().TraceID().String()
	if got := steps.Step(id); got != "" {
		t.Errorf("engine.job alone: step %q, want none", got)
	}
	lctx, load := tr.Start(ctx, semconv.SpanKeyLoad)
	_, setup := tr.Start(lctx, semconv.SpanKeysSetup)
	_, other := tr.Start(lctx, "setup.evaluate") // not a step
	_, job2 := tr.Start(context.Background(), semconv.SpanEngineJob)
	_, prove2 := tr.Start(context.Background(), semconv.SpanPipelineProve) // another trace
	if got := steps.Step(id); got != semconv.SpanKeysSetup {
		t.Errorf("during the setup: step %q, want keys.setup", got)
	}
	other.End()
	setup.End()
	if got := steps.Step(id); got != semconv.SpanKeyLoad {
		t.Errorf("after the setup: step %q, want keys.load", got)
	}
	load.End()
	if got := steps.Step(id); got != "" {
		t.Errorf("after the load: step %q, want none", got)
	}
	if got := steps.Step(prove2.SpanContext().TraceID().String()); got != semconv.SpanPipelineProve {
		t.Errorf("the other trace: step %q, want pipeline.prove", got)
	}
	prove2.End()
	job2.End()
	job.End()
	if len(steps.open) != 0 {
		t.Errorf("ended traces still held: %v", steps.open)
	}
	if got := steps.Step("not-hex"); got != "" {
		t.Errorf("a bad id: step %q", got)
	}
	var none *StepTracker
	if got := none.Step(id); got != "" {
		t.Errorf("a nil tracker: step %q", got)
	}
}
