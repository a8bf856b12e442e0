package hostarith

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// The field tests run once per field, Fr and Fp, through one generic body.

// element is what the tests use of gnark-crypto's fr.Element and
// fp.Element, whose methods the two fields spell alike.
type element[E any] interface {
	*E
	Add(*E, *E) *E
	Sub(*E, *E) *E
	Mul(*E, *E) *E
	Square(*E) *E
	Neg(*E) *E
	Double(*E) *E
	Inverse(*E) *E
	Equal(*E) bool
	SetOne() *E
	SetZero() *E
	SetBigInt(*big.Int) *E
	BigInt(*big.Int) *big.Int
	MustSetRandom() *E
}

// field is one field under test: its modulus, the function that runs
// ff.cuh on it (Fr or Fp), and how many random pairs a test draws (Fp, with
// 1.5 times the limbs, half as many).
type field[E comparable, PE element[E]] struct {
	name    string
	modulus *big.Int
	run     func(op Op, z, a, b []E) error
	nrand   int
}

var (
	frField = field[fr.Element, *fr.Element]{"Fr", fr.Modulus(), Fr, 2000}
	fpField = field[fp.Element, *fp.Element]{"Fp", fp.Modulus(), Fp, 1000}
)

// limbs is e's 64-bit limbs, least significant first.
func limbs[E any](e *E) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(e)), unsafe.Sizeof(*e)/8)
}

// raw is v as raw limbs (no conversion to Montgomery form).
func raw[E any](v *big.Int) E {
	var z E
	l := limbs(&z)
	for i, w := range v.Bits() {
		l[i] = uint64(w)
	}
	return z
}

// value is e's raw limbs read as one integer.
func value[E any](e *E) *big.Int {
	l := limbs(e)
	v := new(big.Int)
	for i := len(l) - 1; i >= 0; i-- {
		v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(l[i]))
	}
	return v
}

// edges are raw limb patterns (Montgomery form) at the edges of the
// field: 0, 1, 2, q-1, q-2, q-2^64, R mod q (= one), -one, 2^64-1, and a
// value with every limb but the top one saturated (the top one 1).
func (f field[E, PE]) edges() []E {
	sub := func(k *big.Int) E { return raw[E](new(big.Int).Sub(f.modulus, k)) }
	var one, mone, saturated E
	PE(&one).SetOne()
	PE(&mone).Neg(&one)
	l := limbs(&saturated)
	for i := range l {
		l[i] = ^uint64(0)
	}
	l[len(l)-1] = 1
	return []E{
		raw[E](big.NewInt(0)), raw[E](big.NewInt(1)), raw[E](big.NewInt(2)), sub(big.NewInt(1)), sub(big.NewInt(2)),
		sub(new(big.Int).Lsh(big.NewInt(1), 64)), one, mone,
		raw[E](new(big.Int).SetUint64(^uint64(0))), saturated,
	}
}

// pairs returns every pair of edge values plus nrand random pairs, each
// random value also against an edge.
func (f field[E, PE]) pairs(nrand int) (a, b []E) {
	e := f.edges()
	for _, x := range e {
		for _, y := range e {
			a, b = append(a, x), append(b, y)
		}
	}
	for i := 0; i < nrand; i++ {
		var x, y E
		PE(&x).MustSetRandom()
		PE(&y).MustSetRandom()
		a, b = append(a, x), append(b, y)
		a, b = append(a, x), append(b, e[i%len(e)])
	}
	return a, b
}

// check runs op over a and b and compares each result with ref's.
func (f field[E, PE]) check(t *testing.T, name string, op Op, a, b []E, ref func(z, x, y *E)) {
	t.Helper()
	got := make([]E, len(a))
	if err := f.run(op, got, a, b); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		var want E
		ref(&want, &a[i], &b[i])
		if got[i] != want {
			t.Fatalf("%s(%v, %v) = %v, want %v", name, a[i], b[i], got[i], want)
		}
	}
}

func TestFieldOpsMatchGnarkCrypto(t *testing.T) {
	t.Run("Fr", func(t *testing.T) { testOps(t, frField) })
	t.Run("Fp", func(t *testing.T) { testOps(t, fpField) })
}

