package gpu_test

// Groth16 with commitments (gnark's api.Commit) on the CUDA backend,
// through the backend.Backend interface only (the backend from the
// registry), so this file does not depend on the package's layout.

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/commitmenttest"
	_ "github.com/otelcuzk/otelcuzk/prover/gpu" // registers "cuda"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// openCUDA opens the registered "cuda" backend recording into rec; it
// skips without a device.
func openCUDA(t *testing.T) (backend.Backend, *tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	if _, err := cudaspans.Devices(); errors.Is(err, cudaspans.ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
	open, ok := backend.Lookup("cuda")
	if !ok {
		t.Fatal("no cuda backend registered")
	}
	rec, tp := spantest.New()
	b, err := open(context.Background(), backend.Options{TracerProvider: tp})
	if errors.Is(err, cudaspans.ErrNoDevice) || errors.Is(err, backend.ErrUnavailable) {
		t.Skipf("no CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, rec, tp
}

func proofBytes(t *testing.T, p gnarkgroth16.Proof) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := p.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestCommitmentProveGPUVerifiesAndEqualsCPU: for each circuit with
// commitments (range check, emulated field, log-derivative lookup, three
// commitments, and the built-in rangecheck at 2^16), the CUDA backend's
// proof verifies with gnark and is byte for byte the CPU backend's for the
// same witness and r, s (WithRandomness also fixes the commitments'
// masks); a second GPU proof with the bases resident (WithKeyID) is equal
// too; the proof-of-knowledge MSMs ran on the device (msm.g1.commitment_pok
// spans of the cuda backend).
func TestCommitmentProveGPUVerifiesAndEqualsCPU(t *testing.T) {
	b, rec, tp := openCUDA(t)
	ctx := context.Background()
	var r, s fr.Element
	r.SetUint64(0x1234_5678_9abc)
	s.SetString("31415926535897932384626433832795028841971693993751")

	type circuit struct {
		name string
		f    *commitmenttest.Fixture
	}
	var cs []circuit
	for _, name := range commitmenttest.Names {
		cs = append(cs, circuit{name, commitmenttest.Setup(t, name)})
	}
	big := circuitstest.Setup(t, "rangecheck", 1<<16, 7)
	cs = append(cs, circuit{"rangecheck-2^16", &commitmenttest.Fixture{Name: "rangecheck-2^16", CCS: big.CCS, PK: big.PK, VK: big.VK, Witness: big.Witness, Public: big.Public, Commitments: 1}})

	for _, c := range cs {
		f := c.f
		want, err := groth16.Prove(ctx, f.CCS, f.PK, f.Witness, prover.WithRandomness(r, s))
		if err != nil {
			t.Fatalf("%s: CPU: %v", c.name, err)
		}
		if err := gnarkgroth16.Verify(want, f.VK, f.Public); err != nil {
			t.Fatalf("%s: CPU proof does not verify: %v", c.name, err)
		}
		for _, keyID := range []string{"", "commit-test-" + c.name, "commit-test-" + c.name} {
			got, err := groth16.Prove(ctx, f.CCS, f.PK, f.Witness, groth16.WithBackend(b), prover.WithRandomness(r, s),
				prover.WithTracerProvider(tp), groth16.WithKeyID(keyID))
			if err != nil {
				t.Fatalf("%s (key id %q): CUDA: %v", c.name, keyID, err)
			}
			if err := gnarkgroth16.Verify(got, f.VK, f.Public); err != nil {
				t.Fatalf("%s (key id %q): CUDA proof does not verify: %v", c.name, keyID, err)
			}
			if n := len(got.(*groth16_bls12381.Proof).Commitments); n != f.Commitments {
				t.Fatalf("%s: CUDA proof has %d commitments, want %d", c.name, n, f.Commitments)
			}
			if !bytes.Equal(proofBytes(t, got), proofBytes(t, want)) {
				t.Fatalf("%s (key id %q): CUDA proof differs from the CPU backend's for the same witness, r and s", c.name, keyID)
			}
		}
	}
	var onDevice int
	for _, sp := range rec.Ended() {
		if sp.Name() != semconv.SpanMSMG1CommitmentPok {
			continue
		}
		for _, a := range sp.Attributes() {
			if a.Key == semconv.KeyBackend && a.Value.AsString() == "cuda" {
				onDevice++
			}
		}
	}
	if onDevice == 0 {
		t.Error("no msm.g1.commitment_pok span of the cuda backend: the proof of knowledge did not run on the device")
	}
}
