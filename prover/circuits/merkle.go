package circuits

import (
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	nativemimc "github.com/consensys/gnark-crypto/ecc/bls12-381/fr/mimc"
	"github.com/consensys/gnark/frontend"

	"github.com/otelcuzk/otelcuzk/internal/human"
)

// MaxMerkleDepth is the depth of the binary Merkle tree over a 32 GiB
// Filecoin sector (2^30 nodes of 32 bytes), the depth the merkle circuit uses
// once the constraint budget allows it.
const MaxMerkleDepth = 30

// MerklePoSt is shaped like a Filecoin proof of spacetime: K challenged
// leaves, each with a Merkle inclusion proof of depth D against a public
// root, hashed with MiMC (gnark std/hash/mimc; the native side is
// gnark-crypto's fr/mimc, Miyaguchi–Preneel over BLS12-381's scalar field).
// The challenged leaf index is public, as PoSt challenges are; its D bits
// select left and right at each level. A short multiplication chain (Filler)
// brings the R1CS to the requested constraint count.
type MerklePoSt struct {
	Roots   []frontend.Variable   `gnark:",public"` // K roots
	Indexes []frontend.Variable   `gnark:",public"` // K leaf indexes, each < 2^D
	Leaves  []frontend.Variable   `gnark:",secret"` // K leaves
	Paths   [][]frontend.Variable `gnark:",secret"` // K × D siblings, leaf to root
	// Filler is empty or {X, Out} of a mulchain of FillerLen constraints.
	Filler []frontend.Variable `gnark:",secret"`

	depth, fillerLen int
}

// Define implements frontend.Circuit.
func (c *MerklePoSt) Define(api frontend.API) error {
	// one is 1 as a sum of two wires, b² + (1−b)² for a bit b: multiplying
	// by it makes a linear expression one wire (see mimcHash2) at the cost
	// of one constraint; gnark's builder folds a product by the constant 1
	// back into the expression.
	bits0 := api.ToBinary(c.Indexes[0], c.depth)
	nb := api.Sub(1, bits0[0])
	one := api.Add(api.Mul(bits0[0], bits0[0]), api.Mul(nb, nb)) // merkleFixed constraints
	for k := range c.Roots {
		bits := bits0
		if k > 0 {
			bits = api.ToBinary(c.Indexes[k], c.depth)
		}
		node := c.Leaves[k]
		for d := 0; d < c.depth; d++ {
			sib := c.Paths[k][d]
			// bit 1: node is the right child.
			left := api.Select(bits[d], sib, node)
			right := api.Sub(api.Add(node, sib), left)
			node = mimcHash2(api, one, left, right)
		}
		api.AssertIsEqual(node, c.Roots[k])
	}
	if c.fillerLen > 0 {
		defineMulChain(api, c.Filler[0], c.Filler[1], c.fillerLen)
	}
	return nil
}

func newMerkleCircuit(k, depth, filler int) *MerklePoSt {
	c := &MerklePoSt{
		Roots:     make([]frontend.Variable, k),
		Indexes:   make([]frontend.Variable, k),
		Leaves:    make([]frontend.Variable, k),
		Paths:     make([][]frontend.Variable, k),
		depth:     depth,
		fillerLen: filler,
	}
	for i := range c.Paths {
		c.Paths[i] = make([]frontend.Variable, depth)
	}
	if filler > 0 {
		c.Filler = make([]frontend.Variable, 2)
	}
	return c
}

// mimcParams are gnark-crypto's round constants of MiMC over BLS12-381's
// scalar field, the ones gnark's std/hash/mimc uses.
var mimcParams = nativemimc.GetConstants()

