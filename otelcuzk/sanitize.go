package otelcuzk

import (
	"context"
	"sync"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ValidUTF8 returns s with each byte that is not part of a valid UTF-8
// sequence replaced by U+FFFD, as encoding/json and the file exporter
// replace them; s itself (no copy) when it is valid.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// utf8Exporter hands next spans whose every string is valid UTF-8: span
// name, status message, attribute keys and string (slice) values of the
// span, its events and links, event names, the resource and the
// instrumentation scope. OTLP over protobuf (gRPC and HTTP) refuses to
// marshal a request with one invalid string ("string field contains invalid
// UTF-8"), so a single span with a raw byte in an attribute would lose its
// whole batch (opentelemetry-go issue #3021); the SDK's length limit cleans
// only the values it truncates. Valid spans pass through untouched; an
// invalid one is replaced by a cleaned snapshot.
type utf8Exporter struct {
	next sdktrace.SpanExporter

	mu      sync.Mutex
	lastRes *resource.Resource // the resource last cleaned, and its clean form
	cleaned *resource.Resource
}

func (e *utf8Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	return e.next.ExportSpans(ctx, e.sanitize(spans))
}

func (e *utf8Exporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }

// sanitize returns spans, or a copy with each span that holds invalid UTF-8
// replaced by a cleaned snapshot.
func (e *utf8Exporter) sanitize(spans []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for i, s := range spans {
		res := e.resource(s.Resource())
		if res == s.Resource() && spanValidUTF8(s) {
			if out != nil {
				out = append(out, s)
			}
			continue
		}
		if out == nil {
			out = make([]sdktrace.ReadOnlySpan, i, len(spans))
			copy(out, spans[:i])
		}
		out = append(out, cleanSpan(s, res))
	}
	if out == nil {
		return spans
	}
	return out
}

// resource returns r when it is valid UTF-8, else its cleaned copy. Every
// span of a provider shares one resource, so the last answer is kept.
func (e *utf8Exporter) resource(r *resource.Resource) *resource.Resource {
	if r == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r == e.lastRes {
		return e.cleaned
	}
	e.lastRes, e.cleaned = r, cleanResource(r)
	return e.cleaned
}

// cleanResource returns r when its attributes are valid UTF-8, else a
// resource with the same schema URL and cleaned attributes.
func cleanResource(r *resource.Resource) *resource.Resource {
	attrs := r.Attributes()
	if attrsValidUTF8(attrs) && utf8.ValidString(r.SchemaURL()) {
		return r
	}
	return resource.NewWithAttributes(ValidUTF8(r.SchemaURL()), cleanAttrs(attrs)...)
}

func spanValidUTF8(s sdktrace.ReadOnlySpan) bool {
	if !utf8.ValidString(s.Name()) || !utf8.ValidString(s.Status().Description) || !attrsValidUTF8(s.Attributes()) {
		return false
	}
	for _, ev := range s.Events() {
		if !utf8.ValidString(ev.Name) || !attrsValidUTF8(ev.Attributes) {
			return false
		}
	}
	for _, l := range s.Links() {
		if !attrsValidUTF8(l.Attributes) {
			return false
		}
	}
	sc := s.InstrumentationScope()
	return utf8.ValidString(sc.Name) && utf8.ValidString(sc.Version) && utf8.ValidString(sc.SchemaURL) &&
		attrsValidUTF8(sc.Attributes.ToSlice())
}

func attrsValidUTF8(attrs []attribute.KeyValue) bool {
	for _, kv := range attrs {
		if !utf8.ValidString(string(kv.Key)) {
			return false
		}
		switch kv.Value.Type() {
		case attribute.STRING:
			if !utf8.ValidString(kv.Value.AsString()) {
				return false
			}
		case attribute.STRINGSLICE:
			for _, v := range kv.Value.AsStringSlice() {
				if !utf8.ValidString(v) {
					return false
				}
			}
		}
	}
	return true
}

// cleanAttrs returns a copy of attrs with keys and string values made valid.
func cleanAttrs(attrs []attribute.KeyValue) []attribute.KeyValue {
	if attrs == nil {
		return nil
	}
	out := make([]attribute.KeyValue, len(attrs))
	for i, kv := range attrs {
		k := attribute.Key(ValidUTF8(string(kv.Key)))
		switch kv.Value.Type() {
		case attribute.STRING:
			out[i] = k.String(ValidUTF8(kv.Value.AsString()))
		case attribute.STRINGSLICE:
			vs := kv.Value.AsStringSlice()
			for j := range vs {
				vs[j] = ValidUTF8(vs[j])
			}
			out[i] = k.StringSlice(vs)
		default:
			out[i] = attribute.KeyValue{Key: k, Value: kv.Value}
		}
	}
	return out
}

// cleanSpan is s with every string valid and res as its resource; ids,
// times, kinds, counts and the parent are s's own. The cleaned fields are
// computed once, here: an ended span does not change.
func cleanSpan(s sdktrace.ReadOnlySpan, res *resource.Resource) sdktrace.ReadOnlySpan {
	c := &cleanedSpan{ReadOnlySpan: s, name: ValidUTF8(s.Name()), status: s.Status(), attrs: cleanAttrs(s.Attributes()), res: res}
	c.status.Description = ValidUTF8(c.status.Description)
	for _, ev := range s.Events() {
		ev.Name = ValidUTF8(ev.Name)
		ev.Attributes = cleanAttrs(ev.Attributes)
		c.events = append(c.events, ev)
	}
	for _, l := range s.Links() {
		l.Attributes = cleanAttrs(l.Attributes)
		c.links = append(c.links, l)
	}
	sc := s.InstrumentationScope()
	c.scope = instrumentation.Scope{
		Name: ValidUTF8(sc.Name), Version: ValidUTF8(sc.Version), SchemaURL: ValidUTF8(sc.SchemaURL),
		Attributes: attribute.NewSet(cleanAttrs(sc.Attributes.ToSlice())...),
	}
	return c
}

// cleanedSpan is a span read through cleanSpan: the embedded span answers
// everything but the strings and the resource. (Embedding the interface is
// the only way outside the SDK to satisfy sdktrace.ReadOnlySpan, which has
// an unexported method.)
type cleanedSpan struct {
	sdktrace.ReadOnlySpan
	name   string
	status sdktrace.Status
	attrs  []attribute.KeyValue
	events []sdktrace.Event
	links  []sdktrace.Link
	scope  instrumentation.Scope
	res    *resource.Resource
}

func (c *cleanedSpan) Name() string                                { return c.name }
func (c *cleanedSpan) Status() sdktrace.Status                     { return c.status }
func (c *cleanedSpan) Attributes() []attribute.KeyValue            { return c.attrs }
func (c *cleanedSpan) Events() []sdktrace.Event                    { return c.events }
func (c *cleanedSpan) Links() []sdktrace.Link                      { return c.links }
func (c *cleanedSpan) Resource() *resource.Resource                { return c.res }
func (c *cleanedSpan) InstrumentationScope() instrumentation.Scope { return c.scope }

//nolint:staticcheck // exporters may still read the deprecated name
func (c *cleanedSpan) InstrumentationLibrary() instrumentation.Library { return c.scope }
