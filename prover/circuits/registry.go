// Package circuits holds the built-in circuits of the prover, written with
// gnark's frontend over the scalar field of BLS12-381, and the one registry
// of circuit names: a built-in maps to a builder sized by its R1CS
// constraint count, a circuit registered from files (RegisterFiles, `cuzk
// serve --circuit-file`) to the paths of its compiled R1CS and keys. Every
// Prover and the gRPC server look names up here.
//
// Built in: "mulchain" (a chain of N multiplications) and "merkle" (K Merkle
// inclusion proofs of depth D with MiMC, the shape of a Filecoin PoSt),
// "porep" (bit-constrained SHA-256 leaves on MiMC paths, the shape of a
// Filecoin PoRep: most wires 0 or 1) and "rangecheck".
package circuits

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Errors callers branch on.
var (
	// ErrUnknownCircuit is returned for a name no circuit is registered
	// under. error.type not_found.
	ErrUnknownCircuit = semconv.NewError(semconv.ErrorTypeNotFound, "unknown circuit")
	// ErrBadConstraints is returned for a constraint count that is zero,
	// negative, or too small or too large for the circuit's shape.
	// error.type invalid_request.
	ErrBadConstraints = semconv.NewError(semconv.ErrorTypeInvalidRequest, "bad constraint count")
	// ErrTooLargeForHost is returned by CheckMemory when the estimated
	// host memory of compile, setup and prove exceeds what this machine
	// has available. error.type out_of_memory. (msm.ErrTooLarge is an MSM
	// too large for the device's memory.)
	ErrTooLargeForHost = semconv.NewError(semconv.ErrorTypeOutOfMemory, "circuit too large for this machine's memory")
	// ErrNotBuiltin is returned by Build and CheckMemory for a circuit
	// registered from files: it is read, not built, and has no estimate.
	// error.type invalid_request.
	ErrNotBuiltin = semconv.NewError(semconv.ErrorTypeInvalidRequest, "circuit registered from files, not built in")
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

	// compile, when set, makes the R1CS instead of frontend.Compile of
	// Circuit, the same system (porep's stamped challenges).
	compile func() (constraint.ConstraintSystem, error)
}

// Compile compiles the instance to an R1CS over BLS12-381's scalar field
// with gnark's frontend (porep: one challenge compiled and stamped K
// times, byte for byte gnark's compile of K; compilePoRepStamped).
func (in *Instance) Compile() (constraint.ConstraintSystem, error) {
	compile := in.compile
	if compile == nil {
		compile = func() (constraint.ConstraintSystem, error) {
			return frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, in.Circuit, in.CompileOptions...)
		}
	}
	ccs, err := compile()
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

// Spec is a registered circuit: a built-in family (Build and MemoryBytes
// set) or a circuit registered from files (Files set).
type Spec struct {
	// Name is the registry key.
	Name string
	// Usage is a one-line description for help texts.
	Usage string
	// Build returns the instance with constraints R1CS constraints,
	// or an error wrapping ErrBadConstraints. Nil for a circuit from files.
	Build func(constraints int) (*Instance, error)
	// CheckSize refuses, with an error wrapping ErrBadConstraints, a size
	// below the smallest instance of the shape, without building or
	// allocating it (checked at submit, so a request that cannot be built
	// is refused before it queues). Nil: any size checkConstraints takes.
	CheckSize func(constraints int) error
	// MemoryBytes estimates the peak resident memory, in bytes, of compile,
	// Groth16 setup and one prove at this size. Nil for a circuit from
	// files.
	MemoryBytes func(constraints int) uint64
	// Files are the paths of a circuit registered from files; nil for a
	// built-in.
	Files *Files
}

// Files are the paths of a circuit registered from files: CS a compiled
// BLS12-381 R1CS (gnark's constraint system WriteTo), PK its Groth16
// proving key (WriteTo or WriteRawTo), VK its verifying key or "" (needed
// only to verify proofs).
type Files struct{ CS, PK, VK string }

var (
	mu    sync.RWMutex
	specs = map[string]Spec{}
)

// Register adds a built-in circuit family, from an init function. It
// panics on a duplicate or empty name, a missing Build or MemoryBytes, or
// Files set. Safe for concurrent use.
func Register(s Spec) {
	mu.Lock()
	defer mu.Unlock()
	if s.Name == "" || s.Build == nil || s.MemoryBytes == nil || s.Files != nil {
		panic("circuits: incomplete spec")
	}
	if _, dup := specs[s.Name]; dup {
		panic("circuits: registered twice: " + s.Name)
	}
	specs[s.Name] = s
}

