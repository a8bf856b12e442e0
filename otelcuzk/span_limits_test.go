package otelcuzk

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// A caller's 1 MiB string in an attribute is cut to the default limit (the
// SDK kept it whole); the standard variables override each limit.
func TestSpanLimitsHaveASafeDefaultAndHonourTheStandardVariables(t *testing.T) {
	big := strings.Repeat("é", 512<<10) // 1 MiB of two-byte runes
	for _, c := range []struct {
		name                   string
		env                    map[string]string
		valueLen, attrs, links int
		eventAttrs             int
	}{
		{"unset", nil, DefaultAttributeValueLengthLimit, 128, DefaultLinkCountLimit, DefaultAttributePerEventCountLimit},
		{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "20"}, 20, 128, DefaultLinkCountLimit, DefaultAttributePerEventCountLimit},
		{"span variables win", map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "20", "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "10",
			"OTEL_ATTRIBUTE_COUNT_LIMIT": "50", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "3"}, 10, 3, DefaultLinkCountLimit, DefaultAttributePerEventCountLimit},
		{"events and links", map[string]string{"OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT": "2", "OTEL_SPAN_LINK_COUNT_LIMIT": "1"},
			DefaultAttributeValueLengthLimit, 128, 1, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			rec := NewRecorder()
			tel := newTel(t, WithSpanProcessor(rec), WithSyncExport(), WithoutUntraced())
			tr := tel.Provider().Tracer("test")
			var links []trace.Link
			for i := 0; i < 40; i++ {
				_, l := tr.Start(context.Background(), "linked")
				l.End()
				links = append(links, trace.Link{SpanContext: l.SpanContext()})
			}
			attrs := []attribute.KeyValue{attribute.String("big", big)}
			for i := 0; i < 200; i++ {
				attrs = append(attrs, attribute.Int("a"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26)), i))
			}
			_, s := tr.Start(context.Background(), "caller", trace.WithAttributes(attrs...), trace.WithLinks(links...))
			ev := make([]attribute.KeyValue, 20)
			for i := range ev {
				ev[i] = attribute.Int(string(rune('a'+i)), i)
			}
			s.AddEvent("e", trace.WithAttributes(ev...))
			s.End()
			var got = rec.Ended()[len(rec.Ended())-1]
			if got.Name() != "caller" {
				t.Fatalf("last span %q", got.Name())
			}
			if n := len(got.Attributes()); n != c.attrs {
				t.Errorf("%d attributes kept, want %d", n, c.attrs)
			}
			v := got.Attributes()[0].Value.AsString()
			if n := utf8.RuneCountInString(v); n != c.valueLen || !utf8.ValidString(v) {
				t.Errorf("value of %d characters (valid UTF-8 %v), want %d", n, utf8.ValidString(v), c.valueLen)
			}
			if n := len(got.Links()); n != c.links {
				t.Errorf("%d links kept, want %d", n, c.links)
			}
			if n := len(got.Events()[0].Attributes); n != c.eventAttrs {
				t.Errorf("%d event attributes kept, want %d", n, c.eventAttrs)
			}
		})
	}
}
