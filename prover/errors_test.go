package prover

import (
	"context"
	"fmt"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"github.com/consensys/gnark/frontend/cs/scs"
	"go.opentelemetry.io/otel/codes"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

func TestSentinelsDeclareTheirErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{groth16.ErrUnsupported, semconv.ErrorTypeUnsupported},
		{groth16.ErrWitnessSize, semconv.ErrorTypeBadWitness},
		{groth16.ErrBadWitness, semconv.ErrorTypeBadWitness},
		{groth16.ErrUnsatisfied, semconv.ErrorTypeUnsatisfied},
		{groth16.ErrKeyMismatch, semconv.ErrorTypeKeyMismatch},
		{ErrVerifyFailed, semconv.ErrorTypeVerifyFailed},
		{ErrUnknownCircuit, semconv.ErrorTypeNotFound},
		{ErrBadCircuitFile, semconv.ErrorTypeInvalidRequest},
		{ErrUnknownBackend, semconv.ErrorTypeInvalidRequest},
		{ErrSynthesisSpent, semconv.ErrorTypeInvalidRequest},
		{backend.ErrUnavailable, semconv.ErrorTypeNoDevice},
		{backend.ErrNoDeviceMemory, semconv.ErrorTypeNoDevice},
		{backend.ErrDeviceFault, semconv.ErrorTypeDeviceFault},
		{circuits.ErrBadConstraints, semconv.ErrorTypeInvalidRequest},
		{circuits.ErrTooLargeForHost, semconv.ErrorTypeOutOfMemory},
		{circuits.ErrNotBuiltin, semconv.ErrorTypeInvalidRequest},
		// As the CUDA backend wraps them: the outer kind names the error.
		{fmt.Errorf("%w: %w", backend.ErrUnavailable, cudaspans.ErrNoDevice), semconv.ErrorTypeNoDevice},
		{fmt.Errorf("%w on cuda:0: %w", backend.ErrDeviceFault, &cudaspans.Error{Code: 700}), semconv.ErrorTypeDeviceFault},
	} {
		if got := semconv.ErrorType(fmt.Errorf("prove: %w", tc.err)); got != tc.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestFailedSynthesisSpansCarryTheErrorType(t *testing.T) {
	tp, exp := spantest.NewMemory()
	ccs := circuitstest.Compile(t, ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &circuitstest.Square{})
	w := circuitstest.NewWitness(t, &circuitstest.Square{X: 3, Y: 10})
	if _, err := groth16.Synthesize(context.Background(), ccs, w, WithTracerProvider(tp)); err == nil {
		t.Fatal("an unsatisfying witness was synthesized")
	}
	plonk := circuitstest.Compile(t, ecc.BLS12_381.ScalarField(), scs.NewBuilder, &circuitstest.Square{})
	if _, err := groth16.Synthesize(context.Background(), plonk, w, WithTracerProvider(tp)); err == nil {
		t.Fatal("a PLONK system was synthesized")
	}
	var got []string
	for _, s := range exp.GetSpans() {
		if s.Status.Code != codes.Error {
			continue
		}
		et, _ := spantest.StubValue(s, string(semconv.KeyErrorType))
		got = append(got, s.Name+" "+et)
	}
	want := []string{
		semconv.SpanSynthesizeSolve + " unsatisfied",
		semconv.SpanPipelineSynthesize + " unsatisfied",
		semconv.SpanPipelineSynthesize + " unsupported",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("failed spans %q, want %q", got, want)
	}
}
