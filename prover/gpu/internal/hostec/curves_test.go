package hostec

import (
	"math/big"
	"math/rand/v2"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
)

// The point tests run once per group, G1 and G2, through one generic body.

// jacobian is what the tests use of gnark's Jacobian points (*G1Jac,
// *G2Jac), whose methods G1 and G2 spell alike.
type jacobian[J, A any] interface {
	*J
	ScalarMultiplication(*J, *big.Int) *J
	AddMixed(*A) *J
	AddAssign(*J) *J
	Double(*J) *J
	Neg(*J) *J
	Equal(*J) bool
	FromAffine(*A) *J
	IsOnCurve() bool
	String() string
}

// affinePoint is what the tests use of gnark's affine points.
type affinePoint[A, J any] interface {
	*A
	FromJacobian(*J) *A
	IsOnCurve() bool
}

// curveCase is one group under test: its Group, gnark's generator, a random
// source, how many random points a test draws, and the points off the
// curve it is tested with.
type curveCase[A, J any, F Coord, PJ jacobian[J, A], PA affinePoint[A, J]] struct {
	g   Group[A, J, F]
	gen J
	rng *rand.Rand
	n   int // random points per addition test; G2's arithmetic is slower, so fewer
	// offCurve gives points that are not on the curve from two that are:
	// p with Y's first coordinate limb set to 7, q with X and Y swapped,
	// and (1, 0).
	offCurve func(p, q A) []A
}

var (
	g1Case = curveCase[curve.G1Affine, curve.G1Jac, fp.Element, *curve.G1Jac, *curve.G1Affine]{
		g: G1, gen: func() curve.G1Jac { g, _, _, _ := curve.Generators(); return g }(),
		rng: rand.New(rand.NewPCG(11, 12)), n: 64,
		offCurve: func(p, q curve.G1Affine) []curve.G1Affine {
			p.Y.SetUint64(7)
			q.X, q.Y = q.Y, q.X
			var oneZero curve.G1Affine
			oneZero.X.SetOne()
			return []curve.G1Affine{p, q, oneZero}
		},
	}
	g2Case = curveCase[curve.G2Affine, curve.G2Jac, curve.E2, *curve.G2Jac, *curve.G2Affine]{
		g: G2, gen: func() curve.G2Jac { _, g, _, _ := curve.Generators(); return g }(),
		rng: rand.New(rand.NewPCG(21, 22)), n: 32,
		offCurve: func(p, q curve.G2Affine) []curve.G2Affine {
			p.Y.A0.SetUint64(7)
			q.X, q.Y = q.Y, q.X
			var oneZero curve.G2Affine
			oneZero.X.SetOne()
			return []curve.G2Affine{p, q, oneZero}
		},
	}
)

// field is what scaleXYZ and randomScale use of gnark's Fp and Fp2
// elements.
type field[F any] interface {
	*F
	Square(*F) *F
	Mul(*F, *F) *F
	SetRandom() (*F, error)
}

// scaleXYZ sets Jacobian coordinates (X, Y, Z) to (X·λ², Y·λ³, Z·λ): the
// same point.
func scaleXYZ[F any, PF field[F]](x, y, z, l *F) {
	var l2, l3 F
	PF(&l2).Square(l)
	PF(&l3).Mul(&l2, l)
	PF(x).Mul(x, &l2)
	PF(y).Mul(y, &l3)
	PF(z).Mul(z, l)
}

// randomScale rescales (X, Y, Z) by a random λ (scaleXYZ): the same point
// with another Z.
func randomScale[F any, PF field[F]](t *testing.T, x, y, z *F) {
	t.Helper()
	var l F
	if _, err := PF(&l).SetRandom(); err != nil {
		t.Fatal(err)
	}
	scaleXYZ[F, PF](x, y, z, &l)
}

// The coordinates of gnark's points are struct fields, which generic code
// cannot reach: rescale and atInfinity switch on the group, as FromJac
// does.

// rescale returns p with (X·λ², Y·λ³, Z·λ) for a random λ: the same point.
func (c curveCase[A, J, F, PJ, PA]) rescale(t *testing.T, p J) J {
	switch q := any(&p).(type) {
	case *curve.G1Jac:
		randomScale(t, &q.X, &q.Y, &q.Z)
	case *curve.G2Jac:
		randomScale(t, &q.X, &q.Y, &q.Z)
	}
	return p
}

