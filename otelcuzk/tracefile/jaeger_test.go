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

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// otlpNamedSpan is one span of TracesData with its resource's service name.
type otlpNamedSpan struct {
	service string
	scope   string
	span    *tracepb.Span
}

func otlpSpansByName(td *tracepb.TracesData) map[string]otlpNamedSpan {
	out := map[string]otlpNamedSpan{}
	for _, rs := range td.ResourceSpans {
		svc := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				svc = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				out[s.Name] = otlpNamedSpan{svc, ss.GetScope().GetName(), s}
			}
		}
	}
	return out
}

func otlpAttr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func TestParseJaegerJSONMapsEveryField(t *testing.T) {
	data, err := os.ReadFile("testdata/jaeger-trace.json")
	if err != nil {
		t.Fatal(err)
	}
	tds, err := ParseJaegerJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(tds) != 1 {
		t.Fatalf("got %d traces, want 1", len(tds))
	}
	if n := len(tds[0].ResourceSpans); n != 2 {
		t.Fatalf("got %d resources, want 2 (one per Jaeger process)", n)
	}
	spans := otlpSpansByName(tds[0])
	if len(spans) != 4 {
		t.Fatalf("got %d spans, want 4", len(spans))
	}

	task := spans["curio.task"]
	if task.service != "curio" || task.scope != "github.com/otelcuzk/otelcuzk" {
		t.Errorf("curio.task: service %q scope %q", task.service, task.scope)
	}
	if len(task.span.ParentSpanId) != 0 {
		t.Errorf("curio.task has parent %x, want root", task.span.ParentSpanId)
	}
	if got := hex.EncodeToString(task.span.TraceId); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("trace id %s", got)
	}
	if got := task.span.EndTimeUnixNano - task.span.StartTimeUnixNano; got != 120e6 {
		t.Errorf("curio.task duration %d ns, want 120 ms", got)
	}
	if got := task.span.StartTimeUnixNano; got != 1764400000000000*1000 {
		t.Errorf("start %d ns", got)
	}
	// 2^53+1 survives: int64 tags are not read through float64.
	if got := otlpAttr(task.span, "curio.task.id").GetIntValue(); got != 9007199254740993 {
		t.Errorf("curio.task.id = %d", got)
	}
	if otlpAttr(task.span, "otel.scope.name") != nil || otlpAttr(task.span, "span.kind") != nil {
		t.Error("translator tags left as attributes")
	}

	rpc := spans["cuzk.v1.ProvingEngine/Prove"]
	if rpc.span.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("rpc kind %v, want SERVER", rpc.span.Kind)
	}
	if got := hex.EncodeToString(rpc.span.ParentSpanId); got != "b7ad6b7169203331" {
		t.Errorf("rpc parent %s, want the curio.task span (across services)", got)
	}

	job := spans["engine.job"]
	if job.service != "cuzk" {
		t.Errorf("engine.job service %q", job.service)
	}
	if got := hex.EncodeToString(job.span.ParentSpanId); got != "00f067aa0ba902b7" {
		t.Errorf("engine.job parent %s", got)
	}
	if len(job.span.Links) != 1 || hex.EncodeToString(job.span.Links[0].SpanId) != "2222222222222222" {
		t.Errorf("FOLLOWS_FROM not a link: %v", job.span.Links)
	}
	if job.span.Status.Code != tracepb.Status_STATUS_CODE_ERROR || job.span.Status.Message != "verify failed" {
		t.Errorf("status %v", job.span.Status)
	}
	if got := otlpAttr(job.span, "cuzk.request.id").GetStringValue(); got != "req-1" {
		t.Errorf("cuzk.request.id %q", got)
	}
	if !otlpAttr(job.span, "cuzk.proof.verified").GetBoolValue() {
		t.Error("bool tag lost")
	}
	if got := otlpAttr(job.span, "cuzk.untraced.ms").GetDoubleValue(); got != 1.25 {
		t.Errorf("float tag %v", got)
	}
	if got := otlpAttr(job.span, "cuzk.witness.digest").GetBytesValue(); hex.EncodeToString(got) != "deadbeef" {
		t.Errorf("binary tag %x", got)
	}
	if otlpAttr(job.span, "error") != nil || otlpAttr(job.span, "otel.status_code") != nil {
		t.Error("status tags left as attributes")
	}
	if len(job.span.Events) != 1 || job.span.Events[0].Name != "exception" ||
		otlpAttr(&tracepb.Span{Attributes: job.span.Events[0].Attributes}, "exception.message").GetStringValue() != "boom" {
		t.Errorf("log not an event: %v", job.span.Events)
	}

	// The process tag service.name is not duplicated on the resource.
	for _, rs := range tds[0].ResourceSpans {
		n := 0
		for _, kv := range rs.Resource.Attributes {
			if kv.Key == "service.name" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("resource has %d service.name", n)
		}
	}
}

func TestParseJaegerJSONPadsShortIDs(t *testing.T) {
	// Jaeger prints a 64-bit trace id (high half zero) as 16 hex digits.
	const in = `{"data":[{"traceID":"a1b2c3d4e5f60718","spans":[{"traceID":"a1b2c3d4e5f60718","spanID":"1","operationName":"x","startTime":1,"duration":1,"processID":"p1"}],"processes":{"p1":{"serviceName":"s"}}}]}`
	tds, err := ParseJaegerJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	s := tds[0].ResourceSpans[0].ScopeSpans[0].Spans[0]
	if got := hex.EncodeToString(s.TraceId); got != "0000000000000000a1b2c3d4e5f60718" {
		t.Errorf("trace id %s", got)
	}
	if got := hex.EncodeToString(s.SpanId); got != "0000000000000001" {
		t.Errorf("span id %s", got)
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

	td, err := FetchJaeger(ctx, nil, srv.URL+"/", "0af7651916cd43dd8448eb211c80319c")
	if err != nil {
		t.Fatal(err)
	}
	if len(otlpSpansByName(td)) != 4 {
		t.Errorf("fetched %d spans", len(otlpSpansByName(td)))
	}
	_, err = FetchJaeger(ctx, nil, srv.URL, "4bf92f3577b34da6a3ce929d0e0e4736")
	if !errors.Is(err, ErrTraceNotFound) {
		t.Errorf("missing trace: %v, want ErrTraceNotFound", err)
	}
	if _, err := FetchJaeger(ctx, nil, srv.URL, "not-hex"); err == nil {
		t.Error("bad trace id accepted")
	}

	tds, err := SearchJaeger(ctx, nil, srv.URL, JaegerQuery{
		Service: "cuzk", Operation: "engine.job", Tags: map[string]string{"cuzk.request.id": "req-1"}, Limit: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tds) != 1 {
		t.Errorf("search: %d traces", len(tds))
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
