// Package hostarith compiles the GPU kernels' field arithmetic
// (prover/gpu/kernels/ff.cuh: Fr and Fp; fp2.cuh: Fp2) and the NTT
// (ntt.cuh) as plain C++ through cgo, so that tests without a GPU check it
// against gnark-crypto. It exists for tests; the prover does not call it.
package hostarith

/*
#cgo CXXFLAGS: -O2 -std=c++17 -I${SRCDIR}/../../kernels
#include "hostarith.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// Op selects the operation that Fr, Fp and Fp2 apply element by element.
type Op int

// The operations of ff.cuh and fp2.cuh. Unary ones ignore b; OpEq and
// OpIsZero write 1 or 0 (not in Montgomery form) into the lowest limb of
// z[i]; OpOne and OpZero ignore a and b. OpMulEvenOdd and OpMulPTX are a·b
// by mul_evenodd (the device's multiplication with FF_MUL_EVENODD=1) and
// mul_ptx (the default one), run through the host emulation of their PTX
// carry chains; OpAddPTX and OpSubPTX likewise are the device's a+b and
// a−b (add_ptx and sub_ptx, FF_PTX_ADDSUB=1, the default). Fr and Fp lack
// OpConjugate and OpIsZero; Fp2 lacks OpToMont, OpFromMont and the PTX and
// even-odd variants: those are an error.
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
	OpConjugate
	OpIsZero
	numOps
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
func Fr(op Op, z, a, b []fr.Element) error { return apply("Fr", op, z, a, b) }

// Fp sets z[i] = op(a[i], b[i]) over the base field with ff.cuh's fp_t.
// a, b and z must have the same length; b may be nil for unary ops.
func Fp(op Op, z, a, b []fp.Element) error { return apply("Fp", op, z, a, b) }

// Fp2 sets z[i] = op(a[i], b[i]) with fp2.cuh's fp2_t. a, b and z must
// have the same length; b may be nil for unary ops.
func Fp2(op Op, z, a, b []curve.E2) error { return apply("Fp2", op, z, a, b) }

// apply runs op element by element with the C++ type of E's field (named
// field in errors). Errors: an op out of range or that the field lacks,
// slices of different lengths.
func apply[E fr.Element | fp.Element | curve.E2](field string, op Op, z, a, b []E) error {
	if op < 0 || op >= numOps {
		return fmt.Errorf("hostarith: unknown %s op %d", field, op)
	}
	if b == nil {
		b = a
	}
	if err := checkLens(len(z), len(a), len(b)); err != nil || len(z) == 0 {
		return err
	}
	pa, pb, pz := u64p(a), u64p(b), u64p(z)
	var r C.int
	switch any(z).(type) {
	case []fr.Element:
		r = C.ha_fr(C.int(op), pa, pb, pz, C.long(len(z)))
	case []fp.Element:
		r = C.ha_fp(C.int(op), pa, pb, pz, C.long(len(z)))
	default:
		r = C.ha_fp2(C.int(op), pa, pb, pz, C.long(len(z)))
	}
	if r != 0 {
		return fmt.Errorf("hostarith: %s has no op %d", field, op)
	}
	return nil
}

// MulFp sets z[i] = a[i]·f[i] with f[i] in Fp (fp2.cuh mul_fp). Lengths
// must match.
func MulFp(z, a []curve.E2, f []fp.Element) error {
	if err := checkLens(len(z), len(a), len(f)); err != nil || len(z) == 0 {
		return err
	}
	C.ha_fp2_mul_fp(u64p(a), u64p(f), u64p(z), C.long(len(z)))
	return nil
}

// Norm returns a[i].A0² + a[i].A1² in Fp (fp2.cuh norm).
func Norm(a []curve.E2) []fp.Element {
	if len(a) == 0 {
		return nil
	}
	out := make([]fp.Element, len(a))
	C.ha_fp2_norm(u64p(a), u64p(out), C.long(len(a)))
	return out
}

// u64p is the first element of s as the C side's limbs.
func u64p[T any](s []T) *C.ulonglong { return (*C.ulonglong)(unsafe.Pointer(&s[0])) }

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
