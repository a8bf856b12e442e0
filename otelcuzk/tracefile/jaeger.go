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

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// ErrTraceNotFound is returned (wrapped) when a backend has no trace of the
// asked id (Jaeger's and Tempo's HTTP 404).
var ErrTraceNotFound = semconv.NewError(semconv.ErrorTypeNotFound, "trace not found")

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

// ParseJaegerJSON converts a response of Jaeger's HTTP query API (the
// {"data":[trace...]} envelope of /api/traces/{id} or of a search) into
// spans, one slice per trace in the order given and spans in Jaeger's order.
// Jaeger's process gives the service (serviceName), the first CHILD_OF
// reference in the same trace the parent, otel.status_code /
// otel.status_description / error=true the status; the tags Jaeger's OTLP
// translator adds for OTLP fields (span.kind, otel.scope.*, w3c.tracestate)
// are not attributes. Times are Jaeger's microseconds. It returns
// ErrTraceNotFound (wrapped) when the response holds only a 404 error, and
// an error naming the span and field for malformed ids or values.
func ParseJaegerJSON(data []byte) ([][]Span, error) {
	var resp jaegerResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("parse Jaeger JSON: %w", err)
	}
	if len(resp.Data) == 0 && len(resp.Errors) > 0 {
		e := resp.Errors[0]
		if e.Code == http.StatusNotFound {
			return nil, fmt.Errorf("%w: %s", ErrTraceNotFound, e.Msg)
		}
		return nil, fmt.Errorf("Jaeger error %d: %s", e.Code, e.Msg)
	}
	out := make([][]Span, 0, len(resp.Data))
	for i, t := range resp.Data {
		spans := make([]Span, 0, len(t.Spans))
		for _, js := range t.Spans {
			s, err := jaegerSpanToSpan(js, t.Processes)
			if err != nil {
				return nil, fmt.Errorf("Jaeger trace %d (%s): span %s (%s): %w", i, t.TraceID, js.SpanID, js.OperationName, err)
			}
			spans = append(spans, s)
		}
		out = append(out, spans)
	}
	return out, nil
}

func jaegerSpanToSpan(js jaegerSpan, processes map[string]jaegerProcess) (Span, error) {
	s := Span{Name: js.OperationName}
	traceID, spanID, err := jaegerIDs(js.TraceID, js.SpanID)
	if err != nil {
		return s, err
	}
	s.TraceID, s.SpanID = hex.EncodeToString(traceID), hex.EncodeToString(spanID)
	p, ok := processes[js.ProcessID]
	if !ok {
		return s, fmt.Errorf("unknown processID %q", js.ProcessID)
	}
	s.Service = p.ServiceName
	for _, kv := range p.Tags { // the resource's attributes
		if v, err := jaegerValue(kv); err == nil {
			switch str, _ := v.(string); kv.Key {
			case "host.name":
				s.Host = str
			case "service.version":
				s.Version = str
			}
		}
	}
	if js.StartTime < 0 || js.Duration < 0 {
		return s, fmt.Errorf("negative startTime %d or duration %d", js.StartTime, js.Duration)
	}
	s.Start = time.UnixMicro(js.StartTime)
	s.End = s.Start.Add(time.Duration(js.Duration) * time.Microsecond)
	for _, r := range js.References {
		rt, rs, err := jaegerIDs(r.TraceID, r.SpanID)
		if err != nil {
			return s, fmt.Errorf("reference %w", err)
		}
		if r.RefType == "CHILD_OF" && s.ParentID == "" && bytes.Equal(rt, traceID) {
			s.ParentID = hex.EncodeToString(rs)
		}
	}
	for _, kv := range js.Tags {
		v, err := jaegerValue(kv)
		if err != nil {
			return s, fmt.Errorf("tag %s: %w", kv.Key, err)
		}
		str, _ := v.(string)
		switch kv.Key {
		case jaegerTagStatusCode:
			switch str {
			case "ERROR":
				s.Status.Code = StatusError
			case "OK":
				s.Status.Code = StatusOK
			}
		case jaegerTagStatusDesc:
			s.Status.Message = str
		case jaegerTagError:
			if b, _ := v.(bool); b {
				s.Status.Code = StatusError
			}
		case jaegerTagSpanKind, jaegerTagScopeName, jaegerTagLibName,
			jaegerTagScopeVersion, jaegerTagLibVersion, jaegerTagTraceState:
		default:
			if s.Attrs == nil {
				s.Attrs = map[string]any{}
			}
			s.Attrs[kv.Key] = v
		}
	}
	return s, nil
}