// mimcHash2 is gnark's std/hash/mimc Sum of the two blocks a, b
// (Miyaguchi–Preneel over the x⁵ MiMC permutation: per block
// h ← E_h(m) + h + m, E_h(m) the rounds x ← (x + h + cᵢ)⁵ then x + h), so
// it equals gnark-crypto's native MiMC of a‖b. It differs from the gadget
// only in making the chaining value h one wire after each block (h·one):
// gnark's builder keeps sums as linear expressions and copies them into
// every constraint that uses them, and h is used in all the rounds of the
// next block, which gave merkle's constraints 31 terms on average against
// 4 for a chain of one-block MiMC, and 5 times its solve time per
// constraint (0.85 against 0.17 µs, one task, 2-core VM).
func mimcHash2(api frontend.API, one, a, b frontend.Variable) frontend.Variable {
	h := frontend.Variable(0)
	for _, m := range []frontend.Variable{a, b} {
		x := m
		for i := range mimcParams {
			t := api.Add(x, h, mimcParams[i])
			t2 := api.Mul(t, t)
			t2 = api.Mul(t2, t2)
			x = api.Mul(t2, t)
		}
		h = api.Mul(api.Add(h, api.Add(x, h), m), one)
	}
	return h
}

// merkleCosts are the constraints of one tree level and the fixed cost of
// one inclusion proof, measured once by compiling proofs of depth 2 and 3,
// so the sizing follows whatever gnark's MiMC gadget costs.
var merkleCosts = sync.OnceValues(func() (level, proof int) {
	level, rest := pathCosts(func(depth int) *Instance {
		return &Instance{Name: "merkle", Circuit: newMerkleCircuit(1, depth, 0)}
	})
	return level, rest - merkleFixed
})

// pathCosts compiles probe's one-path circuit at depths 2 and 3 and
// returns the constraints of one tree level and those of the rest of the
// circuit (all but its levels). Depths 2 and 3: ToBinary of a single bit
// is cheaper than per bit. A probe that does not compile is a panic
// naming it (the built-in circuits compile).
func pathCosts(probe func(depth int) *Instance) (level, rest int) {
	count := func(depth int) int {
		in := probe(depth)
		ccs, err := in.Compile()
		if err != nil {
			panic(fmt.Sprintf("circuits: compile %s probe: %v", in.Name, err))
		}
		return ccs.GetNbConstraints()
	}
	c2, c3 := count(2), count(3)
	return c3 - c2, c2 - 2*(c3-c2)
}

// merkleFixed is the circuit's cost outside its proofs and filler: the two
// products of Define's one.
const merkleFixed = 2

// MerkleShape returns the number of proofs K, the depth D and the filler
// length for a budget of n constraints: K is n over the cost of one proof
// of depth 30, rounded to the nearest (at least 1); D is 30, or less when
// K proofs of depth 30 do not fit; the rest is filler, so the total is
// exactly n. Errors wrap ErrBadConstraints when n is below the cost
// of one proof of depth 2.
func MerkleShape(n int) (k, depth, filler int, err error) {
	if err := checkConstraints(n); err != nil {
		return 0, 0, 0, err
	}
	level, proof := merkleCosts()
	if least := merkleFixed + 2*level + proof; n < least {
		return 0, 0, 0, fmt.Errorf("%w: merkle needs at least %d constraints (two MiMC levels), got %d", ErrBadConstraints, least, n)
	}
	// As many proofs of depth 30 as the budget holds, rounded to the
	// nearest; their depth shrinks to fit when rounding went up, so the
	// filler stays a small part of the circuit.
	per30 := MaxMerkleDepth*level + proof
	k = max(1, (n-merkleFixed+per30/2)/per30)
	depth = min(MaxMerkleDepth, ((n-merkleFixed)/k-proof)/level)
	per := depth*level + proof
	return k, depth, n - merkleFixed - k*per, nil
}

func buildMerkle(n int) (*Instance, error) {
	k, depth, filler, err := MerkleShape(n)
	if err != nil {
		return nil, err
	}
	return &Instance{
		Name:        "merkle",
		Constraints: n,
		Shape:       fmt.Sprintf("%d inclusion proof%s of depth %d (MiMC), %d filler", k, human.Plural(k), depth, filler),
		Circuit:     newMerkleCircuit(k, depth, filler),
		Assignment: func(seed int64) (frontend.Circuit, error) {
			return assignMerkle(seed, k, depth, filler)
		},
	}, nil
}