// atInfinity says whether p's Z is zero.
func (c curveCase[A, J, F, PJ, PA]) atInfinity(p *J) bool {
	switch q := any(p).(type) {
	case *curve.G1Jac:
		return q.Z.IsZero()
	case *curve.G2Jac:
		return q.Z.IsZero()
	}
	panic("hostec: not a gnark Jacobian point")
}

// randJac returns a random odd multiple of the generator with a random Z
// (gnark's ScalarMultiplication leaves Z ≠ 1 in general; we rescale anyway).
func (c curveCase[A, J, F, PJ, PA]) randJac(t *testing.T) J {
	t.Helper()
	var k big.Int
	k.SetUint64(c.rng.Uint64() | 1)
	var p J
	PJ(&p).ScalarMultiplication(&c.gen, &k)
	return c.rescale(t, p)
}

// inf is gnark's Jacobian infinity, (1, 1, 0).
func (c curveCase[A, J, F, PJ, PA]) inf() J {
	var p J
	var zero A
	PJ(&p).FromAffine(&zero)
	return p
}

func (c curveCase[A, J, F, PJ, PA]) affine(p J) A {
	var a A
	PA(&a).FromJacobian(&p)
	return a
}

func (c curveCase[A, J, F, PJ, PA]) neg(p J) J {
	PJ(&p).Neg(&p)
	return p
}

func (c curveCase[A, J, F, PJ, PA]) xyzz(ps []J) []XYZZ[F] {
	xs := make([]XYZZ[F], len(ps))
	for i := range ps {
		xs[i] = c.g.FromJac(&ps[i])
	}
	return xs
}

func (c curveCase[A, J, F, PJ, PA]) requireEqual(t *testing.T, what string, got, want []J) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !PJ(&got[i]).Equal(&want[i]) {
			t.Errorf("%s[%d]: got %s, want %s", what, i, PJ(&got[i]).String(), PJ(&want[i]).String())
		}
		if c.atInfinity(&got[i]) != c.atInfinity(&want[i]) {
			t.Errorf("%s[%d]: infinity mismatch", what, i)
		}
		if !PJ(&got[i]).IsOnCurve() {
			t.Errorf("%s[%d]: result is not on the curve", what, i)
		}
	}
}

// requireSums checks the results of an addition test whose last five
// inputs are the edge cases: no error, every sum gnark's, and P + (−P),
// the fourth from last, at infinity.
func (c curveCase[A, J, F, PJ, PA]) requireSums(t *testing.T, what string, got []J, err error, want []J) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	c.requireEqual(t, what, got, want)
	if !c.atInfinity(&got[len(got)-4]) {
		t.Error("P + (−P) is not infinity")
	}
}

func TestAddMixedMatchesGnarkOnRandomAndEdgePoints(t *testing.T) {
	t.Run("G1", func(t *testing.T) { testAddMixed(t, g1Case) })
	t.Run("G2", func(t *testing.T) { testAddMixed(t, g2Case) })
}

func testAddMixed[A, J any, F Coord, PJ jacobian[J, A], PA affinePoint[A, J]](t *testing.T, c curveCase[A, J, F, PJ, PA]) {
	var ps []J
	var as []A
	for i := 0; i < c.n; i++ {
		ps = append(ps, c.randJac(t))
		as = append(as, c.affine(c.randJac(t)))
	}
	p := c.randJac(t)
	inf := c.inf()
	var zero A
	// P + P (doubling), P + (−P) (infinity), P + ∞, ∞ + Q, ∞ + ∞.
	ps = append(ps, p, p, p, inf, inf)
	as = append(as, c.affine(p), c.affine(c.neg(p)), zero, c.affine(p), zero)

	want := make([]J, len(ps))
	for i := range ps {
		want[i] = ps[i]
		PJ(&want[i]).AddMixed(&as[i])
	}
	got, err := c.g.AddMixed(c.xyzz(ps), as)
	c.requireSums(t, "AddMixed", got, err, want)
}

func TestAddMatchesGnarkOnRandomAndEdgePoints(t *testing.T) {
	t.Run("G1", func(t *testing.T) { testAdd(t, g1Case) })
	t.Run("G2", func(t *testing.T) { testAdd(t, g2Case) })
}

