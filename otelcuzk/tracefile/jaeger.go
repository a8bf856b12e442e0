package tracefile

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// ErrTraceNotFound is returned (wrapped) when a backend has no trace of the
// asked id (Jaeger's and Tempo's HTTP 404).
var ErrTraceNotFound = errors.New("tracefile: trace not found")

// maxResponseBytes bounds what is read from a backend: a proof's trace is a
// few hundred spans, a search result a few hundred traces.
const maxResponseBytes = 256 << 20

// jaegerResponse is the envelope of Jaeger's HTTP query API
// (GET /api/traces/{id} and GET /api/traces?service=...), the JSON the
// Jaeger UI reads (github.com/jaegertracing/jaeger, model/json, and
// cmd/query/app/http_handler.go).
type jaegerResponse struct {
	Data   []jaegerTrace `json:"data"`
	Errors []jaegerError `json:"errors"`
}

type jaegerError struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

type jaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
}

type jaegerSpan struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []jaegerRef `json:"references"`
	StartTime     int64       `json:"startTime"` // µs since the Unix epoch
	Duration      int64       `json:"duration"`  // µs
	Tags          []jaegerKV  `json:"tags"`
	Logs          []jaegerLog `json:"logs"`
	ProcessID     string      `json:"processID"`
}

type jaegerRef struct {
	RefType string `json:"refType"` // CHILD_OF or FOLLOWS_FROM
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerKV struct {
	Key   string          `json:"key"`
	Type  string          `json:"type"` // string, bool, int64, float64, binary
	Value json.RawMessage `json:"value"`
}

type jaegerLog struct {
	Timestamp int64      `json:"timestamp"` // µs since the Unix epoch
	Fields    []jaegerKV `json:"fields"`
}

type jaegerProcess struct {
	ServiceName string     `json:"serviceName"`
	Tags        []jaegerKV `json:"tags"`
}

// Tags Jaeger's OTLP translator adds for OTLP fields its model lacks
// (jaeger-idl translator, "otel.*" and "span.kind"); they become those
// fields again instead of attributes.
const (
	jaegerTagSpanKind     = "span.kind"
	jaegerTagStatusCode   = "otel.status_code"
	jaegerTagStatusDesc   = "otel.status_description"
	jaegerTagError        = "error"
	jaegerTagScopeName    = "otel.scope.name"
	jaegerTagScopeVersion = "otel.scope.version"
	jaegerTagLibName      = "otel.library.name"
	jaegerTagLibVersion   = "otel.library.version"
	jaegerTagTraceState   = "w3c.tracestate"
)

var jaegerSpanKinds = map[string]tracepb.Span_SpanKind{
	"internal": tracepb.Span_SPAN_KIND_INTERNAL,
	"server":   tracepb.Span_SPAN_KIND_SERVER,
	"client":   tracepb.Span_SPAN_KIND_CLIENT,
	"producer": tracepb.Span_SPAN_KIND_PRODUCER,
	"consumer": tracepb.Span_SPAN_KIND_CONSUMER,
}

// ParseJaegerJSON converts a response of Jaeger's HTTP query API (the
// {"data":[trace...]} envelope of /api/traces/{id} or of a search) into
// OTLP TracesData, one per trace in the order given. Jaeger's process
// becomes the resource (serviceName as service.name), otel.scope.* tags the
// instrumentation scope, span.kind and otel.status_* the span's kind and
// status, the first CHILD_OF reference the parent, FOLLOWS_FROM references
// links and logs events. Times are Jaeger's microseconds (the nanoseconds
// below them are lost). It returns ErrTraceNotFound (wrapped) when the
// response holds only a 404 error, and an error naming the field for
// malformed ids or values.
func ParseJaegerJSON(data []byte) ([]*tracepb.TracesData, error) {
	var resp jaegerResponse
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&resp); err != nil {
		return nil, fmt.Errorf("tracefile: parse Jaeger JSON: %w", err)
	}
	if len(resp.Data) == 0 && len(resp.Errors) > 0 {
		e := resp.Errors[0]
		if e.Code == http.StatusNotFound {
			return nil, fmt.Errorf("%w: %s", ErrTraceNotFound, e.Msg)
		}
		return nil, fmt.Errorf("tracefile: Jaeger error %d: %s", e.Code, e.Msg)
	}
	out := make([]*tracepb.TracesData, 0, len(resp.Data))
	for i, t := range resp.Data {
		td, err := jaegerTraceToOTLP(t)
		if err != nil {
			return nil, fmt.Errorf("tracefile: Jaeger trace %d (%s): %w", i, t.TraceID, err)
		}
		out = append(out, td)
	}
	return out, nil
}

