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
	"github.com/otelcuzk/otelcuzk/otelcuzk"
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
		{groth16.ErrUnsupported, otelcuzk.ErrorTypeUnsupported},
		{groth16.ErrWitnessSize, otelcuzk.ErrorTypeBadWitness},
		{groth16.ErrBadWitness, otelcuzk.ErrorTypeBadWitness},
		{groth16.ErrUnsatisfied, otelcuzk.ErrorTypeUnsatisfied},
		{groth16.ErrKeyMismatch, otelcuzk.ErrorTypeKeyMismatch},
		{ErrVerifyFailed, otelcuzk.ErrorTypeVerifyFailed},
		{ErrUnknownCircuit, otelcuzk.ErrorTypeNotFound},
		{ErrBadCircuitFile, otelcuzk.ErrorTypeInvalidRequest},
		{ErrUnknownBackend, otelcuzk.ErrorTypeInvalidRequest},
		{ErrSynthesisSpent, otelcuzk.ErrorTypeInvalidRequest},
		{backend.ErrUnavailable, otelcuzk.ErrorTypeNoDevice},
		{backend.ErrNoDeviceMemory, otelcuzk.ErrorTypeNoDevice},
		{backend.ErrDeviceFault, otelcuzk.ErrorTypeDeviceFault},
		{circuits.ErrBadConstraints, otelcuzk.ErrorTypeInvalidRequest},
		{circuits.ErrTooLargeForHost, otelcuzk.ErrorTypeOutOfMemory},
		{circuits.ErrNotBuiltin, otelcuzk.ErrorTypeInvalidRequest},
		// As the CUDA backend wraps them: the outer kind names the error.
		{fmt.Errorf("%w: %w", backend.ErrUnavailable, cudaspans.ErrNoDevice), otelcuzk.ErrorTypeNoDevice},
		{fmt.Errorf("%w on cuda:0: %w", backend.ErrDeviceFault, &cudaspans.Error{Code: 700}), otelcuzk.ErrorTypeDeviceFault},
	} {
		if got := otelcuzk.ErrorType(fmt.Errorf("prove: %w", tc.err)); got != tc.want {
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
		et, _ := spantest.StubValue(s, string(otelcuzk.KeyErrorType))
		got = append(got, s.Name+" "+et)
	}
	want := []string{
		otelcuzk.SpanSynthesizeSolve + " unsatisfied",
		otelcuzk.SpanPipelineSynthesize + " unsatisfied",
		otelcuzk.SpanPipelineSynthesize + " unsupported",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("failed spans %q, want %q", got, want)
	}
}
