// Package hostfixedbase compiles the GPU's fixed-base scalar
// multiplication (prover/gpu/kernels/fixedbase.cuh: the windowed table
// walk with signed digits and the batch affine conversion) as plain C++
// through cgo, so tests without a GPU check it against gnark-crypto. It
// exists for tests; the setup does not call it.
package hostfixedbase

/*
#cgo CXXFLAGS: -O2 -std=c++17 -I${SRCDIR}/../../kernels
#include "hostfixedbase.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// MulG1 returns [scalars[i]]₁ computed by fixedbase.cuh from table (the
// G1 window table of c bits), converted to affine in runs of group points
// (1 ≤ group ≤ 32).
func MulG1(scalars []fr.Element, table []curve.G1Affine, c, group int) ([]curve.G1Affine, error) {
	return mul(0, scalars, table, c, group)
}

// MulG2 is MulG1 in G2.
func MulG2(scalars []fr.Element, table []curve.G2Affine, c, group int) ([]curve.G2Affine, error) {
	return mul(1, scalars, table, c, group)
}

// mul runs hfb_mul in G1 (g2 0) or G2 (g2 1), P being that group's affine
// point.
func mul[P any](g2 C.int, scalars []fr.Element, table []P, c, group int) ([]P, error) {
	if err := check(len(table), c, group); err != nil {
		return nil, err
	}
	out := make([]P, len(scalars))
	if len(scalars) > 0 {
		C.hfb_mul(g2, (*C.ulonglong)(unsafe.Pointer(&scalars[0])), C.long(len(scalars)), (*C.ulonglong)(unsafe.Pointer(&table[0])),
			C.uint(c), C.uint(group), (*C.ulonglong)(unsafe.Pointer(&out[0])))
	}
	return out, nil
}

func check(tableLen, c, group int) error {
	if c < 2 || c > 20 || group < 1 || group > 32 {
		return fmt.Errorf("hostfixedbase: window %d or group %d out of range", c, group)
	}
	if want := (255/c + 1) << (c - 1); tableLen != want {
		return fmt.Errorf("hostfixedbase: table of %d points for window %d, want %d", tableLen, c, want)
	}
	return nil
}
