package client

import (
	"crypto/tls"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
)

// Option configures Dial.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	tls         *tls.Config
	token       string
	tp          trace.TracerProvider
	propagators propagation.TextMapPropagator
	maxMsg      int
	dialOpts    []grpc.DialOption
}

// DefaultMaxMessageBytes matches the daemon's default limit.
const DefaultMaxMessageBytes = 64 << 20

func newConfig(opts []Option) config {
	c := config{maxMsg: DefaultMaxMessageBytes}
	for _, o := range opts {
		o.apply(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.propagators == nil {
		c.propagators = otelcuzk.TextMapPropagator()
	}
	return c
}

// WithTLS dials with TLS (default: plaintext, for a daemon on loopback).
func WithTLS(cfg *tls.Config) Option {
	return optionFunc(func(c *config) { c.tls = cfg })
}

// WithBearerToken sends "authorization: Bearer <token>" with every call.
// Over plaintext the token is readable on the wire: use it with WithTLS
// off loopback.
func WithBearerToken(token string) Option {
	return optionFunc(func(c *config) { c.token = token })
}

// WithTracerProvider sets the provider of the client spans (default: the
// global one).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

// WithPropagators sets how trace context is written into gRPC metadata
// (default: the global propagator, or W3C TraceContext and Baggage when
// the global one is the no-op).
func WithPropagators(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) { c.propagators = p })
}

// WithMaxMessageBytes bounds sent and received messages (default
// DefaultMaxMessageBytes).
func WithMaxMessageBytes(n int) Option {
	return optionFunc(func(c *config) { c.maxMsg = n })
}

// WithDialOptions adds grpc dial options (after the client's own).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return optionFunc(func(c *config) { c.dialOpts = append(c.dialOpts, opts...) })
}
