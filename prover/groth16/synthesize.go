package groth16

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/constraint/solver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Assignment is a solved R1CS, ready to prove: the wire values and the
// evaluations a = A·w, b = B·w, c = C·w of the constraint matrices, padded
// with zeros to the NTT domain. The vectors live in anonymous mmap'd
// buffers outside the Go heap; ProveAssignment consumes them. Not safe for
// concurrent use.
type Assignment struct {
	// Wires holds the values of all wires: the constant 1, the public
	// inputs, the secret inputs, the internal wires (gnark's order);
	// len(Wires) = NbPublic + secret + internal.
	Wires []fr.Element
	// A, B, C hold the R1CS evaluations, each of length DomainSize.
	A, B, C []fr.Element
	// NbPublic is the number of public wires, the constant 1 included.
	NbPublic int
	// NbConstraints is the number of R1CS constraints (≤ DomainSize).
	NbConstraints int
	// DomainSize is the NTT domain size: the next power of two of
	// NbConstraints, as gnark's gnarkgroth16.Setup sizes its fft.Domain.
	DomainSize int

	wires, a, b, c *buffer.Mmap
	com            *commitState // nil without commitments (commitment.go)
}

// bufferSlot is one of an assignment's mmap'd buffers with its name in
// buffer.release spans; *b is nil once released.
type bufferSlot struct {
	name string
	b    **buffer.Mmap
}

// slots lists the assignment's buffers in the order Release gives them
// back.
func (asg *Assignment) slots() []bufferSlot {
	return []bufferSlot{{"wires", &asg.wires}, {"a", &asg.a}, {"b", &asg.b}, {"c", &asg.c}}
}

// Bytes returns the bytes of the host buffers the assignment still holds
// (wires and a, b, c, as mapped: padded to pages), 0 once released.
func (asg *Assignment) Bytes() int {
	n := 0
	for _, x := range asg.slots() {
		if *x.b != nil {
			n += (*x.b).Size()
		}
	}
	return n
}

// Release gives back the buffers the assignment still holds, through rel
// (nil: synchronously, buffer's one meaning of a nil Releaser), as
// buffer.release spans. Use it when an Assignment is not proved;
// ProveAssignment releases them itself. A second Release, and Release on a
// nil *Assignment, do nothing and return nil.
func (asg *Assignment) Release(ctx context.Context, rel *buffer.Releaser) error {
	if asg == nil {
		return nil
	}
	var errs []error
	for _, x := range asg.slots() {
		if *x.b == nil {
			continue
		}
		errs = append(errs, rel.Release(ctx, x.name, *x.b))
		*x.b = nil
	}
	asg.Wires, asg.A, asg.B, asg.C = nil, nil, nil, nil
	return errors.Join(errs...)
}

// newFrBuffer returns n field elements of mmap'd memory, reused from rel's
// pool when it has a buffer large enough (its content is then stale: the
// caller overwrites all n elements; zeroed is false). A fresh mapping is
// zeroed and asks for transparent huge pages (adviseHugePages), so that
// its first write faults once per 2 MiB instead of once per 4 KiB.
func newFrBuffer(rel *buffer.Releaser, n int) (hb *buffer.Mmap, v []fr.Element, zeroed bool, err error) {
	size := n * fr.Bytes
	hb = rel.Reuse(size)
	if hb == nil {
		if hb, err = buffer.NewMmap(size); err != nil {
			return nil, nil, false, err
		}
		adviseHugePages(hb.Bytes())
		zeroed = true
	}
	return hb, unsafe.Slice((*fr.Element)(unsafe.Pointer(unsafe.SliceData(hb.Bytes()))), n), zeroed, nil
}

