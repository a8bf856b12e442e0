package tracefile

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// ErrMalformed is wrapped by every error about the content of the input (as
// opposed to an error reading it).
var ErrMalformed = semconv.NewError(semconv.ErrorTypeCorrupt, "malformed OTLP JSON")

// ReadOTLPJSONLines reads OTLP JSON traces (OpenTelemetry Protocol
// specification, "JSON Protobuf Encoding"): one {"resourceSpans":[...]}
// object per line, as otelcuzk's file exporter and the OpenTelemetry
// Collector's file exporter write, or a single document spread over many
// lines. It also accepts Grafana Tempo's shapes ({"batches":[...]} of
// /api/traces, {"trace":{"resourceSpans":[...]}} of /api/v2/traces, and the
// older "instrumentationLibrarySpans"), trace and span ids in hex or base64,
// 64-bit integers as strings or numbers, and enums as integers or names.
//
// Spans come back in input order. A span seen twice (same trace and span id)
// is kept once. Errors name the line where the offending JSON value starts
// and wrap ErrMalformed; an empty input gives no spans and no error.
func ReadOTLPJSONLines(r io.Reader) ([]Span, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var spans []Span
	seen := map[[2]string]bool{}
	for {
		start := int(dec.InputOffset())
		for start < len(data) && linesSpace(data[start]) {
			start++
		}
		var doc linesDoc
		err := dec.Decode(&doc)
		if err == io.EOF {
			return spans, nil
		}
		if err != nil {
			return nil, linesError(data, start, plainTypeError(err))
		}
		got, err := doc.spans()
		if err != nil {
			return nil, linesError(data, start, err)
		}
		for _, s := range got {
			k := [2]string{s.TraceID, s.SpanID}
			if !seen[k] {
				seen[k] = true
				spans = append(spans, s)
			}
		}
	}
}

func linesSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// linesError wraps err with the line of data where the failing value starts,
// or where the JSON decoder stopped for a syntax error.
func linesError(data []byte, start int, err error) error {
	off := start
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = int(se.Offset)
	case errors.As(err, &te):
		off = int(te.Offset)
	}
	if off > len(data) {
		off = len(data)
	}
	if off > 0 && off == len(data) {
		off-- // report the last line, not the one after it
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	if first := 1 + bytes.Count(data[:min(start, len(data))], []byte{'\n'}); first < line {
		// The value began lines earlier (an unterminated line swallows
		// the lines after it): name where it starts too.
		return fmt.Errorf("line %d (in the value that starts at line %d): %w: %v", line, first, ErrMalformed, err)
	}
	return fmt.Errorf("line %d: %w: %v", line, ErrMalformed, err)
}

// docTypeError is a JSON value of the wrong kind in an OTLP traces
// document (a number where the document's object is, a string where
// "resourceSpans" has an array), said in JSON's terms rather than
// encoding/json's Go types. It unwraps to the *json.UnmarshalTypeError,
// whose Offset linesError reads.
type docTypeError struct{ te *json.UnmarshalTypeError }

func (e docTypeError) Error() string {
	// Value is encoding/json's name of the JSON value: "number" (or
	// "number 1e400"), "string", "bool", "array", "object".
	got := "JSON " + strings.Fields(e.te.Value + " value")[0]
	if got == "JSON bool" {
		got = "JSON boolean"
	}
	if e.te.Field == "" {
		return fmt.Sprintf("a %s, not an OTLP traces object", got)
	}
	return fmt.Sprintf("%q is a %s, want %s", e.te.Field, got, jsonKind(e.te.Type))
}

func (e docTypeError) Unwrap() error { return e.te }

// plainTypeError is err, or a docTypeError where err is a
// *json.UnmarshalTypeError.
func plainTypeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return docTypeError{te}
	}
	return err
}

// jsonKind names the JSON value a Go type of an otlpDoc decodes from.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another value"
}

// otlpDoc is one OTLP/JSON traces document: "resourceSpans" (OTLP),
// "batches" (Jaeger's api_v3) or either inside {"trace": ...}, with its
// spans as S: decoded (linesSpan), or left as slices of the input
// (rawSpan) to be decoded one at a time.
type otlpDoc[S spanJSON] struct {
	ResourceSpans *[]otlpResourceSpans[S] `json:"resourceSpans"`
	Batches       *[]otlpResourceSpans[S] `json:"batches"`
	Trace         *otlpDoc[S]             `json:"trace"`
}

