package spantest

import (
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