// AsR1CS checks that ccs is a BLS12-381 R1CS of gnark (not a PLONK
// SparseR1CS), with or without commitments, and returns it. Errors wrap
// ErrUnsupported.
func AsR1CS(ccs constraint.ConstraintSystem) (*cs.R1CS, error) {
	if isNil(ccs) {
		return nil, fmt.Errorf("%w: nil constraint system (%T)", ErrUnsupported, ccs)
	}
	r1cs, ok := ccs.(*cs.R1CS)
	if !ok {
		return nil, fmt.Errorf("%w: constraint system %T over %s (want a BLS12-381 R1CS, *cs.R1CS)", ErrUnsupported, ccs, curveOf(ccs))
	}
	// gnark v0.14 gives R1CS and SparseR1CS one Go type: only the system's
	// Type tells a PLONK constraint system apart.
	if r1cs.Type != constraint.SystemR1CS {
		return nil, fmt.Errorf("%w: constraint system is a PLONK SparseR1CS (gnark's scs.NewBuilder); Groth16 needs an R1CS (r1cs.NewBuilder)", ErrUnsupported)
	}
	// An R1CS of another curve read from a file (cuzk serve --circuit-file)
	// into BLS12-381's type keeps its own field: refused here, before its
	// proving key fails to decode in words that name no curve.
	if r1cs.Field().Cmp(ecc.BLS12_381.ScalarField()) != 0 {
		return nil, fmt.Errorf("%w: R1CS over %s (want BLS12-381: compile the circuit with ecc.BLS12_381.ScalarField())", ErrUnsupported, curveOf(ccs))
	}
	if _, ok := r1cs.CommitmentInfo.(constraint.Groth16Commitments); !ok {
		return nil, fmt.Errorf("%w: R1CS with commitments of type %T", ErrUnsupported, r1cs.CommitmentInfo)
	}
	return r1cs, nil
}

// curveOf names the curve of ccs's scalar field ("bn254"), or its field's
// size in bits when gnark knows no curve for it.
func curveOf(ccs constraint.ConstraintSystem) string {
	for _, id := range []ecc.ID{ecc.BN254, ecc.BLS12_377, ecc.BLS12_381, ecc.BW6_761, ecc.BLS24_315, ecc.BLS24_317, ecc.BW6_633} {
		if id.ScalarField().Cmp(ccs.Field()) == 0 {
			return id.String()
		}
	}
	return fmt.Sprintf("a %d-bit field", ccs.Field().BitLen())
}

// Synthesize solves the R1CS for fullWitness (gnark's solver, hints
// included) and copies the wires and the a, b, c evaluations into mmap'd
// buffers, as one pipeline.synthesize span under the span in ctx. The heap
// copies of gnark's solver are dropped before it returns.
//
// A circuit with commitments (api.Commit) needs its proving key
// (WithProvingKey): the solve computes the commitments with the key's
// commitment keys, each as an msm.g1.commitment span (commitment.go).
//
// Options read: WithReleaser (buffers come from its pool in pool mode),
// WithTracerProvider, WithProvingKey, WithRandomness (it fixes the
// commitments' masks too). Errors wrap ErrUnsupported (not a
// BLS12-381 R1CS), ErrKeyMismatch (commitments without their keys),
// ErrWitnessSize or ErrUnsatisfied.
func Synthesize(ctx context.Context, ccs constraint.ConstraintSystem, fullWitness witness.Witness, opts ...SynthesizeOption) (*Assignment, error) {
	return synthesizeWith(ctx, ccs, fullWitness, newConfig(opts, SynthesizeOption.applySynthesize))
}

// synthesizeWith is Synthesize with its options applied (Prove passes its
// own).
func synthesizeWith(ctx context.Context, ccs constraint.ConstraintSystem, fullWitness witness.Witness, cfg config) (*Assignment, error) {
	sctx, span := cfg.tracer().Start(ctx, semconv.SpanPipelineSynthesize)
	asg, err := synthesize(sctx, ccs, fullWitness, buffer.OrSync(cfg.releaser, cfg.tp), commitKeysOf(cfg.pk, &cfg), cfg.solver)
	endSynthesize(span, asg, err)
	if err != nil {
		return nil, err
	}
	return asg, nil
}

// Solve is Synthesize under the span in ctx, without a
// pipeline.synthesize span of its own: gnark's solve step, for a caller
// whose span covers more than the solve (prover.Prover's covers the
// witness too; it records Assignment.Attributes on it). Options and
// errors as Synthesize's.
func Solve(ctx context.Context, ccs constraint.ConstraintSystem, fullWitness witness.Witness, opts ...SynthesizeOption) (*Assignment, error) {
	cfg := newConfig(opts, SynthesizeOption.applySynthesize)
	return synthesize(ctx, ccs, fullWitness, buffer.OrSync(cfg.releaser, cfg.tp), commitKeysOf(cfg.pk, &cfg), cfg.solver)
}

// Attributes returns the sizes of asg a synthesis span records:
// cuzk.circuit.constraints, cuzk.circuit.wires and cuzk.domain.size.
func (asg *Assignment) Attributes() []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.KeyCircuitConstraints.Int(asg.NbConstraints),
		semconv.KeyCircuitWires.Int(len(asg.Wires)),
		semconv.KeyDomainSize.Int(asg.DomainSize),
	}
}

