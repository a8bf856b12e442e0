package circuits

import (
	"errors"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	nativemimc "github.com/consensys/gnark-crypto/ecc/bls12-381/fr/mimc"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
)

// compile builds circuit name at n constraints and compiles it; it fails t
// on any error.
func compile(t *testing.T, name string, n int) (constraint.ConstraintSystem, *Instance) {
	t.Helper()
	in, err := Build(name, n)
	if err != nil {
		t.Fatalf("Build(%s, %d): %v", name, n, err)
	}
	ccs, err := in.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return ccs, in
}

func compileAndSolve(t *testing.T, name string, n int) (constraint.ConstraintSystem, *Instance) {
	t.Helper()
	ccs, in := compile(t, name, n)
	w, err := in.Witness(7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ccs.Solve(w); err != nil {
		t.Fatalf("%s (%s): sample witness does not satisfy the circuit: %v", name, in.Shape, err)
	}
	return ccs, in
}

// requireSolve fails t unless gnark's solver says ccs is satisfied by the
// assignment a (want true) or is not (want false); what names a in the
// message.
func requireSolve(t *testing.T, ccs constraint.ConstraintSystem, a frontend.Circuit, want bool, what string) {
	t.Helper()
	w, err := witnessOf(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ccs.Solve(w); (err == nil) != want {
		t.Errorf("%s: solve error %v, want satisfied %v", what, err, want)
	}
}

func TestMulChainHasExactlyNConstraintsAndSatisfyingWitness(t *testing.T) {
	for _, n := range []int{1, 2, 1000} {
		ccs, _ := compileAndSolve(t, "mulchain", n)
		if got := ccs.GetNbConstraints(); got != n {
			t.Errorf("mulchain(%d): %d constraints", n, got)
		}
		if got := CommittedWires(ccs); got != 0 {
			t.Errorf("mulchain(%d): CommittedWires = %d, want 0 (no commitment)", n, got)
		}
	}
}

func TestMerkleHitsRequestedSizeAndVerifiesInclusion(t *testing.T) {
	for _, n := range []int{2000, 1 << 12, 30000, 1 << 16} { // K = 1, 1, 2, 3 proofs
		ccs, in := compileAndSolve(t, "merkle", n)
		if got := ccs.GetNbConstraints(); got != n {
			t.Errorf("merkle(%d) %s: %d constraints", n, in.Shape, got)
		}
	}
	k, depth, _, err := MerkleShape(1 << 16)
	if err != nil || depth != MaxMerkleDepth || k < 2 {
		t.Errorf("MerkleShape(2^16) = k %d depth %d, %v; want depth 30 and several proofs", k, depth, err)
	}
	// The filler stays a small part from 2^13 up.
	for lg := 13; lg <= 24; lg++ {
		n := 1 << lg
		k, depth, filler, err := MerkleShape(n)
		if err != nil || filler*5 > n {
			t.Errorf("MerkleShape(2^%d) = k %d depth %d filler %d, %v: filler over 20%%", lg, k, depth, filler, err)
		}
	}
}

func TestMerkleWitnessWithWrongRootIsRejected(t *testing.T) {
	ccs, _ := compile(t, "merkle", 2000)
	// The instance's own shape, with one sibling corrupted.
	k, depth, filler, _ := MerkleShape(2000)
	bad, err := assignMerkle(3, k, depth, filler)
	if err != nil {
		t.Fatal(err)
	}
	bad.Paths[0][depth-1] = 12345
	requireSolve(t, ccs, bad, false, "a corrupted Merkle path")
}

func TestAssignmentIsDeterministicInSeed(t *testing.T) {
	in, err := Build("merkle", 2000)
	if err != nil {
		t.Fatal(err)
	}
	w1, _ := in.Witness(1)
	w2, _ := in.Witness(1)
	w3, _ := in.Witness(2)
	b1, _ := w1.MarshalBinary()
	b2, _ := w2.MarshalBinary()
	b3, _ := w3.MarshalBinary()
	if string(b1) != string(b2) {
		t.Error("same seed gave different witnesses")
	}
	if string(b1) == string(b3) {
		t.Error("different seeds gave the same witness")
	}
}

func TestBadInputGivesSentinelErrors(t *testing.T) {
	cases := []struct {
		name string
		n    int
		want error
	}{
		{"nosuch", 100, ErrUnknownCircuit},
		{"mulchain", 0, ErrBadConstraints},
		{"mulchain", -5, ErrBadConstraints},
		{"merkle", 0, ErrBadConstraints},
		{"merkle", 10, ErrBadConstraints}, // below one MiMC level
	}
	for _, c := range cases {
		if _, err := Build(c.name, c.n); !errors.Is(err, c.want) {
			t.Errorf("Build(%q, %d) = %v, want %v", c.name, c.n, err, c.want)
		}
	}
}

// Above 2^32 constraints no Groth16 proof on BLS12-381 exists (its FFT
// domain has no root of unity): Build and checkMemory refuse the size
// itself, before any estimate (checkMemory said "needs about
// 17179869184.0 GiB", its estimate saturated at 2^64 bytes).
func TestSizesAboveTheLargestDomainAreRefusedAsSuch(t *testing.T) {
	for _, n := range []int{MaxConstraints + 1, 1<<40 + 1, math.MaxInt} {
		for _, name := range Names() {
			if _, err := LookupBuiltin(name); err != nil {
				continue // a circuit from files another test registered
			}
			if _, err := Build(name, n); !errors.Is(err, ErrBadConstraints) || !strings.Contains(err.Error(), "above 2^32") {
				t.Errorf("Build(%s, %d) = %v, want ErrBadConstraints naming 2^32", name, n, err)
			}
			err := checkMemory(name, n, math.MaxUint64)
			if !errors.Is(err, ErrBadConstraints) || !strings.Contains(err.Error(), "above 2^32") || strings.Contains(err.Error(), "needs about") {
				t.Errorf("checkMemory(%s, %d) = %v, want ErrBadConstraints naming 2^32, no estimate", name, n, err)
			}
		}
	}
	if _, err := fft.Generator(MaxConstraints); err != nil {
		t.Errorf("no root of unity of order MaxConstraints: %v", err)
	}
	if _, err := fft.Generator(MaxConstraints + 1); err == nil {
		t.Error("a root of unity beyond MaxConstraints exists: the limit is too low")
	}
}

func TestCheckMemoryRefusesWhatDoesNotFit(t *testing.T) {
	if err := checkMemory("mulchain", 1<<10, 8<<30); err != nil {
		t.Errorf("2^10 in 8 GiB: %v", err)
	}
	if err := checkMemory("mulchain", 1<<30, 8<<30); !errors.Is(err, ErrTooLargeForHost) {
		t.Errorf("2^30 in 8 GiB: %v, want ErrTooLargeForHost", err)
	}
	if err := checkMemory("merkle", MaxConstraints, 1<<30); !errors.Is(err, ErrTooLargeForHost) || strings.Contains(err.Error(), "17179869184") {
		t.Errorf("2^32: %v, want ErrTooLargeForHost with the estimate (no overflow)", err)
	}
	if err := CheckMemory("mulchain", -1); !errors.Is(err, ErrBadConstraints) {
		t.Errorf("negative: %v", err)
	}
}

// The refusal's sizes are in the largest unit that reaches 1, as the
// plan's (human.Bytes): a small circuit on a small host read "needs
// about 0.0 GiB, 0.0 GiB available".
func TestCheckMemoryWritesSmallSizesInTheirUnit(t *testing.T) {
	err := checkMemory("mulchain", 1<<10, 3<<19)
	if !errors.Is(err, ErrTooLargeForHost) {
		t.Fatalf("2^10 in 1.5 MiB: %v, want ErrTooLargeForHost", err)
	}
	if !regexp.MustCompile(`mulchain with 1024 constraints needs about [1-9][0-9]*\.[0-9] MiB, 1\.5 MiB available$`).MatchString(err.Error()) {
		t.Errorf("2^10 in 1.5 MiB: %q, want 'needs about N.N MiB, 1.5 MiB available'", err)
	}
	if err := checkMemory("mulchain", 1<<30, 512); err == nil || !strings.HasSuffix(err.Error(), " TiB, 512 B available") {
		t.Errorf("2^30 in 512 B: %v, want 'needs about N.N TiB, 512 B available'", err)
	}
}

func TestMemAvailableParsesMeminfo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(p, []byte("MemTotal:       24000000 kB\nMemAvailable:   1000 kB\n"), 0o600)
	if got, err := meminfo(p, "MemAvailable"); err != nil || got != 1000<<10 {
		t.Errorf("MemAvailable of the file = %d, %v", got, err)
	}
	if got, err := meminfo(p, "MemTotal"); err != nil || got != 24000000<<10 {
		t.Errorf("MemTotal of the file = %d, %v", got, err)
	}
	os.WriteFile(p, []byte("MemTotal: 1 kB\n"), 0o600)
	if _, err := meminfo(p, "MemAvailable"); err == nil {
		t.Error("no MemAvailable line: want error")
	}
	if got, err := MemAvailable(); err != nil || got == 0 {
		t.Errorf("MemAvailable() = %d, %v", got, err)
	}
	if got, err := MemTotal(); err != nil || got == 0 {
		t.Errorf("MemTotal() = %d, %v", got, err)
	}
}

// TestMerkleSampleIsTheSequentialOneHashedConcurrently checks the sample
// witness against the plain sequential construction: the same random
// draws in the same order, each path hashed leaf to root.
func TestMerkleSampleIsTheSequentialOneHashedConcurrently(t *testing.T) {
	const seed, k, depth, filler = 7, 9, 5, 3
	got, err := assignMerkle(seed, k, depth, filler)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(seed))
	randFr := func() fr.Element {
		var e fr.Element
		e.SetUint64(rng.Uint64()).Mul(&e, new(fr.Element).SetUint64(rng.Uint64()))
		return e
	}
	h := nativemimc.NewMiMC()
	for i := 0; i < k; i++ {
		leaf := randFr()
		index := rng.Uint64() & (1<<depth - 1)
		node := leaf
		for d := 0; d < depth; d++ {
			sib := randFr()
			if got.Paths[i][d] != sib {
				t.Fatalf("proof %d level %d: sibling differs", i, d)
			}
			left, right := node, sib
			if index>>d&1 == 1 {
				left, right = sib, node
			}
			h.Reset()
			lb, rb := left.Bytes(), right.Bytes()
			h.Write(lb[:])
			h.Write(rb[:])
			node.SetBytes(h.Sum(nil))
		}
		if got.Leaves[i] != leaf || got.Indexes[i] != index || got.Roots[i] != node {
			t.Fatalf("proof %d differs from the sequential construction", i)
		}
	}
	x := randFr()
	if got.Filler[0] != x {
		t.Fatal("filler input differs")
	}
}
