package tracefile

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func spansByName(spans []Span) map[string]Span {
	out := map[string]Span{}
	for _, s := range spans {
		out[s.Name] = s
	}
	return out
}

func TestParseJaegerJSONMapsEveryField(t *testing.T) {
	data, err := os.ReadFile("testdata/jaeger-trace.json")
	if err != nil {
		t.Fatal(err)
	}
	traces, err := ParseJaegerJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 1 || len(traces[0]) != 4 {
		t.Fatalf("got %d traces, want 1 of 4 spans", len(traces))
	}
	spans := spansByName(traces[0])

	task := spans["curio.task"]
	if task.Service != "curio" || task.ParentID != "" || task.TraceID != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("curio.task %+v", task)
	}
	if got := task.Duration(); got != 120*time.Millisecond {
		t.Errorf("curio.task duration %v, want 120ms", got)
	}
	if got := task.Start.UnixMicro(); got != 1764400000000000 {
		t.Errorf("start %d µs", got)
	}
	// 2^53+1 survives: int64 tags are not read through float64.
	if got := task.Attrs["curio.task.id"]; got != int64(9007199254740993) {
		t.Errorf("curio.task.id = %v (%T)", got, got)
	}
	for _, k := range []string{"otel.scope.name", "otel.scope.version", "span.kind"} {
		if _, ok := task.Attrs[k]; ok {
			t.Errorf("translator tag %s left as attribute", k)
		}
	}

	rpc := spans["cuzk.v1.ProvingEngine/Prove"]
	if rpc.ParentID != "b7ad6b7169203331" || rpc.Service != "cuzk" {
		t.Errorf("rpc %+v, want child of curio.task across services", rpc)
	}
	if rpc.Attrs["rpc.system"] != "grpc" {
		t.Errorf("rpc attrs %v", rpc.Attrs)
	}

	job := spans["engine.job"]
	if job.ParentID != "00f067aa0ba902b7" {
		t.Errorf("engine.job parent %s (FOLLOWS_FROM must not be the parent)", job.ParentID)
	}
	if job.Status.Code != StatusError || job.Status.Message != "verify failed" {
		t.Errorf("status %+v", job.Status)
	}
	if job.Attrs["cuzk.request.id"] != "req-1" || job.Attrs["cuzk.proof.verified"] != true || job.Attrs["cuzk.untraced.ms"] != 1.25 {
		t.Errorf("engine.job attrs %v", job.Attrs)
	}
	if b, _ := job.Attrs["cuzk.witness.digest"].([]byte); hex.EncodeToString(b) != "deadbeef" {
		t.Errorf("binary tag %v", job.Attrs["cuzk.witness.digest"])
	}
	for _, k := range []string{"error", "otel.status_code", "otel.status_description"} {
		if _, ok := job.Attrs[k]; ok {
			t.Errorf("status tag %s left as attribute", k)
		}
	}
	if q := spans["engine.queue"]; q.ParentID != job.SpanID || q.Attrs != nil {
		t.Errorf("engine.queue %+v", q)
	}
}

func TestParseJaegerJSONPadsShortIDs(t *testing.T) {
	// Jaeger prints a 64-bit trace id (high half zero) as 16 hex digits.
	const in = `{"data":[{"traceID":"a1b2c3d4e5f60718","spans":[{"traceID":"a1b2c3d4e5f60718","spanID":"1","operationName":"x","startTime":1,"duration":1,"processID":"p1"}],"processes":{"p1":{"serviceName":"s"}}}]}`
	traces, err := ParseJaegerJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	s := traces[0][0]
	if s.TraceID != "0000000000000000a1b2c3d4e5f60718" || s.SpanID != "0000000000000001" {
		t.Errorf("ids %s %s", s.TraceID, s.SpanID)
	}
}

