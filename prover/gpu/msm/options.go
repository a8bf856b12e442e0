package msm

import (
	"fmt"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
)

// The constructors of this package share one shape: New(ctx, c, ...) and
// NewDeviceBases(ctx, c, ...), with the device context c first and
// options after; an option is accepted only by the constructors it means
// something to.

// SharedOption configures both constructors: New and NewDeviceBases.
type SharedOption interface {
	Option
	DeviceBasesOption
}

// sharedConfig is the part of both constructors' configurations that
// their SharedOptions set.
type sharedConfig struct {
	releaser *buffer.Releaser
	tp       trace.TracerProvider
}

// fillShared sets the defaults: the global TracerProvider and a
// synchronous Releaser on the provider (buffer.OrSync).
func (c *sharedConfig) fillShared() {
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	c.releaser = buffer.OrSync(c.releaser, c.tp)
}

type tracerProviderOption struct{ tp trace.TracerProvider }

func (o tracerProviderOption) applyMSM(c *msmConfig)                 { c.tp = o.tp }
func (o tracerProviderOption) applyDeviceBases(c *deviceBasesConfig) { c.tp = o.tp }

// WithTracerProvider records the MSM spans (msm.*) or keys.preload with tp
// (default: the global one). Kernel, copy and allocation spans follow the
// cudaspans.Context's provider.
func WithTracerProvider(tp trace.TracerProvider) SharedOption { return tracerProviderOption{tp} }

type releaserOption struct{ r *buffer.Releaser }

func (o releaserOption) applyMSM(c *msmConfig)                 { c.releaser = o.r }
func (o releaserOption) applyDeviceBases(c *deviceBasesConfig) { c.releaser = o.r }

// WithReleaser frees device memory through r, as buffer.release spans: the
// MSM's workspace and the evicted base sets of DeviceBases (device memory
// is freed at once in every mode). Default (and for a nil r): a
// synchronous Releaser on the same TracerProvider (buffer.OrSync).
func WithReleaser(r *buffer.Releaser) SharedOption { return releaserOption{r} }

// Option configures an MSM.
type Option interface{ applyMSM(*msmConfig) }

type msmConfig struct {
	sharedConfig
	maxChunk int
	window   int
	compile  cudaspans.CompileOptions
	withG2   bool
	affine   *int
}

type msmOptionFunc func(*msmConfig)

func (f msmOptionFunc) applyMSM(c *msmConfig) { f(c) }

// WithMaxChunk caps the points per device pass (default: as many as device
// memory holds). Larger MSMs are split into chunks whose results are added.
func WithMaxChunk(points int) Option {
	return msmOptionFunc(func(c *msmConfig) { c.maxChunk = points })
}

// WithWindowBits fixes Pippenger's window size c (1 < c ≤ 20); the default
// picks it from the chunk size (msmWindowBits).
func WithWindowBits(c int) Option {
	return msmOptionFunc(func(cfg *msmConfig) { cfg.window = c })
}

// WithCompileOptions adds NVRTC options (defines, flags) to the MSM
// modules' compiles, e.g. for experiments with kernel variants.
func WithCompileOptions(o cudaspans.CompileOptions) Option {
	return msmOptionFunc(func(c *msmConfig) { c.compile = o })
}

// WithG2 compiles the G2 kernels in New too, at once with G1's, rather
// than on the first G2 MSM (Backend.Warmup uses it).
func WithG2() Option {
	return msmOptionFunc(func(c *msmConfig) { c.withG2 = true })
}

// WithAffineBuckets picks how the buckets of both groups are summed, at
// every chunk size (default: XYZZ for G1, what measured faster there on
// an H200 and needs less memory; tail 64 for G2 chunks of up to 2^23
// points, XYZZ above): tail > 0 by levels
// of batched affine additions (kernels/msmaffine.cuh: one inversion per
// thread and level, Montgomery's trick) until no bucket holds more than
// tail points, the rest in XYZZ; tail ≤ 0 by XYZZ mixed additions alone
// (segments, then pairwise merges). The affine sums need more device
// workspace (WorkspaceBytes counts it): the levels' points, about
// 3/4·W·n affine points for W windows of n points.
func WithAffineBuckets(tail int) Option {
	return msmOptionFunc(func(c *msmConfig) { c.affine = &tail })
}

// newMSMConfig applies opts and fills the defaults.
func newMSMConfig(opts []Option) (msmConfig, error) {
	var cfg msmConfig
	for _, o := range opts {
		o.applyMSM(&cfg)
	}
	if cfg.window != 0 && (cfg.window < 2 || cfg.window > 20) {
		return cfg, fmt.Errorf("msm: window bits %d out of range [2, 20]", cfg.window)
	}
	if cfg.maxChunk < 0 {
		return cfg, fmt.Errorf("msm: negative chunk size %d", cfg.maxChunk)
	}
	cfg.fillShared()
	return cfg, nil
}

// The bucket sums' defaults (WithAffineBuckets), per group: XYZZ for
// G1, affine levels down to 64 points a bucket for G2 chunks of at most
// defaultAffineMaxG2 points (XYZZ above). On an H200 (bench/msm.md,
// 2026-12-02) the affine levels measured slower on G1 (2^24, scalars
// pinned: 208.1 ms with tail 64 against 170.6) and faster on G2 (2^22:
// bucket sums 145.0 -> 104.8 ms, tail 64). Their extra workspace is
// about 2.3 KB a G2 point (+9.9 GB at 2^22, +19 GB at 2^23), counted in
// WorkspaceBytes and so in a key's msm.workspace proof buffer; above
// 2^23 points the default stays XYZZ, so that a large key's G2 does
// not take tens of GB more.
const (
	defaultAffineTailG1 = 0
	defaultAffineTailG2 = 64
	defaultAffineMaxG2  = 1 << 23
)

// affineTails are the configured tails of G1's and G2's bucket sums, 0
// for XYZZ, and the most points of a G2 chunk that takes G2's tail (0:
// any chunk).
func (c *msmConfig) affineTails() (g1, g2, maxG2 int) {
	if c.affine == nil {
		return defaultAffineTailG1, defaultAffineTailG2, defaultAffineMaxG2
	}
	t := max(0, *c.affine)
	return t, t, 0
}
