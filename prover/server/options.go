package server

import (
	"net/http"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/upstream"
)

// DefaultMaxMessageBytes bounds a request or response message: a full
// witness is 32 bytes per wire, so 64 MiB admits circuits of about two
// million wires. Larger messages are refused by grpc with
// RESOURCE_EXHAUSTED.
const DefaultMaxMessageBytes = 64 << 20

// MaxHeaderBytes bounds the metadata (HTTP/2 header list) of one RPC: a
// traceparent, tracestate, W3C baggage (at most 8192 bytes by its
// specification) and a bearer token fit many times over. The server
// announces it in its HTTP/2 SETTINGS, so a grpc-go client refuses a
// larger header itself, before sending, with INTERNAL "header list size
// to send violates the maximum size (65536 bytes) set by server"; from
// other clients the server resets that stream (RST_STREAM
// FRAME_SIZE_ERROR, INTERNAL to the caller). Either way the connection
// stays up and the code is one no retry policy retries by default (gRPC
// retries only the codes a service config lists; transparent retry only
// streams the server never saw). Without the bound grpc-go allows 16 MiB
// and a larger header broke the connection: UNAVAILABLE, retried.
const MaxHeaderBytes = 64 << 10

// Option configures a Server.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	tp          trace.TracerProvider
	propagators propagation.TextMapPropagator
	token       string
	certFile    string
	keyFile     string
	maxMsg      int
	circuits    CircuitManager
	devices     func() []Device
	known       func(circuit string) bool
	version     string
	metrics     http.Handler
	stopGrace   time.Duration
	upstream    *upstream.Client
	stepOf      func(traceID string) string
}

func newConfig(opts []Option) config {
	c := config{maxMsg: DefaultMaxMessageBytes, version: semconv.ScopeVersion(), stopGrace: 5 * time.Second}
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

// WithTracerProvider sets the provider of the RPC server spans (default:
// the global one). The engine's spans use the engine's own provider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

// WithPropagators sets how trace context is read from gRPC metadata
// (default: the global propagator, or W3C TraceContext and Baggage when
// the global one is the no-op).
func WithPropagators(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) { c.propagators = p })
}

// WithBearerToken requires "authorization: Bearer <token>" metadata on
// every RPC; others get UNAUTHENTICATED. An empty token turns it off.
func WithBearerToken(token string) Option {
	return optionFunc(func(c *config) { c.token = token })
}

// WithTLS serves TLS with the PEM certificate and key files.
func WithTLS(certFile, keyFile string) Option {
	return optionFunc(func(c *config) { c.certFile, c.keyFile = certFile, keyFile })
}

// WithMaxMessageBytes bounds received and sent messages (default
// DefaultMaxMessageBytes).
func WithMaxMessageBytes(n int) Option {
	return optionFunc(func(c *config) { c.maxMsg = n })
}

// WithCircuitManager serves PreloadKeys, EvictKeys and the keys of GetStatus
// from m, the circuits loaded in memory (without it those RPCs answer
// UNIMPLEMENTED and no keys are listed).
func WithCircuitManager(m CircuitManager) Option {
	return optionFunc(func(c *config) { c.circuits = m })
}

// WithDevices makes GetStatus list the devices f returns (called once per
// GetStatus; it must be safe for concurrent use).
func WithDevices(f func() []Device) Option {
	return optionFunc(func(c *config) { c.devices = f })
}

// WithKnownCircuit replaces the check SubmitProof makes before queueing
// that the circuit exists (default: a name of the prover/circuits
// registry, a built-in or a circuit registered from files, looked up at
// each request). f must be safe for concurrent use.
func WithKnownCircuit(f func(circuit string) bool) Option {
	return optionFunc(func(c *config) { c.known = f })
}

// WithVersion sets the version GetStatus reports (default: this module's
// version in the binary, semconv.ScopeVersion, the string of cuzk
// --version and of the spans' scope).
func WithVersion(v string) Option {
	return optionFunc(func(c *config) { c.version = v })
}

// WithMetricsHandler makes GetMetrics answer with the Prometheus text h
// serves (the handler of NewPrometheus, the daemon's /metrics), instead
// of the few totals cuzk itself reports.
func WithMetricsHandler(h http.Handler) Option {
	return optionFunc(func(c *config) { c.metrics = h })
}

// WithJobSteps makes GetStatus say of each running job the step it is in
// (JobInfo.step), from stepOf of its hex trace id: an
// otelcuzk.StepTracker's Step, registered on the provider of the engine's
// spans. Without it the step is empty and only the job's stage is said.
func WithJobSteps(stepOf func(traceID string) string) Option {
	return optionFunc(func(c *config) { c.stepOf = stepOf })
}

// WithUpstream forwards the Filecoin proof kinds (PoRep C2, SnapDeals,
// WindowPoSt, WinningPoSt), which this daemon does not prove, to the cuzk
// daemon u talks to, each a traced job (package upstream), instead of
// refusing them UNIMPLEMENTED; AwaitProof and CancelProof of a job this
// daemon does not know go there too, and GetStatus and GetMetrics include
// the upstream's. A 50 MB vanilla proof needs a message bound above it
// (DefaultMaxMessageBytes, 64 MiB, admits it).
func WithUpstream(u *upstream.Client) Option {
	return optionFunc(func(c *config) { c.upstream = u })
}
