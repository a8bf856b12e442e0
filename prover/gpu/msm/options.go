package msm

import (
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
