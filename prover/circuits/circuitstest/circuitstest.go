// Package circuitstest gives tests a built-in circuit ready to prove:
// compiled, set up with gnark's groth16.Setup, and with a satisfying
// witness, made once per test binary and shared by the tests that ask for
// the same circuit, size and seed. For a circuit of a caller's own (one
// registered from files) it has Square, and Compile, SetupCircuit,
// NewWitness and WriteFiles to make its constraint system, keys, witness
// and files.
package circuitstest

import (
	"bytes"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

// Fixture is a circuit with its keys and a witness.
type Fixture struct {
	Instance *circuits.Instance
	CCS      constraint.ConstraintSystem
	PK       groth16.ProvingKey
	VK       groth16.VerifyingKey
	Witness  witness.Witness // full: public and secret
	Public   witness.Witness
}

var (
	mu       sync.Mutex
	fixtures = map[string]*Fixture{}
)

// Setup returns the fixture of built-in circuit name at n constraints with
// the sample witness of seed, building it on first use (groth16.Setup takes
// seconds from 2^14 on); it fails t on any error.
func Setup(t testing.TB, name string, n int, seed int64) *Fixture {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	key := fmt.Sprintf("%s/%d/%d", name, n, seed)
	if f, ok := fixtures[key]; ok {
		return f
	}
	start := time.Now()
	in, ccs, w := compileBuiltin(t, name, n, seed)
	pk, vk, err := groth16.Setup(ccs)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := w.Public()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d constraints, compile and setup in %v", key, ccs.GetNbConstraints(), time.Since(start).Round(time.Millisecond))
	f := &Fixture{Instance: in, CCS: ccs, PK: pk, VK: vk, Witness: w, Public: pub}
	fixtures[key] = f
	return f
}

// Square is a circuit of a caller's own, not built in: Y = X², X public
// and Y secret (X = 3, Y = 9 satisfies it). Two wires and one constraint,
// so a test that compiles and sets it up takes milliseconds.
type Square struct {
	X frontend.Variable `gnark:",public"`
	Y frontend.Variable
}

// Define implements frontend.Circuit.
func (c *Square) Define(api frontend.API) error {
	api.AssertIsEqual(api.Mul(c.X, c.X), c.Y)
	return nil
}

// Compile compiles c with gnark's frontend over field with builder
// (r1cs.NewBuilder for Groth16's R1CS, scs.NewBuilder for PLONK's
// SparseR1CS); it fails t on error.
func Compile(t testing.TB, field *big.Int, builder frontend.NewBuilder, c frontend.Circuit) constraint.ConstraintSystem {
	t.Helper()
	ccs, err := frontend.Compile(field, builder, c)
	if err != nil {
		t.Fatal(err)
	}
	return ccs
}

// SetupCircuit compiles c to an R1CS over BLS12-381's scalar field and
// makes its keys with gnark's groth16.Setup; it fails t on any error.
func SetupCircuit(t testing.TB, c frontend.Circuit) (constraint.ConstraintSystem, groth16.ProvingKey, groth16.VerifyingKey) {
	t.Helper()
	ccs := Compile(t, ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, c)
	pk, vk, err := groth16.Setup(ccs)
	if err != nil {
		t.Fatal(err)
	}
	return ccs, pk, vk
}

// NewWitness returns the full (public and secret) witness of assignment
// over BLS12-381's scalar field; it fails t on error.
func NewWitness(t testing.TB, assignment frontend.Circuit) witness.Witness {
	t.Helper()
	w, err := frontend.NewWitness(assignment, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// WriteFiles writes ccs and its keys in gnark's binary form into dir as
// name.r1cs, name.pk and name.vk, the files a circuit is registered from
// (circuits.RegisterFiles, `cuzk serve --circuit-file`), and returns their
// paths; it fails t on any error.
func WriteFiles(t testing.TB, dir, name string, ccs constraint.ConstraintSystem, pk groth16.ProvingKey, vk groth16.VerifyingKey) circuits.Files {
	t.Helper()
	write := func(ext string, v io.WriterTo) string {
		path := filepath.Join(dir, name+ext)
		if err := os.WriteFile(path, Bytes(t, v), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return circuits.Files{CS: write(".r1cs", ccs), PK: write(".pk", pk), VK: write(".vk", vk)}
}

// WitnessBytes returns the sample full witness of seed of built-in circuit
// name at n constraints in gnark's binary format (what a client sends),
// without compiling or setting up the circuit; it fails t on any error.
func WitnessBytes(t testing.TB, name string, n int, seed int64) []byte {
	t.Helper()
	return Marshal(t, SampleWitness(t, name, n, seed))
}

// CompileBuiltin returns built-in circuit name compiled at n constraints
// and its sample full witness of seed, without a key setup; it fails t on
// any error.
func CompileBuiltin(t testing.TB, name string, n int, seed int64) (constraint.ConstraintSystem, witness.Witness) {
	t.Helper()
	_, ccs, w := compileBuiltin(t, name, n, seed)
	return ccs, w
}

func compileBuiltin(t testing.TB, name string, n int, seed int64) (*circuits.Instance, constraint.ConstraintSystem, witness.Witness) {
	t.Helper()
	in, err := circuits.Build(name, n)
	if err != nil {
		t.Fatal(err)
	}
	ccs, err := in.Compile()
	if err != nil {
		t.Fatal(err)
	}
	w, err := in.Witness(seed)
	if err != nil {
		t.Fatal(err)
	}
	return in, ccs, w
}

// SampleWitness returns the sample full witness of seed of built-in
// circuit name at n constraints (its Public is what a verifier takes),
// without compiling or setting up the circuit; it fails t on any error.
func SampleWitness(t testing.TB, name string, n int, seed int64) witness.Witness {
	t.Helper()
	in, err := circuits.Build(name, n)
	if err != nil {
		t.Fatal(err)
	}
	w, err := in.Witness(seed)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Marshal returns w in gnark's binary format (what a client sends); it
// fails t on error.
func Marshal(t testing.TB, w witness.Witness) []byte {
	t.Helper()
	b, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Bytes returns what v writes (gnark's binary form of a constraint system,
// key or proof); it fails t on error.
func Bytes(t testing.TB, v io.WriterTo) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := v.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
