package hostarith

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// nearQ returns q − k for k = 1..8, for k = 2^32·j (a borrow across the
// first 32-bit word), and for random 64-, 128- and 200-bit k, as raw limbs.
func nearQ(q *big.Int, r *rand.Rand) []*big.Int {
	var ks []*big.Int
	for k := int64(1); k <= 8; k++ {
		ks = append(ks, big.NewInt(k))
	}
	for j := int64(1); j <= 4; j++ {
		ks = append(ks, new(big.Int).Lsh(big.NewInt(j), 32))
	}
	for _, bits := range []uint{64, 128, 200} {
		for i := 0; i < 8; i++ {
			k := new(big.Int)
			for w := uint(0); w < bits; w += 64 {
				k.Lsh(k, 64)
				k.Or(k, new(big.Int).SetUint64(r.Uint64()))
			}
			ks = append(ks, k.Add(k, big.NewInt(1)))
		}
	}
	out := make([]*big.Int, len(ks))
	for i, k := range ks {
		out[i] = new(big.Int).Sub(q, k)
	}
	return out
}

// TestPTXMulsMatchGnarkCrypto runs the host emulation of the device's
// Montgomery multiplications (ff.cuh mul_evenodd and mul_ptx, their PTX
// carry chains emulated instruction by instruction) over Fr and Fp against
// gnark-crypto's Mul: every pair of edge values (0, 1, 2, q−1, q−2, R mod q,
// −R, values just below q), squares, and random pairs.
func TestPTXMulsMatchGnarkCrypto(t *testing.T) {
	for _, op := range []struct {
		name string
		op   Op
	}{{"mul_evenodd", OpMulEvenOdd}, {"mul_ptx", OpMulPTX}} {
		t.Run(op.name, func(t *testing.T) { testPTXMul(t, op.name, op.op) })
	}
}

func testPTXMul(t *testing.T, name string, op Op) {
	r := rand.New(rand.NewPCG(3, 4))
	t.Run("Fr", func(t *testing.T) {
		a, b := frPairs(t, 20000)
		for _, v := range nearQ(fr.Modulus(), r) {
			x := frRaw(v)
			var y fr.Element
			y.MustSetRandom()
			a, b = append(a, x, x, x), append(b, x, y, frEdges()[3])
		}
		for i := 0; i < 2000; i++ { // squares
			var x fr.Element
			x.MustSetRandom()
			a, b = append(a, x), append(b, x)
		}
		got := make([]fr.Element, len(a))
		if err := Fr(op, got, a, b); err != nil {
			t.Fatal(err)
		}
		for i := range a {
			var want fr.Element
			want.Mul(&a[i], &b[i])
			if got[i] != want {
				t.Fatalf("%s(%v, %v) = %v, want %v", name, a[i], b[i], got[i], want)
			}
		}
		t.Logf("%d Fr products match", len(a))
	})
	t.Run("Fp", func(t *testing.T) {
		a, b := fpPairs(t, 10000)
		for _, v := range nearQ(fp.Modulus(), r) {
			var x fp.Element
			for i, w := range v.Bits() {
				x[i] = uint64(w)
			}
			var y fp.Element
			y.MustSetRandom()
			a, b = append(a, x, x, x), append(b, x, y, fpEdges()[3])
		}
		for i := 0; i < 1000; i++ {
			var x fp.Element
			x.MustSetRandom()
			a, b = append(a, x), append(b, x)
		}
		got := make([]fp.Element, len(a))
		if err := Fp(op, got, a, b); err != nil {
			t.Fatal(err)
		}
		for i := range a {
			var want fp.Element
			want.Mul(&a[i], &b[i])
			if got[i] != want {
				t.Fatalf("%s(%v, %v) = %v, want %v", name, a[i], b[i], got[i], want)
			}
		}
		t.Logf("%d Fp products match", len(a))
	})
}