type otlpResourceSpans[S spanJSON] struct {
	Resource struct {
		Attributes []linesKV `json:"attributes"`
	} `json:"resource"`
	ScopeSpans                  []otlpScopeSpans[S] `json:"scopeSpans"`
	InstrumentationLibrarySpans []otlpScopeSpans[S] `json:"instrumentationLibrarySpans"`
}

type otlpScopeSpans[S spanJSON] struct {
	Spans []S `json:"spans"`
}

// spanJSON is a span of an otlpDoc: span gives it as a Span of the
// resource res.
type spanJSON interface {
	span(res resourceInfo) (Span, error)
}

// linesDoc is an otlpDoc with its spans decoded.
type linesDoc = otlpDoc[linesSpan]

type linesSpan struct {
	TraceID           string          `json:"traceId"`
	SpanID            string          `json:"spanId"`
	ParentSpanID      string          `json:"parentSpanId"`
	Name              string          `json:"name"`
	StartTimeUnixNano json.Number     `json:"startTimeUnixNano"`
	EndTimeUnixNano   json.Number     `json:"endTimeUnixNano"`
	Attributes        []linesKV       `json:"attributes"`
	Status            *linesStatus    `json:"status"`
	Kind              json.RawMessage `json:"kind"`
}

type linesStatus struct {
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

type linesKV struct {
	Key   string     `json:"key"`
	Value linesValue `json:"value"`
}

type linesValue struct {
	StringValue *string          `json:"stringValue"`
	BoolValue   *bool            `json:"boolValue"`
	IntValue    *json.Number     `json:"intValue"`
	DoubleValue *json.RawMessage `json:"doubleValue"`
	BytesValue  *string          `json:"bytesValue"`
	ArrayValue  *struct {
		Values []linesValue `json:"values"`
	} `json:"arrayValue"`
	KvlistValue *struct {
		Values []linesKV `json:"values"`
	} `json:"kvlistValue"`
}

// each hands fn the spans of d in order, each with its resource's
// service.name; it stops at the first error (errNotTraces for a document
// of none of the three shapes).
func (d *otlpDoc[S]) each(fn func(Span) error) error {
	var rss []otlpResourceSpans[S]
	switch {
	case d.ResourceSpans != nil:
		rss = *d.ResourceSpans
	case d.Batches != nil:
		rss = *d.Batches
	case d.Trace != nil:
		return d.Trace.each(fn)
	default:
		return errNotTraces
	}
	for _, rs := range rss {
		res := resourceOf(rs.Resource.Attributes)
		for _, group := range [][]otlpScopeSpans[S]{rs.ScopeSpans, rs.InstrumentationLibrarySpans} {
			for _, ss := range group {
				for _, sp := range ss.Spans {
					s, err := sp.span(res)
					if err != nil {
						return err
					}
					if err := fn(s); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// spans returns the spans of d in order (each), nil on error.
func (d *otlpDoc[S]) spans() ([]Span, error) {
	var out []Span
	if err := d.each(func(s Span) error { out = append(out, s); return nil }); err != nil {
		return nil, err
	}
	return out, nil
}

var errNotTraces = errors.New(`not an OTLP traces document: no "resourceSpans", "batches" or "trace"`)

// resourceInfo is what a Span keeps of its resource (Span.Service, Host,
// Version): the last string value of each key, "" without one.
type resourceInfo struct{ service, host, version string }

func resourceOf(attrs []linesKV) resourceInfo {
	var r resourceInfo
	for _, kv := range attrs {
		if kv.Value.StringValue == nil {
			continue
		}
		switch kv.Key {
		case "service.name":
			r.service = *kv.Value.StringValue
		case "host.name":
			r.host = *kv.Value.StringValue
		case "service.version":
			r.version = *kv.Value.StringValue
		}
	}
	return r
}

func (r linesSpan) span(res resourceInfo) (Span, error) {
	s := Span{Name: r.Name, Service: res.service, Host: res.host, Version: res.version}
	var err error
	if s.TraceID, err = linesID(r.TraceID, 16); err != nil || s.TraceID == "" {
		return s, fmt.Errorf("span %q: traceId %q: want 32 hex digits or base64 of 16 bytes", r.Name, r.TraceID)
	}
	if s.SpanID, err = linesID(r.SpanID, 8); err != nil || s.SpanID == "" {
		return s, fmt.Errorf("span %q: spanId %q: want 16 hex digits or base64 of 8 bytes", r.Name, r.SpanID)
	}
	if s.ParentID, err = linesID(r.ParentSpanID, 8); err != nil {
		return s, fmt.Errorf("span %q: parentSpanId %q: want 16 hex digits or base64 of 8 bytes", r.Name, r.ParentSpanID)
	}
	if s.Start, err = linesTime(r.StartTimeUnixNano); err != nil {
		return s, fmt.Errorf("span %q: startTimeUnixNano: %w", r.Name, err)
	}
	if s.End, err = linesTime(r.EndTimeUnixNano); err != nil {
		return s, fmt.Errorf("span %q: endTimeUnixNano: %w", r.Name, err)
	}
	if s.End.Before(s.Start) {
		return s, fmt.Errorf("span %q (%s): ends %v before it starts", r.Name, s.SpanID, s.Start.Sub(s.End))
	}
	if len(r.Attributes) > 0 {
		s.Attrs = make(map[string]any, len(r.Attributes))
		for _, kv := range r.Attributes {
			v, err := kv.Value.value()
			if err != nil {
				return s, fmt.Errorf("span %q: attribute %q: %w", r.Name, kv.Key, err)
			}
			s.Attrs[kv.Key] = v
		}
	}
	if r.Status != nil {
		s.Status.Message = r.Status.Message
		if s.Status.Code, err = linesStatusCode(r.Status.Code); err != nil {
			return s, fmt.Errorf("span %q: status: %w", r.Name, err)
		}
	}
	return s, nil
}

// linesID returns id as lowercase hex of n bytes: OTLP/JSON writes hex,
// protobuf JSON (and Tempo) base64. "" stays "".
func linesID(id string, n int) (string, error) {
	if id == "" {
		return "", nil
	}
	if len(id) == 2*n {
		if b, err := hex.DecodeString(id); err == nil {
			if linesZeroID(b) {
				return "", errors.New("all-zero id")
			}
			return hex.EncodeToString(b), nil
		}
	}
	b, err := base64.StdEncoding.DecodeString(id)
	if err != nil || len(b) != n {
		return "", errors.New("bad id")
	}
	if linesZeroID(b) {
		return "", errors.New("all-zero id")
	}
	return hex.EncodeToString(b), nil
}

func linesZeroID(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

func linesTime(n json.Number) (time.Time, error) {
	if n == "" {
		return time.Time{}, errors.New("missing")
	}
	ns, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a count of nanoseconds", n)
	}
	if ns > math.MaxInt64 {
		return time.Time{}, fmt.Errorf("%s ns is out of range", n)
	}
	return time.Unix(0, int64(ns)).UTC(), nil
}

func linesStatusCode(raw json.RawMessage) (StatusCode, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return StatusUnset, nil
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		switch strings.ToUpper(name) {
		case "STATUS_CODE_UNSET", "UNSET", "":
			return StatusUnset, nil
		case "STATUS_CODE_OK", "OK":
			return StatusOK, nil
		case "STATUS_CODE_ERROR", "ERROR":
			return StatusError, nil
		}
		return 0, fmt.Errorf("unknown code %q", name)
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < 0 || n > 2 {
		return 0, fmt.Errorf("unknown code %s", raw)
	}
	return StatusCode(n), nil
}

func (v linesValue) value() (any, error) {
	switch {
	case v.StringValue != nil:
		return *v.StringValue, nil
	case v.BoolValue != nil:
		return *v.BoolValue, nil
	case v.IntValue != nil:
		i, err := strconv.ParseInt(string(*v.IntValue), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("intValue %q is not a 64-bit integer", *v.IntValue)
		}
		return i, nil
	case v.DoubleValue != nil:
		return linesDouble(*v.DoubleValue)
	case v.BytesValue != nil:
		b, err := base64.StdEncoding.DecodeString(*v.BytesValue)
		if err != nil {
			return nil, fmt.Errorf("bytesValue: %w", err)
		}
		return b, nil
	case v.ArrayValue != nil:
		out := make([]any, 0, len(v.ArrayValue.Values))
		for _, e := range v.ArrayValue.Values {
			x, err := e.value()
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	case v.KvlistValue != nil:
		out := make(map[string]any, len(v.KvlistValue.Values))
		for _, kv := range v.KvlistValue.Values {
			x, err := kv.Value.value()
			if err != nil {
				return nil, err
			}
			out[kv.Key] = x
		}
		return out, nil
	}
	return nil, nil // an empty AnyValue
}

// linesDouble reads a JSON number or, as protobuf JSON writes non-finite
// values, the strings "NaN", "Infinity" and "-Infinity".
func linesDouble(raw json.RawMessage) (float64, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("doubleValue %q is not a number", s)
		}
		return f, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, fmt.Errorf("doubleValue %s is not a number", raw)
	}
	return f, nil
}
