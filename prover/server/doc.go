// Package server serves cuzk.v1.ProvingEngine over gRPC on top of an
// engine.Engine.
//
// Trace context arrives in gRPC metadata: the server is instrumented with
// otelgrpc's stats handler, so a W3C traceparent from the caller makes the
// RPC's server span (and engine.job below it) part of the caller's trace; a
// malformed traceparent is ignored and a new trace starts. The request's
// correlation fields become attributes of engine.job. A call that only
// reads (GetStatus, GetMetrics, AwaitProof) is traced only when the
// caller's trace context is a sampled span, as a span of that trace; alone
// it makes no span, so a client that polls makes no trace per poll (package
// internal/rpctrace). grpc.health.v1 is never traced.
//
// The API is cuzk's (Curio's proving daemon) on the wire, so a client
// generated from cuzk's proving.proto works unchanged: AwaitProof and Prove
// answer an ended job with an OK reply whose status is COMPLETED, FAILED
// or CANCELLED (TIMEOUT when AwaitProof's timeout_ms passed first), our
// error_code field giving the code below. A Filecoin proof kind
// (proof_kind set) is checked (CheckFilecoin) and, as this daemon proves
// its own circuits only, refused with UNIMPLEMENTED naming the kind.
//
// Status codes, each the code of the error's error.type (cuzkv1.CodeOf,
// the one table): INVALID_ARGUMENT for an empty request id, an unknown
// proof_kind, sector_size or registered_proof (naming the field), a
// request with neither a proof kind nor a circuit, a malformed or
// out-of-field witness, a witness of the wrong size or one the circuit
// rejects, a bad constraint count (a built-in's smallest size is checked
// at submit), a string field longer than its limit (MaxStringBytes; the
// error names the field and the limit), and a request message that does
// not decode (truncated or garbage protobuf, an overlong varint, invalid
// UTF-8 in a string field: "malformed request message", where grpc-go
// alone answers INTERNAL); metadata over MaxHeaderBytes is refused by the
// HTTP/2 layer (INTERNAL, never retried by default, the connection kept); NOT_FOUND for an unknown circuit or job;
// RESOURCE_EXHAUSTED for a full queue, a proof whose estimated memory
// exceeds the engine's memory budget or the host's memory, out of device
// memory (and, from grpc itself, a message over the size limit);
// ALREADY_EXISTS for a request id used for another proof;
// FAILED_PRECONDITION for a cancel of a finished job; CANCELLED for a cancelled job; DEADLINE_EXCEEDED
// when AwaitProof's wait ends first; UNAVAILABLE while shutting down;
// UNAUTHENTICATED without the bearer token when one is configured;
// ABORTED for a job a restart interrupted (engine.ErrInterrupted: submit
// the same request id again to prove it).
//
// The standard health service grpc.health.v1 (grpc-go's health package)
// answers on the same address, without the bearer token: SERVING for ""
// and cuzk.v1.ProvingEngine once the daemon is ready (SetReady), NOT_SERVING
// before (SetNotReady) and from the start of Shutdown.
package server
