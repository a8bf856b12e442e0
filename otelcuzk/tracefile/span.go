// Package tracefile reads traces back from where otelcuzk sent them and
// explains them: a small backend-neutral span model, a reader for OTLP JSON
// (the lines otelcuzk's file exporter and the OpenTelemetry Collector's file
// exporter write, or one document as Grafana Tempo's /api/traces returns),
// the span tree of each trace with the untraced time of every span, and a
// terminal waterfall with a summary of where the time went by layer.
//
// Readers for other backends only need to produce []Span.
package tracefile

import (
	"bytes"
	"encoding/hex"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Span is one span as any backend reports it.
type Span struct {
	TraceID  string // 32 lowercase hex digits
	SpanID   string // 16 lowercase hex digits
	ParentID string // 16 lowercase hex digits, "" for a root span
	Name     string
	Start    time.Time
	End      time.Time
	// Attrs holds attribute values as string, int64, float64, bool, []byte,
	// []any (OTLP arrays) or map[string]any (OTLP key-value lists).
	Attrs   map[string]any
	Status  Status
	Service string // service.name of the span's resource, "" if unknown
	Host    string // host.name of the span's resource, "" if unknown
	Version string // service.version of the span's resource (cuzk: its build), "" if unknown
}

// Duration is End − Start, or 0 when End is before Start.
func (s Span) Duration() time.Duration {
	if s.End.Before(s.Start) {
		return 0
	}
	return s.End.Sub(s.Start)
}

// StatusCode is a span's status code, numbered as OTLP numbers it.
type StatusCode int

// Status codes (OTLP trace.proto, Status.StatusCode).
const (
	StatusUnset StatusCode = 0
	StatusOK    StatusCode = 1
	StatusError StatusCode = 2
)

// String returns "UNSET", "OK" or "ERROR".
func (c StatusCode) String() string {
	switch c {
	case StatusOK:
		return "OK"
	case StatusError:
		return "ERROR"
	default:
		return "UNSET"
	}
}

// Status is a span's status: a code and, for errors, a message.
type Status struct {
	Code    StatusCode
	Message string
}

// SpansFromOTLP flattens OTLP TracesData (as ParseJaegerJSON, FetchJaeger,
// FetchTempo and ParseTempoJSON return) into Spans, in order. Ids become
// lowercase hex; an all-zero or missing parent id becomes "".
func SpansFromOTLP(tds ...*tracepb.TracesData) []Span {
	var out []Span
	for _, td := range tds {
		for _, rs := range td.GetResourceSpans() {
			var service, host, version string
			for _, kv := range rs.GetResource().GetAttributes() {
				switch kv.GetKey() {
				case "service.name":
					service = kv.GetValue().GetStringValue()
				case "host.name":
					host = kv.GetValue().GetStringValue()
				case "service.version":
					version = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, p := range ss.GetSpans() {
					s := Span{
						TraceID: hex.EncodeToString(p.GetTraceId()),
						SpanID:  hex.EncodeToString(p.GetSpanId()),
						Name:    p.GetName(),
						Start:   time.Unix(0, int64(p.GetStartTimeUnixNano())).UTC(),
						End:     time.Unix(0, int64(p.GetEndTimeUnixNano())).UTC(),
						Status: Status{
							Code:    StatusCode(p.GetStatus().GetCode()),
							Message: p.GetStatus().GetMessage(),
						},
						Service: service, Host: host, Version: version,
					}
					if pid := p.GetParentSpanId(); len(pid) > 0 && !bytes.Equal(pid, make([]byte, len(pid))) {
						s.ParentID = hex.EncodeToString(pid)
					}
					if len(p.GetAttributes()) > 0 {
						s.Attrs = make(map[string]any, len(p.GetAttributes()))
						for _, kv := range p.GetAttributes() {
							s.Attrs[kv.GetKey()] = otlpValue(kv.GetValue())
						}
					}
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// otlpValue converts an OTLP AnyValue to the Go types of Span.Attrs.
func otlpValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, otlpValue(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := make(map[string]any, len(x.KvlistValue.GetValues()))
		for _, kv := range x.KvlistValue.GetValues() {
			out[kv.GetKey()] = otlpValue(kv.GetValue())
		}
		return out
	}
	return nil
}
