package benchutil

import (
	"slices"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// EdgeCheckSet returns the correctness inputs that msmbench and peers
// check an MSM on: a copy of points and as many random scalars, with the
// edge cases mixed in by index mod 7: scalar r−1 (1), 0 (2) and 1 (3),
// the point at infinity (4) and a repeat of the point five before (5).
// points is not modified.
func EdgeCheckSet(points []curve.G1Affine) ([]curve.G1Affine, []fr.Element) {
	pts := slices.Clone(points)
	sc := RandomScalars(len(pts))
	var one, rm1 fr.Element
	one.SetOne()
	rm1.Neg(&one)
	for i := range sc {
		switch i % 7 {
		case 1:
			sc[i] = rm1
		case 2:
			sc[i] = fr.Element{}
		case 3:
			sc[i] = one
		case 4:
			pts[i] = curve.G1Affine{}
		case 5:
			pts[i] = pts[i-5]
		}
	}
	return pts, sc
}

// Repeat returns n points: pts repeated in order (an MSM's work does not
// depend on the points being distinct). pts must not be empty.
func Repeat[P any](pts []P, n int) []P {
	out := make([]P, n)
	for i := range out {
		out[i] = pts[i%len(pts)]
	}
	return out
}
