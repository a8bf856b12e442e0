package prover

import (
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

// Errors callers branch on with errors.Is (with the circuits package's
// ErrBadConstraints and ErrTooLargeForHost, prover/groth16's and
// prover/backend's). Each declares its error.type
// (semconv.NewError), the value a span that fails with an error wrapping
// it records.
var (
	// ErrVerifyFailed is returned when Request.Verify is set and gnark's
	// verifier rejects the proof just made (a prover bug, never a user's).
	// error.type verify_failed.
	ErrVerifyFailed = semconv.NewError(semconv.ErrorTypeVerifyFailed, "proof rejected by the verifier")

	// ErrUnknownCircuit is circuits.ErrUnknownCircuit: no built-in or
	// file circuit has the requested name. error.type invalid_request.
	ErrUnknownCircuit = circuits.ErrUnknownCircuit
	// ErrBadCircuitFile is returned by ParseCircuitFile for a registration
	// that is not NAME:R1CS:PK[:VK] with a usable name and non-empty paths.
	// error.type invalid_request.
	ErrBadCircuitFile = semconv.NewError(semconv.ErrorTypeInvalidRequest, "want NAME:R1CS:PK[:VK]")
	// ErrUnknownBackend is returned by New for a backend name other
	// than cpu, cuda or auto (or a registered one). error.type
	// invalid_request.
	ErrUnknownBackend = semconv.NewError(semconv.ErrorTypeInvalidRequest, "unknown backend (want cpu, cuda or auto)")
	// ErrSynthesisSpent is returned by Synthesized.Prove for a
	// synthesized proof proved or released already (or nil).
	// error.type invalid_request.
	ErrSynthesisSpent = semconv.NewError(semconv.ErrorTypeInvalidRequest, "synthesized proof already proved or released")
)

// AbandonedWork is implemented by an error (found with errors.As) of a
// step that returned when its context ended while work it started runs on
// to its end: a circuit compile or key setup, which gnark cannot stop
// (keycache.AbandonedError). prover/engine keeps the cancelled job's
// worker and memory reserved until AbandonedDone is closed, and lists the
// work in its Status, so an abandoned setup is never unaccounted for.
type AbandonedWork interface {
	error
	// AbandonedStep names the work left running ("keys.setup",
	// "circuit.compile").
	AbandonedStep() string
	// AbandonedDone is closed once the work has ended.
	AbandonedDone() <-chan struct{}
}
