package hostec

/*
#include "hostec.h"
*/
import "C"

import (
	"fmt"

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

// Fp2 sets z[i] = op(a[i], b[i]) with fp2.cuh's fp2_t. a, b and z must have
// the same length; b may be nil for unary ops. An unknown op is an error.
func Fp2(op Op, z, a, b []curve.E2) error {
	if op < 0 || op >= numOps {
		return fmt.Errorf("hostec: unknown Fp2 op %d", op)
	}
	if b == nil {
		b = a
	}
	if err := check(len(z), len(a), len(b)); err != nil || len(z) == 0 {
		return err
	}
	if C.h2_fp2(C.int(op), u64p(a), u64p(b), u64p(z), C.long(len(z))) != 0 {
		return fmt.Errorf("hostec: fp2.cuh rejected op %d", op)
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
