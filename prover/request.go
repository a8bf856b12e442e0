package prover

import (
	"context"
	"time"

	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// Correlation carries the caller's ids, recorded on engine.job as
// filecoin.miner.id, filecoin.sector.number, curio.task.id, curio.task.name.
type Correlation struct {
	MinerID      string
	SectorNumber int64
	TaskID       int64
	TaskName     string
}

// Request is one proof to make.
type Request struct {
	// RequestID is the caller's idempotency key (cuzk.request.id).
	RequestID string
	// Circuit names a registered circuit ("mulchain", "merkle", or one
	// registered from files).
	Circuit string
	// Constraints sizes a built-in circuit (number of R1CS constraints,
	// approximate for merkle); ignored for circuits registered from files.
	Constraints int
	// Witness is a full witness in gnark's binary format; nil asks a
	// built-in circuit for its own satisfying sample witness.
	Witness []byte
	// Partitions, when it holds more than one witness, makes the request a
	// multi-partition proof (a Filecoin PoRep C2 has 10): one proof per
	// witness, of the same circuit, returned in Result.Partitions in the
	// same order. Witness is then ignored; a nil entry asks for the
	// built-in sample witness, as a nil Witness does. One entry is the same
	// as Witness.
	Partitions [][]byte
	// Priority orders the request in the engine's queues (zero: Normal).
	Priority priority.Priority
	Correlation
	// Verify runs gnark's verifier on the proof (proof.verify span).
	Verify bool
}

// Timings are the durations cuzk reports for one proof.
//
// QueueWait is the wait for a synthesis slot (or a worker, in a serial
// engine), MemoryWait the wait for the engine's memory budget, DeviceWait
// the wait of the synthesized proof for a device worker (gpu.queue); the
// others are the pipeline's steps, Total from submit to result.
type Timings struct {
	QueueWait, KeyLoad, Synthesis, Prove, Serialize, Verify, Total time.Duration
	MemoryWait, DeviceWait                                         time.Duration
}

// Result is a finished proof.
type Result struct {
	// Proof is the gnark groth16 proof of BLS12-381, serialized with its
	// WriteTo (compressed points).
	Proof []byte
	// PublicWitness is the public part of the witness, gnark binary format.
	PublicWitness []byte
	// Verified is true when Verify was asked and gnark's verifier accepted.
	Verified bool
	// TraceID is the hex W3C trace id of the proof's trace.
	TraceID string
	Timings Timings
	// Backend is the backend that proved it ("cpu" or "cuda").
	Backend string
	// Partitions are the proofs of a multi-partition request
	// (Request.Partitions), in partition order; Proof and PublicWitness
	// are then those of partition 0, and Timings sum the partitions'
	// (Total and the waits are the request's own).
	Partitions []Result
}

// Runner makes one proof: synthesis, prove, serialize and optional verify,
// each a span under the span in ctx (engine.job). The engine calls one
// Runner per worker (one per GPU, or CPU workers). Run honours ctx's
// cancellation between steps.
type Runner interface {
	Run(ctx context.Context, req *Request) (*Result, error)
}
