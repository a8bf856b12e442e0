// Package hostec2 compiles the GPU kernels' Fp2 and G2 arithmetic
// (prover/gpu/kernels/fp2.cuh and the G2 instances of ec.cuh) as plain C++ through cgo, so
// that tests without a GPU check it against gnark-crypto's E2, G2Jac and
// G2Affine. It exists for tests; the prover does not call it.
//
// Inputs in extended Jacobian coordinates (XYZZ: x = X/ZZ, y = Y/ZZZ) are
// given as the XYZZ type; every point result comes back as a gnark G2Jac,
// through ec.cuh's own xyzz_to_jac. All calls are safe for concurrent use.
package hostec2

/*
#cgo CXXFLAGS: -O2 -std=c++17 -I${SRCDIR}/../../kernels
#include "hostec2.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
)

// Op selects the fp2.cuh operation that Fp2 applies element by element.
type Op int

// The operations of fp2.cuh. Unary ones ignore b; OpEq and OpIsZero write 1
// or 0 (not in Montgomery form) into z[i].A0[0]; OpOne and OpZero ignore a
// and b.
const (
	OpAdd Op = iota
	OpSub
	OpMul
	OpSqr
	OpNeg
	OpDbl
	OpConjugate
	OpInverse
	OpEq
	OpOne
	OpZero
	OpIsZero
	numOps
)

// XYZZ is ec_g2.cuh's g2_xyzz (gnark's unexported g2JacExtended): x = X/ZZ,
// y = Y/ZZZ, ZZ³ = ZZZ²; ZZ = 0 is the point at infinity.
type XYZZ struct {
	X, Y, ZZ, ZZZ curve.E2
}

// FromJac returns p in XYZZ coordinates (ZZ = Z², ZZZ = Z³), computed with
// gnark-crypto, so tests can feed the C++ code points whose Z is not 1.
func FromJac(p *curve.G2Jac) XYZZ {
	var r XYZZ
	r.X, r.Y = p.X, p.Y
	r.ZZ.Square(&p.Z)
	r.ZZZ.Mul(&r.ZZ, &p.Z)
	return r
}

func u64p[T any](s []T) *C.ulonglong { return (*C.ulonglong)(unsafe.Pointer(&s[0])) }

func check(n int, lens ...int) error {
	for _, l := range lens {
		if l != n {
			return fmt.Errorf("hostec2: slice lengths differ (%d and %d)", n, l)
		}
	}
	return nil
}

// Sizes returns the C++ sizes in bytes of fp2_t, g2_affine, g2_jac and
// g2_xyzz, which must equal those of gnark's E2, G2Affine, G2Jac and XYZZ
// for the byte-for-byte upload to hold.
func Sizes() [4]int {
	var s [4]C.long
	C.h2_sizes(&s[0])
	return [4]int{int(s[0]), int(s[1]), int(s[2]), int(s[3])}
}

// Fp2 sets z[i] = op(a[i], b[i]) with fp2.cuh's fp2_t. a, b and z must have
// the same length; b may be nil for unary ops. An unknown op is an error.
func Fp2(op Op, z, a, b []curve.E2) error {
	if op < 0 || op >= numOps {
		return fmt.Errorf("hostec2: unknown Fp2 op %d", op)
	}
	if b == nil {
		b = a
	}
	if err := check(len(z), len(a), len(b)); err != nil || len(z) == 0 {
		return err
	}
	if C.h2_fp2(C.int(op), u64p(a), u64p(b), u64p(z), C.long(len(z))) != 0 {
		return fmt.Errorf("hostec2: fp2.cuh rejected op %d", op)
	}
	return nil
}

// MulFp sets z[i] = a[i]·f[i] with f[i] in Fp (fp2.cuh mul_fp).
func MulFp(z, a []curve.E2, f []fp.Element) error {
	if err := check(len(z), len(a), len(f)); err != nil || len(z) == 0 {
		return err
	}
	C.h2_fp2_mul_fp(u64p(a), u64p(f), u64p(z), C.long(len(z)))
	return nil
}

// Norm returns a[i].A0² + a[i].A1² in Fp (fp2.cuh norm).
func Norm(a []curve.E2) []fp.Element {
	if len(a) == 0 {
		return nil
	}
	out := make([]fp.Element, len(a))
	C.h2_fp2_norm(u64p(a), u64p(out), C.long(len(a)))
	return out
}

// AddMixed returns p[i] + a[i] (ec_g2.cuh xyzz_add_affine, madd-2008-s with
// the doubling and inverse cases handled). Lengths must match.
func AddMixed(p []XYZZ, a []curve.G2Affine) ([]curve.G2Jac, error) {
	if err := check(len(p), len(a)); err != nil || len(p) == 0 {
		return nil, err
	}
	out := make([]curve.G2Jac, len(p))
	C.h2_add_affine(u64p(p), u64p(a), u64p(out), C.long(len(p)))
	return out, nil
}

// Add returns p[i] + q[i] (ec_g2.cuh xyzz_add, add-2008-s). Lengths must match.
func Add(p, q []XYZZ) ([]curve.G2Jac, error) {
	if err := check(len(p), len(q)); err != nil || len(p) == 0 {
		return nil, err
	}
	out := make([]curve.G2Jac, len(p))
	C.h2_add(u64p(p), u64p(q), u64p(out), C.long(len(p)))
	return out, nil
}

// Double returns 2·p[i] (ec_g2.cuh xyzz_dbl, dbl-2008-s-1).
func Double(p []XYZZ) []curve.G2Jac {
	if len(p) == 0 {
		return nil
	}
	out := make([]curve.G2Jac, len(p))
	C.h2_dbl(u64p(p), u64p(out), C.long(len(p)))
	return out
}

// Neg returns −p[i] (ec_g2.cuh xyzz_neg).
func Neg(p []XYZZ) []curve.G2Jac {
	if len(p) == 0 {
		return nil
	}
	out := make([]curve.G2Jac, len(p))
	C.h2_neg(u64p(p), u64p(out), C.long(len(p)))
	return out
}

// MulSmall returns k[i]·p[i] (ec_g2.cuh xyzz_mul_u32). Lengths must match.
func MulSmall(p []XYZZ, k []uint32) ([]curve.G2Jac, error) {
	if err := check(len(p), len(k)); err != nil || len(p) == 0 {
		return nil, err
	}
	out := make([]curve.G2Jac, len(p))
	C.h2_mul_u32(u64p(p), (*C.uint)(unsafe.Pointer(&k[0])), u64p(out), C.long(len(p)))
	return out, nil
}

// FromAffine returns a[i] as a G2Jac through ec_g2.cuh's xyzz_from_affine
// (gnark's (0, 0) is infinity).
func FromAffine(a []curve.G2Affine) []curve.G2Jac {
	if len(a) == 0 {
		return nil
	}
	out := make([]curve.G2Jac, len(a))
	C.h2_from_affine(u64p(a), u64p(out), C.long(len(a)))
	return out
}

func bools(res []C.int) []bool {
	out := make([]bool, len(res))
	for i, r := range res {
		out[i] = r != 0
	}
	return out
}

// EqualAffine reports whether p[i] and a[i] are the same point (ec_g2.cuh
// xyzz_eq_affine). Lengths must match.
func EqualAffine(p []XYZZ, a []curve.G2Affine) ([]bool, error) {
	if err := check(len(p), len(a)); err != nil || len(p) == 0 {
		return nil, err
	}
	res := make([]C.int, len(p))
	C.h2_eq_affine(u64p(p), u64p(a), &res[0], C.long(len(p)))
	return bools(res), nil
}

// OnCurve reports whether a[i] satisfies y² = x³ + 4(1 + u) (ec_g2.cuh
// affine_is_on_curve; infinity counts as on the curve).
func OnCurve(a []curve.G2Affine) []bool {
	if len(a) == 0 {
		return nil
	}
	res := make([]C.int, len(a))
	C.h2_on_curve(u64p(a), &res[0], C.long(len(a)))
	return bools(res)
}

// BucketSum returns the sum of a[i], or of −a[i] where neg[i], accumulated
// as a Pippenger bucket is: xyzz_add_affine_inline from infinity, signs by
// affine_neg. Lengths must match; the sum of nothing is infinity.
func BucketSum(a []curve.G2Affine, neg []bool) (curve.G2Jac, error) {
	var out [1]curve.G2Jac
	if err := check(len(a), len(neg)); err != nil {
		return out[0], err
	}
	if len(a) == 0 {
		out[0].X.SetOne()
		out[0].Y.SetOne()
		return out[0], nil
	}
	flags := make([]C.uchar, len(a))
	for i, n := range neg {
		if n {
			flags[i] = 1
		}
	}
	C.h2_bucket_sum(u64p(a), &flags[0], u64p(out[:]), C.long(len(a)))
	return out[0], nil
}