// RegisterFiles makes a user's circuit known by name to every Prover
// and server of the process. The files are read at the circuit's first
// use; here they are only checked to exist. Requests for it must carry a
// witness (their constraint count is ignored). Errors name the circuit
// and say why: a name CheckName refuses, an empty CS or PK path, a file
// that cannot be stat'ed, or a name already registered (a built-in or
// another file circuit). Safe for concurrent use.
func RegisterFiles(name string, f Files) error {
	if err := CheckName(name); err != nil {
		return fmt.Errorf("register circuit %q: %w", name, err)
	}
	if f.CS == "" || f.PK == "" {
		return fmt.Errorf("register circuit %s: empty R1CS or proving key path", name)
	}
	// A built-in's name is refused before the files are looked at: the
	// clash is the error a user needs to see.
	if s, err := Lookup(name); err == nil && s.Files == nil {
		return fmt.Errorf("register circuit %s: name of a built-in circuit", name)
	}
	for _, path := range []string{f.CS, f.PK, f.VK} {
		if path == "" {
			continue
		}
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("register circuit %s: %w", name, err)
		}
		if fi.IsDir() { // refused now, not at the first proof that loads it
			return fmt.Errorf("register circuit %s: %s is a directory", name, path)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := specs[name]; dup {
		return fmt.Errorf("register circuit %s: already registered", name)
	}
	specs[name] = Spec{Name: name, Usage: "registered from " + f.CS, Files: &f}
	return nil
}

// CheckName refuses circuit names a request, a span attribute or a log
// line could not carry faithfully: empty, not valid UTF-8, or holding a
// space or control character (the error names the rune).
func CheckName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if !utf8.ValidString(name) {
		return errors.New("name is not valid UTF-8")
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("name contains %U", r)
		}
	}
	return nil
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

// LookupBuiltin is Lookup for a built-in circuit: a circuit registered
// from files is an error wrapping ErrNotBuiltin.
func LookupBuiltin(name string) (Spec, error) {
	s, err := Lookup(name)
	if err == nil && s.Files != nil {
		return Spec{}, fmt.Errorf("%w: %s", ErrNotBuiltin, name)
	}
	return s, err
}

// Names returns the registered names (built-ins and circuits from files),
// sorted.
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

// Build looks name up, checks constraints (positive, at most
// MaxConstraints) and returns the instance. Errors wrap ErrUnknownCircuit,
// ErrNotBuiltin or ErrBadConstraints.
func Build(name string, constraints int) (*Instance, error) {
	s, err := LookupBuiltin(name)
	if err != nil {
		return nil, err
	}
	if err := checkConstraints(constraints); err != nil {
		return nil, err
	}
	return s.Build(constraints)
}

// MaxConstraints is the most R1CS constraints a Groth16 proof on
// BLS12-381 can have: gnark's setup and prover work on the FFT domain of
// the next power of two of the constraint count, and that domain must be
// a subgroup of the scalar field's multiplicative group, whose largest
// power-of-two order is 2^32 (2-adicity 32; gnark-crypto's fr.Generator
// refuses more and fft.NewDomain panics).
const MaxConstraints = 1 << 32

// CheckSize returns an error wrapping ErrBadConstraints when circuit name
// cannot be built at constraints: not positive, above MaxConstraints, or
// below the smallest instance of its shape (merkle: two MiMC levels of one
// proof). It builds nothing. A circuit registered from files is nil (its
// size is its files'); an unknown name wraps ErrUnknownCircuit.
func CheckSize(name string, constraints int) error {
	s, err := Lookup(name)
	if err != nil {
		return err
	}
	if s.Files != nil {
		return nil
	}
	if err := checkConstraints(constraints); err != nil {
		return err
	}
	if s.CheckSize != nil {
		return s.CheckSize(constraints)
	}
	return nil
}

// checkConstraints returns an error wrapping ErrBadConstraints for a
// constraint count that is not positive or above MaxConstraints (whose
// memory estimate would be nonsense: no proof of that size exists).
func checkConstraints(constraints int) error {
	if constraints <= 0 {
		return fmt.Errorf("%w: %d (must be positive: want 1 to 2^32 = %d)", ErrBadConstraints, constraints, uint64(MaxConstraints))
	}
	return CheckMax(uint64(constraints))
}

// CheckMax returns an error wrapping ErrBadConstraints when constraints is
// above MaxConstraints, in CheckSize's words: the bound of any request,
// built-in or not (the daemon's submit, cuzk submit before it dials). 0
// passes: a circuit from files ignores the count.
func CheckMax(constraints uint64) error {
	if constraints > MaxConstraints {
		return fmt.Errorf("%w: %d (above 2^32 = %d, the largest FFT domain of BLS12-381's scalar field: no Groth16 proof of that size exists)",
			ErrBadConstraints, constraints, uint64(MaxConstraints))
	}
	return nil
}