// endSynthesize records the outcome of a synthesis on its span (the
// assignment's sizes, or the error) and ends it.
func endSynthesize(span trace.Span, asg *Assignment, err error) {
	defer span.End()
	if err != nil {
		semconv.SetError(span, err)
		return
	}
	span.SetAttributes(asg.Attributes()...)
}

// synthesize is Synthesize under the span in ctx; ck holds the proving
// key's commitment keys (nil or empty for a circuit without commitments),
// mode is WithSolver's.
func synthesize(ctx context.Context, ccs constraint.ConstraintSystem, fullWitness witness.Witness, rel *buffer.Releaser, ck *commitKeys, mode Solver) (*Assignment, error) {
	r1cs, err := AsR1CS(ccs)
	if err != nil {
		return nil, err
	}
	if isNil(fullWitness) {
		return nil, fmt.Errorf("%w: nil witness", ErrWitnessSize)
	}
	if err := CheckWitnessShape(fullWitness, r1cs); err != nil {
		return nil, err
	}
	// The solve's span first: the commitments' MSMs run inside the solver
	// (a hint) and are its children.
	tracer := semconv.Tracer(trace.SpanFromContext(ctx).TracerProvider())
	tasks := solverTasks(r1cs)
	if n := SolverTasks(ctx); n > 0 {
		tasks = n
	}
	asg := &Assignment{
		NbPublic:      r1cs.GetNbPublicVariables(),
		NbConstraints: r1cs.GetNbConstraints(),
		DomainSize:    int(ecc.NextPowerOfTwo(uint64(r1cs.GetNbConstraints()))),
	}
	fail := func(err error) (*Assignment, error) {
		// Under the synthesis's span, in rel's mode, like every release.
		asg.Release(ctx, rel)
		return nil, fmt.Errorf("synthesize: %w", err)
	}
	direct := levelSolvable(r1cs)
	if direct {
		// The level solver writes into the buffers: synthesize.copy only
		// gets them (and zeroes a pooled buffer's tail).
		_, cspan := tracer.Start(ctx, semconv.SpanSynthesizeCopy)
		err := asg.newBuffers(rel, len(r1cs.Public)+len(r1cs.Secret)+r1cs.NbInternalVariables, [4]fr.Vector{})
		cspan.SetAttributes(semconv.KeyBufferBytes.Int((len(asg.Wires) + 3*asg.DomainSize) * fr.Bytes))
		semconv.SetError(cspan, err)
		cspan.End()
		if err != nil {
			return fail(err)
		}
	}
	solverName := "gnark"
	if direct {
		solverName = string(SolverLevels)
	}
	if direct && mode != SolverLevels {
		// A step of its own before the solve, not a child of it: the
		// solve's span stays a leaf, its time its own work, where a child
		// would turn all of it but the plan into untraced time.
		planTraced(ctx, tracer, r1cs)
	}
	sctx, sspan := tracer.Start(ctx, semconv.SpanSynthesizeSolve, trace.WithAttributes(
		semconv.KeySolverTasks.Int(tasks), semconv.KeySolverLevels.Int(len(r1cs.Levels)),
		semconv.KeySolver.String(solverName)))
	var hints hintClock
	endSolve := func(err error) {
		sspan.SetAttributes(semconv.KeySolverHintCalls.Int64(hints.calls.Load()),
			semconv.KeySolverHintCPU.Float64(float64(hints.nanos.Load())/1e6))
		semconv.SetError(sspan, err)
		sspan.End()
	}
	// The clock's overrides first: the commitment's and the mask's below
	// replace theirs.
	solveOpts := append([]solver.Option{solver.WithNbTasks(tasks)}, hints.options(r1cs)...)
	var com *commitState
	if info := r1cs.CommitmentInfo.(constraint.Groth16Commitments); len(info) > 0 {
		if com, err = newCommitState(info, ck); err != nil {
			endSolve(err)
			asg.Release(ctx, rel)
			return nil, err
		}
		solveOpts = append(solveOpts, com.solverOption(sctx, ck))
		if ck.mask != nil {
			if o := fixedMaskOption(*ck.mask); o != nil {
				solveOpts = append(solveOpts, o)
			}
		}
	}
	asg.com = com
	var sol any
	if direct {
		var rep solveReport
		rep, err = levelSolveReport(r1cs, fullWitness.Vector().(fr.Vector), asg.Wires, asg.A, asg.B, asg.C, tasks, mode, solveOpts...)
		// Failed or not, the span names the solver that ran (a failure
		// before either ran reports neither).
		switch {
		case rep.components > 0:
			sspan.SetAttributes(semconv.KeySolver.String(string(SolverComponents)), semconv.KeySolverComponents.Int(rep.components))
		case rep.parts > 0:
			sspan.SetAttributes(semconv.KeySolverParts.Int(rep.parts))
		}
	} else {
		sol, err = r1cs.Solve(fullWitness, solveOpts...)
	}
	if com != nil && com.err != nil {
		err = com.err
	} else if err != nil {
		err = fmt.Errorf("%w: %s", ErrUnsatisfied, solveErrorText(err))
	}
	endSolve(err)
	if err != nil {
		asg.Release(ctx, rel)
		return nil, err
	}
	if direct {
		return asg, nil
	}
	s := sol.(*cs.R1CSSolution)
	_, cspan := tracer.Start(ctx, semconv.SpanSynthesizeCopy)
	defer cspan.End()
	if err := asg.newBuffers(rel, len(s.W), [4]fr.Vector{s.W, s.A, s.B, s.C}); err != nil {
		return fail(err)
	}
	s.W, s.A, s.B, s.C = nil, nil, nil, nil
	cspan.SetAttributes(semconv.KeyBufferBytes.Int((len(asg.Wires) + 3*asg.DomainSize) * fr.Bytes))
	return asg, nil
}

