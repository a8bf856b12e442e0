package spantest

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
)

// Spans are in the in-memory exporter as End returns; NamedStubs picks
// them by name in order, StubAttrs and StubAttr read their attributes
// (StubAttr "" when absent).
func TestMemorySpansAreFoundByNameAndTheirAttributesByKey(t *testing.T) {
	tp, mem := NewMemory()
	tr := tp.Tracer("test")
	for i, name := range []string{"a", "b", "a"} {
		_, s := tr.Start(context.Background(), name)
		s.SetAttributes(attribute.Int("i", i), attribute.String("s", name))
		s.End()
	}
	spans := mem.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans in memory, want 3", len(spans))
	}
	a := NamedStubs(spans, "a")
	if len(a) != 2 || StubAttrs(a[0])["i"].AsInt64() != 0 || StubAttrs(a[1])["i"].AsInt64() != 2 {
		t.Errorf("NamedStubs(a) = %+v, want spans 0 and 2 in order", a)
	}
	if n := NamedStubs(spans, "c"); n != nil {
		t.Errorf("NamedStubs(c) = %+v, want nil", n)
	}
	for key, want := range map[string]string{"i": "2", "s": "a", "none": ""} {
		if got := StubAttr(a[1], key); got != want {
			t.Errorf("StubAttr(%s) = %q, want %q", key, got, want)
		}
	}
}
