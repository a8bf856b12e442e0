// Package hostarith compiles the GPU kernels' field arithmetic
// (prover/gpu/kernels/ff.cuh) as plain C++ through cgo, so that tests without
// a GPU check it against gnark-crypto. It exists for tests; the prover does
// not call it.
package hostarith

/*
#cgo CXXFLAGS: -O2 -std=c++17 -I${SRCDIR}/../../kernels
#include "hostarith.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// Op selects the ff.cuh operation that Fr and Fp apply element by element.
type Op int

// The operations of ff.cuh. Unary ones ignore b; OpEq writes 1 or 0 (not in
// Montgomery form) into the low limb of z[i]; OpOne and OpZero ignore a and b.
// OpMulEvenOdd and OpMulPTX are a·b by mul_evenodd (the device's
// multiplication with FF_MUL_EVENODD=1) and mul_ptx (the default one), run
// through the host emulation of their PTX carry chains; OpAddPTX and
// OpSubPTX likewise are the device's a+b and a−b (add_ptx and sub_ptx,
// FF_PTX_ADDSUB=1, the default).
const (
	OpAdd Op = iota
	OpSub
	OpMul
	OpSqr
	OpNeg
	OpDbl
	OpToMont
	OpFromMont
	OpInverse
	OpEq
	OpOne
	OpZero
	OpMulEvenOdd
	OpMulPTX
	OpAddPTX
	OpSubPTX
)

func checkLens(n int, lens ...int) error {
	for _, l := range lens {
		if l != n {
			return fmt.Errorf("hostarith: slice lengths differ (%d and %d)", n, l)
		}
	}
	return nil
}

// Fr sets z[i] = op(a[i], b[i]) over the scalar field with ff.cuh's fr_t.
// a, b and z must have the same length; b may be nil for unary ops.
func Fr(op Op, z, a, b []fr.Element) error { return apply(op, z, a, b, false) }

// Fp sets z[i] = op(a[i], b[i]) over the base field with ff.cuh's fp_t.
// a, b and z must have the same length; b may be nil for unary ops.
func Fp(op Op, z, a, b []fp.Element) error { return apply(op, z, a, b, true) }

// apply runs op element by element, with fp_t when base is set, else fr_t.
func apply[E fr.Element | fp.Element](op Op, z, a, b []E, base bool) error {
	if b == nil {
		b = a
	}
	if err := checkLens(len(z), len(a), len(b)); err != nil {
		return err
	}
	if len(z) == 0 {
		return nil
	}
	pa, pb, pz := (*C.ulonglong)(unsafe.Pointer(&a[0])), (*C.ulonglong)(unsafe.Pointer(&b[0])), (*C.ulonglong)(unsafe.Pointer(&z[0]))
	if base {
		C.ha_fp(C.int(op), pa, pb, pz, C.long(len(z)))
	} else {
		C.ha_fr(C.int(op), pa, pb, pz, C.long(len(z)))
	}
	return nil
}

// FrPow returns a^e with ff.cuh's fr_t::pow; e is little-endian 64-bit limbs.
func FrPow(a fr.Element, e []uint64) fr.Element {
	var z fr.Element
	var e0 uint64
	p := &e0
	if len(e) > 0 {
		p = &e[0]
	}
	C.ha_fr_pow((*C.ulonglong)(unsafe.Pointer(&a[0])), (*C.ulonglong)(unsafe.Pointer(p)), C.int(len(e)),
		(*C.ulonglong)(unsafe.Pointer(&z[0])))
	return z
}
