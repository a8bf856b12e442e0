package cudaspans

import (
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// DefaultMaxKernelSpans is how many kernel spans one parent span gets
// before further launches under it are aggregated per kernel name.
const DefaultMaxKernelSpans = 256

// DefaultAnchorMaxAge is the age after which a stream's clock anchor is
// renewed at the next point the stream is idle. GPU and host clocks drift
// apart by some µs per second, and float milliseconds lose precision far
// from the anchor (DESIGN.md, "GPU clock to wall clock").
const DefaultAnchorMaxAge = time.Second

// Option configures Open and Devices.
type Option interface{ apply(*config) }

type config struct {
	driver         Driver
	tp             trace.TracerProvider
	maxKernelSpans int
	anchorMaxAge   time.Duration
	cacheDir       string // "" = default; "-" = no disk cache
	nvrtcPaths     []string
	compiler       compiler         // tests inject a fake
	now            func() time.Time // tests inject a clock
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

func newConfig(opts []Option) config {
	c := config{
		tp:             otel.GetTracerProvider(),
		maxKernelSpans: DefaultMaxKernelSpans,
		anchorMaxAge:   DefaultAnchorMaxAge,
		now:            time.Now,
	}
	for _, o := range opts {
		o.apply(&c)
	}
	return c
}

// WithDriver uses d instead of the libcuda.so.1 that LoadDriver loads
// (tests pass a fake).
func WithDriver(d Driver) Option { return optionFunc(func(c *config) { c.driver = d }) }

// WithTracerProvider sets the provider of device spans (default: the
// global one).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

// WithMaxKernelSpans sets how many kernel spans one parent span gets
// before further launches under it are folded into one span per kernel
// name (default DefaultMaxKernelSpans); n <= 0 aggregates all of them.
func WithMaxKernelSpans(n int) Option {
	return optionFunc(func(c *config) { c.maxKernelSpans = n })
}

// WithAnchorMaxAge sets how old a stream's clock anchor may get before it
// is renewed (default DefaultAnchorMaxAge).
func WithAnchorMaxAge(d time.Duration) Option {
	return optionFunc(func(c *config) { c.anchorMaxAge = d })
}

// WithKernelCacheDir sets the directory of compiled kernels (default
// os.UserCacheDir()/otelcuzk/kernels); "" keeps the default and "-"
// disables the disk cache.
func WithKernelCacheDir(dir string) Option {
	return optionFunc(func(c *config) { c.cacheDir = dir })
}

// WithNVRTCPaths sets the NVRTC libraries tried in order (default
// libnvrtc.so.13, libnvrtc.so.12, then the same names under
// /usr/local/cuda/lib64; $CUDASPANS_NVRTC, when set, comes first).
func WithNVRTCPaths(paths ...string) Option {
	return optionFunc(func(c *config) { c.nvrtcPaths = paths })
}

func withClock(now func() time.Time) Option { return optionFunc(func(c *config) { c.now = now }) }

func withCompiler(cc compiler) Option { return optionFunc(func(c *config) { c.compiler = cc }) }
