package engine

import (
	"slices"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/journal"
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

	synthesisWorkers int
	synthesizer      prover.StagedRunner
	budget           uint64
	estimate         func(*prover.Request) (uint64, error)
	held             func() uint64
	ready            <-chan struct{}
	onFault          func(worker string, err error)
	journal          *journal.Journal
	tuner            *Tuner
	releasers        []*buffer.Releaser
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

// WithQueueSize bounds the partitions waiting over all priorities: queued,
// waiting for the memory budget, or synthesized and waiting for a device
// worker (those being synthesized or proved are not waiting). Submit
// returns ErrQueueFull, naming the count and n, for a job that would take
// the waiting past n; a job of more partitions than n is taken when none
// waits. n < 1 means 1.
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

// WithSynthesisWorkers makes the engine pipelined with n synthesis
// workers: n jobs are synthesized at once on the CPU while the device
// workers prove the ones synthesized before (every worker's Runner must
// then be a prover.StagedRunner). n = 0, the default, is the serial
// engine: each worker runs its jobs whole, one at a time. n < 0 means 0.
func WithSynthesisWorkers(n int) Option {
	return optionFunc(func(c *config) { c.synthesisWorkers = max(n, 0) })
}

// WithSynthesizer sets the runner that synthesizes in a pipelined engine
// (default: the first worker's Runner). Its Synthesized values are proved
// by the workers' runners, so they must be of one kind (prover.Prover).
func WithSynthesizer(r prover.StagedRunner) Option {
	return optionFunc(func(c *config) { c.synthesizer = r })
}

// WithMemoryBudget bounds the host memory of the jobs in flight to bytes:
// a job reserves estimate(req) (one partition's peak, see
// circuits.ProofMemory) before its synthesis starts, waiting in an
// engine.budget span while the reserved estimates plus held() (the host
// copies of the proving keys; nil: 0) would exceed bytes, and gives it
// back when its buffers are freed (prover.Synthesized.Freed; a serial
// engine runs a StagedRunner's two stages itself for this, and counts a
// plain Runner's job until Run returns). Submit
// refuses with ErrOverBudget a job whose estimate plus held() exceeds
// bytes. estimate and held must be safe for concurrent use and fast (held
// runs under the engine's lock and must not call the engine). bytes 0 or
// a nil estimate: no budget.
func WithMemoryBudget(bytes uint64, estimate func(*prover.Request) (uint64, error), held func() uint64) Option {
	return optionFunc(func(c *config) {
		if estimate == nil {
			bytes = 0
		}
		c.budget, c.estimate, c.held = bytes, estimate, held
	})
}

// WithReleasers names the Releasers through which the workers' runners
// free their large host buffers (a daemon's: one per pipeline), for
// Status to report: their mode (Status.ReleaseMode, the first's; a
// daemon's are all of one mode) and, in pool mode, what their pools may
// keep and keep now in all (Status.PoolLimit, Status.PoolHeld). A
// Releaser given twice counts once; nil ones are skipped. It changes
// nothing in how jobs run: pooled buffers are outside the memory budget.
func WithReleasers(rels ...*buffer.Releaser) Option {
	return optionFunc(func(c *config) {
		for _, r := range rels {
			if r != nil && !slices.Contains(c.releasers, r) {
				c.releasers = append(c.releasers, r)
			}
		}
	})
}

// WithReady holds work off the devices until ready is closed (the
// backends' kernels compiled or loaded): jobs queue (and, in a pipelined
// engine, are synthesized) meanwhile, waiting in an engine.warmup span.
// nil: ready at once.
func WithReady(ready <-chan struct{}) Option {
	return optionFunc(func(c *config) { c.ready = ready })
}

// WithFaultHook makes the engine call f when a device worker's runner
// returns an error wrapping backend.ErrDeviceFault: the worker is then
// unhealthy (WorkerStatus.Healthy false) and takes no more work, and the
// job it held goes back to the queue for another worker. f runs on the
// worker's goroutine and must not block; the daemon reports the device in
// its health service.
func WithFaultHook(f func(worker string, err error)) Option {
	return optionFunc(func(c *config) { c.onFault = f })
}

// WithTuner makes t choose how many jobs are synthesized at once and each
// synthesis's solver tasks (groth16.WithSolverTasks), from the stage times
// the engine measures (see Tuner). A pipelined engine then starts
// t.MaxWorkers() synthesis workers (WithSynthesisWorkers's n is only
// whether it is pipelined) and lets at most t.Workers of them synthesize
// a circuit and size at once; a serial engine splits the cores over the
// jobs its workers synthesize at once. nil: no tuner.
func WithTuner(t *Tuner) Option {
	return optionFunc(func(c *config) { c.tuner = t })
}
