package circuits

import (
	"errors"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
)

func TestRangeCheckHitsRequestedSizeWithACommitment(t *testing.T) {
	for _, n := range []int{rangeCheckMin, 1000, 1 << 12} {
		ccs, in := compileAndSolve(t, "rangecheck", n)
		if got := ccs.GetNbConstraints(); got != n {
			t.Errorf("rangecheck(%d) %s: %d constraints", n, in.Shape, got)
		}
		info := ccs.GetCommitments().(constraint.Groth16Commitments)
		if len(info) != 1 {
			t.Errorf("rangecheck(%d): %d commitments, want 1", n, len(info))
		} else if got, want := CommittedWires(ccs), len(info[0].PrivateCommitted); got != want || got == 0 {
			t.Errorf("rangecheck(%d): CommittedWires = %d, want %d (> 0)", n, got, want)
		}
	}
	if _, err := Build("rangecheck", rangeCheckMin-1); !errors.Is(err, ErrBadConstraints) {
		t.Errorf("rangecheck below its minimum: %v, want ErrBadConstraints", err)
	}
}

func TestRangeCheckRejectsAValueOutOfRange(t *testing.T) {
	ccs, in := compile(t, "rangecheck", 1000)
	a, err := in.Assignment(3)
	if err != nil {
		t.Fatal(err)
	}
	bad := a.(*RangeCheck)
	// 2^64 is out of range; Out is recomputed, so only the range check
	// can fail.
	var two64 fr.Element
	two64.SetString("18446744073709551616")
	bad.Vals[0] = two64
	acc := bad.X.(fr.Element)
	one := fr.One()
	for _, v := range bad.Vals {
		x := v.(fr.Element)
		acc.Square(&acc).Add(&acc, &x)
	}
	for i := 0; i < bad.filler; i++ {
		acc.Square(&acc).Add(&acc, &one)
	}
	bad.Out = acc
	requireSolve(t, ccs, bad, false, "a value of 2^64 in a 64-bit range check")
	// The same values below 2^64 satisfy the circuit (the chain is right).
	good, _ := in.Assignment(3)
	requireSolve(t, ccs, good, true, "the sample witness")
}
