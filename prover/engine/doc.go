// Package engine runs proof requests through stages: a bounded priority
// queue in front of synthesis workers (CPU) and device workers (one
// prover.Runner per GPU, plus CPU workers).
//
// A request is submitted under the caller's request id, which is an
// idempotency key: submitting the same id again returns the job already
// made for it, running or finished, for as long as the engine keeps the
// result (WithResultTTL, WithMaxResults). Queued work is taken highest
// priority first (CRITICAL overtakes everything queued) and first in, first
// out within one priority. The queue size (WithQueueSize) bounds the work
// waiting: queued, waiting for memory, or synthesized and waiting for a
// device; beyond it new work is refused with ErrQueueFull, at once.
//
// Serial (the default) a device worker runs each job whole. Pipelined
// (WithSynthesisWorkers) a synthesis worker takes the job, waits for the
// memory budget (WithMemoryBudget) and synthesizes it
// (prover.StagedRunner.Synthesize); the synthesized job waits, by priority
// again, for a device worker, which proves it on its device
// (prover.Synthesized.Prove). A
// request with several partitions (prover.Request.Partitions) is one job
// whose partitions go through the stages on their own; the first failing
// partition fails the job and stops the others.
//
// Every job is traced: an engine.job span, child of the span in the context
// given to Submit (the gRPC server span in the daemon), carrying the request
// id, job id, circuit, priority, queue depth and the caller's correlation
// ids; under it (or under each engine.partition) an engine.queue span for
// the wait for a slot, engine.budget for the wait for memory, gpu.queue for
// the wait of a synthesized job for a device and engine.warmup for the wait
// for the devices' readiness (WithReady); the runner's spans (keys.load,
// pipeline.synthesize, pipeline.prove ...) are children too.
package engine
