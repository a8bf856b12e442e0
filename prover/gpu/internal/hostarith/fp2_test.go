package hostarith

import (
	"math/big"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
)

// The Fp2 tests: fp2.cuh's fp2_t against gnark-crypto's E2.

func e2(a0, a1 fp.Element) curve.E2 { return curve.E2{A0: a0, A1: a1} }

// edgeE2 returns 0, 1, u, −1, −u, 1 + u, elements whose coordinates are
// p − 1 (both as the canonical value and as raw Montgomery limbs), p − 2,
// 2^383 and small raw limbs.
func edgeE2() []curve.E2 {
	var zero, one, minusOne, two fp.Element
	one.SetOne()
	minusOne.Neg(&one)
	two.SetUint64(2)
	pm1 := new(big.Int).Sub(fp.Modulus(), big.NewInt(1))
	pm2 := new(big.Int).Sub(fp.Modulus(), big.NewInt(2))
	var canonPm1 fp.Element
	canonPm1.SetBigInt(pm1)
	rawPm1, rawPm2 := raw[fp.Element](pm1), raw[fp.Element](pm2)
	rawOne := fp.Element{1}
	top := raw[fp.Element](new(big.Int).Lsh(big.NewInt(1), 380))
	return []curve.E2{
		e2(zero, zero), e2(one, zero), e2(zero, one), e2(minusOne, zero), e2(zero, minusOne),
		e2(one, one), e2(two, minusOne), e2(canonPm1, canonPm1), e2(rawPm1, rawPm1),
		e2(rawPm1, rawOne), e2(rawPm2, rawPm1), e2(rawOne, rawPm2), e2(top, rawPm1), e2(rawOne, rawOne),
	}
}

func randE2(t *testing.T) curve.E2 {
	t.Helper()
	var z curve.E2
	if _, err := z.SetRandom(); err != nil {
		t.Fatal(err)
	}
	return z
}

// operands returns every pair of edge values, then n random pairs.
func operands(t *testing.T, n int) (a, b []curve.E2) {
	edge := edgeE2()
	for _, x := range edge {
		for _, y := range edge {
			a, b = append(a, x), append(b, y)
		}
	}
	for i := 0; i < n; i++ {
		x := randE2(t)
		a, b = append(a, x), append(b, randE2(t))
		// x with itself too, for Sub (x − x = 0) and Eq.
		a, b = append(a, x), append(b, x)
	}
	return a, b
}

func flagE2(v bool) curve.E2 {
	var z curve.E2
	if v {
		z.A0[0] = 1
	}
	return z
}

