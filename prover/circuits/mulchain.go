package circuits

import (
	"fmt"
	"math/rand"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/frontend"
)

// MulChain proves knowledge of X with Out = f^(N-1)(X), where
// f(v) = v·v + 1, f^k is f applied k times: N−1 multiplication constraints
// and one equality constraint, N in all. The +1 keeps 0 and 1 from being
// fixed points, so every wire holds a full-size field element (a realistic
// MSM input).
type MulChain struct {
	X   frontend.Variable `gnark:",secret"`
	Out frontend.Variable `gnark:",public"`

	n int
}

// Define implements frontend.Circuit.
func (c *MulChain) Define(api frontend.API) error {
	defineMulChain(api, c.X, c.Out, c.n)
	return nil
}

// defineMulChain constrains out = f^(n−1)(x), f(v) = v·v + 1: n − 1
// multiplications and one equality (the filler of merkle and porep too).
func defineMulChain(api frontend.API, x, out frontend.Variable, n int) {
	v := x
	for i := 1; i < n; i++ {
		v = api.Add(api.Mul(v, v), 1)
	}
	api.AssertIsEqual(v, out)
}

func buildMulChain(n int) (*Instance, error) {
	if err := checkConstraints(n); err != nil {
		return nil, err
	}
	return &Instance{
		Name:        "mulchain",
		Constraints: n,
		Shape:       fmt.Sprintf("%d multiplications", n-1),
		Circuit:     &MulChain{n: n},
		Assignment: func(seed int64) (frontend.Circuit, error) {
			var x fr.Element
			x.SetUint64(rand.New(rand.NewSource(seed)).Uint64())
			return &MulChain{X: x, Out: mulChainOut(x, n), n: n}, nil
		},
	}, nil
}

// mulChainOut is the output of the chain of n constraints from x: n − 1
// steps of v ← v² + 1.
func mulChainOut(x fr.Element, n int) fr.Element {
	v, one := x, fr.One()
	for i := 1; i < n; i++ {
		v.Square(&v).Add(&v, &one)
	}
	return v
}

// mulChainShape: one wire per constraint and a one-term R1CS like
// merkle's; not measured on its own (merkle's shape, bench/memory.md).
// Its compile's peak: 271 bytes a constraint over RuntimeBytes at 2^18
// and 2^19 (bench/memory.md, compile peaks).
var mulChainShape = shape{wiresPerConstraint: 1.0, ccsBytesPerConstraint: 120, compileBytesPerConstraint: 280}

func init() {
	Register(Spec{
		Name:        "mulchain",
		Usage:       "N chained multiplications (x ← x·x + 1), N constraints",
		Build:       buildMulChain,
		MemoryBytes: mulChainShape.peakBytes,
	})
}
