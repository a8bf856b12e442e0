package circuits

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/big"
	"math/bits"
	"math/rand"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/std/hash/mimc"

	"github.com/otelcuzk/otelcuzk/internal/human"
)

// PoRep is shaped like a Filecoin proof of replication partition, whose
// constraints are mostly SHA-256 written bit by bit: K challenged nodes,
// each with a 192-byte secret preimage shaped like the input of an SDR
// label (a 64-byte header of replica id and node, then four 32-byte parent
// labels; Filecoin's have six or fourteen) hashed with SHA-256 (four
// compressions, the last over the constant padding block) into a leaf,
// the digest truncated to 254 bits as Filecoin's Fr32 does, then a MiMC
// Merkle inclusion proof of depth D of that leaf against a public root
// (as MerklePoSt, with the public challenge index). A short multiplication
// chain (Filler) brings the R1CS to the requested constraint count. It
// checks no Filecoin semantics (the label's parents are not tied to other
// challenges): it reproduces the witness and constraint shapes, not the
// proof.
//
// The SHA-256 gadget follows bellperson's (bellperson/src/gadgets/sha256.rs
// and uint32.rs): the input words and every sum are unpacked into wires
// each constrained boolean, b·(1−b) = 0; an XOR of two bits is one
// constraint, Ch and Maj two each (bellperson's Ch is one; see ch); a
// 32-bit addition packs its operands' bits into one linear combination and
// unpacks the sum into 32 + ⌈log₂ m⌉ boolean wires (m operands) with one
// equality constraint, keeping the low 32; rotations and shifts are free.
// Unlike bellperson it does not merge the equalities of several additions
// into one constraint (its MultiEq), so each addition costs one more. A
// compression costs 28,464 constraints (from the constant IV 448 fewer),
// every new wire 0 or 1. Nothing uses api.Commit or lookups, so the proof
// has no commitment and, as in Filecoin, most witness wires hold 0 or 1.
type PoRep struct {
	Roots     []frontend.Variable   `gnark:",public"` // K roots
	Indexes   []frontend.Variable   `gnark:",public"` // K node indexes, each < 2^D
	Preimages [][]frontend.Variable `gnark:",secret"` // K × 48 big-endian 32-bit words
	Paths     [][]frontend.Variable `gnark:",secret"` // K × D siblings, leaf to root
	// Filler is empty or {X, Out} of a mulchain of fillerLen constraints.
	Filler []frontend.Variable `gnark:",secret"`

	depth, fillerLen int
}

// poRepPreimageWords is the preimage length in 32-bit words: 192 bytes,
// three SHA-256 blocks, so one challenge fits in 2^17 constraints.
const poRepPreimageWords = 48

// Define implements frontend.Circuit.
func (c *PoRep) Define(api frontend.API) error {
	pad := sha256PadBlock(poRepPreimageWords * 4)
	for k := range c.Roots {
		words := make([]u32, poRepPreimageWords)
		for i, w := range c.Preimages[k] {
			words[i] = u32Input(api, w)
		}
		st := sha256IV()
		for b := 0; b < len(words); b += 16 {
			st = sha256Compress(api, st, words[b:b+16])
		}
		st = sha256Compress(api, st, pad)
		node := fr32Leaf(api, st)
		bitsIdx := api.ToBinary(c.Indexes[k], c.depth)
		for d := 0; d < c.depth; d++ {
			h, err := mimc.NewMiMC(api)
			if err != nil {
				return err
			}
			sib := c.Paths[k][d]
			left := api.Select(bitsIdx[d], sib, node)
			right := api.Sub(api.Add(node, sib), left)
			h.Write(left, right)
			node = h.Sum()
		}
		api.AssertIsEqual(node, c.Roots[k])
	}
	if c.fillerLen > 0 {
		defineMulChain(api, c.Filler[0], c.Filler[1], c.fillerLen)
	}
	return nil
}

// u32 is a 32-bit word as bits, least significant first; each is a
// boolean wire or the constant 0 or 1.
type u32 [32]frontend.Variable

func constU32(x uint32) u32 {
	var w u32
	for i := range w {
		w[i] = (x >> i) & 1
	}
	return w
}

// u32Input unpacks the word v (< 2^32) into 32 boolean wires: 32
// booleanity constraints and one packing equality, as bellperson
// allocates its input bits.
func u32Input(api frontend.API, v frontend.Variable) u32 {
	var w u32
	copy(w[:], api.ToBinary(v, 32))
	return w
}

