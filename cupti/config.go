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

// DefaultDurationWait is how long, by default (no forced flush), a
// cudaspans kernel span waits for its CUPTI record after its Synchronize:
// five drains at DefaultFlushInterval.
const DefaultDurationWait = time.Second

// NoForcedFlushEnv names the environment variable that sets, for every
// Start of the process, how cudaspans' kernel spans get cuda.cupti_ms
// (for programs that pass no option, such as cuptibench). Unset, empty
// or "1": without a forced flush, each span waiting up to
// DefaultDurationWait for its record (the default); a Go duration
// ("500ms", "0s"): the same, waiting that long; "0": a forced CUPTI flush
// at each cudaspans Synchronize (WithForcedFlush). Any other value
// (negative durations too) keeps the default and is said in one line
// through the logger at Start. An option passed to Start wins over it.
const NoForcedFlushEnv = "CUZK_CUPTI_NO_FORCED_FLUSH"

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
	noForcedFlush  bool          // the default; false: WithForcedFlush
	durationWait   time.Duration // its wait (WithoutForcedFlush)
	envNote        string        // a bad NoForcedFlushEnv, said at Start
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
	c.noForcedFlush, c.durationWait, c.envNote = noForcedFlushFromEnv(os.Getenv(NoForcedFlushEnv))
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
// neither takes CUPTI's durations nor holds spans for them (cuptibench's
// "on, no cupti_ms" variant).
func WithoutCudaspansDurations() Option {
	return optionFunc(func(c *config) { c.csDurations = false })
}

// WithoutForcedFlush sets how long a cudaspans kernel span waits for its
// CUPTI record in the default mode (DefaultDurationWait unless set; a
// negative wait is 0), and keeps that mode even where NoForcedFlushEnv
// is 0.
//
// The mode, the default: cudaspans' kernel spans get their cuda.cupti_ms
// without a forced CUPTI flush on the launching thread at each
// Synchronize (which WithForcedFlush does, and pays for); a span whose
// record has not come by its Synchronize is held
// (cudaspans.SetLaunchDurationWait) until a drain of the capture brings
// it, or until the first drain wait or more after its Synchronize (0: the
// next drain), and then ends with cuda.gpu_ms only; Stats counts both,
// and Close says in one line how many ended without. Records are matched
// by the launch's id, never reused, so a late one can only reach its own
// span. Held spans are exported after their Synchronize, often after
// their parent ended. A record with no external correlation record yet
// waits as many drains as the wait spans for one, so work that nothing
// marked reaches its device window up to that much later. Without
// cuda.cupti_ms (WithoutCudaspansDurations) neither mode does anything.
func WithoutForcedFlush(wait time.Duration) Option {
	return optionFunc(func(c *config) {
		if wait < 0 {
			wait = 0
		}
		c.noForcedFlush, c.durationWait, c.envNote = true, wait, ""
	})
}

// WithForcedFlush has each cudaspans Synchronize force a CUPTI flush on
// the launching thread and take its kernels' cuda.cupti_ms from it, so
// every kernel span ends at its Synchronize, with its record's duration
// when one came by then and without otherwise. The flush is paid on the
// launching thread, at every Synchronize: bench/cupti.md measures it
// (issue 23, sixth session: the prover at 2^22 on the H200, +6.26 % with
// it against −0.42 % without, one run of 3 proofs each). Also
// NoForcedFlushEnv=0.
func WithForcedFlush() Option {
	return optionFunc(func(c *config) { c.noForcedFlush, c.durationWait, c.envNote = false, 0, "" })
}

// ParseNoForcedFlush reads a value of NoForcedFlushEnv as Start does:
// "", "1" or a Go duration of 0 or more leave the forced flush off
// (forced false) with that wait (DefaultDurationWait for "" and "1");
// "0" forces it (forced true, wait 0). Any other value is an error that
// quotes it and says what is wanted; Start keeps the default for it and
// says so, a program may refuse it at its start (cuzk prove, serve and
// gpu-trace do, on hosts without a GPU too).
func ParseNoForcedFlush(v string) (forced bool, wait time.Duration, err error) {
	switch v {
	case "", "1":
		return false, DefaultDurationWait, nil
	case "0":
		return true, 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return false, DefaultDurationWait, fmt.Errorf("%q is not 0, 1 or a duration such as 500ms", v)
	}
	return false, d, nil
}

// noForcedFlushFromEnv reads NoForcedFlushEnv's value v: whether the
// forced flush is left off (the default), the wait, and a line saying why
// a bad value was ignored.
func noForcedFlushFromEnv(v string) (on bool, wait time.Duration, note string) {
	forced, wait, err := ParseNoForcedFlush(v)
	if err != nil {
		return true, DefaultDurationWait, fmt.Sprintf("cupti: %s=%v; kept the default: no forced flush at cudaspans' Synchronize, kernel spans wait up to %v for their CUPTI records (0 forces the flush)", NoForcedFlushEnv, err, DefaultDurationWait)
	}
	return !forced, wait, ""
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
