package cudaspans

import (
	"testing"
	"unsafe"
)

func TestAsBytesViewsTheSliceMemoryWithoutACopy(t *testing.T) {
	if b := AsBytes([]uint64(nil)); b != nil {
		t.Fatalf("AsBytes(nil) = %v, want nil", b)
	}
	type pair struct{ a, b uint32 }
	v := []pair{{1, 2}, {3, 4}, {5, 6}}
	b := AsBytes(v)
	if len(b) != len(v)*int(unsafe.Sizeof(v[0])) {
		t.Fatalf("len = %d, want %d", len(b), len(v)*8)
	}
	if unsafe.Pointer(&b[0]) != unsafe.Pointer(&v[0]) {
		t.Fatal("AsBytes copied the slice")
	}
	b[8] = 9 // little-endian: the low byte of v[1].a
	if v[1].a != 9 {
		t.Fatalf("a write through the view did not reach the slice: %+v", v[1])
	}
}