func testOps[E comparable, PE element[E]](t *testing.T, f field[E, PE]) {
	a, b := f.pairs(f.nrand)
	ref := map[Op]func(z, x, y *E){
		OpAdd:      func(z, x, y *E) { PE(z).Add(x, y) },
		OpSub:      func(z, x, y *E) { PE(z).Sub(x, y) },
		OpMul:      func(z, x, y *E) { PE(z).Mul(x, y) },
		OpSqr:      func(z, x, _ *E) { PE(z).Square(x) },
		OpNeg:      func(z, x, _ *E) { PE(z).Neg(x) },
		OpDbl:      func(z, x, _ *E) { PE(z).Double(x) },
		OpInverse:  func(z, x, _ *E) { PE(z).Inverse(x) },
		OpFromMont: func(z, x, _ *E) { *z = raw[E](PE(x).BigInt(new(big.Int))) },
		OpEq: func(z, x, y *E) {
			*z = *new(E)
			if PE(x).Equal(y) {
				limbs(z)[0] = 1
			}
		},
		OpOne:  func(z, _, _ *E) { PE(z).SetOne() },
		OpZero: func(z, _, _ *E) { PE(z).SetZero() },
	}
	for op, r := range ref {
		f.check(t, fmt.Sprintf("op %d", op), op, a, b, r)
	}
	// Equality must also see equal values as equal.
	got := make([]E, len(a))
	if err := f.run(OpEq, got, a, a); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if limbs(&got[i])[0] != 1 {
			t.Fatalf("eq(%v, itself) = false", a[i])
		}
	}
}

func TestToMontMatchesSetBigInt(t *testing.T) {
	t.Run("Fr", func(t *testing.T) { testToMont(t, frField) })
	t.Run("Fp", func(t *testing.T) { testToMont(t, fpField) })
}

// to_mont(x) of x's raw limbs is SetBigInt(x).
func testToMont[E comparable, PE element[E]](t *testing.T, f field[E, PE]) {
	a, _ := f.pairs(f.nrand)
	f.check(t, "to_mont", OpToMont, a, a, func(z, x, _ *E) { PE(z).SetBigInt(value(x)) })
}

func TestFrPowMatchesExp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		var a fr.Element
		a.MustSetRandom()
		e := []uint64{r.Uint64(), r.Uint64()}
		switch i {
		case 0:
			e = nil // a^0 = 1
		case 1:
			e = []uint64{0}
		case 2:
			e = []uint64{1}
		case 3:
			e = []uint64{2}
		case 4:
			e = []uint64{^uint64(0)}
		case 5:
			e = []uint64{0, 1} // 2^64: a zero low limb
		}
		var be big.Int
		for j := len(e) - 1; j >= 0; j-- {
			be.Lsh(&be, 64)
			be.Or(&be, new(big.Int).SetUint64(e[j]))
		}
		var want fr.Element
		want.Exp(a, &be)
		if got := FrPow(a, e); got != want {
			t.Fatalf("pow(%v, %v) = %v, want %v", a, e, got, want)
		}
	}
}

func TestLengthMismatchIsAnError(t *testing.T) {
	if err := Fr(OpAdd, make([]fr.Element, 2), make([]fr.Element, 3), nil); err == nil {
		t.Fatal("Fr accepted slices of different lengths")
	}
	if err := Fp(OpAdd, make([]fp.Element, 2), make([]fp.Element, 2), make([]fp.Element, 1)); err == nil {
		t.Fatal("Fp accepted slices of different lengths")
	}
}

// TestOpsAFieldLacksAreAnError: Fr and Fp refuse the Fp2-only ops and
// every field an op out of range, rather than leaving z as it was.
func TestOpsAFieldLacksAreAnError(t *testing.T) {
	z := make([]fr.Element, 1)
	for _, op := range []Op{OpConjugate, OpIsZero, numOps, -1} {
		if err := Fr(op, z, z, z); err == nil {
			t.Errorf("Fr accepted op %d", op)
		}
	}
	if err := Fp(OpIsZero, make([]fp.Element, 1), make([]fp.Element, 1), nil); err == nil {
		t.Error("Fp accepted OpIsZero")
	}
}