func jaegerTraceToOTLP(t jaegerTrace) (*tracepb.TracesData, error) {
	td := &tracepb.TracesData{}
	type scopeKey struct{ process, name, version string }
	resources := map[string]*tracepb.ResourceSpans{}
	scopes := map[scopeKey]*tracepb.ScopeSpans{}
	for _, js := range t.Spans {
		rs, ok := resources[js.ProcessID]
		if !ok {
			p, found := t.Processes[js.ProcessID]
			if !found {
				return nil, fmt.Errorf("span %s: unknown processID %q", js.SpanID, js.ProcessID)
			}
			attrs, err := jaegerKVs(p.Tags)
			if err != nil {
				return nil, fmt.Errorf("process %s: %w", js.ProcessID, err)
			}
			attrs = append([]*commonpb.KeyValue{stringKV("service.name", p.ServiceName)}, withoutKey(attrs, "service.name")...)
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: attrs}}
			resources[js.ProcessID] = rs
			td.ResourceSpans = append(td.ResourceSpans, rs)
		}
		span, scopeName, scopeVersion, err := jaegerSpanToOTLP(js)
		if err != nil {
			return nil, fmt.Errorf("span %s (%s): %w", js.SpanID, js.OperationName, err)
		}
		k := scopeKey{js.ProcessID, scopeName, scopeVersion}
		ss, ok := scopes[k]
		if !ok {
			ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: scopeName, Version: scopeVersion}}
			scopes[k] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, span)
	}
	return td, nil
}

func jaegerSpanToOTLP(js jaegerSpan) (span *tracepb.Span, scopeName, scopeVersion string, err error) {
	traceID, err := jaegerID(js.TraceID, 16)
	if err != nil {
		return nil, "", "", fmt.Errorf("traceID: %w", err)
	}
	spanID, err := jaegerID(js.SpanID, 8)
	if err != nil {
		return nil, "", "", fmt.Errorf("spanID: %w", err)
	}
	if js.StartTime < 0 || js.Duration < 0 {
		return nil, "", "", fmt.Errorf("negative startTime %d or duration %d", js.StartTime, js.Duration)
	}
	start := uint64(js.StartTime) * uint64(time.Microsecond)
	span = &tracepb.Span{
		TraceId:           traceID,
		SpanId:            spanID,
		Name:              js.OperationName,
		Kind:              tracepb.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: start,
		EndTimeUnixNano:   start + uint64(js.Duration)*uint64(time.Microsecond),
		Status:            &tracepb.Status{},
	}
	for _, r := range js.References {
		rt, err := jaegerID(r.TraceID, 16)
		if err != nil {
			return nil, "", "", fmt.Errorf("reference traceID: %w", err)
		}
		rs, err := jaegerID(r.SpanID, 8)
		if err != nil {
			return nil, "", "", fmt.Errorf("reference spanID: %w", err)
		}
		if r.RefType == "CHILD_OF" && span.ParentSpanId == nil && bytes.Equal(rt, traceID) {
			span.ParentSpanId = rs
			continue
		}
		span.Links = append(span.Links, &tracepb.Span_Link{TraceId: rt, SpanId: rs})
	}
	attrs, err := jaegerKVs(js.Tags)
	if err != nil {
		return nil, "", "", err
	}
	for _, kv := range attrs {
		s := kv.GetValue().GetStringValue()
		switch kv.Key {
		case jaegerTagSpanKind:
			if k, ok := jaegerSpanKinds[s]; ok {
				span.Kind = k
			}
		case jaegerTagStatusCode:
			switch s {
			case "ERROR":
				span.Status.Code = tracepb.Status_STATUS_CODE_ERROR
			case "OK":
				span.Status.Code = tracepb.Status_STATUS_CODE_OK
			}
		case jaegerTagStatusDesc:
			span.Status.Message = s
		case jaegerTagError:
			if kv.GetValue().GetBoolValue() {
				span.Status.Code = tracepb.Status_STATUS_CODE_ERROR
			}
		case jaegerTagScopeName, jaegerTagLibName:
			scopeName = s
		case jaegerTagScopeVersion, jaegerTagLibVersion:
			scopeVersion = s
		case jaegerTagTraceState:
			span.TraceState = s
		default:
			span.Attributes = append(span.Attributes, kv)
		}
	}
	for _, l := range js.Logs {
		fields, err := jaegerKVs(l.Fields)
		if err != nil {
			return nil, "", "", fmt.Errorf("log: %w", err)
		}
		ev := &tracepb.Span_Event{TimeUnixNano: uint64(max(l.Timestamp, 0)) * uint64(time.Microsecond)}
		for _, f := range fields {
			if f.Key == "event" && ev.Name == "" {
				ev.Name = f.GetValue().GetStringValue()
				continue
			}
			ev.Attributes = append(ev.Attributes, f)
		}
		span.Events = append(span.Events, ev)
	}
	return span, scopeName, scopeVersion, nil
}

