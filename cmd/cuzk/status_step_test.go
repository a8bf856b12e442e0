package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/priority"
	"github.com/otelcuzk/otelcuzk/prover/server"
)

// setupRunner is a job in its key setup until gate closes: keys.load and
// keys.setup open under the job's span, as the pipeline opens them.
type setupRunner struct {
	tr      trace.Tracer
	inSetup chan struct{}
	gate    chan struct{}
}

func (r *setupRunner) Run(ctx context.Context, _ *prover.Request) (*prover.Result, error) {
	lctx, load := r.tr.Start(ctx, semconv.SpanKeyLoad)
	_, setup := r.tr.Start(lctx, semconv.SpanKeysSetup)
	close(r.inSetup)
	<-r.gate
	setup.End()
	load.End()
	_, p := r.tr.Start(ctx, semconv.SpanPipelineProve)
	p.End()
	return &prover.Result{Proof: []byte("proof"), Backend: "held"}, nil
}

// cuzk status of a serial daemon whose worker is in a job's key setup says
// so on the job's line and the worker's ("RUNNING: keys.setup"): it said
// "proving" through the whole setup.
func TestStatusSaysAJobIsInItsKeySetup(t *testing.T) {
	clearOTLPEnv(t)
	steps := otelcuzk.NewStepTracker()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(steps))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	run := &setupRunner{tr: tp.Tracer("test"), inSetup: make(chan struct{}), gate: make(chan struct{})}
	eng, err := engine.New([]engine.Worker{{Name: "cpu:0", Runner: run}}, engine.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	srv, err := server.New(eng, server.WithKnownCircuit(func(string) bool { return true }), server.WithJobSteps(steps.Step))
	if err != nil {
		t.Fatal(err)
	}
	addr := serveEngine(t, srv)
	job, err := eng.Submit(context.Background(), &prover.Request{RequestID: "big", Circuit: "mulchain", Constraints: 16, Priority: priority.Normal})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-run.inSetup:
	case <-time.After(10 * time.Second):
		t.Fatal("the job never reached its setup")
	}
	out, errOut, err := runCuzk(t, "status", "--addr", addr)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, errOut)
	}
	if want := "job       " + job.ID + "  request big  mulchain  RUNNING: keys.setup on cpu:0  NORMAL  started "; !strings.Contains(out, want) {
		t.Errorf("status lacks %q:\n%s", want, out)
	}
	// Its priority and time since it started, as a queued job's line says its own.
	if !regexp.MustCompile(`(?m)^job  .*  NORMAL  started [0-9.]+ (ms|s) ago  trace [0-9a-f]{32}$`).MatchString(out) {
		t.Errorf("the job line lacks its priority and time since it started:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^worker +cpu:0 +` + regexp.QuoteMeta(job.ID) + ` RUNNING: keys\.setup +busy`).MatchString(out) {
		t.Errorf("the worker line does not say the setup:\n%s", out)
	}
	if strings.Contains(out, "proving") {
		t.Errorf("status says proving during a key setup:\n%s", out)
	}
	close(run.gate)
	if _, err := eng.Await(context.Background(), job.ID); err != nil {
		t.Fatal(err)
	}
}

// A synthesized job waiting for a device says what it waits for: on a
// daemon whose workers are CPU ones, a CPU worker (it read
// "WAITING_DEVICE: gpu.queue", as if it waited for a GPU the host lacks);
// beside GPUs, a GPU. cuzk status and submit print the same words.
func TestAJobWaitingForTheDeviceNamesTheKindOfWorker(t *testing.T) {
	waiting := client.RunningJob{ID: "job-2", RequestID: "r2", Circuit: "mulchain", Status: client.WaitingDevice, Step: semconv.SpanGPUQueue}
	for _, c := range []struct {
		workers []client.WorkerStatus
		want    string
	}{
		{[]client.WorkerStatus{{Name: "cpu:0"}}, "WAITING_DEVICE: for a CPU worker (gpu.queue)"},
		{[]client.WorkerStatus{{Name: "cuda:0"}, {Name: "cuda:1"}}, "WAITING_DEVICE: for a GPU (gpu.queue)"},
		{[]client.WorkerStatus{{Name: "cuda:0"}, {Name: "cpu:0"}}, "WAITING_DEVICE: for a device worker (gpu.queue)"},
	} {
		st := &client.Status{Workers: c.workers, Running: []client.RunningJob{waiting}}
		var out strings.Builder
		printStatus(&out, "127.0.0.1:9820", st)
		if !strings.Contains(out.String(), "request r2  mulchain  "+c.want) {
			t.Errorf("workers %v: status\n%s\nwant %q", c.workers, out.String(), c.want)
		}
		if got := stateOf(st, "r2"); got != c.want {
			t.Errorf("workers %v: submit's state %q, want %q", c.workers, got, c.want)
		}
	}
}