func (x u32) rotr(n int) u32 {
	var w u32
	for i := range w {
		w[i] = x[(i+n)%32]
	}
	return w
}

func (x u32) shr(n int) u32 {
	var w u32
	for i := range w {
		if i+n < 32 {
			w[i] = x[i+n]
		} else {
			w[i] = 0
		}
	}
	return w
}

// xor is a⊕b = a + b − 2·(a·b) for bits a, b: one constraint, whose
// wire is the product a·b, a bit. bellperson allocates the XOR bit c
// itself with (2a)·b = a + b − c; gnark's frontend can only allocate a
// product's own wire, so here c stays a linear combination of bit wires
// (same constraint count, every new wire 0 or 1). Free when either is
// constant.
func xor(api frontend.API, a, b frontend.Variable) frontend.Variable {
	return api.Sub(api.Add(a, b), api.Mul(a, b, 2))
}

// xor3 is a⊕b⊕c bit by bit, two constraints per bit (none where an
// operand is constant, as the zeros a shift brings in).
func xor3(api frontend.API, a, b, c u32) u32 {
	var w u32
	for i := range w {
		w[i] = xor(api, xor(api, a[i], b[i]), c[i])
	}
	return w
}

// ch is (e∧f)⊕(¬e∧g) = e·f + (1−e)·g, two constraints per bit, both
// products bits. bellperson's sha256_ch takes one, (f − g)·e = ch − g
// with the ch bit allocated; written with gnark's products, that one's
// wire e·(f − g) is −1 an eighth of the time, a full-width scalar, so the
// second constraint is the price of all-bit wires.
func ch(api frontend.API, e, f, g u32) u32 {
	var w u32
	for i := range w {
		w[i] = api.Add(api.Mul(e[i], f[i]), api.Mul(api.Sub(1, e[i]), g[i]))
	}
	return w
}

// maj is (a∧b)⊕(a∧c)⊕(b∧c) as bellperson's sha256_maj: with t = b·c,
// a·(b + c − 2t) + t, two constraints per bit, both products bits
// (b + c − 2t is b⊕c).
func maj(api frontend.API, a, b, c u32) u32 {
	var w u32
	for i := range w {
		t := api.Mul(b[i], c[i])
		w[i] = api.Add(api.Mul(a[i], api.Sub(api.Add(b[i], c[i]), api.Mul(t, 2))), t)
	}
	return w
}

// pack is Σ x[i]·2^i, a linear combination (no constraint).
func (x u32) pack(api frontend.API) frontend.Variable {
	terms := make([]frontend.Variable, 32)
	for i := range x {
		terms[i] = api.Mul(x[i], uint64(1)<<i)
	}
	return api.Add(terms[0], terms[1], terms[2:]...)
}

// addMany is the sum of the words mod 2^32, as bellperson's
// UInt32::addmany: the packed sum unpacked into 32 + ⌈log₂ m⌉ boolean
// wires with one equality, the carries dropped. A constant sum costs
// nothing.
func addMany(api frontend.API, ws ...u32) u32 {
	terms := make([]frontend.Variable, len(ws))
	for i, w := range ws {
		terms[i] = w.pack(api)
	}
	sum := terms[0]
	if len(terms) > 1 {
		sum = api.Add(terms[0], terms[1], terms[2:]...)
	}
	nb := 32 + bits.Len(uint(len(ws)-1))
	var w u32
	copy(w[:], api.ToBinary(sum, nb)[:32])
	return w
}

