package hostec

import (
	"math/big"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
)

// randJac2 returns a random multiple of the G2 generator, rescaled to a
// random Z.
func randJac2(t *testing.T) curve.G2Jac {
	t.Helper()
	_, g, _, _ := curve.Generators()
	var k big.Int
	k.SetUint64(rng2.Uint64() | 1)
	var p curve.G2Jac
	p.ScalarMultiplication(&g, &k)
	return rescale2(t, p)
}

// rescale2 returns the same point with (X·λ², Y·λ³, Z·λ) for a random λ in Fp2.
func rescale2(t *testing.T, p curve.G2Jac) curve.G2Jac {
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

func infJac2() curve.G2Jac {
	var p curve.G2Jac
	p.X.SetOne()
	p.Y.SetOne()
	return p
}

func affine2(p *curve.G2Jac) curve.G2Affine {
	var a curve.G2Affine
	a.FromJacobian(p)
	return a
}

func neg2(p curve.G2Jac) curve.G2Jac {
	p.Y.Neg(&p.Y)
	return p
}

func requireEqual2(t *testing.T, what string, got, want []curve.G2Jac) {
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
		p, q := randJac2(t), randJac2(t)
		ps = append(ps, p)
		as = append(as, affine2(&q))
	}
	p := randJac2(t)
	inf := infJac2()
	// P + P (doubling), P + (−P) (infinity), P + ∞, ∞ + Q, ∞ + ∞.
	ps = append(ps, p, p, p, inf, inf)
	pn := neg2(p)
	as = append(as, affine2(&p), affine2(&pn), curve.G2Affine{}, affine2(&p), curve.G2Affine{})

	xs := make([]G2XYZZ, len(ps))
	want := make([]curve.G2Jac, len(ps))
	for i := range ps {
		xs[i] = G2.FromJac(&ps[i])
		want[i] = ps[i]
		want[i].AddMixed(&as[i])
	}
	got, err := G2.AddMixed(xs, as)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual2(t, "AddMixed", got, want)
	if !got[len(got)-4].Z.IsZero() {
		t.Error("P + (−P) is not infinity")
	}
}

func TestG2AddMatchesGnarkOnRandomAndEdgePoints(t *testing.T) {
	var ps, qs []curve.G2Jac
	for i := 0; i < 32; i++ {
		ps = append(ps, randJac2(t))
		qs = append(qs, randJac2(t))
	}
	p := randJac2(t)
	inf := infJac2()
	// P + P with different Z, P + (−P), P + ∞, ∞ + P, ∞ + ∞.
	ps = append(ps, p, p, p, inf, inf)
	qs = append(qs, rescale2(t, p), rescale2(t, neg2(p)), inf, p, inf)
	xp := make([]G2XYZZ, len(ps))
	xq := make([]G2XYZZ, len(ps))
	want := make([]curve.G2Jac, len(ps))
	for i := range ps {
		xp[i], xq[i] = G2.FromJac(&ps[i]), G2.FromJac(&qs[i])
		want[i] = ps[i]
		want[i].AddAssign(&qs[i])
	}
	got, err := G2.Add(xp, xq)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual2(t, "Add", got, want)
	if !got[len(got)-4].Z.IsZero() {
		t.Error("P + (−P) is not infinity")
	}
}

func TestG2DoubleAndNegMatchGnark(t *testing.T) {
	ps := []curve.G2Jac{infJac2()}
	for i := 0; i < 16; i++ {
		ps = append(ps, randJac2(t))
	}
	xs := make([]G2XYZZ, len(ps))
	wantDbl := make([]curve.G2Jac, len(ps))
	wantNeg := make([]curve.G2Jac, len(ps))
	for i := range ps {
		xs[i] = G2.FromJac(&ps[i])
		wantDbl[i].Double(&ps[i])
		wantNeg[i].Neg(&ps[i])
	}
	requireEqual2(t, "Double", G2.Double(xs), wantDbl)
	requireEqual2(t, "Neg", G2.Neg(xs), wantNeg)
}

func TestG2MulSmallMatchesGnark(t *testing.T) {
	ks := []uint32{0, 1, 2, 3, 31, 32, 255, 1 << 15, 1<<31 + 5, ^uint32(0)}
	for i := 0; i < 4; i++ {
		ks = append(ks, rng2.Uint32())
	}
	xs := make([]G2XYZZ, len(ks))
	want := make([]curve.G2Jac, len(ks))
	for i, k := range ks {
		p := randJac2(t)
		xs[i] = G2.FromJac(&p)
		want[i].ScalarMultiplication(&p, new(big.Int).SetUint64(uint64(k)))
	}
	got, err := G2.MulSmall(xs, ks)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual2(t, "MulSmall", got, want)
	inf := infJac2()
	got, err = G2.MulSmall([]G2XYZZ{G2.FromJac(&inf)}, []uint32{12345})
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Z.IsZero() {
		t.Error("k·∞ is not infinity")
	}
}

