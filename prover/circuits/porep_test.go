package circuits

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math/rand"
	"sync"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
)

// sha256Circuit hashes a padded message of len(Words)/16 blocks with the
// gadget and asserts the digest words equal the public Digest.
type sha256Circuit struct {
	Words  []frontend.Variable  `gnark:",secret"` // padded message, big-endian words
	Digest [8]frontend.Variable `gnark:",public"`
}

func (c *sha256Circuit) Define(api frontend.API) error {
	st := sha256IV()
	for b := 0; b < len(c.Words)/16; b++ {
		block := make([]u32, 16)
		for i := range block {
			block[i] = u32Input(api, c.Words[16*b+i])
		}
		st = sha256Compress(api, st, block)
	}
	for i := range st {
		api.AssertIsEqual(st[i].pack(api), c.Digest[i])
	}
	return nil
}

// sha256Padded is msg with the FIPS 180-4 padding, as words.
func sha256Padded(msg []byte) []uint32 {
	p := append([]byte{}, msg...)
	p = append(p, 0x80)
	for len(p)%64 != 56 {
		p = append(p, 0)
	}
	p = binary.BigEndian.AppendUint64(p, uint64(len(msg))*8)
	words := make([]uint32, len(p)/4)
	for i := range words {
		words[i] = binary.BigEndian.Uint32(p[4*i:])
	}
	return words
}

func sha256Assignment(words []uint32, digest [32]byte) *sha256Circuit {
	a := &sha256Circuit{Words: make([]frontend.Variable, len(words))}
	for i, w := range words {
		a.Words[i] = uint64(w)
	}
	for i := range a.Digest {
		a.Digest[i] = uint64(binary.BigEndian.Uint32(digest[4*i:]))
	}
	return a
}

// TestSHA256GadgetMatchesCryptoSHA256 solves the gadget's R1CS on random
// messages of one and two blocks (lengths 0 to 119 bytes, 64 included:
// the porep preimage) with the digest of crypto/sha256 as the public
// input, and checks a digest with one bit flipped is unsatisfiable.
func TestSHA256GadgetMatchesCryptoSHA256(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for blocks, lengths := range map[int][]int{1: {0, 3, 55, rng.Intn(56)}, 2: {56, 64, 119, 56 + rng.Intn(64)}} {
		ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder,
			&sha256Circuit{Words: make([]frontend.Variable, 16*blocks)}, poRepCompileOptions...)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range lengths {
			msg := make([]byte, n)
			rng.Read(msg)
			words := sha256Padded(msg)
			if len(words) != 16*blocks {
				t.Fatalf("length %d: %d words", n, len(words))
			}
			digest := sha256.Sum256(msg)
			w, err := witnessOf(sha256Assignment(words, digest))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ccs.Solve(w); err != nil {
				t.Errorf("%d-byte message: the crypto/sha256 digest does not satisfy the gadget: %v", n, err)
			}
			digest[rng.Intn(32)] ^= 1 << rng.Intn(8)
			w, err = witnessOf(sha256Assignment(words, digest))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ccs.Solve(w); err == nil {
				t.Errorf("%d-byte message: a wrong digest satisfied the gadget", n)
			}
		}
	}
}

// TestSHA256CompressionCostsWhatItsPartsDo pins the gadget's constraint
// count to the accounting of its parts in porep.go, compiled as porep is
// (no compression of long combinations): a change in how the bits are
// constrained shows here.
func TestSHA256CompressionCostsWhatItsPartsDo(t *testing.T) {
	// Input words: 32 booleans + 1 packing each.
	const input = 16 * 33
	// Schedule: 48 × (σ₀ 32 + 29 XORs, σ₁ 32 + 22: the zeros a shift
	// brings in are XORed for free; a 4-operand sum: 34 bits + 1).
	const schedule = 48 * ((32 + 29) + (32 + 22) + 35)
	// Rounds: Σ₁ and Σ₀ 64 each, Ch and Maj 64 each, the new e (6
	// operands) and a (7 operands) 35 bits + 1 each.
	const rounds = 64 * (4*64 + 2*36)
	// Final: 8 sums of two words, 33 bits + 1.
	const final = 8 * 34
	// From the constant IV, rounds 0 to 2 are cheaper: round 0's Σ₁, Σ₀,
	// Ch, Maj are constants (256), round 1's Ch and Maj have constant
	// f, g and b, c (128), round 2's have one constant operand (64).
	const ivSaving = 256 + 128 + 64
	const digest = 8 // the test circuit's equalities with Digest
	for blocks, want := range map[int]int{
		1: input + schedule + rounds + final - ivSaving + digest,
		2: 2*(input+schedule+rounds+final) - ivSaving + digest,
	} {
		ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder,
			&sha256Circuit{Words: make([]frontend.Variable, 16*blocks)}, poRepCompileOptions...)
		if err != nil {
			t.Fatal(err)
		}
		if got := ccs.GetNbConstraints(); got != want {
			t.Errorf("%d compressions from the IV: %d constraints, want %d", blocks, got, want)
		}
	}
}