// newBuffers gets asg's four buffers (wires: nbWires elements; a, b, c:
// DomainSize) from rel's pool or fresh, and, in one pass on all cores
// (parallelCopy: the first write to mmap'd memory page-faults, which one
// core alone pays serially), copies src's vectors (gnark's W, A, B, C)
// into them; src of nil vectors copies nothing and only zeroes a pooled a, b or c
// past NbConstraints (the level solver writes the rest). A fresh buffer
// is zero: its tail is left untouched, not even faulted in.
func (asg *Assignment) newBuffers(rel *buffer.Releaser, nbWires int, src [4]fr.Vector) error {
	jobs := make([]copyJob, 0, 4)
	hb, v, zeroed, err := newFrBuffer(rel, nbWires)
	if err != nil {
		return err
	}
	asg.wires, asg.Wires = hb, v
	if src[0] != nil {
		jobs = append(jobs, copyJob{dst: asg.Wires, src: src[0], zeroed: zeroed})
	}
	for i, x := range []struct {
		buf *(*buffer.Mmap)
		dst *[]fr.Element
	}{{&asg.a, &asg.A}, {&asg.b, &asg.B}, {&asg.c, &asg.C}} {
		if *x.buf, *x.dst, zeroed, err = newFrBuffer(rel, asg.DomainSize); err != nil {
			return err
		}
		if src[i+1] != nil {
			jobs = append(jobs, copyJob{dst: *x.dst, src: src[i+1], zeroed: zeroed})
		} else if !zeroed {
			// A pooled buffer holds the last proof's values: its tail
			// past the constraints is cleared; the solver writes the rest.
			jobs = append(jobs, copyJob{dst: (*x.dst)[asg.NbConstraints:]})
		}
	}
	parallelCopy(jobs...)
	return nil
}

// solveErrorText says which constraint failed without the wire values
// gnark's message carries: witness values never go into errors, which end
// up in spans and gRPC statuses (DESIGN.md).
func solveErrorText(err error) string {
	var unsat *cs.UnsatisfiedConstraintError
	if errors.As(err, &unsat) {
		return fmt.Sprintf("constraint #%d is not satisfied", unsat.CID)
	}
	msg := err.Error()
	if i := strings.IndexAny(msg, ":\n"); i >= 0 {
		msg = msg[:i]
	}
	return "R1CS solver: " + msg
}

// CheckWitnessShape checks that w has as many public and as many secret
// values as ccs has inputs. The solver checks only the total, so a witness
// with the right total but another split would prove and then fail
// verification (or, unverified, carry the wrong public inputs).
func CheckWitnessShape(w witness.Witness, ccs constraint.ConstraintSystem) error {
	vec, ok := w.Vector().(fr.Vector)
	if !ok {
		return fmt.Errorf("%w: witness over another field (%T)", ErrUnsupported, w.Vector())
	}
	nbPub, nbSec := ccs.GetNbPublicVariables()-1, ccs.GetNbSecretVariables()
	pub, err := w.Public()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadWitness, err)
	}
	gotPub := len(pub.Vector().(fr.Vector))
	if len(vec) != nbPub+nbSec || gotPub != nbPub {
		return fmt.Errorf("%w: %d public and %d secret values, the circuit has %d public and %d secret inputs",
			ErrWitnessSize, gotPub, len(vec)-gotPub, nbPub, nbSec)
	}
	return nil
}
