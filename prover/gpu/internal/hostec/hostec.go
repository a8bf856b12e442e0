// Package hostec compiles the GPU kernels' curve arithmetic
// (prover/gpu/kernels/ec.cuh, one template over the coordinate field: Fp
// for G1, fp2.cuh's Fp2 for G2) as plain C++ through cgo, so that tests
// without a GPU check it against gnark-crypto's G1Jac and G2Jac. It exists
// for tests; the prover does not call it. The field arithmetic itself (Fr,
// Fp, Fp2) is package hostarith's.
//
// The point operations are methods of G1 and G2 (one generic
// implementation, Group): inputs in extended Jacobian coordinates (XYZZ:
// x = X/ZZ, y = Y/ZZZ) and gnark affine points, results as gnark Jacobian
// points through ec.cuh's own xyzz_to_jac. All calls are safe for
// concurrent use.
package hostec

/*
#cgo CXXFLAGS: -O2 -std=c++17 -I${SRCDIR}/../../kernels
#include "hostec.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
)

// Coord is a coordinate field: Fp for G1, Fp2 for G2.
type Coord interface{ fp.Element | curve.E2 }

// XYZZ is ec.cuh's xyzz_t<F> (g1_xyzz, g2_xyzz; gnark's unexported
// g1JacExtended, g2JacExtended): x = X/ZZ, y = Y/ZZZ, ZZ³ = ZZZ²; ZZ = 0
// is the point at infinity. Montgomery form, as gnark-crypto's elements.
type XYZZ[F Coord] struct {
	X, Y, ZZ, ZZZ F
}

// G1XYZZ and G2XYZZ are the XYZZ points of G1 and G2.
type (
	G1XYZZ = XYZZ[fp.Element]
	G2XYZZ = XYZZ[curve.E2]
)

// Group is G1 or G2 of BLS12-381 as gnark-crypto types it: affine points
// A, Jacobian points J, coordinates F. Its methods run ec.cuh's functions
// for that group.
type Group[A, J any, F Coord] struct{ g2 C.int }

// G1 and G2 are the two groups.
var (
	G1 = Group[curve.G1Affine, curve.G1Jac, fp.Element]{0}
	G2 = Group[curve.G2Affine, curve.G2Jac, curve.E2]{1}
)

func u64p[T any](s []T) *C.ulonglong { return (*C.ulonglong)(unsafe.Pointer(&s[0])) }

func check(n int, lens ...int) error {
	for _, l := range lens {
		if l != n {
			return fmt.Errorf("hostec: slice lengths differ (%d and %d)", n, l)
		}
	}
	return nil
}

// FromJac returns p in XYZZ coordinates (ZZ = Z², ZZZ = Z³), computed with
// gnark-crypto, so tests can feed the C++ code points whose Z is not 1.
func (Group[A, J, F]) FromJac(p *J) XYZZ[F] {
	var r XYZZ[F]
	switch q := any(p).(type) {
	case *curve.G1Jac:
		x := any(&r).(*G1XYZZ)
		x.X, x.Y = q.X, q.Y
		x.ZZ.Square(&q.Z)
		x.ZZZ.Mul(&x.ZZ, &q.Z)
	case *curve.G2Jac:
		x := any(&r).(*G2XYZZ)
		x.X, x.Y = q.X, q.Y
		x.ZZ.Square(&q.Z)
		x.ZZZ.Mul(&x.ZZ, &q.Z)
	}
	return r
}

// each returns out[i] = f(in[i]) through f, a C function over n
// elements; nil for none.
func each[In, Out any](in []In, f func(in, out *C.ulonglong, n C.long)) []Out {
	if len(in) == 0 {
		return nil
	}
	out := make([]Out, len(in))
	f(u64p(in), u64p(out), C.long(len(in)))
	return out
}

// pairwise returns out[i] = f(p[i], q[i]) through f, a C function over n
// pairs; nil for none. Lengths must match.
func pairwise[P, Q, Out any](p []P, q []Q, f func(p, q, out *C.ulonglong, n C.long)) ([]Out, error) {
	if err := check(len(p), len(q)); err != nil || len(p) == 0 {
		return nil, err
	}
	out := make([]Out, len(p))
	f(u64p(p), u64p(q), u64p(out), C.long(len(p)))
	return out, nil
}

// AddMixed returns p[i] + a[i] (ec.cuh xyzz_add_affine, madd-2008-s with
// the doubling and inverse cases handled). Lengths must match.
func (g Group[A, J, F]) AddMixed(p []XYZZ[F], a []A) ([]J, error) {
	return pairwise[XYZZ[F], A, J](p, a, func(p, a, out *C.ulonglong, n C.long) { C.hec_add_affine(g.g2, p, a, out, n) })
}

// Add returns p[i] + q[i] (ec.cuh xyzz_add, add-2008-s). Lengths must match.
func (g Group[A, J, F]) Add(p, q []XYZZ[F]) ([]J, error) {
	return pairwise[XYZZ[F], XYZZ[F], J](p, q, func(p, q, out *C.ulonglong, n C.long) { C.hec_add(g.g2, p, q, out, n) })
}

// Double returns 2·p[i] (ec.cuh xyzz_dbl, dbl-2008-s-1).
func (g Group[A, J, F]) Double(p []XYZZ[F]) []J {
	return each[XYZZ[F], J](p, func(p, out *C.ulonglong, n C.long) { C.hec_dbl(g.g2, p, out, n) })
}

// Neg returns −p[i] (ec.cuh xyzz_neg).
func (g Group[A, J, F]) Neg(p []XYZZ[F]) []J {
	return each[XYZZ[F], J](p, func(p, out *C.ulonglong, n C.long) { C.hec_neg(g.g2, p, out, n) })
}

// MulSmall returns k[i]·p[i] (ec.cuh xyzz_mul_u32). Lengths must match.
func (g Group[A, J, F]) MulSmall(p []XYZZ[F], k []uint32) ([]J, error) {
	return pairwise[XYZZ[F], uint32, J](p, k, func(p, k, out *C.ulonglong, n C.long) {
		C.hec_mul_u32(g.g2, p, (*C.uint)(unsafe.Pointer(k)), out, n)
	})
}

// FromAffine returns a[i] as a Jacobian point through ec.cuh's
// xyzz_from_affine (gnark's (0, 0) is infinity).
func (g Group[A, J, F]) FromAffine(a []A) []J {
	return each[A, J](a, func(a, out *C.ulonglong, n C.long) { C.hec_from_affine(g.g2, a, out, n) })
}

func bools(res []C.int) []bool {
	out := make([]bool, len(res))
	for i, r := range res {
		out[i] = r != 0
	}
	return out
}

// EqualAffine reports whether p[i] and a[i] are the same point (ec.cuh
// xyzz_eq_affine). Lengths must match.
func (g Group[A, J, F]) EqualAffine(p []XYZZ[F], a []A) ([]bool, error) {
	if err := check(len(p), len(a)); err != nil || len(p) == 0 {
		return nil, err
	}
	res := make([]C.int, len(p))
	C.hec_eq_affine(g.g2, u64p(p), u64p(a), &res[0], C.long(len(p)))
	return bools(res), nil
}

// OnCurve reports whether a[i] is on the curve (ec.cuh affine_is_on_curve:
// y² = x³ + 4 on G1, x³ + 4(1 + u) on G2; infinity counts as on it).
func (g Group[A, J, F]) OnCurve(a []A) []bool {
	if len(a) == 0 {
		return nil
	}
	res := make([]C.int, len(a))
	C.hec_on_curve(g.g2, u64p(a), &res[0], C.long(len(a)))
	return bools(res)
}

// BucketSum returns the sum of a[i], or of −a[i] where neg[i], accumulated
// as a Pippenger bucket is: xyzz_add_affine_inline from infinity, signs by
// affine_neg. Lengths must match; the sum of nothing is infinity.
func (g Group[A, J, F]) BucketSum(a []A, neg []bool) (J, error) {
	var out [1]J
	if err := check(len(a), len(neg)); err != nil {
		return out[0], err
	}
	flags := make([]C.uchar, len(a)+1) // one more, so &flags[0] exists for no points
	for i, n := range neg {
		if n {
			flags[i] = 1
		}
	}
	var none [1]A // the points when there are none: not read
	pts := a
	if len(a) == 0 {
		pts = none[:]
	}
	C.hec_bucket_sum(g.g2, u64p(pts), &flags[0], u64p(out[:]), C.long(len(a)))
	return out[0], nil
}

// Sizes returns the C++ sizes in bytes of fp2_t, g2_affine, g2_jac,
// g2_xyzz, g1_affine, g1_jac and g1_xyzz, which must equal those of
// gnark's E2, G2Affine, G2Jac, G2XYZZ, G1Affine, G1Jac and G1XYZZ for the
// byte-for-byte upload to hold.
func Sizes() [7]int {
	var s [7]C.long
	C.hec_sizes(&s[0])
	var out [7]int
	for i := range s {
		out[i] = int(s[i])
	}
	return out
}
