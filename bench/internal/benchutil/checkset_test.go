package benchutil

import (
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// The check set holds each edge case at its index mod 7 and leaves the
// caller's points as they were.
func TestEdgeCheckSetMixesTheEdgeCasesInByIndex(t *testing.T) {
	_, _, g1, _ := curve.Generators()
	points := curve.BatchScalarMultiplicationG1(&g1, RandomScalars(64))
	orig := append([]curve.G1Affine(nil), points...)
	pts, sc := EdgeCheckSet(points)
	if len(pts) != len(points) || len(sc) != len(points) {
		t.Fatalf("lengths %d, %d; want %d", len(pts), len(sc), len(points))
	}
	var one, rm1 fr.Element
	one.SetOne()
	rm1.Neg(&one)
	for i := range pts {
		if !points[i].Equal(&orig[i]) {
			t.Fatalf("point %d of the input changed", i)
		}
		switch i % 7 {
		case 1:
			if !sc[i].Equal(&rm1) {
				t.Errorf("scalar %d = %s, want r-1", i, sc[i].String())
			}
		case 2:
			if !sc[i].IsZero() {
				t.Errorf("scalar %d = %s, want 0", i, sc[i].String())
			}
		case 3:
			if !sc[i].IsOne() {
				t.Errorf("scalar %d = %s, want 1", i, sc[i].String())
			}
		case 4:
			if !pts[i].IsInfinity() {
				t.Errorf("point %d is not the point at infinity", i)
			}
		case 5:
			if !pts[i].Equal(&pts[i-5]) {
				t.Errorf("point %d is not point %d again", i, i-5)
			}
		default:
			if !pts[i].Equal(&points[i]) {
				t.Errorf("point %d is not the input's", i)
			}
		}
	}
}

func TestRepeatCyclesThePoints(t *testing.T) {
	got := Repeat([]int{1, 2, 3}, 7)
	want := []int{1, 2, 3, 1, 2, 3, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Repeat = %v, want %v", got, want)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("Repeat = %v, want %v", got, want)
	}
}
