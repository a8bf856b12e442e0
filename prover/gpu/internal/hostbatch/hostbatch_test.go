package hostbatch

import (
	"math/big"
	"math/rand/v2"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// randomG1 returns n multiples k·G of the generator, k random.
func randomG1(rng *rand.Rand, n int) []curve.G1Affine {
	_, _, g, _ := curve.Generators()
	out := make([]curve.G1Affine, n)
	for i := range out {
		var k fr.Element
		k.SetUint64(rng.Uint64())
		out[i].ScalarMultiplication(&g, k.BigInt(new(big.Int)))
	}
	return out
}

func randomG2(rng *rand.Rand, n int) []curve.G2Affine {
	_, _, _, g := curve.Generators()
	out := make([]curve.G2Affine, n)
	for i := range out {
		var k fr.Element
		k.SetUint64(rng.Uint64())
		out[i].ScalarMultiplication(&g, k.BigInt(new(big.Int)))
	}
	return out
}

// want is gnark-crypto's sum of bases[idx[i]] by Jacobian mixed additions.
func wantG1(bases []curve.G1Affine, idx []uint32) curve.G1Affine {
	var acc curve.G1Jac
	for _, i := range idx {
		acc.AddMixed(&bases[i])
	}
	var r curve.G1Affine
	r.FromJacobian(&acc)
	return r
}

func wantG2(bases []curve.G2Affine, idx []uint32) curve.G2Affine {
	var acc curve.G2Jac
	for _, i := range idx {
		acc.AddMixed(&bases[i])
	}
	var r curve.G2Affine
	r.FromJacobian(&acc)
	return r
}

// edgeIndices are index vectors over bases whose first point is infinity,
// whose points 1..4 are P, P, −P, Q with Q = −(P + P): duplicates (a
// doubling at the first level and deeper), P + (−P) (infinity mid-tree),
// infinity itself, a total of infinity, the empty and the one-point sum.
func edgeIndices(n int, rng *rand.Rand) map[string][]uint32 {
	rnd := make([]uint32, 1000)
	for i := range rnd {
		rnd[i] = uint32(rng.IntN(n))
	}
	return map[string][]uint32{
		"empty":                {},
		"one point":            {5},
		"infinity alone":       {0},
		"infinity pairs":       {0, 0, 0, 5, 0},
		"P + P":                {1, 2},
		"P + P + P + P":        {1, 1, 2, 2},
		"P + (-P)":             {1, 3},
		"P + (-P) + Q":         {1, 3, 4, 5, 6},
		"P + P + Q = infinity": {1, 2, 4},
		"odd, deep duplicates": {5, 6, 5, 6, 5, 6, 5},
		"random with repeats":  rnd,
	}
}

func TestBatchAddG1EqualsGnarkOnRandomAndEdgeInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bases := randomG1(rng, 300)
	bases[0] = curve.G1Affine{} // infinity
	bases[2] = bases[1]         // P
	bases[3].Neg(&bases[1])     // −P
	var q curve.G1Jac           // Q = −2P
	q.FromAffine(&bases[1])
	q.Double(&q).Neg(&q)
	bases[4].FromJacobian(&q)
	cases := edgeIndices(len(bases), rng)
	all := make([]uint32, len(bases))
	for i := range all {
		all[i] = uint32(i)
	}
	cases["all 300"] = all
	for name, idx := range cases {
		want := wantG1(bases, idx)
		for _, workers := range []int{1, 3, 64} {
			got, err := Sum(bases, idx, workers)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(&want) {
				t.Errorf("%s, %d workers: batch add %v, gnark %v", name, workers, got.String(), want.String())
			}
		}
	}
	if got, _ := Sum(bases, nil, 5); func() bool { w := wantG1(bases, all); return !got.Equal(&w) }() {
		t.Error("nil indices: not the sum of every base")
	}
}

func TestBatchAddG2EqualsGnarkOnRandomAndEdgeInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	bases := randomG2(rng, 120)
	bases[0] = curve.G2Affine{}
	bases[2] = bases[1]
	bases[3].Neg(&bases[1])
	var q curve.G2Jac
	q.FromAffine(&bases[1])
	q.Double(&q).Neg(&q)
	bases[4].FromJacobian(&q)
	for name, idx := range edgeIndices(len(bases), rng) {
		want := wantG2(bases, idx)
		for _, workers := range []int{1, 7} {
			got, err := Sum(bases, idx, workers)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(&want) {
				t.Errorf("%s, %d workers: batch add %v, gnark %v", name, workers, got.String(), want.String())
			}
		}
	}
}

func TestBatchAddRefusesBadArguments(t *testing.T) {
	bases := make([]curve.G1Affine, 2)
	if _, err := Sum(bases, []uint32{2}, 1); err == nil {
		t.Error("index 2 of 2 bases accepted")
	}
	if _, err := Sum(bases, nil, 0); err == nil {
		t.Error("0 workers accepted")
	}
}
