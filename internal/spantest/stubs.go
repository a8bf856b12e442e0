package spantest

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// NewMemory returns a TracerProvider whose spans are exported, as each
// ends, to the returned in-memory exporter (a synchronous processor: a
// span is in mem.GetSpans() once End returns), for the tests that read
// span stubs rather than a recorder's read-only spans.
func NewMemory() (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	mem := tracetest.NewInMemoryExporter()
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem)), mem
}

// NamedStubs returns the stubs in spans with the name name, in their
// order (nil when there are none).
func NamedStubs(spans []tracetest.SpanStub, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// StubAttrs returns the attributes of s by key (of a key set twice, the
// last value).
func StubAttrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// StubAttr returns the value of s's attribute key as text
// (attribute.Value.Emit), or "" when s has no such attribute.
func StubAttr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// StubValue returns the value of s's attribute key as text
// (attribute.Value.Emit) and whether s has it, for the tests that tell an
// attribute set to "" from one not set.
func StubValue(s tracetest.SpanStub, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit(), true
		}
	}
	return "", false
}

// Tree indexes span stubs by span id, for checks of a span's parent and
// ancestors. It is not safe for concurrent use with a change to its spans.
type Tree struct {
	spans []tracetest.SpanStub
	byID  map[string]tracetest.SpanStub
}

// NewTree indexes spans (the in-memory exporter's GetSpans, say).
func NewTree(spans []tracetest.SpanStub) *Tree {
	t := &Tree{spans: spans, byID: make(map[string]tracetest.SpanStub, len(spans))}
	for _, s := range spans {
		t.byID[s.SpanContext.SpanID().String()] = s
	}
	return t
}

// Named returns the spans with the name name, in their order (nil when
// there are none).
func (t *Tree) Named(name string) []tracetest.SpanStub { return NamedStubs(t.spans, name) }

// Parent returns s's parent span, and false when s's parent is not among
// the spans (a root, or a remote parent).
func (t *Tree) Parent(s tracetest.SpanStub) (tracetest.SpanStub, bool) {
	p, ok := t.byID[s.Parent.SpanID().String()]
	return p, ok
}

// Under reports whether s has an ancestor among the spans named name.
func (t *Tree) Under(s tracetest.SpanStub, name string) bool {
	for p, ok := t.Parent(s); ok; p, ok = t.Parent(p) {
		if p.Name == name {
			return true
		}
	}
	return false
}

// EndsAfterParent returns a line for each span that ends after its parent
// (a child outliving its parent in a waterfall), but those exempt (nil:
// none) allows, as an async release under its job.
func (t *Tree) EndsAfterParent(exempt func(child, parent tracetest.SpanStub) bool) []string {
	var out []string
	for _, s := range t.spans {
		p, ok := t.Parent(s)
		if ok && s.EndTime.After(p.EndTime) && (exempt == nil || !exempt(s, p)) {
			out = append(out, fmt.Sprintf("%s ends %v after its parent %s", s.Name, s.EndTime.Sub(p.EndTime), p.Name))
		}
	}
	return out
}

// OutlivesParentByDesign reports the spans DESIGN.md lets end after their
// parent: an async buffer.release under engine.job ("Buffer release": off
// the critical path) and engine.abandoned (work a cancelled job left
// running, which outlives the job). The names are semconv's, spelt out:
// semconv's own tests import this package (a test checks they agree).
func OutlivesParentByDesign(child, parent tracetest.SpanStub) bool {
	return child.Name == spanBufferRelease && parent.Name == spanEngineJob || child.Name == spanEngineAbandoned
}

const (
	spanBufferRelease   = "buffer.release"
	spanEngineJob       = "engine.job"
	spanEngineAbandoned = "engine.abandoned"
)

// ChildrenEndInTheirParents fails tb for every span of spans that ends
// after its parent, but those OutlivesParentByDesign allows.
func ChildrenEndInTheirParents(tb testing.TB, spans []tracetest.SpanStub) {
	tb.Helper()
	for _, l := range NewTree(spans).EndsAfterParent(OutlivesParentByDesign) {
		tb.Error(l)
	}
}
