package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/cupti"
	"github.com/otelcuzk/otelcuzk/cupti/jobs"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/upstream"
	"github.com/otelcuzk/otelcuzk/prover/upstream/standin"
)

// Issue 22, item 3, without a GPU: a job forwarded to an upstream cuzk
// (prover/upstream publishing its window to a jobs file) while `cuzk
// gpu-trace` runs a CUDA program (fakeprog on the fake CUPTI) that
// launches a kernel outside any NVTX range: the kernel is the job's child
// in the job's trace, beside the job's upstream.gpu_compute; a kernel of a
// run after the job ended goes under a device window.
func TestGPUTraceParentsAnUpstreamsKernelsUnderTheForwardedJob(t *testing.T) {
	_, prog := buildFakes(t)
	fake := &standin.Fake{Work: func(ctx context.Context, gpu int, id string) error {
		select { // the GPU part: long enough for gpu-trace to run fakeprog
		case <-time.After(4 * time.Second):
		case <-ctx.Done():
		}
		return nil
	}}
	addr, stop, err := fake.Serve()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	pub, err := jobs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	c, err := upstream.New(addr, upstream.WithTracerProvider(tp), upstream.WithJobs(pub))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	proved := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := c.Prove(ctx, &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{RequestId: "porep-7",
			ProofKind: cuzkv1.ProofKind_POREP_SEAL_COMMIT, SectorSize: 32 << 30, RegisteredProof: 3}})
		proved <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), `"start_ns"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the forwarded job's window was not published")
		}
	}
	env := map[string]string{jobs.EnvFile: path}
	spans, err := runGPUTraceCmd(t, env, prog, "exit", "0")
	if err != nil {
		t.Fatal(err)
	}
	if err := <-proved; err != nil {
		t.Fatal(err)
	}
	var job, gpu tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "engine.job":
			job = s
		case upstream.SpanGPUCompute:
			gpu = s
		}
	}
	if !job.SpanContext.IsValid() || gpu.Parent.SpanID() != job.SpanContext.SpanID() {
		t.Fatalf("the job has no upstream.gpu_compute: %v", exp.GetSpans())
	}
	k := byName(t, spans, "before_exit")
	if k.TraceID != job.SpanContext.TraceID().String() || k.ParentID != job.SpanContext.SpanID().String() {
		t.Fatalf("the kernel is in trace %s under %s, want the job's trace %s under the job %s",
			k.TraceID, k.ParentID, job.SpanContext.TraceID(), job.SpanContext.SpanID())
	}
	if k.Start.Before(job.StartTime) || k.End.After(job.EndTime) {
		t.Errorf("the kernel %v..%v lies outside its job %v..%v", k.Start, k.End, job.StartTime, job.EndTime)
	}
	// After the job: its kernel goes under a device window of its own trace.
	spans, err = runGPUTraceCmd(t, env, prog, "exit", "0")
	if err != nil {
		t.Fatal(err)
	}
	k, w := byName(t, spans, "before_exit"), byName(t, spans, cupti.SpanWindow)
	if k.ParentID != w.SpanID || k.TraceID == job.SpanContext.TraceID().String() {
		t.Errorf("a kernel after the job ended is under %s in trace %s, want the device window", k.ParentID, k.TraceID)
	}
}