func TestG2FromAffineEqualAffineAndOnCurve(t *testing.T) {
	p := randJac2(t)
	q := randJac2(t)
	as := []curve.G2Affine{affine2(&p), {}}
	requireEqual2(t, "FromAffine", G2.FromAffine(as), []curve.G2Jac{p, infJac2()})

	inf := infJac2()
	xs := []G2XYZZ{G2.FromJac(&p), G2.FromJac(&p), G2.FromJac(&inf), G2.FromJac(&inf), G2.FromJac(&p)}
	pn := neg2(p)
	bs := []curve.G2Affine{affine2(&p), affine2(&q), {}, affine2(&p), affine2(&pn)}
	eq, err := G2.EqualAffine(xs, bs)
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
	off := affine2(&p)
	off.Y.A0.SetUint64(7)
	swapped := affine2(&q)
	swapped.X, swapped.Y = swapped.Y, swapped.X
	var oneZero curve.G2Affine
	oneZero.X.SetOne()
	pts := []curve.G2Affine{affine2(&p), affine2(&q), g, {}, off, swapped, oneZero}
	got := G2.OnCurve(pts)
	for i := range pts {
		if want := pts[i].IsOnCurve(); got[i] != want {
			t.Errorf("OnCurve[%d] = %v, gnark says %v", i, got[i], want)
		}
	}
	if !got[0] || got[4] {
		t.Error("OnCurve does not tell a curve point from a perturbed one")
	}
}

// A bucket as the MSM accumulates one: many affine2 points, some negated,
// summed with the inlined mixed addition, against gnark's AddAssign chain.
func TestG2BucketSumMatchesAddAssignChain(t *testing.T) {
	const n = 200
	as := make([]curve.G2Affine, 0, n+8)
	negs := make([]bool, 0, n+8)
	for i := 0; i < n; i++ {
		p := randJac2(t)
		as = append(as, affine2(&p))
		negs = append(negs, rng2.IntN(2) == 1)
	}
	// Repeats, a point and its negation, and points at infinity in the
	// middle, so the sum passes through the doubling and infinity cases.
	p := randJac2(t)
	pa := affine2(&p)
	as = append(as, curve.G2Affine{}, pa, pa, pa, curve.G2Affine{})
	negs = append(negs, false, false, false, true, true)

	want := infJac2()
	for i := range as {
		var q curve.G2Jac
		q.FromAffine(&as[i])
		if negs[i] {
			q.Neg(&q)
		}
		want.AddAssign(&q)
	}
	got, err := G2.BucketSum(as, negs)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual2(t, "BucketSum", []curve.G2Jac{got}, []curve.G2Jac{want})

	// P + P − P − P: back to infinity through a doubling.
	got, err = G2.BucketSum([]curve.G2Affine{pa, pa, pa, pa}, []bool{false, false, true, true})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Z.IsZero() {
		t.Errorf("P + P − P − P = %s, want infinity", got.String())
	}
	got, err = G2.BucketSum(nil, nil)
	if err != nil || !got.Z.IsZero() {
		t.Errorf("empty bucket: %s, %v; want infinity", got.String(), err)
	}
}

func TestG2MismatchedLengthsAreAnError(t *testing.T) {
	p := randJac2(t)
	x := []G2XYZZ{G2.FromJac(&p)}
	if _, err := G2.AddMixed(x, nil); err == nil {
		t.Error("AddMixed accepted slices of different lengths")
	}
	if _, err := G2.Add(x, []G2XYZZ{}); err == nil {
		t.Error("Add accepted slices of different lengths")
	}
	if _, err := G2.MulSmall(x, []uint32{1, 2}); err == nil {
		t.Error("MulSmall accepted slices of different lengths")
	}
	if _, err := G2.EqualAffine(x, nil); err == nil {
		t.Error("EqualAffine accepted slices of different lengths")
	}
	if _, err := G2.BucketSum([]curve.G2Affine{affine2(&p)}, nil); err == nil {
		t.Error("BucketSum accepted slices of different lengths")
	}
}
