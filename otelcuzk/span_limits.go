package otelcuzk

import (
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Defaults of the span limits New sets where the standard variables leave
// a limit unset. The SDK's own defaults leave attribute values unbounded,
// so one span carrying a caller's 32 MiB string made its whole batch too
// large for the Collector (its OTLP/gRPC receiver takes 4 MiB a message by
// default) and lost every span in it. With these, a span's attribute,
// event and link values hold at most about 2.8 MiB even in 4-byte runes:
// 128 × 4 KiB + 128 events × 4 × 4 KiB + 16 links × 4 × 4 KiB (names and
// keys aside), under that 4 MiB.
const (
	// DefaultAttributeValueLengthLimit is the longest string attribute
	// value kept, in characters (UTF-8 runes, as the specification counts;
	// the SDK cuts longer ones); OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT,
	// then OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT, override it.
	DefaultAttributeValueLengthLimit = 1024
	// DefaultAttributePerEventCountLimit is the number of attributes kept
	// per span event; OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT overrides it.
	DefaultAttributePerEventCountLimit = 4
	// DefaultLinkCountLimit is the number of links kept per span;
	// OTEL_SPAN_LINK_COUNT_LIMIT overrides it.
	DefaultLinkCountLimit = 16
	// DefaultAttributePerLinkCountLimit is the number of attributes kept
	// per link; OTEL_LINK_ATTRIBUTE_COUNT_LIMIT overrides it.
	DefaultAttributePerLinkCountLimit = 4
)

// spanLimits returns the SDK's span limits from the standard variables
// (OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT,
// OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, OTEL_ATTRIBUTE_COUNT_LIMIT,
// OTEL_SPAN_EVENT_COUNT_LIMIT, OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT,
// OTEL_SPAN_LINK_COUNT_LIMIT, OTEL_LINK_ATTRIBUTE_COUNT_LIMIT; the SDK reads
// them) with the Default*Limit values above for those unset. The attribute
// and event counts keep the SDK's (and the specification's) 128.
func spanLimits() sdktrace.SpanLimits {
	l := sdktrace.NewSpanLimits()
	if firstEnv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT") == "" {
		l.AttributeValueLengthLimit = DefaultAttributeValueLengthLimit
	}
	if firstEnv("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT") == "" {
		l.AttributePerEventCountLimit = DefaultAttributePerEventCountLimit
	}
	if firstEnv("OTEL_SPAN_LINK_COUNT_LIMIT") == "" {
		l.LinkCountLimit = DefaultLinkCountLimit
	}
	if firstEnv("OTEL_LINK_ATTRIBUTE_COUNT_LIMIT") == "" {
		l.AttributePerLinkCountLimit = DefaultAttributePerLinkCountLimit
	}
	return l
}
