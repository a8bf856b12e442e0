package otelcuzk

import (
	"encoding/base64"
	"encoding/hex"
	"math"
	"strconv"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
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
		if s == nil {
			continue
		}
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
		av.Value = arrayValue(v.AsBoolSlice(), func(x bool) *commonpb.AnyValue { return anyValue(attribute.BoolValue(x)) })
	case attribute.INT64SLICE:
		av.Value = arrayValue(v.AsInt64Slice(), func(x int64) *commonpb.AnyValue { return anyValue(attribute.Int64Value(x)) })
	case attribute.FLOAT64SLICE:
		av.Value = arrayValue(v.AsFloat64Slice(), func(x float64) *commonpb.AnyValue { return anyValue(attribute.Float64Value(x)) })
	case attribute.STRINGSLICE:
		av.Value = arrayValue(v.AsStringSlice(), func(x string) *commonpb.AnyValue { return anyValue(attribute.StringValue(x)) })
	case attribute.SLICE:
		av.Value = arrayValue(v.AsSlice(), anyValue)
	case attribute.MAP:
		av.Value = &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: keyValues(v.AsMap())}}
	default:
		// EMPTY and unknown types: an AnyValue with no value, as OTLP
		// represents an empty value.
	}
	return av
}

// arrayValue converts each element of vals with one and wraps them as an
// OTLP ArrayValue, in order.
func arrayValue[T any](vals []T, one func(T) *commonpb.AnyValue) *commonpb.AnyValue_ArrayValue {
	arr := make([]*commonpb.AnyValue, len(vals))
	for i, x := range vals {
		arr[i] = one(x)
	}
	return &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: arr}}
}

// MarshalOTLPJSON encodes td as one line of OTLP/JSON (OpenTelemetry
// Protocol specification, "JSON Protobuf Encoding"): lowerCamelCase field
// names, enums as integers, 64-bit integers as decimal strings, trace and
// span ids as lowercase hex rather than protobuf JSON's base64, and fields
// at their zero value left out, as protobuf JSON does. The result has no
// trailing newline. It is the layout the OpenTelemetry Collector's file
// exporter writes and its otlpjsonfile receiver reads. Non-finite doubles are
// written as protobuf JSON writes them ("NaN", "Infinity", "-Infinity").
//
// It writes the JSON directly rather than through protojson, which is about
// ten times slower and would still need its base64 ids rewritten; the tests
// check the output against protojson.
func MarshalOTLPJSON(td *tracepb.TracesData) ([]byte, error) {
	b := make([]byte, 0, 1024)
	b = append(b, `{"resourceSpans":`...)
	rss := td.GetResourceSpans()
	b = appendArray(b, len(rss), func(b []byte, i int) []byte {
		rs := rss[i]
		return appendObject(b, func(o *objWriter) {
			if r := rs.GetResource(); r != nil {
				o.object("resource", func(ro *objWriter) {
					ro.attributes(r.GetAttributes(), r.GetDroppedAttributesCount())
				})
			}
			ss := rs.GetScopeSpans()
			o.array("scopeSpans", len(ss), func(b []byte, j int) []byte { return appendScopeSpans(b, ss[j]) })
			o.str("schemaUrl", rs.GetSchemaUrl())
		})
	})
	return append(b, '}'), nil
}

func appendScopeSpans(b []byte, ss *tracepb.ScopeSpans) []byte {
	return appendObject(b, func(o *objWriter) {
		if sc := ss.GetScope(); sc != nil {
			o.object("scope", func(so *objWriter) {
				so.str("name", sc.GetName())
				so.str("version", sc.GetVersion())
				so.attributes(sc.GetAttributes(), sc.GetDroppedAttributesCount())
			})
		}
		spans := ss.GetSpans()
		o.array("spans", len(spans), func(b []byte, i int) []byte { return appendSpan(b, spans[i]) })
		o.str("schemaUrl", ss.GetSchemaUrl())
	})
}

func appendSpan(b []byte, s *tracepb.Span) []byte {
	return appendObject(b, func(o *objWriter) {
		o.spanContext(s.GetTraceId(), s.GetSpanId(), s.GetTraceState())
		o.hexID("parentSpanId", s.GetParentSpanId())
		o.uint("flags", uint64(s.GetFlags()), false)
		o.str("name", s.GetName())
		o.uint("kind", uint64(s.GetKind()), false)
		o.uint("startTimeUnixNano", s.GetStartTimeUnixNano(), true)
		o.uint("endTimeUnixNano", s.GetEndTimeUnixNano(), true)
		o.attributes(s.GetAttributes(), s.GetDroppedAttributesCount())
		evs := s.GetEvents()
		o.array("events", len(evs), func(b []byte, i int) []byte {
			e := evs[i]
			return appendObject(b, func(eo *objWriter) {
				eo.uint("timeUnixNano", e.GetTimeUnixNano(), true)
				eo.str("name", e.GetName())
				eo.attributes(e.GetAttributes(), e.GetDroppedAttributesCount())
			})
		})
		o.uint("droppedEventsCount", uint64(s.GetDroppedEventsCount()), false)
		links := s.GetLinks()
		o.array("links", len(links), func(b []byte, i int) []byte {
			l := links[i]
			return appendObject(b, func(lo *objWriter) {
				lo.spanContext(l.GetTraceId(), l.GetSpanId(), l.GetTraceState())
				lo.attributes(l.GetAttributes(), l.GetDroppedAttributesCount())
				lo.uint("flags", uint64(l.GetFlags()), false)
			})
		})
		o.uint("droppedLinksCount", uint64(s.GetDroppedLinksCount()), false)
		if st := s.GetStatus(); st != nil {
			o.object("status", func(so *objWriter) {
				so.str("message", st.GetMessage())
				so.uint("code", uint64(st.GetCode()), false)
			})
		}
	})
}

