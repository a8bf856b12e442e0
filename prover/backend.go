package prover

import (
	"context"
	"errors"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
)

// ErrBackendUnavailable is returned when a requested backend cannot run on
// this host (for the CUDA backend it wraps cudaspans.ErrNoDevice).
var ErrBackendUnavailable = errors.New("backend unavailable")

// BaseSet is a fixed vector of MSM bases from a proving key. ID names it
// uniquely and stably (hash of the constraint system plus the key part, e.g.
// "3f2a…:g1.a"), so a backend may keep it resident across proofs (cuzk's
// hot tier of the SRS).
type BaseSet[P any] struct {
	ID     string
	Points []P
}

// Backend runs the heavy steps of the Groth16 prover (DESIGN.md, Backends).
// The prove algorithm in this package calls them; the CPU backend uses
// gnark-crypto, the CUDA backend (prover/gpu) its own kernels. A Backend is
// safe for concurrent use by one prove at a time per device; the algorithm
// may run the MSMs of one proof concurrently.
//
// Every method records its own spans as children of the span in ctx.
// Scalars and points are gnark-crypto values in Montgomery form.
type Backend interface {
	// Name is "cpu" or "cuda" (the cuzk.backend attribute).
	Name() string

	// ComputeH computes the quotient H = (A·B − C)/Z of Groth16 (DIZK,
	// eprint 2018/691, fig. 4) in place: a, b and c hold the evaluations of
	// the R1CS on the domain (each of length domain.Cardinality, padded with
	// zeros by the caller); on return a holds the coefficients of H in
	// natural order and b, c are scratch. It follows gnark's computeH:
	// inverse NTT (DIF), coset NTT (DIT), pointwise (a·b − c)/(gⁿ − 1),
	// inverse coset NTT (DIF), so no bit reversal pass is needed.
	ComputeH(ctx context.Context, domain *fft.Domain, a, b, c []fr.Element) error

	// MSMG1 returns Σ scalars[i]·bases.Points[i] (len(scalars) ==
	// len(bases.Points)); span is the span name to record (msm.g1.a, ...).
	MSMG1(ctx context.Context, span string, bases BaseSet[curve.G1Affine], scalars []fr.Element) (curve.G1Jac, error)

	// MSMG2 is MSMG1 on G2 (msm.g2.b).
	MSMG2(ctx context.Context, span string, bases BaseSet[curve.G2Affine], scalars []fr.Element) (curve.G2Jac, error)

	// Close releases what the backend holds (device memory, resident keys).
	Close() error
}
