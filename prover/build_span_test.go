package prover

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

// A size the circuit's shape refuses (merkle below two MiMC levels) fails
// in a circuit.build span of its own, under the job, with the error: the
// job's time is not left unexplained. A good size has the span too, before
// circuit.compile.
func TestARefusedSizeFailsInACircuitBuildSpan(t *testing.T) {
	tp, exp := spantest.NewMemory()
	p := newTestPipeline(t, "cpu", buffer.ReleaseSync, WithTracerProvider(tp))
	ctx, job := tp.Tracer("test").Start(context.Background(), semconv.SpanEngineJob)
	_, err := p.Run(ctx, &Request{Circuit: "merkle", Constraints: 100})
	job.End()
	if !errors.Is(err, circuits.ErrBadConstraints) {
		t.Fatalf("merkle at 100 constraints: %v, want ErrBadConstraints", err)
	}
	tree := spantest.NewTree(exp.GetSpans())
	builds := tree.Named(semconv.SpanCircuitBuild)
	if len(builds) != 1 {
		t.Fatalf("%d circuit.build spans, want 1", len(builds))
	}
	b := builds[0]
	if parent, ok := tree.Parent(b); !ok || parent.Name != semconv.SpanEngineJob {
		t.Errorf("circuit.build under %q, want engine.job", parent.Name)
	}
	if b.Status.Code != codes.Error || b.Status.Description != err.Error() {
		t.Errorf("circuit.build status %+v, want the error %q", b.Status, err)
	}
	if v, ok := spantest.StubValue(b, "error.type"); !ok || v == "" {
		t.Error("circuit.build has no error.type")
	}
	if len(tree.Named(semconv.SpanCircuitCompile)) != 0 {
		t.Error("a refused size was compiled")
	}

	exp.Reset()
	ctx, job = tp.Tracer("test").Start(context.Background(), semconv.SpanEngineJob)
	if _, err := p.Run(ctx, &Request{Circuit: "mulchain", Constraints: 256}); err != nil {
		t.Fatal(err)
	}
	job.End()
	tree = spantest.NewTree(exp.GetSpans())
	builds, compiles := tree.Named(semconv.SpanCircuitBuild), tree.Named(semconv.SpanCircuitCompile)
	if len(builds) != 1 || len(compiles) != 1 || builds[0].Status.Code == codes.Error || builds[0].EndTime.After(compiles[0].StartTime) {
		t.Errorf("a good size: %d circuit.build, %d circuit.compile spans; want one each, the build first and not failed", len(builds), len(compiles))
	}
}
