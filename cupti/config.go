package cupti

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// DefaultWindow is the length of a device window span: records with no
// parent go under one span per device and window, each closed and
// exported once its time is over, so a long-running process never holds
// one span open for its lifetime.
const DefaultWindow = time.Second

// DefaultFlushInterval is how often the capture flushes CUPTI's buffers
// and emits spans.
const DefaultFlushInterval = 200 * time.Millisecond

// DefaultCalibrateInterval is how often the GPU clock is calibrated
// against the host clock again.
const DefaultCalibrateInterval = time.Second

// Option configures Start.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	paths          []string
	tp             trace.TracerProvider
	maxPerParent   int
	window         time.Duration
	flushEvery     time.Duration
	calibrateEvery time.Duration
	nvtx           bool
	csDurations    bool
	log            func(string)
	backend        backend
	now            func() time.Time
	job            func(device int, start, end time.Time) (context.Context, bool)
}

func newConfig(opts []Option) config {
	c := config{
		tp:             otel.GetTracerProvider(),
		maxPerParent:   cudaspans.DefaultMaxKernelSpans,
		window:         DefaultWindow,
		flushEvery:     DefaultFlushInterval,
		calibrateEvery: DefaultCalibrateInterval,
		nvtx:           true,
		csDurations:    true,
		log:            func(s string) { fmt.Fprintln(os.Stderr, s) },
		now:            time.Now,
	}
	for _, o := range opts {
		o.apply(&c)
	}
	return c
}

// WithLibraryPaths sets the CUPTI libraries tried in order (default
// DefaultLibraryPaths).
func WithLibraryPaths(paths ...string) Option {
	return optionFunc(func(c *config) { c.paths = paths })
}

// WithTracerProvider sets the provider of the spans (default: the global).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

// WithMaxKernelSpans sets how many kernel spans one parent gets before
// further kernels under it are folded into one span per kernel name and
// drain (default cudaspans.DefaultMaxKernelSpans); n <= 0 folds all.
func WithMaxKernelSpans(n int) Option {
	return optionFunc(func(c *config) { c.maxPerParent = n })
}

// WithWindow sets the length of device window spans (default DefaultWindow).
func WithWindow(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.window = d
		}
	})
}

// WithFlushInterval sets how often records are flushed into spans
// (default DefaultFlushInterval).
func WithFlushInterval(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.flushEvery = d
		}
	})
}

// WithoutNVTX captures no NVTX ranges (and leaves NVTX_INJECTION64_PATH alone).
func WithoutNVTX() Option { return optionFunc(func(c *config) { c.nvtx = false }) }

// WithLogger sets where the capture's one-line notices go (records
// dropped, unbalanced NVTX ranges, NVTX not available); default stderr.
// Each distinct notice is said once.
func WithLogger(log func(string)) Option {
	return optionFunc(func(c *config) {
		if log != nil {
			c.log = log
		}
	})
}

// WithoutCudaspansDurations leaves cuda.cupti_ms off cudaspans' kernel
// spans: their work is still not traced twice, but cudaspans' Synchronize
// no longer waits for a forced CUPTI flush (the cost cuptibench reports
// separately).
func WithoutCudaspansDurations() Option {
	return optionFunc(func(c *config) { c.csDurations = false })
}

func withBackend(b backend) Option { return optionFunc(func(c *config) { c.backend = b }) }

func withClock(now func() time.Time) Option { return optionFunc(func(c *config) { c.now = now }) }

// WithJobs parents records that have no NVTX range or Go parent of their
// own under the job whose published time window and device contain them
// (package cupti/jobs: a daemon forwarding jobs to this process publishes
// them; `cuzk gpu-trace --jobs FILE`). find gets the device ordinal and
// the record's wall-clock start and end, and returns the job's span
// context (a remote span), or false for none; it is called from the
// capture's drain, one record at a time.
func WithJobs(find func(device int, start, end time.Time) (context.Context, bool)) Option {
	return optionFunc(func(c *config) { c.job = find })
}
