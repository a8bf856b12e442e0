package spantest

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

func TestRecordedSpansAreFoundByNameAndTheirAttributesByKey(t *testing.T) {
	rec, tp := New()
	tr := tp.Tracer("test")
	_, a1 := tr.Start(context.Background(), "a", trace.WithAttributes(attribute.Int64("n", 1)))
	a1.End()
	_, b := tr.Start(context.Background(), "b", trace.WithAttributes(attribute.String("s", "x"), attribute.Float64("f", 2.5)))
	b.End()
	_, a2 := tr.Start(context.Background(), "a", trace.WithAttributes(attribute.Int64("n", 2)))
	a2.End()

	named := Named(rec, "a")
	if len(named) != 2 || named[0].SpanContext().SpanID() != a1.SpanContext().SpanID() || named[1].SpanContext().SpanID() != a2.SpanContext().SpanID() {
		t.Fatalf("Named(a) = %v, want the two a spans in the order they ended", named)
	}
	if got := Named(rec, "none"); len(got) != 0 {
		t.Errorf("Named(none) = %v, want none", got)
	}
	byName := ByName(rec)
	if len(byName) != 2 || byName["a"].SpanContext().SpanID() != a2.SpanContext().SpanID() || byName["b"].SpanContext().SpanID() != b.SpanContext().SpanID() {
		t.Errorf("ByName = %v, want a (the last) and b", byName)
	}
	for _, c := range []struct {
		key  attribute.Key
		want any
	}{{"s", "x"}, {"f", 2.5}} {
		if v, ok := Attr(byName["b"], c.key); !ok || v != c.want {
			t.Errorf("Attr(b, %s) = %v, %v; want %v, true", c.key, v, ok, c.want)
		}
	}
	if v, ok := Attr(named[1], "n"); !ok || v != int64(2) {
		t.Errorf("Attr(a, n) = %v, %v; want 2, true", v, ok)
	}
	if v, ok := Attr(byName["b"], "n"); ok || v != nil {
		t.Errorf("Attr(b, n) = %v, %v; want nil, false", v, ok)
	}
}