// jaegerID decodes a Jaeger hex id. Jaeger prints ids without leading
// zeros when the high half is zero (model.TraceID.String), so shorter
// strings are left-padded to n bytes.
func jaegerID(s string, n int) ([]byte, error) {
	if s == "" || len(s) > 2*n {
		return nil, fmt.Errorf("id %q: want 1 to %d hex digits", s, 2*n)
	}
	b, err := hex.DecodeString(strings.Repeat("0", 2*n-len(s)) + s)
	if err != nil {
		return nil, fmt.Errorf("id %q: %w", s, err)
	}
	return b, nil
}

func jaegerKVs(kvs []jaegerKV) ([]*commonpb.KeyValue, error) {
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		v, err := jaegerValue(kv)
		if err != nil {
			return nil, fmt.Errorf("tag %s: %w", kv.Key, err)
		}
		out = append(out, &commonpb.KeyValue{Key: kv.Key, Value: v})
	}
	return out, nil
}

func jaegerValue(kv jaegerKV) (*commonpb.AnyValue, error) {
	switch kv.Type {
	case "", "string":
		var s string
		if err := json.Unmarshal(kv.Value, &s); err != nil {
			return nil, fmt.Errorf("string value: %w", err)
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}, nil
	case "bool":
		var b bool
		if err := json.Unmarshal(kv.Value, &b); err != nil {
			return nil, fmt.Errorf("bool value: %w", err)
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}, nil
	case "int64":
		// A JSON number, exact as text even beyond 2^53.
		i, err := strconv.ParseInt(strings.Trim(string(kv.Value), `"`), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("int64 value: %w", err)
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}, nil
	case "float64":
		var f float64
		if err := json.Unmarshal(kv.Value, &f); err != nil {
			return nil, fmt.Errorf("float64 value: %w", err)
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}, nil
	case "binary":
		var s string
		if err := json.Unmarshal(kv.Value, &s); err != nil {
			return nil, fmt.Errorf("binary value: %w", err)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("binary value: %w", err)
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: b}}, nil
	}
	return nil, fmt.Errorf("unknown type %q", kv.Type)
}

func stringKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func withoutKey(kvs []*commonpb.KeyValue, key string) []*commonpb.KeyValue {
	out := kvs[:0]
	for _, kv := range kvs {
		if kv.Key != key {
			out = append(out, kv)
		}
	}
	return out
}

