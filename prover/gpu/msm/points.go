package msm

import (
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// xyzz mirrors ec.cuh's xyzz_t over the coordinate field F (fp.Element
// for G1, curve.E2 for G2): x = X/ZZ, y = Y/ZZZ. J is the group's gnark
// Jacobian type, whose fields are (X, Y, Z F).
type xyzz[F any, PF coordinate[F], J ~struct{ X, Y, Z F }] struct {
	X, Y, ZZ, ZZZ F
}

// msmXYZZ mirrors ec.cuh's g1_xyzz (192 bytes); msmXYZZ2 its g2_xyzz
// (384 bytes), over Fp2.
type (
	msmXYZZ  = xyzz[fp.Element, *fp.Element, curve.G1Jac]
	msmXYZZ2 = xyzz[curve.E2, *curve.E2, curve.G2Jac]
)

// coordinate is what jac uses of gnark's Fp and Fp2 elements.
type coordinate[F any] interface {
	*F
	IsZero() bool
	SetOne() *F
	Square(*F) *F
	Mul(*F, *F) *F
}

// jac returns p in gnark's Jacobian coordinates without an inversion
// (ec.cuh xyzz_to_jac): Z = ZZ·ZZZ, X = X·ZZ·ZZZ², Y = Y·ZZ³·ZZZ²;
// infinity (ZZ = 0) is gnark's (1, 1, 0).
func (p xyzz[F, PF, J]) jac() J {
	var r struct{ X, Y, Z F }
	if PF(&p.ZZ).IsZero() {
		PF(&r.X).SetOne()
		PF(&r.Y).SetOne()
		return J(r)
	}
	var zzz2, zz3 F
	PF(&zzz2).Square(&p.ZZZ)
	PF(&zz3).Square(&p.ZZ)
	PF(&zz3).Mul(&zz3, &p.ZZ)
	PF(&r.X).Mul(&p.X, &p.ZZ)
	PF(&r.X).Mul(&r.X, &zzz2)
	PF(&r.Y).Mul(&p.Y, &zz3)
	PF(&r.Y).Mul(&r.Y, &zzz2)
	PF(&r.Z).Mul(&p.ZZ, &p.ZZZ)
	return J(r)
}

// msmBytesAs views b (from the device) as a slice of T.
func msmBytesAs[T any](b []byte) []T {
	var zero T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(zero)))
}

// jacobian is gnark-crypto's G1Jac or G2Jac (through a pointer): the
// result of an MSM, added and doubled on the host.
type jacobian[J any] interface {
	*J
	AddAssign(*J) *J
	DoubleAssign() *J
}

// windowSum is ec.cuh's g1_xyzz or g2_xyzz as the device writes a
// window's sum (msmXYZZ, msmXYZZ2), turned into J without an inversion.
// Its zero value is the point at infinity (ZZ = 0).
type windowSum[J any] interface {
	msmXYZZ | msmXYZZ2
	jac() J
}

// infinity is the point at infinity of J: the zero window sum's.
func infinity[J any, X windowSum[J]]() J {
	var zero X
	return zero.jac()
}

// combineWindows returns Σ_w 2^(c·w)·wsums[w] by Horner's rule, with
// gnark-crypto on the host (G1 or G2).
func combineWindows[J any, PJ jacobian[J], X windowSum[J]](wsums []X, c int) J {
	acc := wsums[len(wsums)-1].jac()
	for w := len(wsums) - 2; w >= 0; w-- {
		for range c {
			PJ(&acc).DoubleAssign()
		}
		j := wsums[w].jac()
		PJ(&acc).AddAssign(&j)
	}
	return acc
}

// Compile-time checks that the Go mirrors match the C layouts.
var (
	_ [msmAffineBytes - int(unsafe.Sizeof(curve.G1Affine{}))]struct{}
	_ [int(unsafe.Sizeof(curve.G1Affine{})) - msmAffineBytes]struct{}
	_ [msmXYZZBytes - int(unsafe.Sizeof(msmXYZZ{}))]struct{}
	_ [int(unsafe.Sizeof(msmXYZZ{})) - msmXYZZBytes]struct{}
	_ [msmAffine2Bytes - int(unsafe.Sizeof(curve.G2Affine{}))]struct{}
	_ [int(unsafe.Sizeof(curve.G2Affine{})) - msmAffine2Bytes]struct{}
	_ [msmXYZZ2Bytes - int(unsafe.Sizeof(msmXYZZ2{}))]struct{}
	_ [int(unsafe.Sizeof(msmXYZZ2{})) - msmXYZZ2Bytes]struct{}
	_ [msmScalarBytes - int(unsafe.Sizeof(fr.Element{}))]struct{}
)