// jaegerIDs decodes the traceID (16 bytes) and spanID (8 bytes) of a Jaeger
// span or reference; the error names the field that is bad.
func jaegerIDs(traceID, spanID string) (trace, span []byte, err error) {
	if trace, err = jaegerID(traceID, 16); err != nil {
		return nil, nil, fmt.Errorf("traceID: %w", err)
	}
	if span, err = jaegerID(spanID, 8); err != nil {
		return nil, nil, fmt.Errorf("spanID: %w", err)
	}
	return trace, span, nil
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

// decodeAs decodes raw as a JSON value of type T; what names the type in
// the error.
func decodeAs[T any](raw json.RawMessage, what string) (any, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%s value: %w", what, err)
	}
	return v, nil
}

func jaegerValue(kv jaegerKV) (any, error) {
	switch kv.Type {
	case "", "string":
		return decodeAs[string](kv.Value, "string")
	case "bool":
		return decodeAs[bool](kv.Value, "bool")
	case "int64":
		// Parsed from the JSON text, exact even beyond 2^53.
		v, err := strconv.ParseInt(strings.Trim(string(kv.Value), `"`), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("int64 value: %w", err)
		}
		return v, nil
	case "float64":
		return decodeAs[float64](kv.Value, "float64")
	case "binary":
		v, err := decodeAs[string](kv.Value, "binary")
		if err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(v.(string))
		if err != nil {
			return nil, fmt.Errorf("binary value: %w", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("unknown type %q", kv.Type)
}

// getTrace checks traceID (32 hex digits or fewer) and GETs
// {baseURL}/api/traces/{traceID}, the path of both Jaeger's query API and
// Tempo's, asking for accept ("": any).
func getTrace(ctx context.Context, client *http.Client, baseURL, traceID, accept string) ([]byte, error) {
	if _, err := jaegerID(traceID, 16); err != nil {
		return nil, fmt.Errorf("trace id: %w", err)
	}
	return httpGet(ctx, client, strings.TrimRight(baseURL, "/")+"/api/traces/"+url.PathEscape(traceID), accept)
}

// FetchJaeger reads one trace from Jaeger's HTTP query API: GET
// {baseURL}/api/traces/{traceID}, baseURL being the query service (the UI's
// address, e.g. http://localhost:16686). traceID is 32 hex digits (16 or
// fewer are accepted, as Jaeger prints them). A nil client means
// http.DefaultClient. It returns ErrTraceNotFound (wrapped) when Jaeger has
// no such trace, and an error naming the URL for transport failures and
// other HTTP statuses.
func FetchJaeger(ctx context.Context, client *http.Client, baseURL, traceID string) ([]Span, error) {
	body, err := getTrace(ctx, client, baseURL, traceID, "")
	if err != nil {
		return nil, err
	}
	traces, err := ParseJaegerJSON(body)
	if err != nil {
		return nil, err
	}
	if len(traces) == 0 || len(traces[0]) == 0 {
		return nil, fmt.Errorf("%w: %s at %s", ErrTraceNotFound, traceID, baseURL)
	}
	return traces[0], nil
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
// matching traces, one span slice each, newest first as Jaeger orders them.
// No match is an empty slice, not an error. A nil client means
// http.DefaultClient.
func SearchJaeger(ctx context.Context, client *http.Client, baseURL string, q JaegerQuery) ([][]Span, error) {
	if q.Service == "" {
		return nil, errors.New("Jaeger search needs a service")
	}
	v := url.Values{}
	v.Set("service", q.Service)
	if q.Operation != "" {
		v.Set("operation", q.Operation)
	}
	if len(q.Tags) > 0 {
		tags, err := json.Marshal(q.Tags)
		if err != nil {
			return nil, fmt.Errorf("Jaeger search tags: %w", err)
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
	traces, err := ParseJaegerJSON(body)
	if errors.Is(err, ErrTraceNotFound) {
		return nil, nil
	}
	return traces, err
}

// httpGet returns the body of a 200 answer to GET u; 404 is
// ErrTraceNotFound (wrapped).
func httpGet(ctx context.Context, client *http.Client, u, accept string) ([]byte, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := client.Do(req)
	if err != nil {
		// net/http's *url.Error repeats the method and the URL
		// ("Get \"http://...\": dial tcp ..."): its cause alone, still
		// wrapped for errors.Is.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("GET %s: read body: %w", u, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusNotFound:
		return nil, fmt.Errorf("%w: GET %s", ErrTraceNotFound, u)
	}
	return nil, fmt.Errorf("GET %s: HTTP %d: %s", u, resp.StatusCode, firstLine(body))
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
