package hostec2

import (
	"math/big"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
)

// randJac returns a random multiple of the G2 generator, rescaled to a
// random Z.
func randJac(t *testing.T) curve.G2Jac {
	t.Helper()
	_, g, _, _ := curve.Generators()
	var k big.Int
	k.SetUint64(rng.Uint64() | 1)
	var p curve.G2Jac
	p.ScalarMultiplication(&g, &k)
	return rescale(t, p)
}

// rescale returns the same point with (X·λ², Y·λ³, Z·λ) for a random λ in Fp2.
func rescale(t *testing.T, p curve.G2Jac) curve.G2Jac {
	t.Helper()
	l := randE2(t)
	var l2, l3 curve.E2
	l2.Square(&l)
	l3.Mul(&l2, &l)
	p.X.Mul(&p.X, &l2)
	p.Y.Mul(&p.Y, &l3)
	p.Z.Mul(&p.Z, &l)
	return p
}

func infJac() curve.G2Jac {
	var p curve.G2Jac
	p.X.SetOne()
	p.Y.SetOne()
	return p
}

func affine(p *curve.G2Jac) curve.G2Affine {
	var a curve.G2Affine
	a.FromJacobian(p)
	return a
}

func neg(p curve.G2Jac) curve.G2Jac {
	p.Y.Neg(&p.Y)
	return p
}

func requireEqual(t *testing.T, what string, got, want []curve.G2Jac) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !got[i].Equal(&want[i]) {
			t.Errorf("%s[%d]: got %s, want %s", what, i, got[i].String(), want[i].String())
		}
		if got[i].Z.IsZero() != want[i].Z.IsZero() {
			t.Errorf("%s[%d]: infinity mismatch", what, i)
		}
		if !got[i].IsOnCurve() {
			t.Errorf("%s[%d]: result is not on the twist", what, i)
		}
	}
}

func TestG2AddMixedMatchesGnarkOnRandomAndEdgePoints(t *testing.T) {
	var ps []curve.G2Jac
	var as []curve.G2Affine
	for i := 0; i < 32; i++ {
		p, q := randJac(t), randJac(t)
		ps = append(ps, p)
		as = append(as, affine(&q))
	}
	p := randJac(t)
	inf := infJac()
	// P + P (doubling), P + (−P) (infinity), P + ∞, ∞ + Q, ∞ + ∞.
	ps = append(ps, p, p, p, inf, inf)
	pn := neg(p)
	as = append(as, affine(&p), affine(&pn), curve.G2Affine{}, affine(&p), curve.G2Affine{})

	xs := make([]XYZZ, len(ps))
	want := make([]curve.G2Jac, len(ps))
	for i := range ps {
		xs[i] = FromJac(&ps[i])
		want[i] = ps[i]
		want[i].AddMixed(&as[i])
	}
	got, err := AddMixed(xs, as)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual(t, "AddMixed", got, want)
	if !got[len(got)-4].Z.IsZero() {
		t.Error("P + (−P) is not infinity")
	}
}

func TestG2AddMatchesGnarkOnRandomAndEdgePoints(t *testing.T) {
	var ps, qs []curve.G2Jac
	for i := 0; i < 32; i++ {
		ps = append(ps, randJac(t))
		qs = append(qs, randJac(t))
	}
	p := randJac(t)
	inf := infJac()
	// P + P with different Z, P + (−P), P + ∞, ∞ + P, ∞ + ∞.
	ps = append(ps, p, p, p, inf, inf)
	qs = append(qs, rescale(t, p), rescale(t, neg(p)), inf, p, inf)
	xp := make([]XYZZ, len(ps))
	xq := make([]XYZZ, len(ps))
	want := make([]curve.G2Jac, len(ps))
	for i := range ps {
		xp[i], xq[i] = FromJac(&ps[i]), FromJac(&qs[i])
		want[i] = ps[i]
		want[i].AddAssign(&qs[i])
	}
	got, err := Add(xp, xq)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual(t, "Add", got, want)
	if !got[len(got)-4].Z.IsZero() {
		t.Error("P + (−P) is not infinity")
	}
}

func TestG2DoubleAndNegMatchGnark(t *testing.T) {
	ps := []curve.G2Jac{infJac()}
	for i := 0; i < 16; i++ {
		ps = append(ps, randJac(t))
	}
	xs := make([]XYZZ, len(ps))
	wantDbl := make([]curve.G2Jac, len(ps))
	wantNeg := make([]curve.G2Jac, len(ps))
	for i := range ps {
		xs[i] = FromJac(&ps[i])
		wantDbl[i].Double(&ps[i])
		wantNeg[i].Neg(&ps[i])
	}
	requireEqual(t, "Double", Double(xs), wantDbl)
	requireEqual(t, "Neg", Neg(xs), wantNeg)
}