func TestParseJaegerJSONRejectsBadInput(t *testing.T) {
	for name, in := range map[string]string{
		"not json":        `{"data":`,
		"bad span id":     `{"data":[{"spans":[{"traceID":"01","spanID":"zz","operationName":"x","processID":"p1"}],"processes":{"p1":{"serviceName":"s"}}}]}`,
		"long trace id":   `{"data":[{"spans":[{"traceID":"` + strings.Repeat("a", 33) + `","spanID":"01","processID":"p1"}],"processes":{"p1":{"serviceName":"s"}}}]}`,
		"unknown process": `{"data":[{"spans":[{"traceID":"01","spanID":"01","processID":"p9"}],"processes":{}}]}`,
		"bad tag type":    `{"data":[{"spans":[{"traceID":"01","spanID":"01","processID":"p1","tags":[{"key":"k","type":"complex","value":1}]}],"processes":{"p1":{"serviceName":"s"}}}]}`,
		"bad int64":       `{"data":[{"spans":[{"traceID":"01","spanID":"01","processID":"p1","tags":[{"key":"k","type":"int64","value":"x"}]}],"processes":{"p1":{"serviceName":"s"}}}]}`,
		"server error":    `{"data":null,"errors":[{"code":500,"msg":"storage down"}]}`,
	} {
		if _, err := ParseJaegerJSON([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		} else if errors.Is(err, ErrTraceNotFound) {
			t.Errorf("%s: %v is ErrTraceNotFound", name, err)
		}
	}
	_, err := ParseJaegerJSON([]byte(`{"data":null,"errors":[{"code":404,"msg":"trace not found"}]}`))
	if !errors.Is(err, ErrTraceNotFound) {
		t.Errorf("404 body: %v, want ErrTraceNotFound", err)
	}
}

func TestFetchJaegerAndSearch(t *testing.T) {
	sample, err := os.ReadFile("testdata/jaeger-trace.json")
	if err != nil {
		t.Fatal(err)
	}
	var gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/traces/0af7651916cd43dd8448eb211c80319c":
			w.Write(sample)
		case r.URL.Path == "/api/traces" && r.URL.Query().Get("service") != "":
			gotQuery = r.URL.RawQuery
			w.Write(sample)
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"data":null,"errors":[{"code":404,"msg":"trace not found"}]}`))
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	spans, err := FetchJaeger(ctx, nil, srv.URL+"/", "0af7651916cd43dd8448eb211c80319c")
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 4 {
		t.Errorf("fetched %d spans", len(spans))
	}
	_, err = FetchJaeger(ctx, nil, srv.URL, "4bf92f3577b34da6a3ce929d0e0e4736")
	if !errors.Is(err, ErrTraceNotFound) {
		t.Errorf("missing trace: %v, want ErrTraceNotFound", err)
	}
	if _, err := FetchJaeger(ctx, nil, srv.URL, "not-hex"); err == nil {
		t.Error("bad trace id accepted")
	}

	traces, err := SearchJaeger(ctx, nil, srv.URL, JaegerQuery{
		Service: "cuzk", Operation: "engine.job", Tags: map[string]string{"cuzk.request.id": "req-1"}, Limit: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 1 {
		t.Errorf("search: %d traces", len(traces))
	}
	for _, want := range []string{"service=cuzk", "operation=engine.job", "limit=5", "tags=%7B%22cuzk.request.id%22%3A%22req-1%22%7D", "start=", "end="} {
		if !strings.Contains(gotQuery, want) {
			t.Errorf("query %q lacks %q", gotQuery, want)
		}
	}
	if _, err := SearchJaeger(ctx, nil, srv.URL, JaegerQuery{}); err == nil {
		t.Error("search without service accepted")
	}
}

func TestFetchJaegerUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := FetchJaeger(context.Background(), nil, url, "0af7651916cd43dd8448eb211c80319c")
	if err == nil || errors.Is(err, ErrTraceNotFound) || !strings.Contains(err.Error(), url) {
		t.Errorf("unreachable: %v, want a transport error naming %s", err, url)
	}
}

// A Jaeger that does not answer is named once: net/http's error repeated
// the method and the URL ("GET http://h/api/traces/x: Get
// \"http://h/api/traces/x\": dial tcp ...").
func TestFetchJaegerFromAClosedPortNamesTheURLOnce(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens there now
	const id = "983fe40f5e9a32d3be4cce23787974d5"
	_, err := FetchJaeger(context.Background(), nil, base, id)
	if err == nil || strings.Count(err.Error(), id) != 1 || strings.Contains(err.Error(), "Get \"") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("FetchJaeger at a closed port: %v, want the URL once and the dial's cause", err)
	}
}
