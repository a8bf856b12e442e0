package engine

import (
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/prover"
)

// Defaults, sized for a small host: a queue a few proofs deep per worker,
// and results kept long enough for a caller to come back with AwaitProof.
const (
	DefaultQueueSize   = 64
	DefaultResultTTL   = 10 * time.Minute
	DefaultMaxResults  = 1024
	DefaultCancelGrace = 10 * time.Second
)

// Option configures an Engine.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	queueSize   int
	resultTTL   time.Duration
	maxResults  int
	cancelGrace time.Duration
	tp          trace.TracerProvider
	validate    func(*prover.Request) error
	onFinish    func(JobInfo)
	now         func() time.Time
}

func newConfig(opts []Option) config {
	c := config{
		queueSize:   DefaultQueueSize,
		resultTTL:   DefaultResultTTL,
		maxResults:  DefaultMaxResults,
		cancelGrace: DefaultCancelGrace,
		now:         time.Now,
	}
	for _, o := range opts {
		o.apply(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	return c
}

// WithQueueSize bounds the number of queued (not yet running) jobs over all
// priorities; Submit returns ErrQueueFull beyond it. n < 1 means 1.
func WithQueueSize(n int) Option {
	return optionFunc(func(c *config) { c.queueSize = max(n, 1) })
}

// WithResultTTL sets how long a finished job (and its request id) is kept
// for Await and for idempotent resubmission.
func WithResultTTL(d time.Duration) Option {
	return optionFunc(func(c *config) { c.resultTTL = d })
}

// WithMaxResults bounds the number of finished jobs kept; the oldest go
// first. n < 1 means 1.
func WithMaxResults(n int) Option {
	return optionFunc(func(c *config) { c.maxResults = max(n, 1) })
}

// WithCancelGrace sets how long Shutdown waits for workers to return after
// it cancelled the running jobs (a Runner checks its context between steps,
// so one step may still be finishing).
func WithCancelGrace(d time.Duration) Option {
	return optionFunc(func(c *config) { c.cancelGrace = d })
}

// WithTracerProvider sets the provider of the engine's spans; the default
// is the global one.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

// WithValidator makes Submit call v before queueing a new request; an
// error refuses the request (wrapped with ErrInvalidRequest unless it
// already says what it is) and makes no job. v must be safe for concurrent
// use and fast: it runs on the caller's goroutine.
func WithValidator(v func(*prover.Request) error) Option {
	return optionFunc(func(c *config) { c.validate = v })
}

// WithFinishHook makes the engine call f once for every job that ends
// (succeeded, failed or cancelled), before Await returns for it (so a
// caller that awaited a job sees it counted). f runs on the worker's
// goroutine (or Cancel's or Shutdown's, for queued jobs) and must not
// block; the daemon's metrics use it.
func WithFinishHook(f func(JobInfo)) Option {
	return optionFunc(func(c *config) { c.onFinish = f })
}