// appendObject appends one JSON object whose fields fill writes.
func appendObject(b []byte, fill func(*objWriter)) []byte {
	o := objWriter{b: append(b, '{')}
	fill(&o)
	return append(o.b, '}')
}

// appendArray appends a JSON array of n elements, element i appended by elem.
func appendArray(b []byte, n int, elem func(b []byte, i int) []byte) []byte {
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = elem(b, i)
	}
	return append(b, ']')
}

// objWriter appends the fields of one JSON object, leaving out zero values
// as protobuf JSON does, and places the commas.
type objWriter struct {
	b []byte
	n int
}

func (o *objWriter) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *objWriter) str(k, v string) {
	if v == "" {
		return
	}
	o.key(k)
	o.b = appendJSONString(o.b, v)
}

// uint writes v, as a decimal string when quoted (protobuf JSON's form for
// 64-bit integers).
func (o *objWriter) uint(k string, v uint64, quoted bool) {
	if v == 0 {
		return
	}
	o.key(k)
	if quoted {
		o.b = append(o.b, '"')
	}
	o.b = strconv.AppendUint(o.b, v, 10)
	if quoted {
		o.b = append(o.b, '"')
	}
}

func (o *objWriter) hexID(k string, id []byte) {
	if len(id) == 0 {
		return
	}
	o.key(k)
	o.b = append(o.b, '"')
	o.b = hex.AppendEncode(o.b, id)
	o.b = append(o.b, '"')
}

func (o *objWriter) keyValues(k string, kvs []*commonpb.KeyValue) {
	if len(kvs) == 0 {
		return
	}
	o.key(k)
	o.b = appendKeyValues(o.b, kvs)
}

// attributes writes the attributes and droppedAttributesCount fields that
// a resource, a scope, a span, an event and a link share.
func (o *objWriter) attributes(kvs []*commonpb.KeyValue, dropped uint32) {
	o.keyValues("attributes", kvs)
	o.uint("droppedAttributesCount", uint64(dropped), false)
}

// spanContext writes the traceId, spanId and traceState fields that a span
// and a link start with.
func (o *objWriter) spanContext(traceID, spanID []byte, traceState string) {
	o.hexID("traceId", traceID)
	o.hexID("spanId", spanID)
	o.str("traceState", traceState)
}

// object writes the field k as a nested object whose fields fill writes.
func (o *objWriter) object(k string, fill func(*objWriter)) {
	o.key(k)
	o.b = appendObject(o.b, fill)
}

// array writes the field k as an array of n elements (see appendArray);
// nothing when n is 0, as protobuf JSON leaves out empty repeated fields.
func (o *objWriter) array(k string, n int, elem func(b []byte, i int) []byte) {
	if n == 0 {
		return
	}
	o.key(k)
	o.b = appendArray(o.b, n, elem)
}

func appendKeyValues(b []byte, kvs []*commonpb.KeyValue) []byte {
	return appendArray(b, len(kvs), func(b []byte, i int) []byte {
		kv := kvs[i]
		return appendObject(b, func(o *objWriter) {
			o.str("key", kv.GetKey())
			if v := kv.GetValue(); v != nil {
				o.key("value")
				o.b = appendAnyValue(o.b, v)
			}
		})
	})
}

func appendAnyValue(b []byte, v *commonpb.AnyValue) []byte {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		b = append(b, `{"stringValue":`...)
		b = appendJSONString(b, x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		b = append(b, `{"boolValue":`...)
		b = strconv.AppendBool(b, x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		b = append(b, `{"intValue":"`...)
		b = strconv.AppendInt(b, x.IntValue, 10)
		b = append(b, '"')
	case *commonpb.AnyValue_DoubleValue:
		b = append(b, `{"doubleValue":`...)
		switch f := x.DoubleValue; {
		case math.IsNaN(f):
			b = append(b, `"NaN"`...)
		case math.IsInf(f, 1):
			b = append(b, `"Infinity"`...)
		case math.IsInf(f, -1):
			b = append(b, `"-Infinity"`...)
		default:
			b = strconv.AppendFloat(b, f, 'g', -1, 64)
		}
	case *commonpb.AnyValue_BytesValue:
		b = append(b, `{"bytesValue":"`...)
		b = base64.StdEncoding.AppendEncode(b, x.BytesValue)
		b = append(b, '"')
	case *commonpb.AnyValue_ArrayValue:
		b = append(b, `{"arrayValue":`...)
		vals := x.ArrayValue.GetValues()
		b = appendObject(b, func(o *objWriter) {
			o.array("values", len(vals), func(b []byte, i int) []byte { return appendAnyValue(b, vals[i]) })
		})
	case *commonpb.AnyValue_KvlistValue:
		b = append(b, `{"kvlistValue":`...)
		b = appendObject(b, func(o *objWriter) { o.keyValues("values", x.KvlistValue.GetValues()) })
	default:
		b = append(b, '{')
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string (RFC 8259, section 7):
// quotes, backslashes and control characters escaped, invalid UTF-8
// replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// idFields are the bytes fields OTLP/JSON writes as hex instead of base64.
var idFields = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true}