// sha256K are the round constants of FIPS 180-4, §4.2.2.
var sha256K = [64]uint32{
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

// sha256IV is the initial hash value of FIPS 180-4, §5.3.3, as constants.
func sha256IV() [8]u32 {
	iv := [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}
	var st [8]u32
	for i, v := range iv {
		st[i] = constU32(v)
	}
	return st
}

// sha256PadBlock is the last block of the padding of a message of n bytes
// when n is a multiple of 64 (FIPS 180-4, §5.1.1): 0x80, zeros, the bit
// length in 64 bits, as constant words.
func sha256PadBlock(n int) []u32 {
	block := make([]u32, 16)
	for i := range block {
		block[i] = constU32(0)
	}
	block[0] = constU32(0x80000000)
	bitLen := uint64(n) * 8
	block[14] = constU32(uint32(bitLen >> 32))
	block[15] = constU32(uint32(bitLen))
	return block
}

// sha256Compress is the SHA-256 compression function (FIPS 180-4, §6.2.2)
// of state over one block of 16 big-endian words. As in bellperson, the
// round's T1 = h + Σ₁(e) + Ch(e,f,g) + Kₜ + Wₜ stays a linear combination,
// unpacked only within the new e = d + T1 and a = T1 + Σ₀(a) + Maj(a,b,c).
func sha256Compress(api frontend.API, state [8]u32, block []u32) [8]u32 {
	var w [64]u32
	copy(w[:], block)
	for t := 16; t < 64; t++ {
		s0 := xor3(api, w[t-15].rotr(7), w[t-15].rotr(18), w[t-15].shr(3))
		s1 := xor3(api, w[t-2].rotr(17), w[t-2].rotr(19), w[t-2].shr(10))
		w[t] = addMany(api, s1, w[t-7], s0, w[t-16])
	}
	a, b, c, d, e, f, g, h := state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7]
	for t := 0; t < 64; t++ {
		S1 := xor3(api, e.rotr(6), e.rotr(11), e.rotr(25))
		chv := ch(api, e, f, g)
		k := constU32(sha256K[t])
		S0 := xor3(api, a.rotr(2), a.rotr(13), a.rotr(22))
		mj := maj(api, a, b, c)
		newE := addMany(api, d, h, S1, chv, k, w[t])
		newA := addMany(api, h, S1, chv, k, w[t], S0, mj)
		h, g, f, e, d, c, b, a = g, f, e, newE, c, b, a, newA
	}
	out := [8]u32{a, b, c, d, e, f, g, h}
	for i := range out {
		out[i] = addMany(api, state[i], out[i])
	}
	return out
}

// fr32Leaf packs a SHA-256 digest into a field element as Filecoin does
// (Fr32): the 32 digest bytes as a little-endian integer with the two top
// bits of the last byte cleared, so the value is below 2^254 < r. It is a
// linear combination of the digest's bits.
func fr32Leaf(api frontend.API, st [8]u32) frontend.Variable {
	var terms []frontend.Variable
	for j, word := range st {
		for b := 0; b < 32; b++ {
			// Bit b of word j is bit b%8 of digest byte 4j + 3 − b/8.
			pos := 8*(4*j+3-b/8) + b%8
			if pos >= 254 {
				continue
			}
			terms = append(terms, api.Mul(word[b], new(big.Int).Lsh(big.NewInt(1), uint(pos))))
		}
	}
	return api.Add(terms[0], terms[1], terms[2:]...)
}

// fr32LeafNative is fr32Leaf of sha256.Sum256(preimage).
func fr32LeafNative(preimage []byte) fr.Element {
	d := sha256.Sum256(preimage)
	d[31] &= 0x3f
	var be [32]byte
	for i := range d {
		be[31-i] = d[i]
	}
	var e fr.Element
	e.SetBytes(be[:])
	return e
}

// poRepCompileOptions turn off gnark's compression of linear combinations
// of 300 terms or more into a new wire (frontend.WithCompressThreshold):
// each 32-bit addition's packed sum (about a thousand terms of XORed bits)
// would get a wire holding the 35-bit sum, where bellperson, as here,
// feeds the combination straight into the unpacking constraint.
var poRepCompileOptions = []frontend.CompileOption{frontend.WithCompressThreshold(0)}

func newPoRepCircuit(k, depth, filler int) *PoRep {
	c := &PoRep{
		Roots:     make([]frontend.Variable, k),
		Indexes:   make([]frontend.Variable, k),
		Preimages: make([][]frontend.Variable, k),
		Paths:     make([][]frontend.Variable, k),
		depth:     depth,
		fillerLen: filler,
	}
	for i := range c.Paths {
		c.Preimages[i] = make([]frontend.Variable, poRepPreimageWords)
		c.Paths[i] = make([]frontend.Variable, depth)
	}
	if filler > 0 {
		c.Filler = make([]frontend.Variable, 2)
	}
	return c
}

