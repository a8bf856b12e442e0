package fixedbase

import (
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"

	"github.com/otelcuzk/otelcuzk/internal/parallel"
)

// Windows returns the number of c-bit signed windows of a scalar below
// 2^255, ⌊255/c⌋ + 1 (kernels/fixedbase.cuh's windows).
func Windows(c int) int { return 255/c + 1 }

// G1Table returns the window table of the G1 generator g for windows of c
// bits (2 ≤ c ≤ 20): Windows(c)·2^(c−1) affine points, entry
// w·2^(c−1) + k − 1 being k·2^(c·w)·g, the layout fixedbase.cuh reads.
func G1Table(c int) []curve.G1Affine {
	_, _, g, _ := curve.Generators()
	half := 1 << (c - 1)
	jac := make([]curve.G1Jac, Windows(c)*half)
	var base curve.G1Jac
	base.FromAffine(&g)
	for w := range Windows(c) {
		row := jac[w*half : (w+1)*half]
		row[0] = base
		for k := 1; k < half; k++ {
			row[k] = row[k-1]
			row[k].AddAssign(&base)
		}
		for range c {
			base.DoubleAssign()
		}
	}
	return curve.BatchJacobianToAffineG1(jac)
}

// G2Table is G1Table for the G2 generator.
func G2Table(c int) []curve.G2Affine {
	_, _, _, g := curve.Generators()
	half := 1 << (c - 1)
	jac := make([]curve.G2Jac, Windows(c)*half)
	var base curve.G2Jac
	base.FromAffine(&g)
	for w := range Windows(c) {
		row := jac[w*half : (w+1)*half]
		row[0] = base
		for k := 1; k < half; k++ {
			row[k] = row[k-1]
			row[k].AddAssign(&base)
		}
		for range c {
			base.DoubleAssign()
		}
	}
	out := make([]curve.G2Affine, len(jac))
	parallel.For(len(jac), func(i int) { out[i].FromJacobian(&jac[i]) })
	return out
}
