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
	"github.com/consensys/gnark/std/hash/mimc"
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
	for k := range c.Roots {
		bits := api.ToBinary(c.Indexes[k], c.depth)
		node := c.Leaves[k]
		for d := 0; d < c.depth; d++ {
			h, err := mimc.NewMiMC(api)
			if err != nil {
				return err
			}
			sib := c.Paths[k][d]
			// bit 1: node is the right child.
			left := api.Select(bits[d], sib, node)
			right := api.Sub(api.Add(node, sib), left)
			h.Write(left, right)
			node = h.Sum()
		}
		api.AssertIsEqual(node, c.Roots[k])
	}
	if c.fillerLen > 0 {
		v := c.Filler[0]
		for i := 1; i < c.fillerLen; i++ {
			v = api.Add(api.Mul(v, v), 1)
		}
		api.AssertIsEqual(v, c.Filler[1])
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

// merkleCosts are the constraints of one tree level and the fixed cost of
// one inclusion proof, measured once by compiling proofs of depth 2 and 3,
// so the sizing follows whatever gnark's MiMC gadget costs.
var merkleCosts = sync.OnceValues(func() (level, proof int) {
	count := func(depth int) int {
		in := &Instance{Name: "merkle", Circuit: newMerkleCircuit(1, depth, 0)}
		ccs, err := in.Compile()
		if err != nil {
			panic(fmt.Sprintf("circuits: compile merkle probe: %v", err))
		}
		return ccs.GetNbConstraints()
	}
	// Depths 2 and 3: ToBinary of a single bit is cheaper than per bit.
	c2, c3 := count(2), count(3)
	return c3 - c2, c2 - 2*(c3-c2)
})

// MerkleShape returns the number of proofs K, the depth D and the filler
// length for a budget of n constraints: K is n over the cost of one proof
// of depth 30, rounded to the nearest (at least 1); D is 30, or less when
// K proofs of depth 30 do not fit; the rest is filler, so the total is
// exactly n. Errors wrap ErrBadConstraints when n is below the cost
// of one proof of depth 2.
func MerkleShape(n int) (k, depth, filler int, err error) {
	if err := checkPositive(n); err != nil {
		return 0, 0, 0, err
	}
	level, proof := merkleCosts()
	if n < 2*level+proof {
		return 0, 0, 0, fmt.Errorf("%w: merkle needs at least %d constraints (two MiMC levels), got %d", ErrBadConstraints, 2*level+proof, n)
	}
	// As many proofs of depth 30 as the budget holds, rounded to the
	// nearest; their depth shrinks to fit when rounding went up, so the
	// filler stays a small part of the circuit.
	per30 := MaxMerkleDepth*level + proof
	k = max(1, (n+per30/2)/per30)
	depth = min(MaxMerkleDepth, (n/k-proof)/level)
	per := depth*level + proof
	return k, depth, n - k*per, nil
}

func buildMerkle(n int) (*Instance, error) {
	k, depth, filler, err := MerkleShape(n)
	if err != nil {
		return nil, err
	}
	return &Instance{
		Name:        "merkle",
		Constraints: n,
		Shape:       fmt.Sprintf("%d inclusion %s of depth %d (MiMC), %d filler", k, plural(k, "proof", "proofs"), depth, filler),
		Circuit:     newMerkleCircuit(k, depth, filler),
		Assignment: func(seed int64) (frontend.Circuit, error) {
			return assignMerkle(seed, k, depth, filler)
		},
	}, nil
}

func assignMerkle(seed int64, k, depth, filler int) (*MerklePoSt, error) {
	rng := rand.New(rand.NewSource(seed))
	randFr := func() fr.Element {
		var e fr.Element
		e.SetUint64(rng.Uint64()).Mul(&e, new(fr.Element).SetUint64(rng.Uint64()))
		return e
	}
	a := newMerkleCircuit(k, depth, filler)
	// The random values first, in the order of one proof after another,
	// then the K paths hashed concurrently: at 2^22 they are 6,240 MiMC
	// hashes, the sample witness's whole cost.
	for i := 0; i < k; i++ {
		a.Leaves[i] = randFr()
		a.Indexes[i] = rng.Uint64() & (1<<depth - 1)
		for d := 0; d < depth; d++ {
			a.Paths[i][d] = randFr()
		}
	}
	errs := make([]error, k)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := 0; i < k; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			a.Roots[i], errs[i] = merkleRoot(a.Leaves[i].(fr.Element), a.Indexes[i].(uint64), a.Paths[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if filler > 0 {
		x := randFr()
		v, one := x, fr.One()
		for i := 1; i < filler; i++ {
			v.Square(&v).Add(&v, &one)
		}
		a.Filler[0], a.Filler[1] = x, v
	}
	return a, nil
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

// merkleBytes: as mulChainBytes (measured: 194 MB peak at 2^16).
func merkleBytes(n int) uint64 { return linearBytes(256<<20, 6<<10, n) }

func init() {
	Register(Spec{
		Name:        "merkle",
		Usage:       "K MiMC Merkle inclusion proofs of depth ≤ 30, like a Filecoin PoSt",
		Build:       buildMerkle,
		MemoryBytes: merkleBytes,
	})
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
