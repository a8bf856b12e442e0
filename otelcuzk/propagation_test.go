package otelcuzk

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

const (
	envTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	envSpanID  = "00f067aa0ba902b7"
)

func clearPropagationEnv(t *testing.T) {
	for _, v := range []string{EnvTraceparent, EnvTracestate, EnvBaggage} {
		t.Setenv(v, "")
	}
}

func TestContextWithEnvTraceparentJoinsParentTrace(t *testing.T) {
	clearPropagationEnv(t)
	t.Setenv(EnvTraceparent, "00-"+envTraceID+"-"+envSpanID+"-01")
	t.Setenv(EnvTracestate, "congo=t61rcWkgMzE")
	t.Setenv(EnvBaggage, "sector=42")
	ctx := ContextWithEnvTraceparent(context.Background())
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsRemote() || !sc.IsSampled() {
		t.Fatalf("span context %+v is not a valid, remote, sampled parent", sc)
	}
	if sc.TraceID().String() != envTraceID || sc.SpanID().String() != envSpanID {
		t.Fatalf("ids = %s %s", sc.TraceID(), sc.SpanID())
	}
	if got := sc.TraceState().Get("congo"); got != "t61rcWkgMzE" {
		t.Errorf("tracestate congo = %q", got)
	}
	if got := baggage.FromContext(ctx).Member("sector").Value(); got != "42" {
		t.Errorf("baggage sector = %q", got)
	}
	tp := sdktrace.NewTracerProvider()
	_, s := tp.Tracer("t").Start(ctx, "child")
	defer s.End()
	ro := s.(sdktrace.ReadOnlySpan)
	if ro.Parent().SpanID().String() != envSpanID || ro.SpanContext().TraceID().String() != envTraceID {
		t.Fatalf("child span is not under the env parent")
	}
}

func TestContextWithEnvTraceparentIgnoresMissingOrMalformed(t *testing.T) {
	clearPropagationEnv(t)
	base := context.Background()
	if ctx := ContextWithEnvTraceparent(base); ctx != base {
		t.Error("no TRACEPARENT changed the context")
	}
	for _, bad := range []string{"garbage", "00-" + envTraceID + "-" + envSpanID, "00-00000000000000000000000000000000-" + envSpanID + "-01"} {
		t.Setenv(EnvTraceparent, bad)
		if sc := trace.SpanContextFromContext(ContextWithEnvTraceparent(base)); sc.IsValid() {
			t.Errorf("TRACEPARENT=%q gave a valid span context", bad)
		}
	}
}

func TestEnvWithTraceparentRoundTrips(t *testing.T) {
	clearPropagationEnv(t)
	tp := sdktrace.NewTracerProvider()
	ctx, s := tp.Tracer("t").Start(context.Background(), "parent")
	defer s.End()
	m, _ := baggage.NewMember("task", "7")
	b, _ := baggage.New(m)
	ctx = baggage.ContextWithBaggage(ctx, b)

	in := []string{"PATH=/bin", "TRACEPARENT=00-" + envTraceID + "-" + envSpanID + "-01", "HOME=/root"}
	orig := slices.Clone(in)
	out := EnvWithTraceparent(ctx, in)
	if !slices.Equal(in, orig) {
		t.Fatal("EnvWithTraceparent modified its input")
	}
	var tps []string
	for _, kv := range out {
		if strings.HasPrefix(kv, "TRACEPARENT=") {
			tps = append(tps, kv)
		}
	}
	if len(tps) != 1 || strings.Contains(tps[0], envSpanID) {
		t.Fatalf("TRACEPARENT entries = %v, want only the new one", tps)
	}
	if !slices.Contains(out, "PATH=/bin") || !slices.Contains(out, "HOME=/root") || !slices.Contains(out, "BAGGAGE=task=7") {
		t.Fatalf("env = %v, want PATH, HOME and BAGGAGE kept or set", out)
	}
	// What a child process would read back.
	for _, kv := range out {
		k, v, _ := strings.Cut(kv, "=")
		if k == EnvTraceparent || k == EnvBaggage {
			t.Setenv(k, v)
		}
	}
	got := trace.SpanContextFromContext(ContextWithEnvTraceparent(context.Background()))
	if got.TraceID() != s.SpanContext().TraceID() || got.SpanID() != s.SpanContext().SpanID() {
		t.Fatalf("child reads %s/%s, want %s/%s", got.TraceID(), got.SpanID(), s.SpanContext().TraceID(), s.SpanContext().SpanID())
	}
}

func TestEnvWithTraceparentWithoutSpanKeepsEnv(t *testing.T) {
	in := []string{"A=1", "TRACEPARENT=00-" + envTraceID + "-" + envSpanID + "-01"}
	out := EnvWithTraceparent(context.Background(), in)
	if !slices.Equal(in, out) {
		t.Fatalf("env = %v, want it unchanged", out)
	}
	out[0] = "B=2"
	if in[0] != "A=1" {
		t.Fatal("result aliases the input")
	}
}

func TestTextMapPropagatorFallsBackToW3COnlyWhileGlobalIsNoop(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })

	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	if f := TextMapPropagator().Fields(); !slices.Contains(f, "traceparent") || !slices.Contains(f, "baggage") {
		t.Errorf("with a no-op global: fields %v, want W3C traceparent and baggage", f)
	}
	custom := propagation.Baggage{}
	otel.SetTextMapPropagator(custom)
	if f := TextMapPropagator().Fields(); slices.Contains(f, "traceparent") || !slices.Contains(f, "baggage") {
		t.Errorf("with a global installed: fields %v, want the global's own (baggage only)", f)
	}
}
