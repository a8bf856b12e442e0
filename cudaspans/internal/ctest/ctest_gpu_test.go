package ctest

import (
	"context"
	"errors"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

func TestCCodeRecordsADevicePhaseOnAStreamGPU(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c, err := cudaspans.Open(0, cudaspans.WithTracerProvider(tp))
	if errors.Is(err, cudaspans.ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "groth16.prove")
	h, release := cudaspans.CParent(ctx)
	if got := Prove(h, s.Handle(), 0, 0); got != 5 {
		t.Fatalf("%d of 5 begins got a handle", got)
	}
	release()
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var dev, prove sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		switch sp.Name() {
		case "c.device_phase":
			dev = sp
		case "c.prove":
			prove = sp
		}
	}
	if dev == nil || prove == nil {
		t.Fatal("missing c.device_phase or c.prove")
	}
	// A device phase's nested phases and the phase itself hang under the
	// begin's parent, here c.prove.
	if dev.Parent().SpanID() != prove.SpanContext().SpanID() {
		t.Error("c.device_phase is not a child of c.prove")
	}
	var clock string
	for _, kv := range dev.Attributes() {
		if kv.Key == "cuda.clock" {
			clock = kv.Value.AsString()
		}
	}
	if clock != "gpu" {
		t.Errorf("c.device_phase cuda.clock = %q, want gpu", clock)
	}
}
