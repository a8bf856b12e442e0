// Package circuitstest gives tests a built-in circuit ready to prove:
// compiled, set up with gnark's groth16.Setup, and with a satisfying
// witness, made once per test binary and shared by the tests that ask for
// the same circuit, size and seed.
package circuitstest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"

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
	in, err := circuits.Build(name, n)
	if err != nil {
		t.Fatal(err)
	}
	ccs, err := in.Compile()
	if err != nil {
		t.Fatal(err)
	}
	pk, vk, err := groth16.Setup(ccs)
	if err != nil {
		t.Fatal(err)
	}
	w, err := in.Witness(seed)
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
