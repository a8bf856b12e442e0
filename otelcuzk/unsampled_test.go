package otelcuzk

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// callerCtx carries a remote span context as an incoming traceparent does.
func callerCtx(t *testing.T, sampled bool) (context.Context, trace.SpanContext) {
	t.Helper()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: sid, Remote: true}
	if sampled {
		cfg.TraceFlags = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(cfg)
	return trace.ContextWithRemoteSpanContext(context.Background(), sc), sc
}

// job starts a root-like span under ctx and a child under it, as the
// daemon's RPC span and engine.job do, and returns what was recorded.
func job(t *testing.T, ctx context.Context, opts ...Option) (tracetest.SpanStubs, trace.SpanContext) {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	tel := newTel(t, append([]Option{WithoutUntraced(), WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(mem))}, opts...)...)
	tr := tel.Provider().Tracer("test")
	ctx, root := tr.Start(ctx, "rpc")
	_, child := tr.Start(ctx, semconv.SpanEngineJob)
	child.End()
	root.End()
	return mem.GetSpans(), child.SpanContext()
}

func TestUnsampledCallerGetsALinkedNewRootByDefault(t *testing.T) {
	clearEnv(t)
	ctx, caller := callerCtx(t, false)
	spans, jobSC := job(t, ctx, WithUnsampledCallerAsLink())
	if len(spans) != 2 {
		t.Fatalf("%d spans recorded, want 2 (the new root and its child)", len(spans))
	}
	root := spans[1]
	if root.Parent.IsValid() || root.SpanContext.TraceID() == caller.TraceID() {
		t.Fatalf("root parent %v trace %v: want a new root, not the caller's trace", root.Parent, root.SpanContext.TraceID())
	}
	if len(root.Links) != 1 || root.Links[0].SpanContext.TraceID() != caller.TraceID() || root.Links[0].SpanContext.SpanID() != caller.SpanID() {
		t.Fatalf("root links = %+v, want one to the caller's span context", root.Links)
	}
	if jobSC.TraceID() != root.SpanContext.TraceID() || spans[0].Parent.SpanID() != root.SpanContext.SpanID() {
		t.Errorf("the child is not in the new root's trace")
	}
}

func TestSampledCallerIsJoinedAsBefore(t *testing.T) {
	clearEnv(t)
	ctx, caller := callerCtx(t, true)
	spans, _ := job(t, ctx, WithUnsampledCallerAsLink())
	if len(spans) != 2 || spans[1].SpanContext.TraceID() != caller.TraceID() || spans[1].Parent.SpanID() != caller.SpanID() || len(spans[1].Links) != 0 {
		t.Fatalf("sampled caller: %+v, want the caller's trace joined, no link", spans)
	}
}

// An operator's sampler is honoured exactly as OTEL_TRACES_SAMPLER says.
func TestExplicitSamplerVarIsHonouredForUnsampledCallers(t *testing.T) {
	for _, tc := range []struct {
		sampler, arg string
		recorded     int
		callerTrace  bool // recorded spans are in the caller's trace
	}{
		{"parentbased_always_on", "", 0, false},
		{"parentbased_traceidratio", "1", 0, false},
		{"always_off", "", 0, false},
		{"traceidratio", "1", 2, true},
		{"always_on", "", 2, true},
	} {
		t.Run(tc.sampler, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("OTEL_TRACES_SAMPLER", tc.sampler)
			t.Setenv("OTEL_TRACES_SAMPLER_ARG", tc.arg)
			ctx, caller := callerCtx(t, false)
			spans, _ := job(t, ctx, WithUnsampledCallerAsLink())
			if len(spans) != tc.recorded {
				t.Fatalf("%d spans recorded, want %d", len(spans), tc.recorded)
			}
			for _, s := range spans {
				if (s.SpanContext.TraceID() == caller.TraceID()) != tc.callerTrace || len(s.Links) != 0 {
					t.Errorf("span %s: trace %v links %v", s.Name, s.SpanContext.TraceID(), s.Links)
				}
			}
		})
	}
}

// Without the option (cuzk prove, library users) an unsampled parent still
// means nothing is recorded, as the SDK's parentbased default says.
func TestWithoutTheOptionAnUnsampledCallerRecordsNothing(t *testing.T) {
	clearEnv(t)
	ctx, _ := callerCtx(t, false)
	if spans, _ := job(t, ctx); len(spans) != 0 {
		t.Fatalf("%d spans recorded, want 0", len(spans))
	}
}
