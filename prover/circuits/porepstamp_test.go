package circuits

import (
	"bytes"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
)

func serialized(t *testing.T, ccs constraint.ConstraintSystem) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := ccs.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The stamped porep is gnark's compile of the same shape byte for byte
// (its serialization, the key cache's hash input, levels included), with
// and without filler, for one to three challenges; and it solves.
func TestPoRepStampedIsGnarksCompile(t *testing.T) {
	for _, sh := range []struct{ k, depth, filler int }{{1, 2, 0}, {2, 2, 0}, {3, 2, 7}, {2, 3, 1}} {
		plain, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, newPoRepCircuit(sh.k, sh.depth, sh.filler), poRepCompileOptions...)
		if err != nil {
			t.Fatal(err)
		}
		st, err := compilePoRepStamped(sh.k, sh.depth, sh.filler)
		if err != nil {
			t.Fatalf("%+v: %v", sh, err)
		}
		p := plain.(*cs.R1CS)
		if st.NbConstraints != p.NbConstraints || st.NbInternalVariables != p.NbInternalVariables ||
			len(st.Instructions) != len(p.Instructions) || len(st.Levels) != len(p.Levels) {
			t.Fatalf("%+v: stamped %d constraints, %d internal, %d instructions, %d levels; compile %d, %d, %d, %d", sh,
				st.NbConstraints, st.NbInternalVariables, len(st.Instructions), len(st.Levels),
				p.NbConstraints, p.NbInternalVariables, len(p.Instructions), len(p.Levels))
		}
		for i := range p.Instructions {
			if st.Instructions[i] != p.Instructions[i] {
				t.Fatalf("%+v: instruction %d: stamped %+v, compile %+v", sh, i, st.Instructions[i], p.Instructions[i])
			}
		}
		for i := range p.CallData {
			if st.CallData[i] != p.CallData[i] {
				t.Fatalf("%+v: call data %d: stamped %d, compile %d", sh, i, st.CallData[i], p.CallData[i])
			}
		}
		if !bytes.Equal(serialized(t, st), serialized(t, plain)) {
			t.Fatalf("%+v: serialized systems differ", sh)
		}
		a, err := assignPoRep(int64(sh.k), sh.k, sh.depth, sh.filler)
		if err != nil {
			t.Fatal(err)
		}
		w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		ss, err := st.Solve(w)
		if err != nil {
			t.Fatalf("%+v: stamped system does not solve porep's witness: %v", sh, err)
		}
		ps, err := p.Solve(w)
		if err != nil {
			t.Fatal(err)
		}
		sw, pw := ss.(*cs.R1CSSolution).W, ps.(*cs.R1CSSolution).W
		if len(sw) != len(pw) {
			t.Fatalf("%+v: solutions of %d and %d wires", sh, len(sw), len(pw))
		}
		for i := range pw {
			if !sw[i].Equal(&pw[i]) {
				t.Fatalf("%+v: the stamped system's wire %d is %s, the compile's %s", sh, i, sw[i].String(), pw[i].String())
			}
		}
	}
}

// A proof made with keys of the stamped system verifies, and a witness
// with a wrong preimage does not solve it. A setup of two challenges
// (221k constraints) on the CPU: skipped with -short.
func TestPoRepStampedProvesAndRefusesABadWitness(t *testing.T) {
	if testing.Short() {
		t.Skip("a CPU setup and proof of 221k constraints")
	}
	st, err := compilePoRepStamped(2, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	pk, vk, err := groth16.Setup(st)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := assignPoRep(5, 2, 2, 3)
	w, _ := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
	proof, err := groth16.Prove(st, pk, w)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := w.Public()
	if err := groth16.Verify(proof, vk, pub); err != nil {
		t.Fatalf("proof of the stamped system: %v", err)
	}
	bad, _ := assignPoRep(5, 2, 2, 3)
	bad.Preimages[1][0] = 12345
	bw, _ := frontend.NewWitness(bad, ecc.BLS12_381.ScalarField())
	if _, err := st.Solve(bw); err == nil {
		t.Fatal("a wrong preimage of challenge 1 solved the stamped system")
	}
}

func TestPoRepStampRefusesBadShapes(t *testing.T) {
	for _, sh := range [][3]int{{0, 2, 0}, {1, 0, 0}, {1, 2, -1}} {
		if _, err := compilePoRepStamped(sh[0], sh[1], sh[2]); err == nil {
			t.Errorf("shape %v accepted", sh)
		}
	}
}