// poRepCosts are the constraints of one MiMC tree level and the fixed cost
// of one challenge (its four SHA-256 compressions and the path's own
// overhead), measured once by compiling one challenge at depths 2 and 3,
// so the sizing follows the gadgets' real cost.
var poRepCosts = sync.OnceValues(func() (level, challenge int) {
	return pathCosts(func(depth int) *Instance {
		return &Instance{Name: "porep", Circuit: newPoRepCircuit(1, depth, 0), CompileOptions: poRepCompileOptions}
	})
})

// PoRepShape returns the number of challenges K, the Merkle depth D and
// the filler length for a budget of n constraints, as MerkleShape does: K
// challenges of depth 30 rounded to the nearest (at least 1), the depth
// shrunk when they do not fit, the rest filler, so the total is exactly n.
// Errors wrap ErrBadConstraints when n is below one challenge of depth 2
// (about 110,000 constraints).
func PoRepShape(n int) (k, depth, filler int, err error) {
	if err := checkConstraints(n); err != nil {
		return 0, 0, 0, err
	}
	level, challenge := poRepCosts()
	if n < 2*level+challenge {
		return 0, 0, 0, fmt.Errorf("%w: porep needs at least %d constraints (one challenge: four SHA-256 compressions, two MiMC levels), got %d",
			ErrBadConstraints, 2*level+challenge, n)
	}
	per30 := MaxMerkleDepth*level + challenge
	k = max(1, (n+per30/2)/per30)
	depth = min(MaxMerkleDepth, (n/k-challenge)/level)
	if depth < 2 {
		// Rounding K up left less than two levels each: one fewer.
		k--
		depth = min(MaxMerkleDepth, (n/k-challenge)/level)
	}
	return k, depth, n - k*(depth*level+challenge), nil
}

func buildPoRep(n int) (*Instance, error) {
	k, depth, filler, err := PoRepShape(n)
	if err != nil {
		return nil, err
	}
	return &Instance{
		Name:        "porep",
		Constraints: n,
		Shape: fmt.Sprintf("%d challenge%s (SHA-256 of 192 bytes, MiMC path of depth %d), %d filler",
			k, human.Plural(k), depth, filler),
		Circuit:        newPoRepCircuit(k, depth, filler),
		CompileOptions: poRepCompileOptions,
		compile: func() (constraint.ConstraintSystem, error) {
			return compilePoRepStamped(k, depth, filler)
		},
		Assignment: func(seed int64) (frontend.Circuit, error) {
			return assignPoRep(seed, k, depth, filler)
		},
	}, nil
}

func assignPoRep(seed int64, k, depth, filler int) (*PoRep, error) {
	rng := rand.New(rand.NewSource(seed))
	a := newPoRepCircuit(k, depth, filler)
	pre := make([][]byte, k)
	for i := 0; i < k; i++ {
		pre[i] = make([]byte, 4*poRepPreimageWords)
		rng.Read(pre[i])
		for j := range a.Preimages[i] {
			a.Preimages[i][j] = uint64(binary.BigEndian.Uint32(pre[i][4*j:]))
		}
		a.Indexes[i] = rng.Uint64() & (1<<depth - 1)
		for d := 0; d < depth; d++ {
			a.Paths[i][d] = randFr(rng)
		}
	}
	if err := merkleRoots(a.Roots, a.Indexes, a.Paths, func(i int) fr.Element { return fr32LeafNative(pre[i]) }); err != nil {
		return nil, err
	}
	assignFiller(a.Filler, rng, filler)
	return a, nil
}

// poRepShape: measured at 2^18 (bench/memory.md): 0.995 wires per
// constraint, the R1CS 390 bytes per constraint held (its SHA-256
// constraints carry long linear combinations).
// Its compile's peak, sizing probe included: 1092, 1315 and 1113 bytes a
// constraint over RuntimeBytes at 2^18, 2^19 and 2^20 (bench/memory.md,
// compile peaks); on the H200 host the compile at 2^26 had passed 60.7 GB
// after 273 s and was still running.
var poRepShape = shape{wiresPerConstraint: 1.0, ccsBytesPerConstraint: 390, compileBytesPerConstraint: 1200}

func init() {
	Register(Spec{
		Name:        "porep",
		Usage:       "K SHA-256 (bit-constrained, as bellperson) leaves with MiMC Merkle paths, like a Filecoin PoRep: most wires 0 or 1",
		Build:       buildPoRep,
		CheckSize:   func(n int) error { _, _, _, err := PoRepShape(n); return err },
		MemoryBytes: poRepShape.peakBytes,
	})
}
