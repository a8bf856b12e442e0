// Package engine runs proof requests on a set of workers: a bounded
// priority queue in front of one prover.Runner per GPU plus CPU workers.
//
// A request is submitted under the caller's request id, which is an
// idempotency key: submitting the same id again returns the job already
// made for it, running or finished, for as long as the engine keeps the
// result (WithResultTTL, WithMaxResults). Queued work is taken highest
// priority first (CRITICAL overtakes everything queued) and first in, first
// out within one priority. A full queue refuses new work with ErrQueueFull.
//
// Every job is traced: an engine.job span, child of the span in the context
// given to Submit (the gRPC server span in the daemon), carrying the request
// id, job id, circuit, priority, queue depth and the caller's correlation
// ids; under it an engine.queue span covering the wait for a worker; the
// worker then calls Runner.Run with a context holding engine.job, so the
// pipeline's spans are its children.
package engine
