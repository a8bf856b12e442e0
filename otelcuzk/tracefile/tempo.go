package tracefile

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// FetchTempo reads one trace from Grafana Tempo's HTTP API: GET
// {baseURL}/api/traces/{traceID} (Accept: application/json), baseURL being
// Tempo's HTTP address (e.g. http://localhost:3200). traceID is 32 hex
// digits. A nil client means http.DefaultClient. It returns
// ErrTraceNotFound (wrapped) on 404.
func FetchTempo(ctx context.Context, client *http.Client, baseURL, traceID string) (*tracepb.TracesData, error) {
	if _, err := jaegerID(traceID, 16); err != nil {
		return nil, fmt.Errorf("tracefile: trace id: %w", err)
	}
	u := strings.TrimRight(baseURL, "/") + "/api/traces/" + url.PathEscape(traceID)
	body, err := httpGet(ctx, client, u, "application/json")
	if err != nil {
		return nil, err
	}
	td, err := ParseTempoJSON(body)
	if err != nil {
		return nil, err
	}
	if len(td.ResourceSpans) == 0 {
		return nil, fmt.Errorf("%w: %s at %s", ErrTraceNotFound, traceID, baseURL)
	}
	return td, nil
}

// ParseTempoJSON converts a trace as Tempo's HTTP API returns it into OTLP
// TracesData. It accepts the shapes Tempo versions answer with: v1
// /api/traces/<id> ({"batches":[ResourceSpans...]}), v2
// /api/v2/traces/<id> ({"trace":{"resourceSpans":[...]}}) and plain OTLP
// JSON ({"resourceSpans":[...]}), with the deprecated
// instrumentationLibrarySpans naming, and trace and span ids either as hex
// (OTLP/JSON) or base64 (protobuf JSON, as Tempo writes them). It returns
// an error naming the field for malformed input.
func ParseTempoJSON(data []byte) (*tracepb.TracesData, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("tracefile: parse Tempo JSON: %w", err)
	}
	if t, ok := doc["trace"].(map[string]any); ok {
		doc = t
	}
	if b, ok := doc["batches"]; ok {
		doc = map[string]any{"resourceSpans": b}
	}
	if _, ok := doc["resourceSpans"]; !ok {
		return nil, fmt.Errorf("tracefile: parse Tempo JSON: no batches or resourceSpans")
	}
	if err := normalizeOTLPJSON(doc); err != nil {
		return nil, fmt.Errorf("tracefile: parse Tempo JSON: %w", err)
	}
	norm, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("tracefile: parse Tempo JSON: %w", err)
	}
	td := &tracepb.TracesData{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(norm, td); err != nil {
		return nil, fmt.Errorf("tracefile: parse Tempo JSON: %w", err)
	}
	return td, nil
}

// otlpIDLengths are the byte lengths of the OTLP id fields.
var otlpIDLengths = map[string]int{"traceId": 16, "spanId": 8, "parentSpanId": 8}

// normalizeOTLPJSON rewrites, in place, what protojson does not read: ids
// as hex become base64, and the pre-1.0 names instrumentationLibrarySpans
// and instrumentationLibrary become scopeSpans and scope.
func normalizeOTLPJSON(v any) error {
	switch x := v.(type) {
	case map[string]any:
		if ils, ok := x["instrumentationLibrarySpans"]; ok {
			if _, has := x["scopeSpans"]; !has {
				x["scopeSpans"] = ils
			}
			delete(x, "instrumentationLibrarySpans")
		}
		if il, ok := x["instrumentationLibrary"]; ok {
			if _, has := x["scope"]; !has {
				x["scope"] = il
			}
			delete(x, "instrumentationLibrary")
		}
		for k, val := range x {
			if n, isID := otlpIDLengths[k]; isID {
				s, ok := val.(string)
				if !ok {
					return fmt.Errorf("field %s: not a string", k)
				}
				b, err := decodeOTLPID(s, n)
				if err != nil {
					return fmt.Errorf("field %s: %w", k, err)
				}
				if b == nil {
					delete(x, k)
					continue
				}
				x[k] = base64.StdEncoding.EncodeToString(b)
				continue
			}
			if err := normalizeOTLPJSON(val); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := normalizeOTLPJSON(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeOTLPID decodes an id of n bytes written as 2n hex digits or as
// base64; "" (a root's parentSpanId) is nil.
func decodeOTLPID(s string, n int) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) == 2*n {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != n {
		return nil, fmt.Errorf("id %q: want %d hex digits or base64 of %d bytes", s, 2*n, n)
	}
	return b, nil
}
