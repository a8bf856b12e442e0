// Package hostbatch compiles the GPU's batch addition
// (prover/gpu/kernels/batchadd.cuh: a tree of pairwise affine additions,
// one inversion per batch by Montgomery's trick) as plain C++ through
// cgo, so that tests without a GPU check it against gnark-crypto. It
// exists for tests; the prover does not call it.
package hostbatch

/*
#cgo CXXFLAGS: -O2 -std=c++17 -I${SRCDIR}/../../kernels
#include "hostbatch.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
)

// Point is an affine point of G1 or G2 as gnark-crypto lays it out.
type Point interface {
	curve.G1Affine | curve.G2Affine
}

// Sum returns the sum of bases[idx[i]] over i (of every base when idx is
// nil), computed by batchadd.cuh's levels with each level's pairs split
// among workers strided workers (≥ 1), as the GPU's threads split them.
// Errors: workers < 1, an index out of range.
func Sum[A Point](bases []A, idx []uint32, workers int) (A, error) {
	var out A
	if workers < 1 {
		return out, fmt.Errorf("hostbatch: %d workers", workers)
	}
	m := len(bases)
	var ip *C.uint
	if idx != nil {
		m = len(idx)
		for _, i := range idx {
			if int(i) >= len(bases) {
				return out, fmt.Errorf("hostbatch: index %d of %d bases", i, len(bases))
			}
		}
		if m > 0 {
			ip = (*C.uint)(unsafe.Pointer(&idx[0]))
		}
	}
	if m > 0 && len(bases) == 0 {
		return out, errors.New("hostbatch: indices without bases")
	}
	g2 := C.int(0)
	if _, ok := any(out).(curve.G2Affine); ok {
		g2 = 1
	}
	scratch := make([]A, (m+1)/2+(m+3)/4+1)
	var bp *C.ulonglong
	if len(bases) > 0 {
		bp = (*C.ulonglong)(unsafe.Pointer(&bases[0]))
	}
	C.hba_sum(g2, bp, ip, C.long(m), C.long(workers),
		(*C.ulonglong)(unsafe.Pointer(&scratch[0])), (*C.ulonglong)(unsafe.Pointer(&out)))
	return out, nil
}
