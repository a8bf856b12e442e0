package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/otelcuzk/otelcuzk/internal/maintest"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/server"
)

// received is a span as the OTLP HTTP receiver got it.
type received struct {
	name, traceID, spanID, parentID string
}

// otlpReceiver is a minimal OTLP/HTTP trace receiver (protobuf bodies, as
// otlptracehttp sends them).
func otlpReceiver(t *testing.T) (endpoint string, spans func() []received) {
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					got = append(got, received{s.GetName(), hex.EncodeToString(s.GetTraceId()),
						hex.EncodeToString(s.GetSpanId()), hex.EncodeToString(s.GetParentSpanId())})
				}
			}
		}
		mu.Unlock()
		resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(resp)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), func() []received {
		mu.Lock()
		defer mu.Unlock()
		return append([]received(nil), got...)
	}
}

// startDaemon serves the daemon (fake runner) on a loopback port until the
// test ends; its spans go to the returned exporter, the server's spans
// late (lateServerSpans).
func startDaemon(t *testing.T) (addr string, exp *tracetest.InMemoryExporter) {
	t.Helper()
	exp = tracetest.NewInMemoryExporter()
	dtp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(lateServerSpans{sdktrace.NewSimpleSpanProcessor(exp)}))
	eng, err := engine.New([]engine.Worker{{Name: "cpu:0", Runner: quickRunner{dtp}}}, engine.WithTracerProvider(dtp))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(eng, server.WithTracerProvider(dtp))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return lis.Addr().String(), exp
}

// lateServerSpans passes each span on when it ends, a server span 50 ms
// later: otelgrpc ends the daemon's span for a call after the reply is on
// the wire, so a client may have its reply, and a run its result, before
// the span is exported (1 run in 150 of TestOneTraceAcrossCurioAndDaemon
// on a loaded 2-core machine). Always late, the tests meet that case
// every run.
type lateServerSpans struct{ sdktrace.SpanProcessor }

func (l lateServerSpans) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanKind() != trace.SpanKindServer {
		l.SpanProcessor.OnEnd(s)
		return
	}
	time.AfterFunc(50*time.Millisecond, func() { l.SpanProcessor.OnEnd(s) })
}

// taskConfig is the example's configuration against a daemon at addr and
// an OTLP HTTP receiver at endpoint.
func taskConfig(addr, endpoint string) config {
	return config{addr: addr, otlpEndpoint: endpoint, service: "curio", circuit: "mulchain",
		constraints: 256, priority: "HIGH", timeout: 10 * time.Second,
		task: otelcuzk.Task{ID: 9, Name: "WdPost", MinerID: "f01234", SectorNumber: 3}}
}

// TestSpansThatNeverReachTheBackendFailTheRun: with no collector at the
// endpoint the proof succeeds, but the trace the run announces is nowhere
// to open; the run fails naming the endpoint and does not claim one trace.
func TestSpansThatNeverReachTheBackendFailTheRun(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := lis.Addr().String()
	lis.Close() // nothing listens there now: connections are refused
	addr, _ := startDaemon(t)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = run(ctx, taskConfig(addr, endpoint), &out)
	if err == nil || !strings.Contains(err.Error(), "did not reach the OTLP endpoint "+endpoint) || strings.Contains(err.Error(), "\n") {
		t.Errorf("run: %v, want one line naming the endpoint %s", err, endpoint)
	}
	if strings.Contains(out.String(), "one trace across") {
		t.Errorf("the run claimed one trace whose spans were lost:\n%s", out.String())
	}
}

// Arguments flag leaves unread, and --constraints 0, are refused in one
// line (the first ran with them ignored; the second reached the daemon).
func TestParseConfigRefusesStrayArgumentsAndZeroConstraints(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, `takes no arguments, got ["extra"]`},
		{[]string{"-addr", "127.0.0.1:1", "extra", "-task-id", "3"}, `takes no arguments, got ["extra" "-task-id" "3"]`},
		{[]string{"-constraints", "0"}, "-constraints 0: want 1 or more"},
	} {
		_, err := parseConfig(c.args, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("parseConfig(%q): %v, want %q", c.args, err, c.want)
		}
	}
	cfg, err := parseConfig([]string{"-addr", "h:1", "-task-id", "5"}, io.Discard)
	if err != nil || cfg.addr != "h:1" || cfg.task.ID != 5 || cfg.constraints != 1<<10 || cfg.priority != "HIGH" {
		t.Errorf("parseConfig of good flags: %+v, %v", cfg, err)
	}
}

type quickRunner struct{ tp trace.TracerProvider }

func (q quickRunner) Run(ctx context.Context, r *prover.Request) (*prover.Result, error) {
	_, s := q.tp.Tracer("test").Start(ctx, semconv.SpanPipelineProve)
	s.End()
	return &prover.Result{Proof: []byte{1}, Verified: r.Verify, Backend: "fake"}, nil
}

