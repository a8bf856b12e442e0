package prover

import (
	"context"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// The names below moved: the Groth16 prove to prover/groth16, the backend
// interface and registry to prover/backend, the CPU backend to
// prover/cpu. They stay here as aliases so that code written against
// prover keeps building (DESIGN.md, API changes); new code names the
// package that holds them.

// Prove is groth16.Prove.
//
// Deprecated: use groth16.Prove.
func Prove(ctx context.Context, ccs constraint.ConstraintSystem, pk gnarkgroth16.ProvingKey, fullWitness witness.Witness, opts ...ProveOption) (gnarkgroth16.Proof, error) {
	return groth16.Prove(ctx, ccs, pk, fullWitness, opts...)
}

// ProveAssignment is groth16.ProveAssignment.
//
// Deprecated: use groth16.ProveAssignment.
func ProveAssignment(ctx context.Context, pk gnarkgroth16.ProvingKey, asg *Assignment, opts ...ProveOption) (gnarkgroth16.Proof, error) {
	return groth16.ProveAssignment(ctx, pk, asg, opts...)
}

// Synthesize is groth16.Synthesize.
//
// Deprecated: use groth16.Synthesize.
func Synthesize(ctx context.Context, ccs constraint.ConstraintSystem, fullWitness witness.Witness, opts ...SynthesizeOption) (*Assignment, error) {
	return groth16.Synthesize(ctx, ccs, fullWitness, opts...)
}

// Deprecated aliases of prover/groth16's names.
type (
	// Deprecated: use groth16.Assignment.
	Assignment = groth16.Assignment
	// Deprecated: use groth16.ProveOption.
	ProveOption = groth16.ProveOption
	// Deprecated: use groth16.SynthesizeOption.
	SynthesizeOption = groth16.SynthesizeOption
	// Deprecated: use groth16.BitSplit.
	BitSplit = groth16.BitSplit
	// Deprecated: use groth16.ScalarCounts.
	ScalarCounts = groth16.ScalarCounts
)

// Deprecated aliases of prover/groth16's constants.
const (
	// Deprecated: use groth16.BitSplitOff.
	BitSplitOff = groth16.BitSplitOff
	// Deprecated: use groth16.BitSplitAuto.
	BitSplitAuto = groth16.BitSplitAuto
	// Deprecated: use groth16.BitSplitOn.
	BitSplitOn = groth16.BitSplitOn
	// Deprecated: use groth16.BitSplitMinOnes.
	BitSplitMinOnes = groth16.BitSplitMinOnes
)

// Deprecated aliases of the sentinels of prover/groth16 and prover/backend
// (the same values: errors.Is holds for either name).
var (
	// Deprecated: use groth16.ErrUnsupported.
	ErrUnsupported = groth16.ErrUnsupported
	// Deprecated: use groth16.ErrWitnessSize.
	ErrWitnessSize = groth16.ErrWitnessSize
	// Deprecated: use groth16.ErrBadWitness.
	ErrBadWitness = groth16.ErrBadWitness
	// Deprecated: use groth16.ErrUnsatisfied.
	ErrUnsatisfied = groth16.ErrUnsatisfied
	// Deprecated: use groth16.ErrKeyMismatch.
	ErrKeyMismatch = groth16.ErrKeyMismatch
	// Deprecated: use backend.ErrUnavailable.
	ErrBackendUnavailable = backend.ErrUnavailable
	// Deprecated: use backend.ErrNoDeviceMemory.
	ErrNoDeviceMemory = backend.ErrNoDeviceMemory
	// Deprecated: use backend.ErrDeviceFault.
	ErrDeviceFault = backend.ErrDeviceFault
)

// WithBackend is groth16.WithBackend.
//
// Deprecated: use groth16.WithBackend.
func WithBackend(b Backend) ProveOption { return groth16.WithBackend(b) }

// WithKeyID is groth16.WithKeyID.
//
// Deprecated: use groth16.WithKeyID.
func WithKeyID(id string) ProveOption { return groth16.WithKeyID(id) }

// WithProvingKey is groth16.WithProvingKey.
//
// Deprecated: use groth16.WithProvingKey.
func WithProvingKey(pk gnarkgroth16.ProvingKey) SynthesizeOption {
	return groth16.WithProvingKey(pk)
}

// ParseBitSplit is groth16.ParseBitSplit.
//
// Deprecated: use groth16.ParseBitSplit.
func ParseBitSplit(s string) (BitSplit, error) { return groth16.ParseBitSplit(s) }

// CountScalars is groth16.CountScalars.
//
// Deprecated: use groth16.CountScalars.
func CountScalars(s []fr.Element) ScalarCounts { return groth16.CountScalars(s) }

// WithSolverTasks is groth16.WithSolverTasks.
//
// Deprecated: use groth16.WithSolverTasks.
func WithSolverTasks(ctx context.Context, n int) context.Context {
	return groth16.WithSolverTasks(ctx, n)
}

// SolverTasks is groth16.SolverTasks.
//
// Deprecated: use groth16.SolverTasks.
func SolverTasks(ctx context.Context) int { return groth16.SolverTasks(ctx) }

// Deprecated aliases of prover/backend's names.
type (
	// Deprecated: use backend.Backend.
	Backend = backend.Backend
	// Deprecated: use backend.BaseSet.
	BaseSet[P any] = backend.BaseSet[P]
	// Deprecated: use backend.KeyPreparer.
	KeyPreparer = backend.KeyPreparer
	// Deprecated: use backend.ProofScoper.
	ProofScoper = backend.ProofScoper
	// Deprecated: use backend.BatchAdder.
	BatchAdder = backend.BatchAdder
	// Deprecated: use backend.BaseEvicter.
	BaseEvicter = backend.BaseEvicter
	// Deprecated: use backend.Warmer.
	Warmer = backend.Warmer
	// Deprecated: use backend.Options.
	BackendOptions = backend.Options
	// Deprecated: use backend.Factory.
	BackendFactory = backend.Factory
	// Deprecated: use backend.DeviceSettings.
	DeviceSettings = backend.DeviceSettings
	// Deprecated: use cpu.Backend.
	CPU = cpu.Backend
)

// RegisterBackend is backend.Register.
//
// Deprecated: use backend.Register.
func RegisterBackend(name string, f BackendFactory) { backend.Register(name, f) }

// LookupBackend is backend.Lookup.
//
// Deprecated: use backend.Lookup.
func LookupBackend(name string) (BackendFactory, bool) { return backend.Lookup(name) }

// NewCPU is cpu.New.
//
// Deprecated: use cpu.New.
func NewCPU(tp trace.TracerProvider) *CPU { return cpu.New(tp) }

// Pipeline is Prover, its name before the redesign (a backend with the
// circuits it has loaded: not the engine's pipelined stages).
//
// Deprecated: use Prover.
type Pipeline = Prover

// PipelineOption is ProverOption.
//
// Deprecated: use ProverOption.
type PipelineOption = ProverOption

// NewPipeline is New.
//
// Deprecated: use New.
func NewPipeline(ctx context.Context, backend string, opts ...ProverOption) (*Prover, error) {
	return New(ctx, backend, opts...)
}

// ProofMemory is circuits.ProofMemory, the one home of the estimate.
//
// Deprecated: use circuits.ProofMemory.
func ProofMemory(constraints, wires, committed int) uint64 {
	return circuits.ProofMemory(constraints, wires, committed)
}

// KeyMemory is circuits.KeyMemory.
//
// Deprecated: use circuits.KeyMemory.
func KeyMemory(domain, wires int) uint64 { return circuits.KeyMemory(domain, wires) }
