package hostarith

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// frEdges are raw limb patterns (Montgomery form) at the edges of the
// field: 0, 1, 2, q-1, q-2, q-2^64, R mod q (= one), -one, 2^64-1, and a
// value with every limb but the top one saturated.
func frEdges() []fr.Element {
	q := fr.Modulus()
	sub := func(k *big.Int) fr.Element {
		var v big.Int
		v.Sub(q, k)
		return frRaw(&v)
	}
	var one, mone fr.Element
	one.SetOne()
	mone.Neg(&one)
	return []fr.Element{
		{}, {1}, {2}, sub(big.NewInt(1)), sub(big.NewInt(2)),
		sub(new(big.Int).Lsh(big.NewInt(1), 64)), one, mone,
		{^uint64(0)}, {^uint64(0), ^uint64(0), ^uint64(0), 1},
	}
}

func frRaw(v *big.Int) fr.Element {
	var z fr.Element
	words := v.Bits()
	for i := range words {
		z[i] = uint64(words[i])
	}
	return z
}

func fpEdges() []fp.Element {
	q := fp.Modulus()
	sub := func(k *big.Int) fp.Element {
		var v big.Int
		v.Sub(q, k)
		var z fp.Element
		for i, w := range v.Bits() {
			z[i] = uint64(w)
		}
		return z
	}
	var one, mone fp.Element
	one.SetOne()
	mone.Neg(&one)
	return []fp.Element{
		{}, {1}, {2}, sub(big.NewInt(1)), sub(big.NewInt(2)),
		sub(new(big.Int).Lsh(big.NewInt(1), 64)), one, mone,
		{^uint64(0)}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), 1},
	}
}

// frPairs returns every pair of edge values plus random pairs.
func frPairs(t *testing.T, nrand int) (a, b []fr.Element) {
	t.Helper()
	e := frEdges()
	for _, x := range e {
		for _, y := range e {
			a, b = append(a, x), append(b, y)
		}
	}
	for i := 0; i < nrand; i++ {
		var x, y fr.Element
		x.MustSetRandom()
		y.MustSetRandom()
		a, b = append(a, x), append(b, y)
		// random against edges too
		a, b = append(a, x), append(b, e[i%len(e)])
	}
	return a, b
}

func fpPairs(t *testing.T, nrand int) (a, b []fp.Element) {
	t.Helper()
	e := fpEdges()
	for _, x := range e {
		for _, y := range e {
			a, b = append(a, x), append(b, y)
		}
	}
	for i := 0; i < nrand; i++ {
		var x, y fp.Element
		x.MustSetRandom()
		y.MustSetRandom()
		a, b = append(a, x), append(b, y)
		a, b = append(a, x), append(b, e[i%len(e)])
	}
	return a, b
}

func TestFrMatchesGnarkCrypto(t *testing.T) {
	a, b := frPairs(t, 2000)
	ref := map[Op]func(z, x, y *fr.Element){
		OpAdd:     func(z, x, y *fr.Element) { z.Add(x, y) },
		OpSub:     func(z, x, y *fr.Element) { z.Sub(x, y) },
		OpMul:     func(z, x, y *fr.Element) { z.Mul(x, y) },
		OpSqr:     func(z, x, _ *fr.Element) { z.Square(x) },
		OpNeg:     func(z, x, _ *fr.Element) { z.Neg(x) },
		OpDbl:     func(z, x, _ *fr.Element) { z.Double(x) },
		OpInverse: func(z, x, _ *fr.Element) { z.Inverse(x) },
		OpFromMont: func(z, x, _ *fr.Element) {
			*z = fr.Element(x.Bits())
		},
		OpEq: func(z, x, y *fr.Element) {
			*z = fr.Element{}
			if x.Equal(y) {
				z[0] = 1
			}
		},
		OpOne:  func(z, _, _ *fr.Element) { z.SetOne() },
		OpZero: func(z, _, _ *fr.Element) { z.SetZero() },
	}
	got := make([]fr.Element, len(a))
	for op, f := range ref {
		if err := Fr(op, got, a, b); err != nil {
			t.Fatal(err)
		}
		for i := range a {
			var want fr.Element
			f(&want, &a[i], &b[i])
			if got[i] != want {
				t.Fatalf("op %d on %v, %v: got %v, want %v", op, a[i], b[i], got[i], want)
			}
		}
	}
	// Equality must also see equal values as equal.
	if err := Fr(OpEq, got, a, a); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i][0] != 1 {
			t.Fatalf("eq(%v, itself) = false", a[i])
		}
	}
}

func TestFrToMontMatchesSetBigInt(t *testing.T) {
	a, _ := frPairs(t, 500)
	got := make([]fr.Element, len(a))
	if err := Fr(OpToMont, got, a, nil); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		// a[i] read as canonical limbs; SetBigInt puts it in Montgomery form.
		var v big.Int
		v.SetBits(nil)
		for j := len(a[i]) - 1; j >= 0; j-- {
			v.Lsh(&v, 64)
			v.Or(&v, new(big.Int).SetUint64(a[i][j]))
		}
		var want fr.Element
		want.SetBigInt(&v)
		if got[i] != want {
			t.Fatalf("to_mont(%v) = %v, want %v", a[i], got[i], want)
		}
	}
}

func TestFpMatchesGnarkCrypto(t *testing.T) {
	a, b := fpPairs(t, 1000)
	ref := map[Op]func(z, x, y *fp.Element){
		OpAdd:      func(z, x, y *fp.Element) { z.Add(x, y) },
		OpSub:      func(z, x, y *fp.Element) { z.Sub(x, y) },
		OpMul:      func(z, x, y *fp.Element) { z.Mul(x, y) },
		OpSqr:      func(z, x, _ *fp.Element) { z.Square(x) },
		OpNeg:      func(z, x, _ *fp.Element) { z.Neg(x) },
		OpDbl:      func(z, x, _ *fp.Element) { z.Double(x) },
		OpInverse:  func(z, x, _ *fp.Element) { z.Inverse(x) },
		OpFromMont: func(z, x, _ *fp.Element) { *z = fp.Element(x.Bits()) },
		OpEq: func(z, x, y *fp.Element) {
			*z = fp.Element{}
			if x.Equal(y) {
				z[0] = 1
			}
		},
		OpOne: func(z, _, _ *fp.Element) { z.SetOne() },
	}
	got := make([]fp.Element, len(a))
	for op, f := range ref {
		if err := Fp(op, got, a, b); err != nil {
			t.Fatal(err)
		}
		for i := range a {
			var want fp.Element
			f(&want, &a[i], &b[i])
			if got[i] != want {
				t.Fatalf("op %d on %v, %v: got %v, want %v", op, a[i], b[i], got[i], want)
			}
		}
	}
	// to_mont(x) read as canonical x.
	if err := Fp(OpToMont, got, a, nil); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		var v big.Int
		for j := len(a[i]) - 1; j >= 0; j-- {
			v.Lsh(&v, 64)
			v.Or(&v, new(big.Int).SetUint64(a[i][j]))
		}
		var want fp.Element
		want.SetBigInt(&v)
		if got[i] != want {
			t.Fatalf("to_mont(%v) = %v, want %v", a[i], got[i], want)
		}
	}
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