func TestFp2MatchesGnarkOnEdgeAndRandomElements(t *testing.T) {
	a, b := operands(t, 200)
	ref := map[Op]func(z, x, y *curve.E2){
		OpAdd:       func(z, x, y *curve.E2) { z.Add(x, y) },
		OpSub:       func(z, x, y *curve.E2) { z.Sub(x, y) },
		OpMul:       func(z, x, y *curve.E2) { z.Mul(x, y) },
		OpSqr:       func(z, x, _ *curve.E2) { z.Square(x) },
		OpNeg:       func(z, x, _ *curve.E2) { z.Neg(x) },
		OpDbl:       func(z, x, _ *curve.E2) { z.Double(x) },
		OpConjugate: func(z, x, _ *curve.E2) { z.Conjugate(x) },
		OpInverse:   func(z, x, _ *curve.E2) { z.Inverse(x) },
		OpEq:        func(z, x, y *curve.E2) { *z = flagE2(x.Equal(y)) },
		OpIsZero:    func(z, x, _ *curve.E2) { *z = flagE2(x.IsZero()) },
		OpOne:       func(z, _, _ *curve.E2) { z.SetOne() },
		OpZero:      func(z, _, _ *curve.E2) { z.SetZero() },
	}
	for op := Op(0); op < numOps; op++ {
		got := make([]curve.E2, len(a))
		// Prefill so OpOne/OpZero are seen to write.
		for i := range got {
			got[i] = randE2(t)
		}
		err := Fp2(op, got, a, b)
		if ref[op] == nil {
			// An op of Fr and Fp only (the Montgomery conversions, the PTX
			// and even-odd variants): refused, not run.
			if err == nil {
				t.Errorf("Fp2 accepted op %d, which fp2.cuh lacks", op)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			var want curve.E2
			ref[op](&want, &a[i], &b[i])
			// Limb equality, not Equal: the kernels must return reduced
			// Montgomery limbs exactly as gnark stores them.
			if got[i] != want {
				t.Errorf("op %d on (%s, %s): got %s, want %s", op, a[i].String(), b[i].String(), got[i].String(), want.String())
			}
		}
	}
}

func TestFp2Algebra(t *testing.T) {
	var u, minusOne curve.E2
	u.A1.SetOne()
	minusOne.A0.SetOne()
	minusOne.Neg(&minusOne)
	z := make([]curve.E2, 1)
	if err := Fp2(OpMul, z, []curve.E2{u}, []curve.E2{u}); err != nil {
		t.Fatal(err)
	}
	if z[0] != minusOne {
		t.Errorf("u·u = %s, want −1", z[0].String())
	}
	// a·a⁻¹ = 1 for a ≠ 0, through the C++ code alone; 0⁻¹ = 0.
	a, _ := operands(t, 50)
	inv := make([]curve.E2, len(a))
	prod := make([]curve.E2, len(a))
	if err := Fp2(OpInverse, inv, a, nil); err != nil {
		t.Fatal(err)
	}
	if err := Fp2(OpMul, prod, a, inv); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i].IsZero() {
			if !inv[i].IsZero() {
				t.Errorf("inverse(0) = %s, want 0", inv[i].String())
			}
			continue
		}
		if !prod[i].IsOne() {
			t.Errorf("a·inverse(a) = %s for a = %s", prod[i].String(), a[i].String())
		}
	}
}

func TestMulFpAndNormMatchGnark(t *testing.T) {
	a, _ := operands(t, 50)
	f := make([]fp.Element, len(a))
	var one fp.Element
	one.SetOne()
	edge := []fp.Element{{}, one, raw[fp.Element](new(big.Int).Sub(fp.Modulus(), big.NewInt(1)))}
	for i := range f {
		if i < len(edge) {
			f[i] = edge[i]
			continue
		}
		if _, err := f[i].SetRandom(); err != nil {
			t.Fatal(err)
		}
	}
	z := make([]curve.E2, len(a))
	if err := MulFp(z, a, f); err != nil {
		t.Fatal(err)
	}
	n := Norm(a)
	for i := range a {
		var want curve.E2
		want.MulByElement(&a[i], &f[i])
		if z[i] != want {
			t.Errorf("MulFp(%s, %s) = %s, want %s", a[i].String(), f[i].String(), z[i].String(), want.String())
		}
		var n0, n1 fp.Element
		n0.Square(&a[i].A0)
		n1.Square(&a[i].A1)
		n0.Add(&n0, &n1)
		if n[i] != n0 {
			t.Errorf("Norm(%s) = %s, want %s", a[i].String(), n[i].String(), n0.String())
		}
	}
}

func TestFp2BadInputIsAnError(t *testing.T) {
	x := []curve.E2{randE2(t)}
	if err := Fp2(numOps, x, x, x); err == nil {
		t.Error("Fp2 accepted an unknown op")
	}
	if err := Fp2(Op(-1), x, x, x); err == nil {
		t.Error("Fp2 accepted a negative op")
	}
	if err := Fp2(OpAdd, x, x, []curve.E2{}); err == nil {
		t.Error("Fp2 accepted slices of different lengths")
	}
	if err := MulFp(x, x, nil); err == nil {
		t.Error("MulFp accepted slices of different lengths")
	}
}
