package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// submitSpanLine is cuzk submit's trace as its exporter sends it: the
// client span of the Prove RPC (service cuzk-submit), 480 ms, and no span
// of the daemon's.
const submitSpanLine = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"cuzk-submit"}}]},"scopeSpans":[{"scope":{"name":"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"},"spans":[` +
	`{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00000000000000c1","name":"cuzk.v1.ProvingEngine/Prove","kind":3,"startTimeUnixNano":"1764399999990000000","endTimeUnixNano":"1764400000470000000","attributes":[{"key":"rpc.system","value":{"stringValue":"grpc"}}]}` +
	`]}]}]}`

// daemonSpansLine is the daemon's part of the same trace: engine.job and
// below (traceFileLine) under the client's span.
var daemonSpansLine = strings.Replace(traceFileLine, `"spanId":"00000000000000a1","name":"engine.job"`, `"spanId":"00000000000000a1","parentSpanId":"00000000000000c1","name":"engine.job"`, 1)

const partialHint = "no engine.job in this trace"

func writeTraceLines(t *testing.T, lines ...string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "cuzk-trace.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// A trace read back before the daemon's batch arrived holds the client's
// Prove span alone: after the summary one line says engine.job is missing
// and why; with the daemon's spans there is no such line.
func TestTraceSaysDaemonSpansMissing(t *testing.T) {
	out, err := runTraceCmd(t, "trace", writeTraceLines(t, submitSpanLine))
	if err != nil {
		t.Fatalf("cuzk trace: %v\n%s", err, out)
	}
	summary := strings.Index(out, "untraced, all spans")
	hint := strings.Index(out, partialHint)
	if summary < 0 || hint < summary {
		t.Fatalf("want the engine.job line after the summary:\n%s", out)
	}
	if line := out[hint:]; !strings.Contains(line[:strings.IndexByte(line, '\n')], "batches") {
		t.Errorf("the line does not say why:\n%s", out)
	}
	if n := strings.Count(out, partialHint); n != 1 {
		t.Errorf("the line %d times, want once:\n%s", n, out)
	}

	out, err = runTraceCmd(t, "trace", writeTraceLines(t, submitSpanLine, daemonSpansLine))
	if err != nil {
		t.Fatalf("cuzk trace, whole trace: %v\n%s", err, out)
	}
	if !strings.Contains(out, "cuzk.v1.ProvingEngine/Prove") || !strings.Contains(out, "engine.job") {
		t.Fatalf("whole trace not shown:\n%s", out)
	}
	if strings.Contains(out, partialHint) {
		t.Errorf("engine.job is there, yet the line says it is not:\n%s", out)
	}
}

// A trace of the daemon's own without a proof call (a status poll) gets no
// such line: no engine.job is expected there.
func TestTraceNoDaemonHintForOtherCalls(t *testing.T) {
	poll := strings.NewReplacer("cuzk-submit", "cuzk", "cuzk.v1.ProvingEngine/Prove", "cuzk.v1.ProvingEngine/Status").Replace(submitSpanLine)
	out, err := runTraceCmd(t, "trace", writeTraceLines(t, poll))
	if err != nil {
		t.Fatalf("cuzk trace: %v\n%s", err, out)
	}
	if strings.Contains(out, partialHint) {
		t.Errorf("a status poll's trace says engine.job is missing:\n%s", out)
	}
}

// From Jaeger the line says to read the trace again: the daemon's spans
// arrive there later.
func TestTraceJaegerSaysDaemonSpansMissing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/traces/0af7651916cd43dd8448eb211c80319c" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"data":[{"traceID":"0af7651916cd43dd8448eb211c80319c","spans":[
{"traceID":"0af7651916cd43dd8448eb211c80319c","spanID":"00000000000000c1","operationName":"cuzk.v1.ProvingEngine/Prove","references":[],"startTime":1764400000000000,"duration":481769,"tags":[{"key":"span.kind","type":"string","value":"client"}],"processID":"p1"}],
"processes":{"p1":{"serviceName":"cuzk-submit","tags":[]}}}],"errors":null}`))
	}))
	defer srv.Close()
	out, err := runTraceCmd(t, "trace", "0af7651916cd43dd8448eb211c80319c", "--jaeger", srv.URL)
	if err != nil {
		t.Fatalf("cuzk trace --jaeger: %v\n%s", err, out)
	}
	if !strings.Contains(out, partialHint+" yet") || !strings.Contains(out, "run this again") {
		t.Errorf("want the line that says to read the trace again:\n%s", out)
	}
}