func assignMerkle(seed int64, k, depth, filler int) (*MerklePoSt, error) {
	rng := rand.New(rand.NewSource(seed))
	a := newMerkleCircuit(k, depth, filler)
	// The random values first, in the order of one proof after another,
	// then the K paths hashed concurrently: at 2^22 they are 6,240 MiMC
	// hashes, the sample witness's whole cost.
	for i := 0; i < k; i++ {
		a.Leaves[i] = randFr(rng)
		a.Indexes[i] = rng.Uint64() & (1<<depth - 1)
		for d := 0; d < depth; d++ {
			a.Paths[i][d] = randFr(rng)
		}
	}
	if err := merkleRoots(a.Roots, a.Indexes, a.Paths, func(i int) fr.Element { return a.Leaves[i].(fr.Element) }); err != nil {
		return nil, err
	}
	assignFiller(a.Filler, rng, filler)
	return a, nil
}

// randFr is a random element of Fr drawn from rng (the product of two
// random 64-bit values, so the seed fixes it).
func randFr(rng *rand.Rand) fr.Element {
	var e fr.Element
	e.SetUint64(rng.Uint64()).Mul(&e, new(fr.Element).SetUint64(rng.Uint64()))
	return e
}

// merkleRoots sets roots[i] to the root of leaf(i) hashed up paths[i] at
// indexes[i] (uint64), for every i, on up to GOMAXPROCS goroutines; the
// errors of all are joined.
func merkleRoots(roots, indexes []frontend.Variable, paths [][]frontend.Variable, leaf func(i int) fr.Element) error {
	errs := make([]error, len(roots))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range roots {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			roots[i], errs[i] = merkleRoot(leaf(i), indexes[i].(uint64), paths[i])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// assignFiller sets filler, when it is {X, Out} (n > 0), to a random X from
// rng and the output of the mulchain of n constraints from it.
func assignFiller(filler []frontend.Variable, rng *rand.Rand, n int) {
	if n > 0 {
		x := randFr(rng)
		filler[0], filler[1] = x, mulChainOut(x, n)
	}
}

// merkleRoot hashes leaf up its path with native MiMC; bit d of index set
// means the node is the right child at level d.
func merkleRoot(leaf fr.Element, index uint64, path []frontend.Variable) (fr.Element, error) {
	h := nativemimc.NewMiMC()
	node := leaf
	for d, v := range path {
		sib := v.(fr.Element)
		left, right := node, sib
		if index>>d&1 == 1 {
			left, right = sib, node
		}
		h.Reset()
		lb, rb := left.Bytes(), right.Bytes()
		if _, err := h.Write(lb[:]); err != nil {
			return fr.Element{}, err
		}
		if _, err := h.Write(rb[:]); err != nil {
			return fr.Element{}, err
		}
		node.SetBytes(h.Sum(nil))
	}
	return node, nil
}

// merkleShape: measured at 2^14 to 2^18 (bench/memory.md): 1.0015 wires
// per constraint, the R1CS 117–194 bytes per constraint held (the least
// at the largest size).
// Its compile's peak: 190 and 232 bytes a constraint over RuntimeBytes at
// 2^18 and 2^19 (bench/memory.md, compile peaks).
var merkleShape = shape{wiresPerConstraint: 1.0, ccsBytesPerConstraint: 120, compileBytesPerConstraint: 240}

func init() {
	Register(Spec{
		Name:        "merkle",
		Usage:       "K MiMC Merkle inclusion proofs of depth ≤ 30, like a Filecoin PoSt",
		Build:       buildMerkle,
		CheckSize:   func(n int) error { _, _, _, err := MerkleShape(n); return err },
		MemoryBytes: merkleShape.peakBytes,
	})
}
