package ctest

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
)

func TestCCodeRecordsNestedHostPhases(t *testing.T) {
	rec, tp := spantest.New()
	ctx, parent := tp.Tracer("test").Start(context.Background(), "groth16.prove")
	h, release := cudaspans.CParent(ctx)
	if got := Prove(h, 0, 2*time.Millisecond, 3*time.Millisecond); got != 4 {
		t.Fatalf("%d of 4 begins got a handle", got)
	}
	release()
	parent.End()

	byName := spantest.ByName(rec)
	childOf := map[string]string{
		"c.prove": "groth16.prove", "c.sort": "c.prove", "c.msm": "c.prove", "c.bucket_reduce": "c.msm",
	}
	for child, par := range childOf {
		c, p := byName[child], byName[par]
		if c == nil || p == nil {
			t.Fatalf("missing span %s or %s; got %v", child, par, byName)
		}
		if c.Parent().SpanID() != p.SpanContext().SpanID() {
			t.Errorf("%s is not a child of %s", child, par)
		}
		if c.StartTime().Before(p.StartTime()) || c.EndTime().After(p.EndTime()) {
			t.Errorf("%s outside %s", child, par)
		}
	}
	if d := byName["c.sort"].EndTime().Sub(byName["c.sort"].StartTime()); d < 2*time.Millisecond {
		t.Errorf("c.sort lasts %v, the C code spun 2 ms", d)
	}
	if d := byName["c.bucket_reduce"].EndTime().Sub(byName["c.bucket_reduce"].StartTime()); d < 3*time.Millisecond {
		t.Errorf("c.bucket_reduce lasts %v, the C code spun 3 ms", d)
	}
	want := map[attribute.Key]attribute.Value{
		"cuzk.msm.size": attribute.Int64Value(1 << 20),
		"c.window_bits": attribute.Float64Value(13.5),
		"c.curve":       attribute.StringValue("bls12-381"),
		"cuda.clock":    attribute.StringValue("host"),
	}
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range byName["c.msm"].Attributes() {
		got[kv.Key] = kv.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("c.msm %s = %v, want %v", k, got[k].Emit(), v.Emit())
		}
	}
}

func TestCCodeWithAReleasedParentRecordsNothing(t *testing.T) {
	rec, tp := spantest.New()
	ctx, parent := tp.Tracer("test").Start(context.Background(), "p")
	h, release := cudaspans.CParent(ctx)
	release()
	if got := Prove(h, 0, 0, 0); got != 0 {
		t.Fatalf("%d begins got a handle under a released parent", got)
	}
	parent.End()
	if n := len(rec.Ended()); n != 1 {
		t.Fatalf("%d spans, want only the Go parent", n)
	}
}

func TestCPlusPlusScopesEndTheirSpansOnEveryPath(t *testing.T) {
	for _, early := range []bool{false, true} {
		rec, tp := spantest.New()
		ctx, parent := tp.Tracer("test").Start(context.Background(), "p")
		h, release := cudaspans.CParent(ctx)
		Scoped(h, early)
		release()
		parent.End()
		names := spantest.ByName(rec)
		outer, inner := names["cpp.outer"], names["cpp.inner"]
		if outer == nil || inner == nil {
			t.Fatalf("early=%v: ended spans %v, want cpp.outer and cpp.inner", early, names)
		}
		if inner.Parent().SpanID() != outer.SpanContext().SpanID() || outer.Parent().SpanID() != names["p"].SpanContext().SpanID() {
			t.Errorf("early=%v: wrong nesting", early)
		}
	}
}
