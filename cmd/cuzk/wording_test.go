package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/priority"
	"github.com/otelcuzk/otelcuzk/prover/server"
)

// packagePrefix is a package's name at the head of a part of an error
// chain ("engine: job cancelled", "tracefile: trace not found", "otelcuzk:
// endpoint ..."): what a user read in one line, repeated.
var packagePrefix = regexp.MustCompile(`(^|: )(engine|tracefile|otelcuzk|journal|client|server|endpoint): `)

// A user reads each error in one line that names what happened, with no
// package's name in the chain and no part said twice: a full queue, a
// cancelled job, a busy --listen, a trace a backend does not have, a bad
// OTLP variable. gRPC codes are spelled as gRPC and cuzk's docs spell them
// (RESOURCE_EXHAUSTED, CANCELLED), not "Canceled" beside a job's CANCELLED.
func TestErrorLinesNameNoPackageAndSayEachPartOnce(t *testing.T) {
	clearOTLPEnv(t)
	run := &heldRunner{gate: make(chan struct{})}
	eng, err := engine.New([]engine.Worker{{Name: "w0", Runner: run}}, engine.WithQueueSize(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	gate := sync.OnceFunc(func() { close(run.gate) })
	t.Cleanup(gate) // before the shutdown, which waits for the held job
	srv, err := server.New(eng, server.WithKnownCircuit(func(c string) bool { return c == "mulchain" }))
	if err != nil {
		t.Fatal(err)
	}
	addr := serveEngine(t, srv)
	for _, rid := range []string{"held", "queued"} {
		info, err := eng.Submit(context.Background(), &prover.Request{RequestID: rid, Circuit: "mulchain", Constraints: 16, Priority: priority.Normal})
		if err != nil {
			t.Fatal(err)
		}
		for rid == "held" && eng.Job(info.ID).State != engine.StateRunning {
			time.Sleep(time.Millisecond) // on the worker, out of the queue
		}
	}
	lines := map[string]string{}
	_, _, err = runCuzk(t, "submit", "--addr", addr, "--circuit", "mulchain", "--constraints", "16", "--request-id", "third")
	lines["full queue"] = fmt.Sprint(err)
	if want := "submit third: RESOURCE_EXHAUSTED: queue full: 1 proof waiting (1 queued), queue size 1"; lines["full queue"] != want {
		t.Errorf("a full queue: %s, want %s", lines["full queue"], want)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := runCuzk(t, "submit", "--addr", addr, "--request-id", "queued", "--circuit", "mulchain", "--constraints", "16")
		done <- err
	}()
	time.Sleep(200 * time.Millisecond) // submit waits on the queued job
	if _, _, err := runCuzk(t, "cancel", "--addr", addr, "--request-id", "queued"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		lines["cancelled"] = fmt.Sprint(err)
	case <-time.After(30 * time.Second):
		t.Fatal("submit of the cancelled job did not return")
	}
	if !strings.HasPrefix(lines["cancelled"], "submit queued: CANCELLED: job cancelled (job ") {
		t.Errorf("a cancelled job: %s, want submit queued: CANCELLED: job cancelled (job ...", lines["cancelled"])
	}
	gate()

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, err = daemon.New(context.Background(), daemon.Config{Listen: busy.Addr().String(), Backend: "cpu", CPUWorkers: 1, QueueSize: 1,
		Release: "sync", MaxMessageBytes: 1 << 20, TraceFile: t.TempDir() + "/t.jsonl", CacheDir: t.TempDir()})
	lines["busy --listen"] = fmt.Sprint(err)
	if want := "serve: --listen " + busy.Addr().String() + ": address already in use"; lines["busy --listen"] != want {
		t.Errorf("a busy --listen: %s, want %s", lines["busy --listen"], want)
	}

	jaeger := httptest.NewServer(http.NotFoundHandler())
	defer jaeger.Close()
	_, _, err = runCuzk(t, "trace", "0af7651916cd43dd8448eb211c80319c", "--jaeger", jaeger.URL)
	lines["trace not found"] = fmt.Sprint(err)
	if !strings.Contains(lines["trace not found"], "trace not found") {
		t.Errorf("a trace Jaeger does not have: %s", lines["trace not found"])
	}

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")
	_, _, err = runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "256", "--backend", "cpu")
	lines["OTLP variable"] = fmt.Sprint(err)
	if !strings.Contains(lines["OTLP variable"], `OTEL_EXPORTER_OTLP_TIMEOUT="soon"`) {
		t.Errorf("a bad OTLP variable: %s", lines["OTLP variable"])
	}

	for what, line := range lines {
		if packagePrefix.MatchString(line) || strings.Contains(line, "Canceled") || strings.Contains(line, "\n") {
			t.Errorf("%s: %q names a package, spells Canceled or is not one line", what, line)
		}
	}
}
