package groth16

import (
	"context"
	"testing"

	"github.com/consensys/gnark/backend/groth16"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// BenchmarkProve compares this package's prove with gnark's groth16.Prove
// on the same circuit, keys and witness (both include the R1CS solve).
// bench/cpuprove does the same at 2^14 and 2^16 with interleaved runs.
func BenchmarkProve(b *testing.B) {
	f := circuitstest.Setup(b, "merkle", 1<<12, 42)
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Prove(context.Background(), f.CCS, f.PK, f.Witness, WithTracerProvider(noop.NewTracerProvider())); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gnark", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := groth16.Prove(f.CCS, f.PK, f.Witness); err != nil {
				b.Fatal(err)
			}
		}
	})
}