func TestG2MulSmallMatchesGnark(t *testing.T) {
	ks := []uint32{0, 1, 2, 3, 31, 32, 255, 1 << 15, 1<<31 + 5, ^uint32(0)}
	for i := 0; i < 4; i++ {
		ks = append(ks, rng.Uint32())
	}
	xs := make([]XYZZ, len(ks))
	want := make([]curve.G2Jac, len(ks))
	for i, k := range ks {
		p := randJac(t)
		xs[i] = FromJac(&p)
		want[i].ScalarMultiplication(&p, new(big.Int).SetUint64(uint64(k)))
	}
	got, err := MulSmall(xs, ks)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual(t, "MulSmall", got, want)
	inf := infJac()
	got, err = MulSmall([]XYZZ{FromJac(&inf)}, []uint32{12345})
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Z.IsZero() {
		t.Error("k·∞ is not infinity")
	}
}

func TestG2FromAffineEqualAffineAndOnCurve(t *testing.T) {
	p := randJac(t)
	q := randJac(t)
	as := []curve.G2Affine{affine(&p), {}}
	requireEqual(t, "FromAffine", FromAffine(as), []curve.G2Jac{p, infJac()})

	inf := infJac()
	xs := []XYZZ{FromJac(&p), FromJac(&p), FromJac(&inf), FromJac(&inf), FromJac(&p)}
	pn := neg(p)
	bs := []curve.G2Affine{affine(&p), affine(&q), {}, affine(&p), affine(&pn)}
	eq, err := EqualAffine(xs, bs)
	if err != nil {
		t.Fatal(err)
	}
	wantEq := []bool{true, false, true, false, false}
	for i := range eq {
		if eq[i] != wantEq[i] {
			t.Errorf("EqualAffine[%d] = %v, want %v", i, eq[i], wantEq[i])
		}
	}

	// On the twist: random points, the generator, infinity. Off it: a
	// point with y perturbed, x and y swapped, (1, 0), and (0, 0) read as
	// a point would be (it is gnark's infinity, so it counts as on).
	_, _, _, g := curve.Generators()
	off := affine(&p)
	off.Y.A0.SetUint64(7)
	swapped := affine(&q)
	swapped.X, swapped.Y = swapped.Y, swapped.X
	var oneZero curve.G2Affine
	oneZero.X.SetOne()
	pts := []curve.G2Affine{affine(&p), affine(&q), g, {}, off, swapped, oneZero}
	got := OnCurve(pts)
	for i := range pts {
		if want := pts[i].IsOnCurve(); got[i] != want {
			t.Errorf("OnCurve[%d] = %v, gnark says %v", i, got[i], want)
		}
	}
	if !got[0] || got[4] {
		t.Error("OnCurve does not tell a curve point from a perturbed one")
	}
}

// A bucket as the MSM accumulates one: many affine points, some negated,
// summed with the inlined mixed addition, against gnark's AddAssign chain.
func TestG2BucketSumMatchesAddAssignChain(t *testing.T) {
	const n = 200
	as := make([]curve.G2Affine, 0, n+8)
	negs := make([]bool, 0, n+8)
	for i := 0; i < n; i++ {
		p := randJac(t)
		as = append(as, affine(&p))
		negs = append(negs, rng.IntN(2) == 1)
	}
	// Repeats, a point and its negation, and points at infinity in the
	// middle, so the sum passes through the doubling and infinity cases.
	p := randJac(t)
	pa := affine(&p)
	as = append(as, curve.G2Affine{}, pa, pa, pa, curve.G2Affine{})
	negs = append(negs, false, false, false, true, true)

	want := infJac()
	for i := range as {
		var q curve.G2Jac
		q.FromAffine(&as[i])
		if negs[i] {
			q.Neg(&q)
		}
		want.AddAssign(&q)
	}
	got, err := BucketSum(as, negs)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual(t, "BucketSum", []curve.G2Jac{got}, []curve.G2Jac{want})

	// P + P − P − P: back to infinity through a doubling.
	got, err = BucketSum([]curve.G2Affine{pa, pa, pa, pa}, []bool{false, false, true, true})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Z.IsZero() {
		t.Errorf("P + P − P − P = %s, want infinity", got.String())
	}
	got, err = BucketSum(nil, nil)
	if err != nil || !got.Z.IsZero() {
		t.Errorf("empty bucket: %s, %v; want infinity", got.String(), err)
	}
}

func TestG2MismatchedLengthsAreAnError(t *testing.T) {
	p := randJac(t)
	x := []XYZZ{FromJac(&p)}
	if _, err := AddMixed(x, nil); err == nil {
		t.Error("AddMixed accepted slices of different lengths")
	}
	if _, err := Add(x, []XYZZ{}); err == nil {
		t.Error("Add accepted slices of different lengths")
	}
	if _, err := MulSmall(x, []uint32{1, 2}); err == nil {
		t.Error("MulSmall accepted slices of different lengths")
	}
	if _, err := EqualAffine(x, nil); err == nil {
		t.Error("EqualAffine accepted slices of different lengths")
	}
	if _, err := BucketSum([]curve.G2Affine{affine(&p)}, nil); err == nil {
		t.Error("BucketSum accepted slices of different lengths")
	}
}
