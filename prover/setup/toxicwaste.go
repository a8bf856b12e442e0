package setup

import (
	"fmt"
	"math/big"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// ToxicWaste is the secret randomness of one Groth16 setup, in gnark's
// notation (DIZK, Figure 4): τ (gnark's t), α, β, γ, δ; and for the
// Pedersen commitment keys of api.Commit, the scalar s of their shared G2
// point [s]₂ (gnark samples the point itself) and one σ per commitment.
// Whoever knows it can forge proofs: keys made for production are made
// with SampleToxicWaste, whose values are dropped when Setup returns.
type ToxicWaste struct {
	T, Alpha, Beta, Gamma, Delta fr.Element
	// CommitmentG2 is s of the commitments' G2 point [s]₂.
	CommitmentG2 fr.Element
	// CommitmentSigma holds σᵢ of commitment i (one per commitment of the
	// constraint system).
	CommitmentSigma []fr.Element

	gammaInv, deltaInv fr.Element // set by check
}

// SampleToxicWaste draws every value uniformly from the non-zero elements
// of Fr with crypto/rand, with nbCommitments values of σ. Errors: the
// random source's.
func SampleToxicWaste(nbCommitments int) (ToxicWaste, error) {
	var tw ToxicWaste
	draw := func(e *fr.Element) error {
		for e.IsZero() {
			if _, err := e.SetRandom(); err != nil {
				return fmt.Errorf("setup: sample toxic waste: %w", err)
			}
		}
		return nil
	}
	tw.CommitmentSigma = make([]fr.Element, nbCommitments)
	for _, e := range append([]*fr.Element{&tw.T, &tw.Alpha, &tw.Beta, &tw.Gamma, &tw.Delta, &tw.CommitmentG2}, sigmaPtrs(tw.CommitmentSigma)...) {
		if err := draw(e); err != nil {
			return tw, err
		}
	}
	return tw, nil
}

func sigmaPtrs(s []fr.Element) []*fr.Element {
	p := make([]*fr.Element, len(s))
	for i := range s {
		p[i] = &s[i]
	}
	return p
}

// ErrToxicWaste is wrapped by the errors of secrets that cannot make keys.
var ErrToxicWaste = semconv.NewError(semconv.ErrorTypeInvalidRequest, "setup: unusable toxic waste")

// check refuses secrets that make no keys: a zero value (γ and δ are
// inverted, α and β would zero the proof), τ a root of unity of the domain
// of size n (the Lagrange values divide by τ − ωʲ and by τⁿ − 1 = 0), and
// a σ count other than the constraint system's commitments.
func (tw *ToxicWaste) check(n uint64, nbCommitments int) error {
	for _, v := range []struct {
		name string
		e    *fr.Element
	}{{"τ", &tw.T}, {"α", &tw.Alpha}, {"β", &tw.Beta}, {"γ", &tw.Gamma}, {"δ", &tw.Delta}, {"s", &tw.CommitmentG2}} {
		if v.e.IsZero() {
			return fmt.Errorf("%w: %s is zero", ErrToxicWaste, v.name)
		}
	}
	var tn fr.Element
	tn.Exp(tw.T, new(big.Int).SetUint64(n))
	if tn.IsOne() {
		return fmt.Errorf("%w: τ is a %d-th root of unity (τⁿ = 1)", ErrToxicWaste, n)
	}
	if len(tw.CommitmentSigma) != nbCommitments {
		return fmt.Errorf("%w: %d values of σ for %d commitments", ErrToxicWaste, len(tw.CommitmentSigma), nbCommitments)
	}
	for i := range tw.CommitmentSigma {
		if tw.CommitmentSigma[i].IsZero() {
			return fmt.Errorf("%w: σ of commitment %d is zero", ErrToxicWaste, i)
		}
	}
	tw.gammaInv.Inverse(&tw.Gamma)
	tw.deltaInv.Inverse(&tw.Delta)
	return nil
}
