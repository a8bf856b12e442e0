package spantest

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
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

// A Tree finds a span's parent and its ancestors by name among the spans
// it indexed; a root has no parent, and an attribute set to "" is told
// from one not set.
func TestTreeFindsParentsAndAncestors(t *testing.T) {
	tp, mem := NewMemory()
	tr := tp.Tracer("test")
	ctx, root := tr.Start(context.Background(), "root")
	cctx, mid := tr.Start(ctx, "mid")
	_, leaf := tr.Start(cctx, "leaf")
	leaf.SetAttributes(attribute.String("empty", ""))
	leaf.End()
	mid.End()
	_, other := tr.Start(context.Background(), "other")
	other.End()
	root.End()

	tree := NewTree(mem.GetSpans())
	l := tree.Named("leaf")
	if len(l) != 1 {
		t.Fatalf("Named(leaf) = %d spans, want 1", len(l))
	}
	if p, ok := tree.Parent(l[0]); !ok || p.Name != "mid" {
		t.Errorf("Parent(leaf) = %q, %v; want mid", p.Name, ok)
	}
	if !tree.Under(l[0], "root") || !tree.Under(l[0], "mid") || tree.Under(l[0], "other") || tree.Under(l[0], "leaf") {
		t.Error("Under(leaf): want under root and mid only")
	}
	if _, ok := tree.Parent(tree.Named("root")[0]); ok {
		t.Error("Parent(root) found a parent, want none")
	}
	if v, ok := StubValue(l[0], "empty"); !ok || v != "" {
		t.Errorf("StubValue(empty) = %q, %v; want \"\", true", v, ok)
	}
	if _, ok := StubValue(l[0], "none"); ok {
		t.Error("StubValue(none) found a value, want none")
	}
}

// EndsAfterParent lists each span that ends after its parent, but those
// its exemption allows.
func TestEndsAfterParentListsChildrenOutlivingTheirParents(t *testing.T) {
	tp, mem := NewMemory()
	tr := tp.Tracer("test")
	ctx, root := tr.Start(context.Background(), "root")
	_, inside := tr.Start(ctx, "inside")
	inside.End()
	_, late := tr.Start(ctx, "late")
	_, allowed := tr.Start(ctx, "allowed")
	root.End()
	late.End()
	allowed.End()
	tree := NewTree(mem.GetSpans())
	if got := tree.EndsAfterParent(nil); len(got) != 2 {
		t.Errorf("EndsAfterParent(nil) = %q, want late and allowed", got)
	}
	got := tree.EndsAfterParent(func(c, p tracetest.SpanStub) bool { return c.Name == "allowed" && p.Name == "root" })
	if len(got) != 1 || !strings.HasPrefix(got[0], "late ends ") || !strings.HasSuffix(got[0], " after its parent root") {
		t.Errorf("EndsAfterParent(allowed exempt) = %q, want late's line only", got)
	}
}

// OutlivesParentByDesign's spelt-out names are semconv's, and it allows
// exactly an async release under its job and abandoned work.
func TestOutlivesParentByDesignNamesSemconvsSpans(t *testing.T) {
	for got, want := range map[string]string{
		spanBufferRelease:   semconv.SpanBufferRelease,
		spanEngineJob:       semconv.SpanEngineJob,
		spanEngineAbandoned: semconv.SpanEngineAbandoned,
	} {
		if got != want {
			t.Errorf("spantest says %q where semconv says %q", got, want)
		}
	}
	stub := func(name string) tracetest.SpanStub { return tracetest.SpanStub{Name: name} }
	for _, c := range []struct {
		child, parent string
		want          bool
	}{
		{semconv.SpanBufferRelease, semconv.SpanEngineJob, true},
		{semconv.SpanEngineAbandoned, semconv.SpanEngineJob, true},
		{semconv.SpanBufferRelease, semconv.SpanGroth16Prove, false},
		{semconv.SpanKeyLoad, semconv.SpanEngineJob, false},
	} {
		if got := OutlivesParentByDesign(stub(c.child), stub(c.parent)); got != c.want {
			t.Errorf("%s under %s: OutlivesParentByDesign %v, want %v", c.child, c.parent, got, c.want)
		}
	}
}
