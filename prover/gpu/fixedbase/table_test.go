package fixedbase

import (
	"math/big"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
)

// Entry w·2^(c−1) + k − 1 of each table is k·2^(c·w)·g, for every entry
// at c = 3 and for the first and last of each row at c = 8.
func TestWindowTablesHoldKTimesTwoToTheWindowTimesTheGenerator(t *testing.T) {
	_, _, g1, g2 := curve.Generators()
	for _, c := range []int{3, 8} {
		t1, t2 := G1Table(c), G2Table(c)
		half := 1 << (c - 1)
		if len(t1) != Windows(c)*half || len(t2) != len(t1) {
			t.Fatalf("c=%d: %d and %d entries, want %d", c, len(t1), len(t2), Windows(c)*half)
		}
		for w := range Windows(c) {
			for k := 1; k <= half; k++ {
				if c == 8 && k != 1 && k != half {
					continue
				}
				e := new(big.Int).Lsh(big.NewInt(int64(k)), uint(c*w))
				var w1 curve.G1Affine
				var w2 curve.G2Affine
				w1.ScalarMultiplication(&g1, e)
				w2.ScalarMultiplication(&g2, e)
				i := w*half + k - 1
				if !t1[i].Equal(&w1) || !t2[i].Equal(&w2) {
					t.Fatalf("c=%d, window %d, k=%d: G1 equal %v, G2 equal %v", c, w, k, t1[i].Equal(&w1), t2[i].Equal(&w2))
				}
			}
		}
	}
}
