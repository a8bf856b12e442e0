package prover

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/commitmenttest"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// callNoPanic runs f and turns a panic into an error naming it, so that a
// table of calls reports every panicking entry point, not only the first.
func callNoPanic(f func() error) (err error, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			panicked = r
		}
	}()
	return f(), nil
}

// TestNilArgumentsAreErrorsNotPanics proves that every exported entry point
// of prover given a nil or typed-nil argument (a constraint system, proving
// key, witness, assignment, request, synthesized proof or receiver) returns
// an error and does not panic; nil contexts aside, as the context package
// asks.
func TestNilArgumentsAreErrorsNotPanics(t *testing.T) {
	ctx := context.Background()
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	com := commitmenttest.Setup(t, "rangecheck")
	var nilR1CS *cs.R1CS
	var nilPK *groth16_bls12381.ProvingKey
	pipe, err := New(ctx, "cpu", WithKeyCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close(ctx)
	released := func() *groth16.Assignment {
		asg, err := groth16.Synthesize(ctx, f.CCS, f.Witness)
		if err != nil {
			t.Fatal(err)
		}
		if err := asg.Release(ctx, nil); err != nil {
			t.Fatal(err)
		}
		return asg
	}
	// Nils that mean a default (documented): these calls succeed.
	succeeds := map[string]bool{
		"Prove nil backend is the CPU":    true,
		"nil Assignment Release":          true,
		"KeyMemoryOf nil pipeline":        true,
		"Prove nil releaser and provider": true,
	}
	// The sentinel a caller branches on, where one applies.
	wantIs := map[string]error{
		"Prove nil ccs":                 groth16.ErrUnsupported,
		"Prove typed-nil ccs":           groth16.ErrUnsupported,
		"Prove nil pk":                  groth16.ErrUnsupported,
		"Prove typed-nil pk":            groth16.ErrUnsupported,
		"Prove nil witness":             groth16.ErrWitnessSize,
		"Synthesize nil ccs":            groth16.ErrUnsupported,
		"Synthesize typed-nil ccs":      groth16.ErrUnsupported,
		"Synthesize nil witness":        groth16.ErrWitnessSize,
		"ProveAssignment typed-nil pk":  groth16.ErrUnsupported,
		"Prover.Run nil request":        groth16.ErrBadWitness,
		"Prover.Synthesize nil request": groth16.ErrBadWitness,
		"Synthesized.Prove typed-nil":   ErrSynthesisSpent,
	}
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Prove nil ccs", func() error { _, err := groth16.Prove(ctx, nil, f.PK, f.Witness); return err }},
		{"Prove typed-nil ccs", func() error { _, err := groth16.Prove(ctx, nilR1CS, f.PK, f.Witness); return err }},
		{"Prove nil pk", func() error { _, err := groth16.Prove(ctx, f.CCS, nil, f.Witness); return err }},
		{"Prove typed-nil pk", func() error { _, err := groth16.Prove(ctx, f.CCS, nilPK, f.Witness); return err }},
		{"Prove nil witness", func() error { _, err := groth16.Prove(ctx, f.CCS, f.PK, nil); return err }},
		{"Prove nil backend is the CPU", func() error {
			_, err := groth16.Prove(ctx, f.CCS, f.PK, f.Witness, groth16.WithBackend(nil))
			return err
		}},
		{"Prove nil releaser and provider", func() error {
			_, err := groth16.Prove(ctx, f.CCS, f.PK, f.Witness, WithReleaser(nil), WithTracerProvider(nil))
			return err
		}},
		{"Prove typed-nil backend", func() error {
			_, err := groth16.Prove(ctx, f.CCS, f.PK, f.Witness, groth16.WithBackend((*cpu.Backend)(nil)))
			return err
		}},
		{"Synthesize nil ccs", func() error { _, err := groth16.Synthesize(ctx, nil, f.Witness); return err }},
		{"Synthesize typed-nil ccs", func() error { _, err := groth16.Synthesize(ctx, nilR1CS, f.Witness); return err }},
		{"Synthesize nil witness", func() error { _, err := groth16.Synthesize(ctx, f.CCS, nil); return err }},
		{"Synthesize typed-nil key of a circuit with commitments", func() error {
			_, err := groth16.Synthesize(ctx, com.CCS, com.Witness, groth16.WithProvingKey(nilPK))
			return err
		}},
		{"Synthesize nil key of a circuit with commitments", func() error {
			_, err := groth16.Synthesize(ctx, com.CCS, com.Witness, groth16.WithProvingKey(nil))
			return err
		}},
		{"ProveAssignment nil assignment", func() error { _, err := groth16.ProveAssignment(ctx, f.PK, nil); return err }},
		{"ProveAssignment typed-nil pk", func() error {
			asg, err := groth16.Synthesize(ctx, f.CCS, f.Witness)
			if err != nil {
				return fmt.Errorf("setup: %v", err)
			}
			_, err = groth16.ProveAssignment(ctx, nilPK, asg)
			return err
		}},
		{"ProveAssignment released assignment", func() error { _, err := groth16.ProveAssignment(ctx, f.PK, released()); return err }},
		{"ProveAssignment zero assignment", func() error { _, err := groth16.ProveAssignment(ctx, f.PK, &groth16.Assignment{}); return err }},
		{"nil Assignment Release", func() error { return (*groth16.Assignment)(nil).Release(ctx, nil) }},
		{"Prover.Run nil request", func() error { _, err := pipe.Run(ctx, nil); return err }},
		{"Prover.Validate nil request", func() error { return pipe.Validate(nil) }},
		{"Prover.EstimateMemory nil request", func() error { _, err := pipe.EstimateMemory(nil); return err }},
		{"Prover.Synthesize nil request", func() error { _, err := pipe.Synthesize(ctx, nil); return err }},
		{"Synthesized.Prove nil device", func() error {
			s, err := pipe.Synthesize(ctx, &Request{Circuit: "mulchain", Constraints: 64})
			if err != nil {
				return fmt.Errorf("setup: %v", err)
			}
			defer s.Release(ctx)
			_, err = s.Prove(ctx, nil)
			return err
		}},
		{"Synthesized.Prove typed-nil", func() error { _, err := (*synthesis)(nil).Prove(ctx, pipe); return err }},
		{"CPU.ComputeH nil domain", func() error {
			return cpu.New(nil).ComputeH(ctx, "", nil, make([]fr.Element, 4), make([]fr.Element, 4), make([]fr.Element, 4))
		}},
		{"CPU.ComputeH zero domain", func() error {
			return cpu.New(nil).ComputeH(ctx, "", &fft.Domain{}, nil, nil, nil)
		}},
		{"CPU.MSMG1 typed-nil receiver", func() error {
			_, err := (*cpu.Backend)(nil).MSMG1(ctx, backend.Call{Span: "msm.g1.a"}, backend.BaseSet[curve.G1Affine]{Points: make([]curve.G1Affine, 1)}, make([]fr.Element, 1))
			return err
		}},
		{"CPU.MSMG2 typed-nil receiver", func() error {
			_, err := (*cpu.Backend)(nil).MSMG2(ctx, backend.Call{Span: "msm.g2.b"}, backend.BaseSet[curve.G2Affine]{Points: make([]curve.G2Affine, 1)}, make([]fr.Element, 1))
			return err
		}},
		{"CPU.ComputeH typed-nil receiver", func() error {
			return (*cpu.Backend)(nil).ComputeH(ctx, "", fft.NewDomain(4), make([]fr.Element, 4), make([]fr.Element, 4), make([]fr.Element, 4))
		}},
		{"New with nil options", func() error {
			p, err := New(ctx, "cpu", WithKeyCacheDir(t.TempDir()), WithNotice(nil), WithReleaser(nil), WithTracerProvider(nil))
			if err != nil {
				return fmt.Errorf("setup: %v", err)
			}
			defer p.Close(ctx)
			_, err = p.Run(ctx, &Request{Circuit: "nosuch", Constraints: 4})
			return err
		}},
		{"KeyMemoryOf nil pipeline", func() error { KeyMemoryOf(nil, pipe); return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			err, p := callNoPanic(c.call)
			if p != nil {
				t.Fatalf("panicked: %v", p)
			}
			if succeeds[c.name] {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if want := wantIs[c.name]; want != nil && !errors.Is(err, want) {
				t.Errorf("err = %v, want one wrapping %v", err, want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %q, want one line", err)
			}
		})
	}
}
