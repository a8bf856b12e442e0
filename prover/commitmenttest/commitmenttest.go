// Package commitmenttest gives tests small circuits whose R1CS has BSB22
// commitments (gnark's api.Commit), each compiled and set up once per test
// binary with gnark's groth16.Setup: a range check (the built-in
// "rangecheck"), emulated arithmetic over secp256k1's base field
// (std/math/emulated), a log-derivative lookup (std/lookup/logderivlookup),
// a circuit with three commitments (two api.Commit calls and a range
// check, whose deferred commitment commits to the other two), a
// commitment to public inputs only in a circuit without secret inputs, and
// two commitments that share a private wire and commit a computed one.
package commitmenttest

import (
	"fmt"
	"math/big"
	"sync"
	"testing"

	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/std/lookup/logderivlookup"
	"github.com/consensys/gnark/std/math/emulated"
	"github.com/consensys/gnark/std/math/emulated/emparams"
	"github.com/consensys/gnark/std/rangecheck"

	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// Names lists the circuits of Setup.
var Names = []string{"rangecheck", "emulated", "lookup", "multicommit", "publiconly", "overlap"}

// Fixture is a circuit with its keys and a satisfying witness.
type Fixture struct {
	Name    string
	CCS     constraint.ConstraintSystem
	PK      groth16.ProvingKey
	VK      groth16.VerifyingKey
	Witness witness.Witness // full: public and secret
	Public  witness.Witness
	// Commitments is the number of commitments of the R1CS.
	Commitments int
}

// Emulated proves A·B = C over secp256k1's base field, emulated in
// BLS12-381's scalar field (std/math/emulated: limbs range-checked with a
// commitment).
type Emulated struct {
	A, B emulated.Element[emparams.Secp256k1Fp] `gnark:",secret"`
	C    emulated.Element[emparams.Secp256k1Fp] `gnark:",public"`
}

// Define implements frontend.Circuit.
func (c *Emulated) Define(api frontend.API) error {
	f, err := emulated.NewField[emparams.Secp256k1Fp](api)
	if err != nil {
		return err
	}
	f.AssertIsEqual(f.Mul(&c.A, &c.B), &c.C)
	return nil
}

// Lookup proves Sum = Σ Table[Idx[k]] with a log-derivative lookup
// (std/lookup/logderivlookup, whose challenge is a commitment).
type Lookup struct {
	Table [16]frontend.Variable `gnark:",secret"`
	Idx   [8]frontend.Variable  `gnark:",secret"`
	Sum   frontend.Variable     `gnark:",public"`
}

// Define implements frontend.Circuit.
func (c *Lookup) Define(api frontend.API) error {
	t := logderivlookup.New(api)
	for _, v := range c.Table {
		t.Insert(v)
	}
	var sum frontend.Variable = 0
	for _, v := range t.Lookup(c.Idx[:]...) {
		sum = api.Add(sum, v)
	}
	api.AssertIsEqual(sum, c.Sum)
	return nil
}

// MultiCommit proves X[0]·X[1] = P with three commitments: one to X[0],
// X[1] and the public P, one to X[2], X[3], and the range check of X[0]
// and X[1] to 32 bits, whose deferred commitment commits to the first
// two commitments' wires as well.
type MultiCommit struct {
	X [4]frontend.Variable `gnark:",secret"`
	P frontend.Variable    `gnark:",public"`
}

// Define implements frontend.Circuit.
func (c *MultiCommit) Define(api frontend.API) error {
	api.AssertIsEqual(api.Mul(c.X[0], c.X[1]), c.P)
	committer, ok := api.(frontend.Committer)
	if !ok {
		return fmt.Errorf("builder %T cannot commit", api)
	}
	c1, err := committer.Commit(c.X[0], c.X[1], c.P)
	if err != nil {
		return err
	}
	c2, err := committer.Commit(c.X[2], c.X[3])
	if err != nil {
		return err
	}
	// Use the challenges (a commitment no constraint reads is still
	// proved; these make them part of the statement).
	api.AssertIsDifferent(api.Add(api.Mul(c.X[2], c1), c2), 0)
	rc := rangecheck.New(api)
	rc.Check(c.X[0], 32)
	rc.Check(c.X[1], 32)
	rc.Check(api.Mul(c1, c2), 255)
	return nil
}

// PublicOnly proves A² = B with no secret input, committing to the public
// A and B only: its one private committed wire is the random mask gnark's
// api.Commit adds, and the public values are hashed into its challenge.
type PublicOnly struct {
	A, B frontend.Variable `gnark:",public"`
}

// Define implements frontend.Circuit.
func (c *PublicOnly) Define(api frontend.API) error {
	committer, ok := api.(frontend.Committer)
	if !ok {
		return fmt.Errorf("builder %T cannot commit", api)
	}
	ch, err := committer.Commit(c.A, c.B)
	if err != nil {
		return err
	}
	api.AssertIsDifferent(ch, 0)
	api.AssertIsEqual(api.Mul(c.A, c.A), c.B)
	return nil
}

// Overlap proves X[0]+X[1]+X[2] = S with two commitments that share the
// private wire X[1], the second also committing the computed wire
// X[1]·X[2]: the K MSM leaves each shared wire out once.
type Overlap struct {
	X [3]frontend.Variable
	S frontend.Variable `gnark:",public"`
}

// Define implements frontend.Circuit.
func (c *Overlap) Define(api frontend.API) error {
	committer, ok := api.(frontend.Committer)
	if !ok {
		return fmt.Errorf("builder %T cannot commit", api)
	}
	c1, err := committer.Commit(c.X[0], c.X[1])
	if err != nil {
		return err
	}
	c2, err := committer.Commit(c.X[1], api.Mul(c.X[1], c.X[2]))
	if err != nil {
		return err
	}
	api.AssertIsDifferent(api.Mul(c1, c2), 0)
	api.AssertIsEqual(api.Add(c.X[0], c.X[1], c.X[2]), c.S)
	return nil
}

func build(name string) (frontend.Circuit, frontend.Circuit, error) {
	switch name {
	case "emulated":
		p := emparams.Secp256k1Fp{}.Modulus()
		a, b := big.NewInt(0).Sub(p, big.NewInt(12345)), big.NewInt(0).Lsh(big.NewInt(987654321), 200)
		prod := new(big.Int).Mul(a, b)
		prod.Mod(prod, p)
		return &Emulated{}, &Emulated{
			A: emulated.ValueOf[emparams.Secp256k1Fp](a),
			B: emulated.ValueOf[emparams.Secp256k1Fp](b),
			C: emulated.ValueOf[emparams.Secp256k1Fp](prod),
		}, nil
	case "lookup":
		var a Lookup
		sum := 0
		for i := range a.Table {
			a.Table[i] = 1000 + i*i
		}
		for k := range a.Idx {
			idx := (5*k + 3) % len(a.Table)
			a.Idx[k] = idx
			sum += 1000 + idx*idx
		}
		a.Sum = sum
		return &Lookup{}, &a, nil
	case "multicommit":
		return &MultiCommit{}, &MultiCommit{X: [4]frontend.Variable{40503, 77777, 5, 6}, P: 40503 * 77777}, nil
	case "publiconly":
		return &PublicOnly{}, &PublicOnly{A: 12345, B: 12345 * 12345}, nil
	case "overlap":
		return &Overlap{}, &Overlap{X: [3]frontend.Variable{11, 22, 33}, S: 66}, nil
	}
	return nil, nil, fmt.Errorf("commitmenttest: unknown circuit %q", name)
}

var (
	mu       sync.Mutex
	fixtures = map[string]*Fixture{}
)

// Setup returns the fixture of circuit name (one of Names), building it on
// first use; it fails t on any error. "rangecheck" is the built-in at 2^10
// constraints (sample witness of seed 7), circuitstest's fixture.
func Setup(t testing.TB, name string) *Fixture {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if f, ok := fixtures[name]; ok {
		return f
	}
	var f *Fixture
	if name == "rangecheck" {
		b := circuitstest.Setup(t, "rangecheck", 1<<10, 7)
		f = &Fixture{CCS: b.CCS, PK: b.PK, VK: b.VK, Witness: b.Witness, Public: b.Public}
	} else {
		def, asg, err := build(name)
		if err != nil {
			t.Fatal(err)
		}
		f = &Fixture{Witness: circuitstest.NewWitness(t, asg)}
		f.CCS, f.PK, f.VK = circuitstest.SetupCircuit(t, def)
		if f.Public, err = f.Witness.Public(); err != nil {
			t.Fatal(err)
		}
	}
	info, _ := f.CCS.GetCommitments().(constraint.Groth16Commitments)
	f.Name, f.Commitments = name, len(info)
	fixtures[name] = f
	return f
}
