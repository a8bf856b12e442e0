package tracefile_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

const (
	tid  = "5b8efff798038103d269b633813fc60c"
	sid1 = "eee19b7ec3c1b174"
	sid2 = "eee19b7ec3c1b173"
)

func line(spans string) string {
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"scope":{"name":"s"},"spans":[` + spans + `]}]}]}`
}

func span(id, parent, name, start, end string) string {
	s := `{"traceId":"` + tid + `","spanId":"` + id + `","name":"` + name + `","kind":1,"startTimeUnixNano":"` + start + `","endTimeUnixNano":"` + end + `"`
	if parent != "" {
		s += `,"parentSpanId":"` + parent + `"`
	}
	return s + `}`
}

func TestReadOTLPJSONLinesMalformedInputNamesTheLine(t *testing.T) {
	good := line(span(sid1, "", "a", "1000", "2000"))
	cases := []struct {
		name, input, want string
		line              int
	}{
		{"truncated second line", good + "\n" + good[:len(good)/2] + "\n", "malformed OTLP JSON", 2},
		{"bad trace id", good + "\n\n" + strings.Replace(good, tid, "xyz", 1), "traceId", 3},
		{"short span id", strings.Replace(good, sid1, "abcd", 1), "spanId", 1},
		{"all-zero trace id", strings.Replace(good, tid, strings.Repeat("0", 32), 1), "traceId", 1},
		{"not OTLP", good + "\n" + `{"foo":1}`, "not an OTLP traces document", 2},
		{"not an object", `[1,2]`, "line 1: malformed OTLP JSON: a JSON array, not an OTLP traces object", 1},
		{"a number", "127.0", "a JSON number, not an OTLP traces object", 1},
		{"resourceSpans not an array", `{"resourceSpans":"x"}`, `"resourceSpans" is a JSON string, want an array`, 1},
		{"ends before it starts", line(span(sid1, "", "a", "2000", "1000")), "ends", 1},
		{"missing start", line(`{"traceId":"` + tid + `","spanId":"` + sid1 + `","name":"a"}`), "startTimeUnixNano", 1},
		{"time not a number", line(span(sid1, "", "a", "soon", "1000")), "invalid number", 1},
		{"bad intValue", strings.Replace(good, `"kind":1`, `"kind":1,"attributes":[{"key":"n","value":{"intValue":"12x"}}]`, 1), "invalid number", 1},
		{"int overflow", strings.Replace(good, `"kind":1`, `"kind":1,"attributes":[{"key":"n","value":{"intValue":"99999999999999999999"}}]`, 1), "attribute \"n\"", 1},
		{"bad status", strings.Replace(good, `"kind":1`, `"kind":1,"status":{"code":7}`, 1), "status", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tracefile.ReadOTLPJSONLines(strings.NewReader(c.input))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tracefile.ErrMalformed) {
				t.Errorf("err %v does not wrap ErrMalformed", err)
			}
			if want := "line " + string(rune('0'+c.line)) + ":"; !strings.Contains(err.Error(), want) {
				t.Errorf("err %q does not name %q", err, want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %q does not say %q", err, c.want)
			}
			// Said in JSON's terms, not encoding/json's Go types.
			if strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "tracefile.") {
				t.Errorf("err %q names Go internals", err)
			}
		})
	}
}

func TestReadOTLPJSONLinesAcceptsTempoDocument(t *testing.T) {
	// Tempo /api/traces: "batches", base64 ids, instrumentationLibrarySpans,
	// enum names and plain numbers, pretty-printed over many lines.
	doc := `{
  "batches": [{
    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "cuzk"}}]},
    "instrumentationLibrarySpans": [{
      "spans": [
        {"traceId": "W47/95gDgQPSabYzgT/GDA==", "spanId": "7uGbfsPBsXQ=", "name": "engine.job",
         "kind": "SPAN_KIND_SERVER", "startTimeUnixNano": 1000000, "endTimeUnixNano": 5000000,
         "status": {"code": "STATUS_CODE_ERROR", "message": "bad witness"},
         "attributes": [
           {"key": "d", "value": {"doubleValue": 2.5}},
           {"key": "nan", "value": {"doubleValue": "NaN"}},
           {"key": "i", "value": {"intValue": 7}},
           {"key": "b", "value": {"boolValue": true}},
           {"key": "raw", "value": {"bytesValue": "AQI="}},
           {"key": "arr", "value": {"arrayValue": {"values": [{"stringValue": "x"}, {"intValue": "2"}]}}},
           {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}}},
           {"key": "empty", "value": {}}
         ]},
        {"traceId": "W47/95gDgQPSabYzgT/GDA==", "spanId": "7uGbfsPBsXM=", "parentSpanId": "7uGbfsPBsXQ=",
         "name": "engine.queue", "startTimeUnixNano": "1000000", "endTimeUnixNano": "2000000"}
      ]
    }]
  }]
}`
	spans, err := tracefile.ReadOTLPJSONLines(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	job, q := spans[0], spans[1]
	if job.TraceID != tid || job.SpanID != sid1 || q.ParentID != sid1 || q.SpanID != sid2 {
		t.Errorf("ids %s %s %s %s not decoded from base64 to hex", job.TraceID, job.SpanID, q.SpanID, q.ParentID)
	}
	if job.Service != "cuzk" || job.Duration() != 4*time.Millisecond || !job.Start.Equal(time.Unix(0, 1e6)) {
		t.Errorf("job = %+v", job)
	}
	if job.Status != (tracefile.Status{Code: tracefile.StatusError, Message: "bad witness"}) || job.Status.Code.String() != "ERROR" {
		t.Errorf("status = %+v", job.Status)
	}
	want := map[string]any{"d": 2.5, "i": int64(7), "b": true, "raw": []byte{1, 2},
		"arr": []any{"x", int64(2)}, "kv": map[string]any{"k": "v"}, "empty": nil}
	for k, v := range want {
		if !reflect.DeepEqual(job.Attrs[k], v) {
			t.Errorf("attr %s = %#v, want %#v", k, job.Attrs[k], v)
		}
	}
	if f, ok := job.Attrs["nan"].(float64); !ok || !math.IsNaN(f) {
		t.Errorf("nan = %#v", job.Attrs["nan"])
	}
}

func TestReadOTLPJSONLinesTempoV2AndDuplicates(t *testing.T) {
	l := line(span(sid1, "", "a", "1", "2"))
	v2 := `{"trace":` + l + `}`
	spans, err := tracefile.ReadOTLPJSONLines(strings.NewReader(v2 + "\n" + l + "\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the repeated span once", len(spans))
	}
	spans, err = tracefile.ReadOTLPJSONLines(strings.NewReader(" \n"))
	if err != nil || len(spans) != 0 {
		t.Fatalf("empty input: %v, %v", spans, err)
	}
}

func TestSpansFromOTLPMatchesTheJSONReader(t *testing.T) {
	tidb := []byte{0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6, 0x0c}
	td := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "svc"}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
			{TraceId: tidb, SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Name: "root", StartTimeUnixNano: 10, EndTimeUnixNano: 90,
				Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK},
				Attributes: []*commonpb.KeyValue{
					{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -3}}},
					{Key: "a", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{
						Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.5}}}}}}},
				}},
			{TraceId: tidb, SpanId: []byte{9, 2, 3, 4, 5, 6, 7, 8}, ParentSpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Name: "child",
				StartTimeUnixNano: 20, EndTimeUnixNano: 30},
		}}},
	}}}
	line, err := otelcuzk.MarshalOTLPJSON(td)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := tracefile.ReadOTLPJSONLines(strings.NewReader(string(line)))
	if err != nil {
		t.Fatal(err)
	}
	fromProto := tracefile.SpansFromOTLP(td)
	if !reflect.DeepEqual(fromJSON, fromProto) {
		t.Fatalf("readers disagree:\nJSON  %+v\nproto %+v", fromJSON, fromProto)
	}
	if fromProto[1].ParentID != "0102030405060708" || fromProto[0].Status.Code != tracefile.StatusOK || fromProto[0].Attrs["n"] != int64(-3) {
		t.Errorf("converted = %+v", fromProto)
	}
}

// A line cut short in a file that others append to: the strict reader
// names where the broken value starts, the skipping reader keeps every good
// line and reports the broken one by its own line number.
func TestReadOTLPJSONLinesSkippingKeepsTheGoodLines(t *testing.T) {
	a := line(span(sid1, "", "a", "1000", "2000"))
	b := line(span(sid2, sid1, "b", "1100", "1900"))
	input := `{"resourceSpans":[` + "\n" + a + "\n" + "\n" + b + "\n"

	_, err := tracefile.ReadOTLPJSONLines(strings.NewReader(input))
	if err == nil || !strings.Contains(err.Error(), "starts at line 1") {
		t.Errorf("strict read: %v, want an error naming line 1 as the start of the broken value", err)
	}

	spans, skipped, err := tracefile.ReadOTLPJSONLinesSkipping(strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 || spans[0].Name != "a" || spans[1].Name != "b" {
		t.Fatalf("spans %v, want a and b", spans)
	}
	if len(skipped) != 1 || !errors.Is(skipped[0], tracefile.ErrMalformed) || !strings.Contains(skipped[0].Error(), "line 1:") {
		t.Errorf("skipped %v, want one ErrMalformed naming line 1", skipped)
	}

	// A well-formed input reads as with ReadOTLPJSONLines, nothing skipped,
	// a document spread over several lines included.
	multi := "{\n\"resourceSpans\": " + strings.TrimPrefix(a, `{"resourceSpans":`)
	for _, in := range []string{a + "\n" + b + "\n", multi} {
		want, err := tracefile.ReadOTLPJSONLines(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		got, skipped, err := tracefile.ReadOTLPJSONLinesSkipping(strings.NewReader(in))
		if err != nil || len(skipped) != 0 || len(got) != len(want) {
			t.Errorf("well-formed input: %d spans, skipped %v, err %v; want %d, none, nil", len(got), skipped, err, len(want))
		}
	}
	// Nothing but garbage: no spans, every line reported, no error.
	spans, skipped, err = tracefile.ReadOTLPJSONLinesSkipping(strings.NewReader("{\nnot json\n"))
	if err != nil || len(spans) != 0 || len(skipped) != 2 {
		t.Errorf("garbage: %d spans, %d skipped, err %v; want 0, 2, nil", len(spans), len(skipped), err)
	}
}
