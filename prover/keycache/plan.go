package keycache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	cs_bls12381 "github.com/consensys/gnark/constraint/bls12-381"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// The component solver's plan of a cached circuit (prover/groth16's
// WritePlan format) is kept beside it, so that a process that reads the
// circuit from the cache (cuzk prove) does not make the plan again (a
// synthesize.plan of 236 ms at merkle 2^22 on the 2-core development VM):
// the circuit file's name with planSuffix for ".ccs", filed under the
// constraint system's hash (the plan's circuit ID, which ReadPlan
// compares). The file carries its own checksum, so it is written
// atomically without the checked-file trailer. It is made and stored
// right after a compile is stored (synthesize.plan then circuit.plan.store
// under circuit.compile), and read after a cached circuit is decoded
// (circuit.plan.read); a plan file missing, damaged or of another circuit
// costs the proof nothing: it is made and stored again, the refusal said
// on the progress writer and in an event. A cache of ephemeral keys reads
// a plan but never stores one. The level solver's shape (levelShape) is
// not stored: one pass over the levels and blueprints, not the
// instructions.

// planSuffix ends a plan file's name.
const planSuffix = ".plan"

// Outcomes of circuit.plan.read (cuzk.solver.plan).
const (
	PlanCache   = "cache"   // read, checked and kept: no synthesize.plan follows
	PlanMissing = "missing" // no plan file: made and stored (unless ephemeral keys)
	PlanRefused = "refused" // the file does not fit the circuit or is damaged: made and replaced (unless ephemeral keys)
)

// planPath is the plan file of the cached circuit at ccsPath.
func planPath(ccsPath string) string {
	return strings.TrimSuffix(ccsPath, ".ccs") + planSuffix
}

// circuitOfPlan is the cached circuit file of the plan file at path.
func circuitOfPlan(path string) string {
	return strings.TrimSuffix(path, planSuffix) + ".ccs"
}

// loadPlan reads the plan of comp, a circuit read from the cache, from its
// file (circuit.plan.read) into the solver's per-process cache
// (groth16.ReadPlan), or, when the file is missing or refused, makes and
// stores it (storePlan; a cache of ephemeral keys leaves it to the first
// synthesis). A circuit the component solver does not solve has no plan:
// nothing is recorded.
func (c *Cache) loadPlan(ctx context.Context, comp *Compiled) {
	r1cs, ok := comp.CCS.(*cs_bls12381.R1CS)
	if !ok || comp.Path == "" || comp.Hash == "" {
		return
	}
	path := planPath(comp.Path)
	_, span := c.tracer.Start(ctx, semconv.SpanCircuitPlanRead)
	size, err := readPlanFile(path, r1cs, comp.Hash)
	outcome := PlanCache
	switch {
	case err == nil:
		span.SetAttributes(semconv.KeyFileBytes.Int64(size))
	case errors.Is(err, groth16.ErrUnsupported):
		span.End()
		return
	case errors.Is(err, fs.ErrNotExist):
		outcome = PlanMissing
	default:
		outcome = PlanRefused
		again := "making it again"
		if c.ephemeral {
			again = "the first synthesis makes it (ephemeral keys: not stored)"
		}
		span.AddEvent("solver plan refused, "+again, trace.WithAttributes(attribute.String("error", err.Error())))
		if c.progress != nil {
			// ReadPlan's error starts "solver plan refused": the line says it once.
			why := strings.TrimPrefix(reasonAt(err, path), groth16.ErrBadPlan.Error()+": ")
			fmt.Fprintf(c.progress, "circuit cache: solver plan %s refused (%s); %s\n", path, why, again)
		}
	}
	span.SetAttributes(semconv.KeySolverPlan.String(outcome))
	span.End()
	if outcome != PlanCache && !c.ephemeral {
		c.storePlan(ctx, comp)
	}
}

// readPlanFile reads the plan file at path for r1cs, whose hash is hash,
// and returns its size in bytes. Errors: ReadPlan's, the file system's
// (fs.ErrNotExist for none).
func readPlanFile(path string, r1cs *cs_bls12381.R1CS, hash string) (int64, error) {
	f, st, err := openRegular(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return st.Size(), groth16.ReadPlan(f, r1cs, hash)
}

// storePlan makes the plan of comp, a circuit in the cache, unless this
// process has it (groth16.MakePlan: a synthesize.plan span), and writes it
// beside the circuit (circuit.plan.store). A failed store, like a
// circuit's, fails nothing: the next run makes the plan again.
func (c *Cache) storePlan(ctx context.Context, comp *Compiled) {
	r1cs, ok := comp.CCS.(*cs_bls12381.R1CS)
	if !ok || comp.Path == "" || comp.Hash == "" || c.ephemeral {
		return
	}
	if err := groth16.MakePlan(ctx, r1cs); err != nil {
		return // not for the component solver: no plan
	}
	_, span := c.tracer.Start(ctx, semconv.SpanCircuitPlanStore)
	err := c.storeWith(writeAtomic, "solver plan", planPath(comp.Path), func(w io.Writer) error {
		return groth16.WritePlan(w, r1cs, comp.Hash)
	})
	endSpan(span, err)
}
