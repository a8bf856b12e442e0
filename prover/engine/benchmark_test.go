package engine

import (
	"context"
	"fmt"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/otelcuzk/otelcuzk/prover"
)

// BenchmarkProve measures the engine's own cost per job (queue, spans,
// bookkeeping) around a Runner that does nothing, untraced and traced.
func BenchmarkProve(b *testing.B) {
	run := runnerFunc(func(context.Context, *prover.Request) (*prover.Result, error) {
		return &prover.Result{}, nil
	})
	for _, c := range []struct {
		name string
		opt  Option
	}{
		{"noop-tracer", WithTracerProvider(noop.NewTracerProvider())},
		{"sdk-tracer", WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter())))},
	} {
		b.Run(c.name, func(b *testing.B) {
			e, err := New([]Worker{{Name: "w", Runner: run}}, c.opt, WithMaxResults(128))
			if err != nil {
				b.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := e.Prove(ctx, &prover.Request{RequestID: fmt.Sprint("b", i), Circuit: "mulchain"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
