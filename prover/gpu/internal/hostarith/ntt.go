package hostarith

/*
#include "hostarith.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// Scale modes of an NTT pass (ntt.cuh ScaleMode).
const (
	ScaleNone      = 0
	ScaleConst     = 1
	ScaleTable     = 2
	ScaleTableBrev = 3
)

// Pass describes one launch of the ntt_pass kernel (ntt.cuh PassParams).
type Pass struct {
	LogN, LogMMin, T uint
	DIT              bool
	InMode, OutMode  int
}

func ptr(s []fr.Element) *C.ulonglong {
	if len(s) == 0 {
		return nil
	}
	return (*C.ulonglong)(unsafe.Pointer(&s[0]))
}

// NTTPass runs ntt.cuh's pass_block over every block of data on the host,
// as the ntt_pass kernel does on the device. tw is the twiddle table (n-1
// elements, ntt.cuh layout); the tables must hold n elements when their mode
// reads them.
func NTTPass(data, tw []fr.Element, p Pass, inTable []fr.Element, inC fr.Element,
	outTable []fr.Element, outC fr.Element) error {
	n := 1 << p.LogN
	if len(data) != n || len(tw) < n-1 {
		return fmt.Errorf("hostarith: NTTPass: data %d, twiddles %d, want %d and %d", len(data), len(tw), n, n-1)
	}
	if p.T == 0 || p.LogMMin+p.T > p.LogN || p.T > 10 {
		return fmt.Errorf("hostarith: NTTPass: bad pass %+v", p)
	}
	for _, m := range []struct {
		mode int
		tab  []fr.Element
	}{{p.InMode, inTable}, {p.OutMode, outTable}} {
		if (m.mode == ScaleTable || m.mode == ScaleTableBrev) && len(m.tab) != n {
			return fmt.Errorf("hostarith: NTTPass: scale table of %d elements, want %d", len(m.tab), n)
		}
	}
	dit := 0
	if p.DIT {
		dit = 1
	}
	C.ha_ntt_pass(ptr(data), ptr(tw), C.uint(p.LogN), C.uint(p.LogMMin), C.uint(p.T), C.int(dit),
		C.int(p.InMode), ptr(inTable), (*C.ulonglong)(unsafe.Pointer(&inC[0])),
		C.int(p.OutMode), ptr(outTable), (*C.ulonglong)(unsafe.Pointer(&outC[0])))
	return nil
}

// Powers sets out[i] = first·base^i, as the ntt_powers kernel does.
func Powers(out []fr.Element, base, first fr.Element) {
	if len(out) == 0 {
		return
	}
	C.ha_ntt_powers(ptr(out), (*C.ulonglong)(unsafe.Pointer(&base[0])),
		(*C.ulonglong)(unsafe.Pointer(&first[0])), C.uint(len(out)))
}

// Pointwise sets a[i] = (a[i]·b[i] − c[i])·den, as groth16_pointwise does.
func Pointwise(a, b, c []fr.Element, den fr.Element) error {
	if len(b) != len(a) || len(c) != len(a) {
		return fmt.Errorf("hostarith: Pointwise: lengths %d, %d, %d differ", len(a), len(b), len(c))
	}
	if len(a) == 0 {
		return nil
	}
	C.ha_pointwise(ptr(a), ptr(b), ptr(c), (*C.ulonglong)(unsafe.Pointer(&den[0])), C.uint(len(a)))
	return nil
}