func testAdd[A, J any, F Coord, PJ jacobian[J, A], PA affinePoint[A, J]](t *testing.T, c curveCase[A, J, F, PJ, PA]) {
	var ps, qs []J
	for i := 0; i < c.n; i++ {
		ps = append(ps, c.randJac(t))
		qs = append(qs, c.randJac(t))
	}
	p := c.randJac(t)
	inf := c.inf()
	// P + P with different Z, P + (−P), P + ∞, ∞ + P, ∞ + ∞.
	ps = append(ps, p, p, p, inf, inf)
	qs = append(qs, c.rescale(t, p), c.rescale(t, c.neg(p)), inf, p, inf)
	want := make([]J, len(ps))
	for i := range ps {
		want[i] = ps[i]
		PJ(&want[i]).AddAssign(&qs[i])
	}
	got, err := c.g.Add(c.xyzz(ps), c.xyzz(qs))
	c.requireSums(t, "Add", got, err, want)
}

func TestDoubleAndNegMatchGnark(t *testing.T) {
	t.Run("G1", func(t *testing.T) { testDoubleAndNeg(t, g1Case) })
	t.Run("G2", func(t *testing.T) { testDoubleAndNeg(t, g2Case) })
}

func testDoubleAndNeg[A, J any, F Coord, PJ jacobian[J, A], PA affinePoint[A, J]](t *testing.T, c curveCase[A, J, F, PJ, PA]) {
	ps := []J{c.inf()}
	for i := 0; i < c.n/2; i++ {
		ps = append(ps, c.randJac(t))
	}
	wantDbl := make([]J, len(ps))
	wantNeg := make([]J, len(ps))
	for i := range ps {
		PJ(&wantDbl[i]).Double(&ps[i])
		PJ(&wantNeg[i]).Neg(&ps[i])
	}
	xs := c.xyzz(ps)
	c.requireEqual(t, "Double", c.g.Double(xs), wantDbl)
	c.requireEqual(t, "Neg", c.g.Neg(xs), wantNeg)
}

func TestMulSmallMatchesGnark(t *testing.T) {
	t.Run("G1", func(t *testing.T) { testMulSmall(t, g1Case) })
	t.Run("G2", func(t *testing.T) { testMulSmall(t, g2Case) })
}

func testMulSmall[A, J any, F Coord, PJ jacobian[J, A], PA affinePoint[A, J]](t *testing.T, c curveCase[A, J, F, PJ, PA]) {
	ks := []uint32{0, 1, 2, 3, 31, 32, 255, 1 << 15, 1<<31 + 5, ^uint32(0)}
	for i := 0; i < c.n/8; i++ {
		ks = append(ks, c.rng.Uint32())
	}
	ps := make([]J, len(ks))
	want := make([]J, len(ks))
	for i, k := range ks {
		ps[i] = c.randJac(t)
		PJ(&want[i]).ScalarMultiplication(&ps[i], new(big.Int).SetUint64(uint64(k)))
	}
	got, err := c.g.MulSmall(c.xyzz(ps), ks)
	if err != nil {
		t.Fatal(err)
	}
	c.requireEqual(t, "MulSmall", got, want)
	// k·∞ = ∞.
	got, err = c.g.MulSmall(c.xyzz([]J{c.inf()}), []uint32{12345})
	if err != nil {
		t.Fatal(err)
	}
	if !c.atInfinity(&got[0]) {
		t.Error("k·∞ is not infinity")
	}
}

func TestFromAffineEqualAffineAndOnCurve(t *testing.T) {
	t.Run("G1", func(t *testing.T) { testFromAffineEqualAffineAndOnCurve(t, g1Case) })
	t.Run("G2", func(t *testing.T) { testFromAffineEqualAffineAndOnCurve(t, g2Case) })
}

