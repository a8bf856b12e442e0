// Package hostmsm compiles the GPU MSM's affine bucket sums
// (prover/gpu/kernels/msmaffine.cuh: levels of pairwise affine additions,
// one inversion per thread and level by Montgomery's trick) as plain C++
// through cgo, so that tests without a GPU check them against
// gnark-crypto. It exists for tests; the prover does not call it.
package hostmsm

/*
#cgo CXXFLAGS: -O2 -std=c++17 -I${SRCDIR}/../../kernels
#include "hostmsm.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
)

// NegFlag marks a negated point in a sorted entry (msm.cuh's MSM_NEG_FLAG).
const NegFlag = 1 << 31

// Point is an affine point of G1 or G2 and Jac its Jacobian form.
type Point interface {
	curve.G1Affine | curve.G2Affine
}

// BucketSums returns the sums of one window's buckets as the GPU's affine
// path computes them: bucket b is the entries sorted[offsets[b] :
// offsets[b]+counts[b]], each a base index, with NegFlag for −base. Each
// level's outputs are split among threads of per outputs, and the levels
// stop when no bucket holds more than tail points. J is the Jacobian
// type of A's group (G1Jac for G1Affine, G2Jac for G2Affine). It also
// returns the number of levels run. Errors: per or tail < 1, a bucket
// past the entries, an index out of range.
func BucketSums[A Point, J curve.G1Jac | curve.G2Jac](bases []A, sorted, counts, offsets []uint32, tail, per int) ([]J, int, error) {
	nb := len(counts)
	if per < 1 || tail < 1 {
		return nil, 0, fmt.Errorf("hostmsm: per %d, tail %d", per, tail)
	}
	if len(offsets) != nb || nb == 0 {
		return nil, 0, fmt.Errorf("hostmsm: %d counts, %d offsets", nb, len(offsets))
	}
	for b := range counts {
		if int(offsets[b])+int(counts[b]) > len(sorted) {
			return nil, 0, fmt.Errorf("hostmsm: bucket %d past the %d entries", b, len(sorted))
		}
	}
	for _, e := range sorted {
		if int(e&^NegFlag) >= len(bases) {
			return nil, 0, fmt.Errorf("hostmsm: index %d of %d bases", e&^NegFlag, len(bases))
		}
	}
	var a A
	g2 := C.int(0)
	if _, ok := any(a).(curve.G2Affine); ok {
		g2 = 1
	}
	scratch := make([]A, 2*(len(sorted)+nb))
	scratch32 := make([]uint32, 4*nb)
	out := make([]J, nb)
	var bp *C.ulonglong
	if len(bases) > 0 {
		bp = (*C.ulonglong)(unsafe.Pointer(&bases[0]))
	}
	var sp *C.uint
	if len(sorted) > 0 {
		sp = (*C.uint)(unsafe.Pointer(&sorted[0]))
	}
	levels := C.hmsm_bucket_sums(g2, bp, sp, (*C.uint)(unsafe.Pointer(&counts[0])), (*C.uint)(unsafe.Pointer(&offsets[0])),
		C.uint(nb), C.uint(tail), C.uint(per), (*C.ulonglong)(unsafe.Pointer(&scratch[0])),
		(*C.uint)(unsafe.Pointer(&scratch32[0])), (*C.ulonglong)(unsafe.Pointer(&out[0])))
	return out, int(levels), nil
}
