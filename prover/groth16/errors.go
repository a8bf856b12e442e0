package groth16

import (
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/setup"
)

// Errors callers branch on with errors.Is. Each declares its error.type
// (semconv.NewError), the value a span that fails with an error wrapping
// it records.
var (
	// ErrUnsupported is returned for a constraint system, key or witness
	// that is not a BLS12-381 R1CS of gnark (a PLONK system, another
	// curve). error.type unsupported. It is setup.ErrUnsupported (and
	// keycache.ErrUnsupported), one sentinel for one meaning: the key
	// setup and the key cache refuse the same systems. (From setup, not
	// keycache: keycache imports this package to store solver plans.)
	ErrUnsupported = setup.ErrUnsupported
	// ErrWitnessSize is returned when the witness has the wrong number of
	// public or secret values for the constraint system. error.type
	// bad_witness.
	ErrWitnessSize = semconv.NewError(semconv.ErrorTypeBadWitness, "witness has the wrong size")
	// ErrBadWitness is returned for a witness that is not gnark's binary
	// format over BLS12-381's scalar field (values ≥ r included), or that is
	// missing for a circuit without a sample witness; the daemon's
	// server.CheckWitness wraps it too. error.type bad_witness.
	ErrBadWitness = semconv.NewError(semconv.ErrorTypeBadWitness, "bad witness")
	// ErrUnsatisfied is returned when the witness does not satisfy the
	// R1CS. error.type unsatisfied.
	ErrUnsatisfied = semconv.NewError(semconv.ErrorTypeUnsatisfied, "witness does not satisfy the circuit")
	// ErrKeyMismatch is returned when the proving key does not belong to
	// the constraint system of the assignment. error.type key_mismatch.
	ErrKeyMismatch = semconv.NewError(semconv.ErrorTypeKeyMismatch, "proving key does not match the constraint system")
)
