// Package daemon is the proving daemon as a library, in the shape of
// etcd's embed: a Config (the options of `cuzk serve`, one field each),
// New (checks it, sets up telemetry, opens a Prover per GPU and one for
// the CPU workers, builds the engine and the gRPC server, binds the
// listeners), Run (serves until its context is done, then shuts down) and
// Shutdown (stop accepting, let running proofs finish until its context
// ends, cancel the rest, close the pipelines, flush spans).
//
// config.go holds Config; daemon.go the Daemon's life; workers.go the
// pipelines and engine workers from the backend choice; readiness.go the
// engine's stage options (synthesis slots, memory budget, faults) and the
// warm-up that gates SERVING; shutdown.go the shutdown's bound; journal.go
// the job journal (--state-dir) and the finished jobs kept; device.go
// the CUDA backend's settings and the GPUs in the trace resource.
//
// `cuzk serve` is New and Run; `cuzk prove` reads its device settings and
// its trace resource here.
package daemon
