package otelcuzk

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

type scopeKey struct {
	res   *resource.Resource
	scope instrumentation.Scope
}

// TracesData converts ended spans into the OTLP protobuf message, grouped by
// resource and then by instrumentation scope, in the order first seen.
func TracesData(spans []sdktrace.ReadOnlySpan) *tracepb.TracesData {
	td := &tracepb.TracesData{}
	resIdx := map[*resource.Resource]*tracepb.ResourceSpans{}
	scopeIdx := map[scopeKey]*tracepb.ScopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		rs, ok := resIdx[res]
		if !ok {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{}}
			if res != nil {
				rs.Resource.Attributes = keyValues(res.Attributes())
				rs.SchemaUrl = res.SchemaURL()
			}
			resIdx[res] = rs
			td.ResourceSpans = append(td.ResourceSpans, rs)
		}
		sc := s.InstrumentationScope()
		ss, ok := scopeIdx[scopeKey{res, sc}]
		if !ok {
			ss = &tracepb.ScopeSpans{
				Scope: &commonpb.InstrumentationScope{
					Name:       sc.Name,
					Version:    sc.Version,
					Attributes: keyValues(sc.Attributes.ToSlice()),
				},
				SchemaUrl: sc.SchemaURL,
			}
			scopeIdx[scopeKey{res, sc}] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, spanProto(s))
	}
	return td
}

func spanProto(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Flags:                  spanFlags(sc.TraceFlags(), s.Parent()),
		Name:                   s.Name(),
		Kind:                   tracepb.Span_SpanKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime().UnixNano()),
		EndTimeUnixNano:        unixNano(s.EndTime().UnixNano()),
		Attributes:             keyValues(s.Attributes()),
		DroppedAttributesCount: uint32(max(s.DroppedAttributes(), 0)),
		DroppedEventsCount:     uint32(max(s.DroppedEvents(), 0)),
		DroppedLinksCount:      uint32(max(s.DroppedLinks(), 0)),
	}
	if psid := s.Parent().SpanID(); s.Parent().IsValid() {
		p.ParentSpanId = psid[:]
	}
	for _, e := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{
			TimeUnixNano:           unixNano(e.Time.UnixNano()),
			Name:                   e.Name,
			Attributes:             keyValues(e.Attributes),
			DroppedAttributesCount: uint32(max(e.DroppedAttributeCount, 0)),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{
			TraceId:                ltid[:],
			SpanId:                 lsid[:],
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             keyValues(l.Attributes),
			DroppedAttributesCount: uint32(max(l.DroppedAttributeCount, 0)),
			Flags:                  spanFlags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	// The Go API numbers codes Unset, Error, Ok; OTLP numbers them Unset, Ok,
	// Error.
	switch st := s.Status(); st.Code {
	case codes.Ok:
		p.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	case codes.Error:
		p.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: st.Description}
	}
	return p
}

// spanFlags gives OTLP's flags field: the W3C trace flags in the low byte
// and, since OTLP 1.1, whether the parent context was remote (bits 8 and 9).
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsRemote() {
		f |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return f
}

func unixNano(ns int64) uint64 {
	if ns < 0 {
		return 0
	}
	return uint64(ns)
}

func keyValues(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(attrs))
	for _, kv := range attrs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	av := &commonpb.AnyValue{}
	switch v.Type() {
	case attribute.BOOL:
		av.Value = &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}
	case attribute.INT64:
		av.Value = &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}
	case attribute.FLOAT64:
		av.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}
	case attribute.STRING:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: v.AsString()}
	case attribute.BYTESLICE:
		av.Value = &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}
	case attribute.BOOLSLICE:
		vals := v.AsBoolSlice()
		arr := make([]*commonpb.AnyValue, len(vals))
		for i, x := range vals {
			arr[i] = &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: x}}
		}
		av.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: arr}}
	case attribute.INT64SLICE:
		vals := v.AsInt64Slice()
		arr := make([]*commonpb.AnyValue, len(vals))
		for i, x := range vals {
			arr[i] = &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: x}}
		}
		av.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: arr}}
	case attribute.FLOAT64SLICE:
		vals := v.AsFloat64Slice()
		arr := make([]*commonpb.AnyValue, len(vals))
		for i, x := range vals {
			arr[i] = &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
		}
		av.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: arr}}
	case attribute.STRINGSLICE:
		vals := v.AsStringSlice()
		arr := make([]*commonpb.AnyValue, len(vals))
		for i, x := range vals {
			arr[i] = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}
		}
		av.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: arr}}
	case attribute.SLICE:
		vals := v.AsSlice()
		arr := make([]*commonpb.AnyValue, len(vals))
		for i, x := range vals {
			arr[i] = anyValue(x)
		}
		av.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: arr}}
	case attribute.MAP:
		av.Value = &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: keyValues(v.AsMap())}}
	default:
		// EMPTY and unknown types: an AnyValue with no value, as OTLP
		// represents an empty value.
	}
	return av
}

// MarshalOTLPJSON encodes td as one line of OTLP/JSON (OpenTelemetry
// Protocol specification, "JSON Protobuf Encoding"): lowerCamelCase field
// names, enums as integers, 64-bit integers as decimal strings, and trace and
// span ids as lowercase hex rather than protobuf JSON's base64. The result has
// no trailing newline. It is the layout the OpenTelemetry Collector's file
// exporter writes and its otlpjsonfile receiver reads.
func MarshalOTLPJSON(td *tracepb.TracesData) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(td)
	if err != nil {
		return nil, fmt.Errorf("otelcuzk: marshal OTLP JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("otelcuzk: marshal OTLP JSON: %w", err)
	}
	if err := hexIDs(doc); err != nil {
		return nil, fmt.Errorf("otelcuzk: marshal OTLP JSON: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("otelcuzk: marshal OTLP JSON: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// idFields are the bytes fields OTLP/JSON writes as hex instead of base64.
var idFields = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true}

// hexIDs rewrites, in place, the base64 ids protojson wrote as hex.
func hexIDs(v any) error {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && idFields[k] {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return fmt.Errorf("field %s: %w", k, err)
				}
				x[k] = hex.EncodeToString(b)
				continue
			}
			if err := hexIDs(val); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := hexIDs(e); err != nil {
				return err
			}
		}
	}
	return nil
}