// TestOneTraceAcrossCurioAndDaemon runs the example against an in-process
// daemon (fake runner) and an OTLP HTTP receiver, and follows the parent
// links from the daemon's engine.job back to the task's curio.task span.
func TestOneTraceAcrossCurioAndDaemon(t *testing.T) {
	endpoint, spans := otlpReceiver(t)
	addr, exp := startDaemon(t)
	var out bytes.Buffer
	cfg := taskConfig(addr, endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := run(ctx, cfg, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "one trace across curio and cuzk") {
		t.Errorf("output:\n%s", out.String())
	}
	// Durations as cuzk prints them (human.Duration: "57.0 ms", "1.3 s"),
	// not a Duration's %v ("57.010552ms").
	if !regexp.MustCompile(`, prove (\d+\.\d\d? ms|\d+(\.\d)? s), verified true\)`).MatchString(out.String()) {
		t.Errorf("the daemon line's prove time is not written as human.Duration writes it:\n%s", out.String())
	}

	byID := map[string]received{}
	var task received
	for _, s := range spans() {
		byID[s.spanID] = s
		if s.name == semconv.SpanCurioTask {
			task = s
		}
	}
	// The daemon's server span may reach exp after run has returned
	// (lateServerSpans).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if len(spantest.NamedStubs(exp.GetSpans(), "cuzk.v1.ProvingEngine/Prove")) > 0 {
			break
		}
	}
	for _, s := range exp.GetSpans() {
		byID[s.SpanContext.SpanID().String()] = received{s.Name, s.SpanContext.TraceID().String(),
			s.SpanContext.SpanID().String(), s.Parent.SpanID().String()}
	}
	if task.spanID == "" {
		t.Fatalf("the receiver got no curio.task span: %+v", spans())
	}
	// The OpenCensus span went through the bridge into the task's trace.
	var prep received
	for _, s := range spans() {
		if s.name == "wdpost.prepare" {
			prep = s
		}
	}
	if prep.parentID != task.spanID || prep.traceID != task.traceID {
		t.Errorf("OpenCensus span wdpost.prepare %+v is not a child of curio.task %+v", prep, task)
	}
	var job received
	for _, s := range exp.GetSpans() {
		if s.Name == semconv.SpanEngineJob {
			job = byID[s.SpanContext.SpanID().String()]
		}
	}
	// engine.job → server span → client span → curio.task, across processes.
	var path []string
	for s := job; s.spanID != ""; s = byID[s.parentID] {
		if s.traceID != task.traceID {
			t.Errorf("%s is in trace %s, not the task's %s", s.name, s.traceID, task.traceID)
		}
		path = append(path, s.name)
		if s.spanID == task.spanID {
			break
		}
	}
	want := "engine.job < cuzk.v1.ProvingEngine/Prove < cuzk.v1.ProvingEngine/Prove < curio.task"
	if got := strings.Join(path, " < "); got != want {
		t.Errorf("ancestry %q, want %q", got, want)
	}
}

// TestHelperProcessMain runs the program's main with the arguments after
// "--" (CURIO_TASK_HELPER_MAIN=1), for the tests of its exit.
func TestHelperProcessMain(t *testing.T) {
	maintest.HelperMain(t, "CURIO_TASK_HELPER_MAIN", "curio-task", main)
}

// Ctrl-C cancels the proof and the program flushes the task's spans (up
// to 10 s); a second Ctrl-C during that flush quits at once with status
// 130, as cuzk's commands do. It was swallowed (signal.NotifyContext,
// whose handler stays until stop): the program sat out the flush and
// exited 1. Here the daemon accepts the connection and never answers, and
// the OTLP receiver holds every export.
func TestASecondInterruptQuitsAtOnceWith130(t *testing.T) {
	daemon, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer daemon.Close()
	dialled := make(chan struct{}, 1)
	go func() {
		for {
			c, err := daemon.Accept()
			if err != nil {
				return
			}
			// Held open, unanswered, until the test ends.
			defer c.Close()
			select {
			case dialled <- struct{}{}:
			default:
			}
		}
	}()
	exporting, held := make(chan struct{}, 1), make(chan struct{})
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case exporting <- struct{}{}:
		default:
		}
		select {
		case <-held:
		case <-r.Context().Done():
		}
	}))
	defer otlp.Close()
	defer close(held) // before otlp.Close, which waits for its handlers

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcessMain$", "--",
		"--addr", daemon.Addr().String(), "--otlp-endpoint", strings.TrimPrefix(otlp.URL, "http://"))
	cmd.Env = append(os.Environ(), "CURIO_TASK_HELPER_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The program is in its Prove call (its handler installed) once the
	// daemon is dialled, and flushing once the receiver has an export.
	for _, step := range []struct {
		what string
		wait func() bool
	}{
		{"the daemon dialled", func() bool { <-dialled; return true }},
		{"an export after the first SIGINT", func() bool { <-exporting; return true }},
	} {
		got := make(chan bool, 1)
		go func() { got <- step.wait() }()
		select {
		case <-got:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v\nstderr %q", step.what, ctx.Err(), stderr.String())
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("after a second SIGINT: %v, want exit status 130 at once\nstderr %q", err, stderr.String())
	}
}