// FetchJaeger reads one trace from Jaeger's HTTP query API: GET
// {baseURL}/api/traces/{traceID}, baseURL being the query service (the UI's
// address, e.g. http://localhost:16686). traceID is 32 hex digits (16 or
// fewer are accepted, as Jaeger prints them). A nil client means
// http.DefaultClient. It returns ErrTraceNotFound (wrapped) when Jaeger has
// no such trace, and an error naming the URL for transport failures and
// other HTTP statuses.
func FetchJaeger(ctx context.Context, client *http.Client, baseURL, traceID string) (*tracepb.TracesData, error) {
	if _, err := jaegerID(traceID, 16); err != nil {
		return nil, fmt.Errorf("tracefile: trace id: %w", err)
	}
	u := strings.TrimRight(baseURL, "/") + "/api/traces/" + url.PathEscape(traceID)
	body, err := httpGet(ctx, client, u, "")
	if err != nil {
		return nil, err
	}
	tds, err := ParseJaegerJSON(body)
	if err != nil {
		return nil, err
	}
	if len(tds) == 0 {
		return nil, fmt.Errorf("%w: %s at %s", ErrTraceNotFound, traceID, baseURL)
	}
	return tds[0], nil
}

// JaegerQuery is a trace search of Jaeger's HTTP query API
// (GET /api/traces?service=...).
type JaegerQuery struct {
	// Service is required: Jaeger searches within one service.
	Service string
	// Operation, when set, restricts to traces with a span of that name.
	Operation string
	// Tags are span attributes that must all match exactly, e.g.
	// {"cuzk.request.id": "r-1"}.
	Tags map[string]string
	// Lookback is how far back from now to search; 0 means one hour.
	Lookback time.Duration
	// Limit caps the number of traces; 0 means 20.
	Limit int
}

// SearchJaeger runs q against Jaeger's query API at baseURL and returns the
// matching traces as OTLP TracesData, newest first as Jaeger orders them.
// No match is an empty slice, not an error. A nil client means
// http.DefaultClient.
func SearchJaeger(ctx context.Context, client *http.Client, baseURL string, q JaegerQuery) ([]*tracepb.TracesData, error) {
	if q.Service == "" {
		return nil, errors.New("tracefile: Jaeger search needs a service")
	}
	v := url.Values{}
	v.Set("service", q.Service)
	if q.Operation != "" {
		v.Set("operation", q.Operation)
	}
	if len(q.Tags) > 0 {
		tags, err := json.Marshal(q.Tags)
		if err != nil {
			return nil, fmt.Errorf("tracefile: Jaeger search tags: %w", err)
		}
		v.Set("tags", string(tags))
	}
	lookback := q.Lookback
	if lookback <= 0 {
		lookback = time.Hour
	}
	now := time.Now()
	v.Set("start", strconv.FormatInt(now.Add(-lookback).UnixMicro(), 10))
	v.Set("end", strconv.FormatInt(now.Add(time.Minute).UnixMicro(), 10))
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	v.Set("limit", strconv.Itoa(limit))
	body, err := httpGet(ctx, client, strings.TrimRight(baseURL, "/")+"/api/traces?"+v.Encode(), "")
	if errors.Is(err, ErrTraceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tds, err := ParseJaegerJSON(body)
	if errors.Is(err, ErrTraceNotFound) {
		return nil, nil
	}
	return tds, err
}

// httpGet returns the body of a 200 answer to GET u; 404 is
// ErrTraceNotFound (wrapped).
func httpGet(ctx context.Context, client *http.Client, u, accept string) ([]byte, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("tracefile: GET %s: %w", u, err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tracefile: GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("tracefile: GET %s: read body: %w", u, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusNotFound:
		return nil, fmt.Errorf("%w: GET %s", ErrTraceNotFound, u)
	}
	return nil, fmt.Errorf("tracefile: GET %s: HTTP %d: %s", u, resp.StatusCode, firstLine(body))
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
