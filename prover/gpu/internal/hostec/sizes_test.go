package hostec

import (
	"testing"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
)

func TestSizesMatchGnark(t *testing.T) {
	want := [7]int{
		int(unsafe.Sizeof(curve.E2{})),
		int(unsafe.Sizeof(curve.G2Affine{})),
		int(unsafe.Sizeof(curve.G2Jac{})),
		int(unsafe.Sizeof(G2XYZZ{})),
		int(unsafe.Sizeof(curve.G1Affine{})),
		int(unsafe.Sizeof(curve.G1Jac{})),
		int(unsafe.Sizeof(G1XYZZ{})),
	}
	if got := Sizes(); got != want {
		t.Fatalf("C++ sizes %v, gnark's %v", got, want)
	}
}
