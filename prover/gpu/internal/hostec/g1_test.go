package hostec

import (
	"math/big"
	"math/rand/v2"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
)

var rng = rand.New(rand.NewPCG(11, 12))

// randJac returns a random multiple of the generator with a random Z
// (gnark's ScalarMultiplication leaves Z ≠ 1 in general; we rescale anyway).
func randJac(t *testing.T) curve.G1Jac {
	t.Helper()
	g, _, _, _ := curve.Generators()
	var k big.Int
	k.SetUint64(rng.Uint64() | 1)
	var p curve.G1Jac
	p.ScalarMultiplication(&g, &k)
	return rescale(t, p)
}

// rescale returns the same point with (X·λ², Y·λ³, Z·λ) for a random λ.
func rescale(t *testing.T, p curve.G1Jac) curve.G1Jac {
	t.Helper()
	var l, l2, l3 fp.Element
	if _, err := l.SetRandom(); err != nil {
		t.Fatal(err)
	}
	l2.Square(&l)
	l3.Mul(&l2, &l)
	p.X.Mul(&p.X, &l2)
	p.Y.Mul(&p.Y, &l3)
	p.Z.Mul(&p.Z, &l)
	return p
}

func infJac() curve.G1Jac {
	var p curve.G1Jac
	p.X.SetOne()
	p.Y.SetOne()
	return p
}

func affine(p *curve.G1Jac) curve.G1Affine {
	var a curve.G1Affine
	a.FromJacobian(p)
	return a
}

func neg(p curve.G1Jac) curve.G1Jac {
	p.Y.Neg(&p.Y)
	return p
}

func requireEqual(t *testing.T, what string, got, want []curve.G1Jac) {
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
	}
}

func TestAddMixedMatchesGnarkOnRandomAndEdgePoints(t *testing.T) {
	var ps []curve.G1Jac
	var as []curve.G1Affine
	for i := 0; i < 64; i++ {
		p, q := randJac(t), randJac(t)
		ps = append(ps, p)
		as = append(as, affine(&q))
	}
	p := randJac(t)
	inf := infJac()
	// P + P (doubling), P + (−P) (infinity), P + ∞, ∞ + Q, ∞ + ∞.
	ps = append(ps, p, p, p, inf, inf)
	pn := neg(p)
	as = append(as, affine(&p), affine(&pn), curve.G1Affine{}, affine(&p), curve.G1Affine{})

	xs := make([]G1XYZZ, len(ps))
	want := make([]curve.G1Jac, len(ps))
	for i := range ps {
		xs[i] = G1.FromJac(&ps[i])
		want[i] = ps[i]
		want[i].AddMixed(&as[i])
	}
	got, err := G1.AddMixed(xs, as)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual(t, "AddMixed", got, want)
	if !got[len(got)-4].Z.IsZero() {
		t.Error("P + (−P) is not infinity")
	}
}

func TestAddMatchesGnarkOnRandomAndEdgePoints(t *testing.T) {
	var ps, qs []curve.G1Jac
	for i := 0; i < 64; i++ {
		ps = append(ps, randJac(t))
		qs = append(qs, randJac(t))
	}
	p := randJac(t)
	inf := infJac()
	// P + P with different Z, P + (−P), P + ∞, ∞ + P, ∞ + ∞.
	ps = append(ps, p, p, p, inf, inf)
	qs = append(qs, rescale(t, p), rescale(t, neg(p)), inf, p, inf)
	xp := make([]G1XYZZ, len(ps))
	xq := make([]G1XYZZ, len(ps))
	want := make([]curve.G1Jac, len(ps))
	for i := range ps {
		xp[i], xq[i] = G1.FromJac(&ps[i]), G1.FromJac(&qs[i])
		want[i] = ps[i]
		want[i].AddAssign(&qs[i])
	}
	got, err := G1.Add(xp, xq)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual(t, "Add", got, want)
	if !got[len(got)-4].Z.IsZero() {
		t.Error("P + (−P) is not infinity")
	}
}

func TestDoubleMatchesGnark(t *testing.T) {
	ps := []curve.G1Jac{infJac()}
	for i := 0; i < 32; i++ {
		ps = append(ps, randJac(t))
	}
	xs := make([]G1XYZZ, len(ps))
	want := make([]curve.G1Jac, len(ps))
	for i := range ps {
		xs[i] = G1.FromJac(&ps[i])
		want[i].Double(&ps[i])
	}
	requireEqual(t, "Double", G1.Double(xs), want)
}

func TestMulSmallMatchesGnark(t *testing.T) {
	ks := []uint32{0, 1, 2, 3, 31, 32, 255, 1 << 15, 1<<31 + 5, ^uint32(0)}
	for i := 0; i < 8; i++ {
		ks = append(ks, rng.Uint32())
	}
	xs := make([]G1XYZZ, len(ks))
	want := make([]curve.G1Jac, len(ks))
	for i, k := range ks {
		p := randJac(t)
		xs[i] = G1.FromJac(&p)
		want[i].ScalarMultiplication(&p, new(big.Int).SetUint64(uint64(k)))
	}
	got, err := G1.MulSmall(xs, ks)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual(t, "MulSmall", got, want)
	// k·∞ = ∞.
	inf := infJac()
	got, err = G1.MulSmall([]G1XYZZ{G1.FromJac(&inf)}, []uint32{12345})
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Z.IsZero() {
		t.Error("k·∞ is not infinity")
	}
}

func TestFromAffineAndEqualAffineUseGnarksInfinity(t *testing.T) {
	p := randJac(t)
	q := randJac(t)
	as := []curve.G1Affine{affine(&p), {}}
	got := G1.FromAffine(as)
	want := []curve.G1Jac{p, infJac()}
	requireEqual(t, "FromAffine", got, want)

	inf := infJac()
	xs := []G1XYZZ{G1.FromJac(&p), G1.FromJac(&p), G1.FromJac(&inf), G1.FromJac(&inf)}
	bs := []curve.G1Affine{affine(&p), affine(&q), {}, affine(&p)}
	eq, err := G1.EqualAffine(xs, bs)
	if err != nil {
		t.Fatal(err)
	}
	wantEq := []bool{true, false, true, false}
	for i := range eq {
		if eq[i] != wantEq[i] {
			t.Errorf("EqualAffine[%d] = %v, want %v", i, eq[i], wantEq[i])
		}
	}
}

func TestMismatchedLengthsAreAnError(t *testing.T) {
	p := randJac(t)
	if _, err := G1.AddMixed([]G1XYZZ{G1.FromJac(&p)}, nil); err == nil {
		t.Error("AddMixed accepted slices of different lengths")
	}
	if _, err := G1.Add([]G1XYZZ{G1.FromJac(&p)}, []G1XYZZ{}); err == nil {
		t.Error("Add accepted slices of different lengths")
	}
	if _, err := G1.MulSmall([]G1XYZZ{G1.FromJac(&p)}, []uint32{1, 2}); err == nil {
		t.Error("MulSmall accepted slices of different lengths")
	}
}
