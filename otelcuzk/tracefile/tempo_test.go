package tracefile

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
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

func TestFetchTempoReadsTempoShape(t *testing.T) {
	var accept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/traces/0af7651916cd43dd8448eb211c80319c":
			accept = r.Header.Get("Accept")
			w.Write([]byte(tempoV1))
		case "/api/traces/1111111111111111111111111111111a":
			w.Write([]byte(`{"batches":[]}`))
		case "/api/traces/2222222222222222222222222222222b":
			w.Write([]byte(`{"batches":[{"scopeSpans":[{"spans":[{"traceId":"xyz"}]}]}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	spans, err := FetchTempo(ctx, nil, srv.URL, "0af7651916cd43dd8448eb211c80319c")
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	job, queue := spans[0], spans[1]
	if job.Name != "engine.job" || job.TraceID != "0af7651916cd43dd8448eb211c80319c" || job.Service != "cuzk" ||
		job.Status.Code != StatusError || job.Attrs["cuzk.request.id"] != "req-1" {
		t.Errorf("engine.job %+v", job)
	}
	if queue.ParentID != job.SpanID || job.SpanID != "b7ad6b7169203331" {
		t.Errorf("queue parent %s, job %s", queue.ParentID, job.SpanID)
	}
	if accept != "application/json" {
		t.Errorf("Accept %q: Tempo answers protobuf otherwise", accept)
	}
	for id, want := range map[string]error{
		"4bf92f3577b34da6a3ce929d0e0e4736": ErrTraceNotFound, // 404
		"1111111111111111111111111111111a": ErrTraceNotFound, // empty trace
		"2222222222222222222222222222222b": ErrMalformed,
	} {
		if _, err := FetchTempo(ctx, nil, srv.URL, id); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", id, err, want)
		}
	}
	if _, err := FetchTempo(ctx, nil, srv.URL, "xyz"); err == nil {
		t.Error("bad trace id accepted")
	}
}
