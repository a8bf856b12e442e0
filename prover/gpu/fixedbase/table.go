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
	return curve.BatchJacobianToAffineG1(windowTable[curve.G1Jac](&g, c))
}

// G2Table is G1Table for the G2 generator.
func G2Table(c int) []curve.G2Affine {
	_, _, _, g := curve.Generators()
	jac := windowTable[curve.G2Jac](&g, c)
	out := make([]curve.G2Affine, len(jac))
	parallel.For(len(jac), func(i int) { out[i].FromJacobian(&jac[i]) })
	return out
}

// jacobian is gnark-crypto's G1Jac or G2Jac (PJ) with its affine form A.
type jacobian[J, A any] interface {
	*J
	FromAffine(*A) *J
	AddAssign(*J) *J
	DoubleAssign() *J
}

// windowTable is the table of G1Table in Jacobian form, for g of either
// group: row w holds k·2^(c·w)·g for k = 1 … 2^(c−1).
func windowTable[J, A any, PJ jacobian[J, A]](g *A, c int) []J {
	half := 1 << (c - 1)
	jac := make([]J, Windows(c)*half)
	var base J
	PJ(&base).FromAffine(g)
	for w := range Windows(c) {
		row := jac[w*half : (w+1)*half]
		row[0] = base
		for k := 1; k < half; k++ {
			row[k] = row[k-1]
			PJ(&row[k]).AddAssign(&base)
		}
		for range c {
			PJ(&base).DoubleAssign()
		}
	}
	return jac
}
