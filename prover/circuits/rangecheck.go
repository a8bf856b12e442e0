package circuits

import (
	"fmt"
	"math/rand"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/std/rangecheck"
)

// RangeCheck proves knowledge of K values Vals[k] < 2^64 and of X with
// Out = f^F(g(X, Vals)), where g folds the values in, acc ← acc·acc +
// Vals[k] (K constraints), and f(v) = v·v + 1 is applied F times (F
// constraints, as MulChain). The range checks use gnark's std/rangecheck,
// which in an R1CS is a log-derivative argument over a table of limbs, its
// challenge drawn with api.Commit: the circuit has one BSB22 commitment
// (gnark's Groth16 with commitments, prover/commitment.go).
type RangeCheck struct {
	X    frontend.Variable   `gnark:",secret"`
	Vals []frontend.Variable `gnark:",secret"`
	Out  frontend.Variable   `gnark:",public"`

	filler int
}

// rangeCheckBits is the range of each value.
const rangeCheckBits = 64

// Define implements frontend.Circuit.
func (c *RangeCheck) Define(api frontend.API) error {
	rc := rangecheck.New(api)
	acc := c.X
	for _, v := range c.Vals {
		rc.Check(v, rangeCheckBits)
		acc = api.Add(api.Mul(acc, acc), v)
	}
	for i := 0; i < c.filler; i++ {
		acc = api.Add(api.Mul(acc, acc), 1)
	}
	api.AssertIsEqual(acc, c.Out)
	return nil
}

var (
	rangeCheckMu    sync.Mutex
	rangeCheckCount = map[int]int{} // K → constraints of the circuit with F = 0
)

// rangeCheckBase returns the constraint count of the circuit with k values
// and no filler, compiling it once per k per process: the range checks'
// cost depends on the limb width gnark picks for k checks, so it is
// measured rather than predicted. Every filler step adds exactly one.
func rangeCheckBase(k int) (int, error) {
	rangeCheckMu.Lock()
	defer rangeCheckMu.Unlock()
	if n, ok := rangeCheckCount[k]; ok {
		return n, nil
	}
	probe := &Instance{Name: "rangecheck", Circuit: &RangeCheck{Vals: make([]frontend.Variable, k)}}
	ccs, err := probe.Compile()
	if err != nil {
		return 0, err
	}
	rangeCheckCount[k] = ccs.GetNbConstraints()
	return ccs.GetNbConstraints(), nil
}

// rangeCheckMin is the smallest size: one range-checked value and the
// table of its limbs.
const rangeCheckMin = 64

// checkRangeCheckSize refuses a size below rangeCheckMin.
func checkRangeCheckSize(n int) error {
	if n < rangeCheckMin {
		return fmt.Errorf("%w: %d (rangecheck needs at least %d)", ErrBadConstraints, n, rangeCheckMin)
	}
	return nil
}

// buildRangeCheck sizes the instance: K = n/16 values (one constraint in
// 16 folds a range-checked value in; their checks take about half the
// circuit), the rest filler, so that the R1CS has exactly n constraints.
func buildRangeCheck(n int) (*Instance, error) {
	if err := checkConstraints(n); err != nil {
		return nil, err
	}
	if err := checkRangeCheckSize(n); err != nil {
		return nil, err
	}
	k := max(1, n/16)
	base, err := rangeCheckBase(k)
	for err == nil && base > n && k > 1 {
		k /= 2
		base, err = rangeCheckBase(k)
	}
	if err != nil {
		return nil, err
	}
	if base > n {
		return nil, fmt.Errorf("%w: %d (rangecheck needs at least %d)", ErrBadConstraints, n, base)
	}
	filler := n - base
	return &Instance{
		Name:        "rangecheck",
		Constraints: n,
		Shape:       fmt.Sprintf("%d values range-checked to %d bits, %d filler multiplications", k, rangeCheckBits, filler),
		Circuit:     &RangeCheck{Vals: make([]frontend.Variable, k), filler: filler},
		Assignment: func(seed int64) (frontend.Circuit, error) {
			rng := rand.New(rand.NewSource(seed))
			var x fr.Element
			x.SetUint64(rng.Uint64())
			vals := make([]frontend.Variable, k)
			acc, one := x, fr.One()
			for i := range vals {
				var v fr.Element
				v.SetUint64(rng.Uint64())
				vals[i] = v
				acc.Square(&acc).Add(&acc, &v)
			}
			for i := 0; i < filler; i++ {
				acc.Square(&acc).Add(&acc, &one)
			}
			return &RangeCheck{X: x, Vals: vals, Out: acc, filler: filler}, nil
		},
	}, nil
}

// rangeCheckShape: measured at 2^14 to 2^18 (bench/memory.md): 1.34–1.52
// wires per constraint (the limbs and multiplicities of the range checks),
// the R1CS 187–299 bytes per constraint held, 0.41–0.52 private committed
// wires per constraint (the limbs: 0.34 at 2^18).
// Its compile's peak, sizing probe included: 748 and 764 bytes a
// constraint over RuntimeBytes at 2^18 and 2^19 (bench/memory.md, compile
// peaks).
var rangeCheckShape = shape{wiresPerConstraint: 1.41, ccsBytesPerConstraint: 230, committedPerConstraint: 0.4, compileBytesPerConstraint: 780}

func init() {
	Register(Spec{
		Name:        "rangecheck",
		Usage:       "N/16 values range-checked to 64 bits (std/rangecheck, one api.Commit) and a multiplication chain, N constraints",
		Build:       buildRangeCheck,
		CheckSize:   checkRangeCheckSize,
		MemoryBytes: rangeCheckShape.peakBytes,
	})
}
