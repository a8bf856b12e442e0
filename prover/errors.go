package prover

import (
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

// Errors callers branch on with errors.Is (with the circuits package's
// ErrBadConstraints and ErrTooLargeForHost). Each declares its error.type
// (semconv.NewError), the value a span that fails with an error wrapping
// it records.
var (
	// ErrUnsupported is returned for a constraint system, key or witness
	// that is not a BLS12-381 R1CS of gnark (a PLONK system, another
	// curve). error.type unsupported. It is keycache.ErrUnsupported, one
	// sentinel for one meaning: the key cache refuses the same systems.
	ErrUnsupported = keycache.ErrUnsupported
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
	// ErrUnknownBackend is returned by NewPipeline for a backend name other
	// than cpu, cuda or auto (or a registered one). error.type
	// invalid_request.
	ErrUnknownBackend = semconv.NewError(semconv.ErrorTypeInvalidRequest, "unknown backend (want cpu, cuda or auto)")
	// ErrForeignSynthesis is returned by ProveSynthesized for a Synthesized
	// that no Pipeline made. error.type invalid_request.
	ErrForeignSynthesis = semconv.NewError(semconv.ErrorTypeInvalidRequest, "synthesized proof not made by a Pipeline")

	// ErrBackendUnavailable is returned when a requested backend cannot run
	// on this host (for the CUDA backend it wraps cudaspans.ErrNoDevice).
	// error.type no_device.
	ErrBackendUnavailable = semconv.NewError(semconv.ErrorTypeNoDevice, "backend unavailable")
	// ErrNoDeviceMemory is returned by Pipeline.MemInfo for a backend
	// without device memory (the CPU). error.type no_device.
	ErrNoDeviceMemory = semconv.NewError(semconv.ErrorTypeNoDevice, "no device memory")
	// ErrDeviceFault is wrapped by a backend's error when its device can no
	// longer be trusted with work (a sticky CUDA error: an illegal address,
	// an Xid, a lost device), as opposed to an error of the one proof. An
	// engine marks the worker's device unhealthy, takes no more work to it,
	// and hands the proof to another worker. error.type device_fault.
	ErrDeviceFault = semconv.NewError(semconv.ErrorTypeDeviceFault, "device fault")
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
