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
		t.Run(op.name, func(t *testing.T) {
			testPTXOp(t, op.name, op.op, false, (*fr.Element).Mul, (*fp.Element).Mul)
		})
	}
}

// TestPTXAddSubMatchGnarkCrypto is TestPTXMulsMatchGnarkCrypto for the
// device's addition and subtraction (ff.cuh add_ptx and sub_ptx, on by
// default with FF_PTX_ADDSUB=1): the same edge, near-q and random pairs
// against gnark-crypto's Add and Sub.
func TestPTXAddSubMatchGnarkCrypto(t *testing.T) {
	t.Run("add_ptx", func(t *testing.T) { testPTXOp(t, "add_ptx", OpAddPTX, true, (*fr.Element).Add, (*fp.Element).Add) })
	t.Run("sub_ptx", func(t *testing.T) { testPTXOp(t, "sub_ptx", OpSubPTX, true, (*fr.Element).Sub, (*fp.Element).Sub) })
}

// testPTXOp checks op against gnark-crypto's frOp and fpOp on both fields.
func testPTXOp(t *testing.T, name string, op Op, reducedOnly bool,
	frOp func(z, a, b *fr.Element) *fr.Element, fpOp func(z, a, b *fp.Element) *fp.Element) {
	r := rand.New(rand.NewPCG(3, 4))
	t.Run("Fr", func(t *testing.T) { testPTXField(t, frField, r, name, op, reducedOnly, frOp) })
	t.Run("Fp", func(t *testing.T) { testPTXField(t, fpField, r, name, op, reducedOnly, fpOp) })
}

// testPTXField checks op on f against ref over f's edge and random pairs
// (ten times the field's count), each value just below q against itself,
// a random value and q−1, and squares; reducedOnly drops the pairs with an
// input at or above q (nearQ's 200-bit k are drawn as four words and may
// exceed q): add and sub, on the device as in gnark-crypto, take reduced
// inputs only.
func testPTXField[E comparable, PE element[E]](t *testing.T, f field[E, PE], r *rand.Rand, name string, op Op, reducedOnly bool, ref func(z, a, b *E) *E) {
	a, b := f.pairs(10 * f.nrand)
	qm1 := f.edges()[3]
	for _, v := range nearQ(f.modulus, r) {
		x := raw[E](v)
		var y E
		PE(&y).MustSetRandom()
		a, b = append(a, x, x, x), append(b, x, y, qm1)
	}
	for i := 0; i < f.nrand; i++ { // squares
		var x E
		PE(&x).MustSetRandom()
		a, b = append(a, x), append(b, x)
	}
	if reducedOnly {
		a, b = keepReduced(a, b, f.modulus)
	}
	f.check(t, name, op, a, b, func(z, x, y *E) { ref(z, x, y) })
	t.Logf("%s: %d %s results match", name, len(a), f.name)
}

// keepReduced returns the pairs whose both elements (raw limbs) are below q.
func keepReduced[E any](a, b []E, q *big.Int) (ra, rb []E) {
	for i := range a {
		if value(&a[i]).Cmp(q) < 0 && value(&b[i]).Cmp(q) < 0 {
			ra, rb = append(ra, a[i]), append(rb, b[i])
		}
	}
	return ra, rb
}