func TestPoRepHitsRequestedSizeAndIsMostlyBits(t *testing.T) {
	level, challenge := poRepCosts()
	minimum := 2*level + challenge
	for _, n := range []int{minimum, 1 << 17} {
		ccs, in := compileAndSolve(t, "porep", n)
		if got := ccs.GetNbConstraints(); got != n {
			t.Errorf("porep(%d) %s: %d constraints", n, in.Shape, got)
		}
		if n != 1<<17 {
			continue
		}
		w, _ := in.Witness(7)
		sol, err := ccs.Solve(w)
		if err != nil {
			t.Fatal(err)
		}
		wires := sol.(*cs.R1CSSolution).W
		bitsN := 0
		for i := range wires {
			if wires[i].IsZero() || wires[i].IsOne() {
				bitsN++
			}
		}
		share := float64(bitsN) / float64(len(wires))
		t.Logf("porep 2^17 (%s): %d of %d wires are 0 or 1 (%.1f%%)", in.Shape, bitsN, len(wires), 100*share)
		if share < 0.8 {
			t.Errorf("porep 2^17: %.1f%% of the wires are 0 or 1, want most (≥ 80%%)", 100*share)
		}
	}
	if _, err := Build("porep", minimum-1); !errors.Is(err, ErrBadConstraints) {
		t.Errorf("Build(porep, %d) = %v, want ErrBadConstraints", minimum-1, err)
	}
	// Sector-deep paths (K rounded up costs a level or two) and the
	// filler a small part, from one challenge to 2^26.
	for lg := 17; lg <= 26; lg++ {
		k, depth, filler, err := PoRepShape(1 << lg)
		if err != nil || depth < MaxMerkleDepth-2 || filler*20 > 1<<lg {
			t.Errorf("PoRepShape(2^%d) = k %d depth %d filler %d, %v", lg, k, depth, filler, err)
		}
	}
}

func TestPoRepWitnessWithWrongPreimageIsRejected(t *testing.T) {
	level, challenge := poRepCosts()
	n := 2*level + challenge
	ccs, _ := compile(t, "porep", n)
	k, depth, filler, _ := PoRepShape(n)
	bad, err := assignPoRep(3, k, depth, filler)
	if err != nil {
		t.Fatal(err)
	}
	bad.Preimages[0][5] = bad.Preimages[0][5].(uint64) ^ 1<<31
	requireSolve(t, ccs, bad, false, "a changed preimage bit")
}

func TestFr32LeafIsTheTruncatedLittleEndianDigest(t *testing.T) {
	pre := make([]byte, 64)
	rand.New(rand.NewSource(2)).Read(pre)
	d := sha256.Sum256(pre)
	var want fr.Element
	// Σ d[i]·256^i with the top two bits of d[31] dropped.
	var b256, term fr.Element
	b256.SetUint64(256)
	pow := fr.One()
	for i := 0; i < 32; i++ {
		v := uint64(d[i])
		if i == 31 {
			v &= 0x3f
		}
		term.SetUint64(v).Mul(&term, &pow)
		want.Add(&want, &term)
		pow.Mul(&pow, &b256)
	}
	if got := fr32LeafNative(pre); !got.Equal(&want) {
		t.Errorf("fr32LeafNative = %s, want %s", got.String(), want.String())
	}
}

var sha256Systems = sync.OnceValues(func() (map[int]constraint.ConstraintSystem, error) {
	out := map[int]constraint.ConstraintSystem{}
	for blocks := 1; blocks <= 2; blocks++ {
		ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder,
			&sha256Circuit{Words: make([]frontend.Variable, 16*blocks)}, poRepCompileOptions...)
		if err != nil {
			return nil, err
		}
		out[blocks] = ccs
	}
	return out, nil
})

// FuzzSHA256Gadget: for any message of up to 119 bytes (one or two
// blocks), the gadget's R1CS is satisfied by crypto/sha256's digest.
func FuzzSHA256Gadget(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("abc"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		if len(msg) > 119 {
			msg = msg[:119]
		}
		systems, err := sha256Systems()
		if err != nil {
			t.Fatal(err)
		}
		words := sha256Padded(msg)
		w, err := witnessOf(sha256Assignment(words, sha256.Sum256(msg)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := systems[len(words)/16].Solve(w); err != nil {
			t.Fatalf("%x: the crypto/sha256 digest does not satisfy the gadget: %v", msg, err)
		}
	})
}
