package gpu

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// The constructors of this package share one shape: NewNTT(ctx, c, ...),
// NewMSM(ctx, c, ...), NewResidentKeys(ctx, c, ...), with the device
// context c first and options after. The options below are accepted by
// each constructor that uses them, and only by those (a Releaser means
// nothing to the NTT, whose tables live until Close).

// Option configures any constructor of this package.
type Option interface {
	NTTOption
	MSMOption
	KeysOption
}

// ReleaserOption configures the constructors that free device memory
// through a Releaser: NewMSM and NewResidentKeys.
type ReleaserOption interface {
	MSMOption
	KeysOption
}

type tracerProviderOption struct{ tp trace.TracerProvider }

func (o tracerProviderOption) applyNTT(c *nttConfig)   { c.tp = o.tp }
func (o tracerProviderOption) applyMSM(c *msmConfig)   { c.tp = o.tp }
func (o tracerProviderOption) applyKeys(c *keysConfig) { c.tp = o.tp }

// WithTracerProvider records the constructed engine's own spans (the NTT
// steps, msm.*, keys.preload) with tp (default: the global one). Kernel,
// copy and allocation spans follow the cudaspans.Context's provider.
func WithTracerProvider(tp trace.TracerProvider) Option { return tracerProviderOption{tp} }

type releaserOption struct{ r *cudaspans.Releaser }

func (o releaserOption) applyMSM(c *msmConfig)   { c.releaser = o.r }
func (o releaserOption) applyKeys(c *keysConfig) { c.releaser = o.r }

// WithReleaser frees device memory through r, as buffer.release spans: the
// MSM's workspace (in pool mode reused by the next MSM), the evicted base
// sets of ResidentKeys. Default: a synchronous Releaser on the same
// TracerProvider.
func WithReleaser(r *cudaspans.Releaser) ReleaserOption { return releaserOption{r} }
