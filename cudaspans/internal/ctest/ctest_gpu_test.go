package ctest

import (
	"context"
	"errors"
	"testing"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
)

func TestCCodeRecordsADevicePhaseOnAStreamGPU(t *testing.T) {
	rec, tp := spantest.New()
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
	byName := spantest.ByName(rec)
	dev, prove := byName["c.device_phase"], byName["c.prove"]
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
