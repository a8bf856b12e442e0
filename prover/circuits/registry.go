// Package circuits holds the built-in circuits of the prover, written with
// gnark's frontend over the scalar field of BLS12-381, and a registry that
// maps a circuit name to a builder sized by its R1CS constraint count.
//
// Built in: "mulchain" (a chain of N multiplications) and "merkle" (K Merkle
// inclusion proofs of depth D with MiMC, the shape of a Filecoin PoSt),
// "porep" (bit-constrained SHA-256 leaves on MiMC paths, the shape of a
// Filecoin PoRep: most wires 0 or 1) and "rangecheck".
package circuits

import (
	"fmt"
	"sort"
	"sync"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
)

// Errors callers branch on.
var (
	// ErrUnknownCircuit is returned for a name no circuit is registered
	// under. error.type invalid_request.
	ErrUnknownCircuit = otelcuzk.NewError(otelcuzk.ErrorTypeInvalidRequest, "unknown circuit")
	// ErrBadConstraints is returned for a constraint count that is zero,
	// negative, or too small or too large for the circuit's shape.
	// error.type invalid_request.
	ErrBadConstraints = otelcuzk.NewError(otelcuzk.ErrorTypeInvalidRequest, "bad constraint count")
	// ErrTooLarge is returned by CheckMemory when the estimated memory of
	// compile, setup and prove exceeds what this machine has available.
	// error.type out_of_memory.
	ErrTooLarge = otelcuzk.NewError(otelcuzk.ErrorTypeOutOfMemory, "circuit too large for this machine's memory")
)

// Instance is a built-in circuit at one size.
type Instance struct {
	// Name is the registry name ("mulchain", "merkle").
	Name string
	// Constraints is the requested size; the compiled R1CS has exactly this
	// many constraints (merkle pads with a short multiplication chain).
	Constraints int
	// Shape describes the instance in words ("K=3 proofs of depth D=30").
	Shape string
	// Circuit is the definition to compile (slices sized, values unset).
	Circuit frontend.Circuit
	// Assignment returns a satisfying assignment, the same for the same seed.
	Assignment func(seed int64) (frontend.Circuit, error)
	// CompileOptions are passed to frontend.Compile (porep turns off
	// gnark's compression of long linear combinations).
	CompileOptions []frontend.CompileOption
}

// Compile compiles the instance to an R1CS over BLS12-381's scalar field
// with gnark's frontend.
func (in *Instance) Compile() (constraint.ConstraintSystem, error) {
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, in.Circuit, in.CompileOptions...)
	if err != nil {
		return nil, fmt.Errorf("compile %s (%d constraints): %w", in.Name, in.Constraints, err)
	}
	return ccs, nil
}

// Witness returns the full (public and secret) witness of the assignment
// for seed.
func (in *Instance) Witness(seed int64) (witness.Witness, error) {
	a, err := in.Assignment(seed)
	if err != nil {
		return nil, fmt.Errorf("assign %s: %w", in.Name, err)
	}
	return witnessOf(a)
}

func witnessOf(a frontend.Circuit) (witness.Witness, error) {
	w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	return w, nil
}

// Spec is a registered circuit family.
type Spec struct {
	// Name is the registry key.
	Name string
	// Usage is a one-line description for help texts.
	Usage string
	// Build returns the instance with constraints R1CS constraints,
	// or an error wrapping ErrBadConstraints.
	Build func(constraints int) (*Instance, error)
	// MemoryBytes estimates the peak resident memory, in bytes, of compile,
	// Groth16 setup and one prove at this size.
	MemoryBytes func(constraints int) uint64
}

var (
	mu    sync.RWMutex
	specs = map[string]Spec{}
)

// Register adds a circuit family. It panics on a duplicate or empty name.
// Safe for concurrent use.
func Register(s Spec) {
	mu.Lock()
	defer mu.Unlock()
	if s.Name == "" || s.Build == nil || s.MemoryBytes == nil {
		panic("circuits: incomplete spec")
	}
	if _, dup := specs[s.Name]; dup {
		panic("circuits: registered twice: " + s.Name)
	}
	specs[s.Name] = s
}

// Lookup returns the spec registered under name, or an error wrapping
// ErrUnknownCircuit that lists the known names.
func Lookup(name string) (Spec, error) {
	mu.RLock()
	s, ok := specs[name]
	mu.RUnlock()
	if !ok {
		return Spec{}, fmt.Errorf("%w %q (known: %v)", ErrUnknownCircuit, name, Names())
	}
	return s, nil
}

// Names returns the registered names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(specs))
	for n := range specs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Build looks name up, checks constraints is positive and returns the
// instance. Errors wrap ErrUnknownCircuit or ErrBadConstraints.
func Build(name string, constraints int) (*Instance, error) {
	s, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if err := checkPositive(constraints); err != nil {
		return nil, err
	}
	return s.Build(constraints)
}

func checkPositive(constraints int) error {
	if constraints <= 0 {
		return fmt.Errorf("%w: %d (must be positive)", ErrBadConstraints, constraints)
	}
	return nil
}
