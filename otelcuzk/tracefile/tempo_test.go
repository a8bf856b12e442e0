package tracefile

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// tempoV1 is a trace as Tempo 2.x answers GET /api/traces/<id>: "batches",
// ids in base64 (0af7651916cd43dd8448eb211c80319c, b7ad6b7169203331,
// 00f067aa0ba902b7), enums by name, 64-bit integers as strings.
const tempoV1 = `{"batches":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"cuzk"}}]},
"scopeSpans":[{"scope":{"name":"github.com/otelcuzk/otelcuzk"},"spans":[
{"traceId":"CvdlGRbNQ92ESOshHIAxnA==","spanId":"t61rcWkgMzE=","name":"engine.job","kind":"SPAN_KIND_INTERNAL",
 "startTimeUnixNano":"1764400000011000000","endTimeUnixNano":"1764400000109500000",
 "attributes":[{"key":"cuzk.request.id","value":{"stringValue":"req-1"}}],"status":{"code":"STATUS_CODE_ERROR"}},
{"traceId":"CvdlGRbNQ92ESOshHIAxnA==","spanId":"APBnqgupArc=","parentSpanId":"t61rcWkgMzE=","name":"engine.queue",
 "startTimeUnixNano":"1764400000011500000","endTimeUnixNano":"1764400000013500000"}]}]}]}`

// otlpHex is the same in OTLP/JSON as the file exporter and the
// Collector write it: hex ids, the old instrumentationLibrarySpans name.
const otlpHex = `{"trace":{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"cuzk"}}]},
"instrumentationLibrarySpans":[{"instrumentationLibrary":{"name":"github.com/otelcuzk/otelcuzk"},"spans":[
{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","parentSpanId":"","name":"engine.job","kind":1,
 "startTimeUnixNano":"1764400000011000000","endTimeUnixNano":"1764400000109500000",
 "attributes":[{"key":"cuzk.request.id","value":{"stringValue":"req-1"}}],"status":{"code":2}},
{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00f067aa0ba902b7","parentSpanId":"b7ad6b7169203331","name":"engine.queue",
 "startTimeUnixNano":"1764400000011500000","endTimeUnixNano":"1764400000013500000"}]}]}]}}`

func TestParseTempoJSONShapes(t *testing.T) {
	for name, in := range map[string]string{"tempo v1 base64": tempoV1, "v2 hex, old names": otlpHex} {
		td, err := ParseTempoJSON([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		spans := otlpSpansByName(td)
		job, queue := spans["engine.job"], spans["engine.queue"]
		if job.span == nil || queue.span == nil {
			t.Fatalf("%s: spans %v", name, spans)
		}
		if job.service != "cuzk" || job.scope != "github.com/otelcuzk/otelcuzk" {
			t.Errorf("%s: service %q scope %q", name, job.service, job.scope)
		}
		if got := hex.EncodeToString(job.span.TraceId); got != "0af7651916cd43dd8448eb211c80319c" {
			t.Errorf("%s: trace id %s", name, got)
		}
		if len(job.span.ParentSpanId) != 0 {
			t.Errorf("%s: root has parent %x", name, job.span.ParentSpanId)
		}
		if !sameID(queue.span.ParentSpanId, job.span.SpanId) {
			t.Errorf("%s: queue parent %x, want %x", name, queue.span.ParentSpanId, job.span.SpanId)
		}
		if job.span.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("%s: status %v", name, job.span.Status)
		}
		if d := job.span.EndTimeUnixNano - job.span.StartTimeUnixNano; d != 98_500_000 {
			t.Errorf("%s: duration %d ns", name, d)
		}
	}
}

func sameID(a, b []byte) bool { return hex.EncodeToString(a) == hex.EncodeToString(b) }

func TestParseTempoJSONRejectsBadInput(t *testing.T) {
	for name, in := range map[string]string{
		"not json":     `[`,
		"no spans key": `{"foo":[]}`,
		"bad id":       `{"batches":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"t61rcWkgMzE="}]}]}]}`,
		"short id":     `{"batches":[{"scopeSpans":[{"spans":[{"traceId":"AAAA","spanId":"t61rcWkgMzE="}]}]}]}`,
		"id not str":   `{"batches":[{"scopeSpans":[{"spans":[{"traceId":7}]}]}]}`,
	} {
		if _, err := ParseTempoJSON([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestFetchTempo(t *testing.T) {
	var accept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/traces/0af7651916cd43dd8448eb211c80319c" {
			http.NotFound(w, r)
			return
		}
		accept = r.Header.Get("Accept")
		w.Write([]byte(tempoV1))
	}))
	defer srv.Close()
	td, err := FetchTempo(context.Background(), nil, srv.URL, "0af7651916cd43dd8448eb211c80319c")
	if err != nil {
		t.Fatal(err)
	}
	if len(otlpSpansByName(td)) != 2 {
		t.Errorf("%d spans", len(otlpSpansByName(td)))
	}
	if accept != "application/json" {
		t.Errorf("Accept %q: Tempo answers protobuf otherwise", accept)
	}
	_, err = FetchTempo(context.Background(), nil, srv.URL, "4bf92f3577b34da6a3ce929d0e0e4736")
	if !errors.Is(err, ErrTraceNotFound) {
		t.Errorf("missing trace: %v", err)
	}
}
