package hostmsm

import (
	"math/big"
	"math/rand/v2"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

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

// window is one window's sorted entries: buckets of the given sizes, each
// entry a random base (or one of the edge picks), negated at random.
type window struct {
	sorted, counts, offsets []uint32
}

// edgeWindow builds buckets over bases whose point 0 is infinity and
// points 1, 2 equal (P, P): empty buckets, single points, P + P, P + (−P),
// infinity runs, a heavy bucket spread over many threads, and random ones.
func edgeWindow(rng *rand.Rand, nbases int) window {
	var w window
	add := func(entries ...uint32) {
		w.offsets = append(w.offsets, uint32(len(w.sorted)))
		w.counts = append(w.counts, uint32(len(entries)))
		w.sorted = append(w.sorted, entries...)
	}
	rnd := func(k int) []uint32 {
		e := make([]uint32, k)
		for i := range e {
			e[i] = uint32(rng.IntN(nbases))
			if rng.IntN(2) == 0 {
				e[i] |= NegFlag
			}
		}
		return e
	}
	add()                                      // empty
	add(5)                                     // one point
	add(0)                                     // infinity alone
	add(1, 2)                                  // P + P
	add(1, 2|NegFlag)                          // P + (−P)
	add(1, 1, 2, 2)                            // doublings two levels deep
	add(0, 0, 0, 5, 0)                         // infinity runs
	add(1, 2|NegFlag, 3)                       // infinity mid-tree, then Q
	add()                                      // empty again
	add(6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6) // one point repeated, odd
	add(rnd(1000)...)                          // heavy: many threads
	for i := 0; i < 200; i++ {
		add(rnd(rng.IntN(70))...)
	}
	add(rnd(17)...)
	add() // empty last
	return w
}

func want[A Point, J curve.G1Jac | curve.G2Jac](bases []A, w window) []J {
	out := make([]J, len(w.counts))
	for b := range w.counts {
		switch bs := any(bases).(type) {
		case []curve.G1Affine:
			var acc curve.G1Jac
			for _, e := range w.sorted[w.offsets[b] : w.offsets[b]+w.counts[b]] {
				p := bs[e&^NegFlag]
				if e&NegFlag != 0 {
					p.Neg(&p)
				}
				acc.AddMixed(&p)
			}
			out[b] = any(acc).(J)
		case []curve.G2Affine:
			var acc curve.G2Jac
			for _, e := range w.sorted[w.offsets[b] : w.offsets[b]+w.counts[b]] {
				p := bs[e&^NegFlag]
				if e&NegFlag != 0 {
					p.Neg(&p)
				}
				acc.AddMixed(&p)
			}
			out[b] = any(acc).(J)
		}
	}
	return out
}

func equal[J curve.G1Jac | curve.G2Jac](a, b J) bool {
	switch x := any(a).(type) {
	case curve.G1Jac:
		y := any(b).(curve.G1Jac)
		return x.Equal(&y)
	case curve.G2Jac:
		y := any(b).(curve.G2Jac)
		return x.Equal(&y)
	}
	return false
}

func check[A Point, J curve.G1Jac | curve.G2Jac](t *testing.T, bases []A, w window) {
	t.Helper()
	exp := want[A, J](bases, w)
	for _, tc := range []struct{ tail, per int }{{1, 1}, {1, 3}, {2, 16}, {16, 7}, {16, 1024}, {4, 64}} {
		got, levels, err := BucketSums[A, J](bases, w.sorted, w.counts, w.offsets, tc.tail, tc.per)
		if err != nil {
			t.Fatal(err)
		}
		if tc.tail == 1 && levels < 10 { // the heavy bucket of 1000 needs 10 halvings
			t.Errorf("tail 1: %d levels, want 10", levels)
		}
		for b := range exp {
			if !equal(got[b], exp[b]) {
				t.Errorf("tail %d, per %d: bucket %d (%d points) differs from gnark-crypto", tc.tail, tc.per, b, w.counts[b])
			}
		}
	}
}

func edgeBases[A Point](pts []A) []A {
	var inf A
	pts[0] = inf
	pts[2] = pts[1]
	return pts
}

func TestAffineBucketSumsG1EqualGnarkOnRandomAndEdgeBuckets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bases := edgeBases(randomG1(rng, 64))
	check[curve.G1Affine, curve.G1Jac](t, bases, edgeWindow(rng, len(bases)))
}

func TestAffineBucketSumsG2EqualGnarkOnRandomAndEdgeBuckets(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	bases := edgeBases(randomG2(rng, 32))
	check[curve.G2Affine, curve.G2Jac](t, bases, edgeWindow(rng, len(bases)))
}

func TestBucketSumsRefusesBadInput(t *testing.T) {
	bases := randomG1(rand.New(rand.NewPCG(5, 6)), 2)
	cases := map[string]func() error{
		"per 0": func() error {
			_, _, err := BucketSums[curve.G1Affine, curve.G1Jac](bases, []uint32{0}, []uint32{1}, []uint32{0}, 1, 0)
			return err
		},
		"bucket past the entries": func() error {
			_, _, err := BucketSums[curve.G1Affine, curve.G1Jac](bases, []uint32{0}, []uint32{2}, []uint32{0}, 1, 1)
			return err
		},
		"index out of range": func() error {
			_, _, err := BucketSums[curve.G1Affine, curve.G1Jac](bases, []uint32{7}, []uint32{1}, []uint32{0}, 1, 1)
			return err
		},
	}
	for name, f := range cases {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