// FromAffine and EqualAffine read gnark's infinity ((0, 0) affine);
// OnCurve agrees with gnark.
func testFromAffineEqualAffineAndOnCurve[A, J any, F Coord, PJ jacobian[J, A], PA affinePoint[A, J]](t *testing.T, c curveCase[A, J, F, PJ, PA]) {
	p := c.randJac(t)
	q := c.randJac(t)
	var zero A
	c.requireEqual(t, "FromAffine", c.g.FromAffine([]A{c.affine(p), zero}), []J{p, c.inf()})

	inf := c.inf()
	xs := c.xyzz([]J{p, p, inf, inf, p})
	bs := []A{c.affine(p), c.affine(q), zero, c.affine(p), c.affine(c.neg(p))}
	eq, err := c.g.EqualAffine(xs, bs)
	if err != nil {
		t.Fatal(err)
	}
	wantEq := []bool{true, false, true, false, false}
	for i := range eq {
		if eq[i] != wantEq[i] {
			t.Errorf("EqualAffine[%d] = %v, want %v", i, eq[i], wantEq[i])
		}
	}

	// On the curve: random points, the generator, infinity ((0, 0) read as
	// a point would be: it is gnark's infinity, so it counts as on). Off
	// it: the offCurve points.
	pts := append([]A{c.affine(p), c.affine(q), c.affine(c.gen), zero}, c.offCurve(c.affine(p), c.affine(q))...)
	got := c.g.OnCurve(pts)
	for i := range pts {
		if want := PA(&pts[i]).IsOnCurve(); got[i] != want {
			t.Errorf("OnCurve[%d] = %v, gnark says %v", i, got[i], want)
		}
	}
	if !got[0] || got[4] {
		t.Error("OnCurve does not tell a curve point from a perturbed one")
	}
}

func TestBucketSumMatchesAddAssignChain(t *testing.T) {
	t.Run("G1", func(t *testing.T) { testBucketSum(t, g1Case) })
	t.Run("G2", func(t *testing.T) { testBucketSum(t, g2Case) })
}

// A bucket as the MSM accumulates one: many affine points, some negated,
// summed with the inlined mixed addition, against gnark's AddAssign chain.
func testBucketSum[A, J any, F Coord, PJ jacobian[J, A], PA affinePoint[A, J]](t *testing.T, c curveCase[A, J, F, PJ, PA]) {
	const n = 200
	as := make([]A, 0, n+8)
	negs := make([]bool, 0, n+8)
	for i := 0; i < n; i++ {
		as = append(as, c.affine(c.randJac(t)))
		negs = append(negs, c.rng.IntN(2) == 1)
	}
	// Repeats, a point and its negation, and points at infinity in the
	// middle, so the sum passes through the doubling and infinity cases.
	pa := c.affine(c.randJac(t))
	var zero A
	as = append(as, zero, pa, pa, pa, zero)
	negs = append(negs, false, false, false, true, true)

	want := c.inf()
	for i := range as {
		var q J
		PJ(&q).FromAffine(&as[i])
		if negs[i] {
			PJ(&q).Neg(&q)
		}
		PJ(&want).AddAssign(&q)
	}
	got, err := c.g.BucketSum(as, negs)
	if err != nil {
		t.Fatal(err)
	}
	c.requireEqual(t, "BucketSum", []J{got}, []J{want})

	// P + P − P − P: back to infinity through a doubling.
	got, err = c.g.BucketSum([]A{pa, pa, pa, pa}, []bool{false, false, true, true})
	if err != nil {
		t.Fatal(err)
	}
	if !c.atInfinity(&got) {
		t.Errorf("P + P − P − P = %s, want infinity", PJ(&got).String())
	}
	got, err = c.g.BucketSum(nil, nil)
	if err != nil || !c.atInfinity(&got) {
		t.Errorf("empty bucket: %s, %v; want infinity", PJ(&got).String(), err)
	}
}

func TestMismatchedLengthsAreAnError(t *testing.T) {
	t.Run("G1", func(t *testing.T) { testMismatchedLengths(t, g1Case) })
	t.Run("G2", func(t *testing.T) { testMismatchedLengths(t, g2Case) })
}

func testMismatchedLengths[A, J any, F Coord, PJ jacobian[J, A], PA affinePoint[A, J]](t *testing.T, c curveCase[A, J, F, PJ, PA]) {
	p := c.randJac(t)
	x := c.xyzz([]J{p})
	if _, err := c.g.AddMixed(x, nil); err == nil {
		t.Error("AddMixed accepted slices of different lengths")
	}
	if _, err := c.g.Add(x, []XYZZ[F]{}); err == nil {
		t.Error("Add accepted slices of different lengths")
	}
	if _, err := c.g.MulSmall(x, []uint32{1, 2}); err == nil {
		t.Error("MulSmall accepted slices of different lengths")
	}
	if _, err := c.g.EqualAffine(x, nil); err == nil {
		t.Error("EqualAffine accepted slices of different lengths")
	}
	if _, err := c.g.BucketSum([]A{c.affine(p)}, nil); err == nil {
		t.Error("BucketSum accepted slices of different lengths")
	}
}
