package groth16

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/frontend"

	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

func TestProveVerifiesWithGnarkVerifier(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
	}{{"mulchain", 1 << 10}, {"merkle", 1 << 12}} {
		t.Run(c.name, func(t *testing.T) {
			f := circuitstest.Setup(t, c.name, c.n, 42)
			proof, err := Prove(context.Background(), f.CCS, f.PK, f.Witness)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := proof.(*groth16_bls12381.Proof); !ok {
				t.Fatalf("proof is %T", proof)
			}
			if err := groth16.Verify(proof, f.VK, f.Public); err != nil {
				t.Fatalf("gnark rejects our proof: %v", err)
			}
		})
	}
}

func TestTamperedProofAndWrongPublicInputAreRejected(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	proof, err := Prove(context.Background(), f.CCS, f.PK, f.Witness)
	if err != nil {
		t.Fatal(err)
	}
	p := proof.(*groth16_bls12381.Proof)

	tampered := *p
	tampered.Krs.Add(&tampered.Krs, &p.Ar)
	if err := groth16.Verify(&tampered, f.VK, f.Public); err == nil {
		t.Error("verifier accepted a tampered Krs")
	}

	// The same proof against another Out (a public input).
	wrong, err := frontend.NewWitness(&circuits.MulChain{X: 0, Out: 12345}, ecc.BLS12_381.ScalarField(), frontend.PublicOnly())
	if err != nil {
		t.Fatal(err)
	}
	if err := groth16.Verify(proof, f.VK, wrong); err == nil {
		t.Error("verifier accepted a wrong public input")
	}
}

func TestSameRandomnessGivesTheSameProof(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	requireFixedByRandomness(t, "", f.VK, f.Public, func(opts ...ProveOption) groth16.Proof {
		proof, err := Prove(context.Background(), f.CCS, f.PK, f.Witness, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return proof
	})
}

// requireFixedByRandomness proves three times through prove, each proof
// verifying with vk and public: twice with the same r and s, which must
// give the same bytes, and once with random ones, which must not. why
// says what differing same-randomness proofs would mean.
func requireFixedByRandomness(t *testing.T, why string, vk groth16.VerifyingKey, public witness.Witness, prove func(opts ...ProveOption) groth16.Proof) {
	t.Helper()
	var r, s fr.Element
	r.SetUint64(7)
	s.SetUint64(11)
	ser := func(opts ...ProveOption) []byte {
		p := prove(opts...)
		if err := groth16.Verify(p, vk, public); err != nil {
			t.Fatal(err)
		}
		return circuitstest.Bytes(t, p)
	}
	p1, p2 := ser(WithRandomness(r, s)), ser(WithRandomness(r, s))
	if !bytes.Equal(p1, p2) {
		t.Error("same r, s gave different proofs" + why)
	}
	if p3 := ser(); bytes.Equal(p1, p3) {
		t.Error("random r, s gave the fixed-randomness proof")
	}
}

func TestUnsatisfyingWitnessIsAClearError(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	bad, err := frontend.NewWitness(&circuits.MulChain{X: 3, Out: 4}, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Prove(context.Background(), f.CCS, f.PK, bad)
	if !errors.Is(err, ErrUnsatisfied) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %q, want ErrUnsatisfied on one line", err)
	}
	// Witness values stay out of errors (they reach spans and statuses):
	// gnark's message has the failing wire's value in decimal.
	if !strings.Contains(err.Error(), "constraint #") || strings.ContainsAny(err.Error(), "⋅=") || strings.Contains(err.Error(), "!= 4") {
		t.Errorf("err = %q: want the constraint named, no values", err)
	}
	short, err := f.Witness.Public() // public values only: too short
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Prove(context.Background(), f.CCS, f.PK, short); !errors.Is(err, ErrWitnessSize) {
		t.Errorf("err = %v, want ErrWitnessSize", err)
	}
}

func TestKeyOfAnotherCircuitIsRejected(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	other := circuitstest.Setup(t, "merkle", 1<<12, 42)
	if _, err := Prove(context.Background(), f.CCS, other.PK, f.Witness); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("err = %v, want ErrKeyMismatch", err)
	}
}
