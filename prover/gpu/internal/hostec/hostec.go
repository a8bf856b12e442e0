// Package hostec compiles the GPU kernels' G1 arithmetic
// (prover/gpu/kernels/ec.cuh) as plain C++ through cgo, so that tests without
// a GPU check it against gnark-crypto's G1Jac and G1Affine. It exists for
// tests; the prover does not call it.
//
// Inputs in extended Jacobian coordinates (XYZZ: x = X/ZZ, y = Y/ZZZ) are
// given as the XYZZ type; every result comes back as a gnark G1Jac, through
// ec.cuh's own xyzz_to_jac. All calls are safe for concurrent use.
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

// XYZZ is ec.cuh's g1_xyzz: x = X/ZZ, y = Y/ZZZ, ZZ³ = ZZZ²; ZZ = 0 is the
// point at infinity. Limbs are Montgomery form, as in fp.Element.
type XYZZ struct {
	X, Y, ZZ, ZZZ fp.Element
}

// FromJac returns p in XYZZ coordinates (ZZ = Z², ZZZ = Z³), computed with
// gnark-crypto, so tests can feed the C++ code points whose Z is not 1.
func FromJac(p *curve.G1Jac) XYZZ {
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
			return fmt.Errorf("hostec: slice lengths differ (%d and %d)", n, l)
		}
	}
	return nil
}

// AddMixed returns p[i] + a[i] (ec.cuh xyzz_add_affine, madd-2008-s with
// the doubling and inverse cases handled). Lengths must match.
func AddMixed(p []XYZZ, a []curve.G1Affine) ([]curve.G1Jac, error) {
	if err := check(len(p), len(a)); err != nil || len(p) == 0 {
		return nil, err
	}
	out := make([]curve.G1Jac, len(p))
	C.he_add_affine(u64p(p), u64p(a), u64p(out), C.long(len(p)))
	return out, nil
}

// Add returns p[i] + q[i] (ec.cuh xyzz_add, add-2008-s). Lengths must match.
func Add(p, q []XYZZ) ([]curve.G1Jac, error) {
	if err := check(len(p), len(q)); err != nil || len(p) == 0 {
		return nil, err
	}
	out := make([]curve.G1Jac, len(p))
	C.he_add(u64p(p), u64p(q), u64p(out), C.long(len(p)))
	return out, nil
}

// Double returns 2·p[i] (ec.cuh xyzz_dbl, dbl-2008-s-1).
func Double(p []XYZZ) []curve.G1Jac {
	if len(p) == 0 {
		return nil
	}
	out := make([]curve.G1Jac, len(p))
	C.he_dbl(u64p(p), u64p(out), C.long(len(p)))
	return out
}

// MulSmall returns k[i]·p[i] (ec.cuh xyzz_mul_u32). Lengths must match.
func MulSmall(p []XYZZ, k []uint32) ([]curve.G1Jac, error) {
	if err := check(len(p), len(k)); err != nil || len(p) == 0 {
		return nil, err
	}
	out := make([]curve.G1Jac, len(p))
	C.he_mul_u32(u64p(p), (*C.uint)(unsafe.Pointer(&k[0])), u64p(out), C.long(len(p)))
	return out, nil
}

// FromAffine returns a[i] as a G1Jac through ec.cuh's xyzz_from_affine
// (gnark's (0, 0) is infinity).
func FromAffine(a []curve.G1Affine) []curve.G1Jac {
	if len(a) == 0 {
		return nil
	}
	out := make([]curve.G1Jac, len(a))
	C.he_from_affine(u64p(a), u64p(out), C.long(len(a)))
	return out
}

// EqualAffine reports whether p[i] and a[i] are the same point (ec.cuh
// xyzz_eq_affine). Lengths must match.
func EqualAffine(p []XYZZ, a []curve.G1Affine) ([]bool, error) {
	if err := check(len(p), len(a)); err != nil || len(p) == 0 {
		return nil, err
	}
	res := make([]C.int, len(p))
	C.he_eq_affine(u64p(p), u64p(a), &res[0], C.long(len(p)))
	out := make([]bool, len(p))
	for i, r := range res {
		out[i] = r != 0
	}
	return out, nil
}
