package hostec

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
)

var rng2 = rand.New(rand.NewPCG(21, 22))

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

func randE2(t *testing.T) curve.E2 {
	t.Helper()
	var z curve.E2
	if _, err := z.SetRandom(); err != nil {
		t.Fatal(err)
	}
	return z
}
