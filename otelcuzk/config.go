package otelcuzk

import (
	"io"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Protocols of the OTLP exporter, spelled as OTEL_EXPORTER_OTLP_PROTOCOL
// spells them (OpenTelemetry specification, "OTLP Exporter Configuration").
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
)

// DefaultTraceFile is where spans go when no OTLP endpoint is set by option or
// environment: OTLP JSON lines in the current directory.
const DefaultTraceFile = "cuzk-trace.jsonl"

// DefaultServiceName is the service.name of the resource when neither
// WithServiceName, OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one.
const DefaultServiceName = "cuzk"

// DefaultExportTimeout is the OTLP export timeout when neither WithTimeout nor
// OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT sets one (10 s, the specification's
// default).
const DefaultExportTimeout = 10 * time.Second

// Default untraced-time threshold: a span's uncovered time is reported when it
// is at least DefaultUntracedMin AND at least DefaultUntracedFraction of the
// span's duration.
const (
	DefaultUntracedMin      = time.Millisecond
	DefaultUntracedFraction = 0.02
)

// Option configures Setup. Options override the OTEL_* environment variables.
type Option interface {
	apply(config) config
}

type optionFunc func(config) config

func (f optionFunc) apply(c config) config { return f(c) }

type config struct {
	serviceName   string
	endpoint      string
	protocol      string
	insecure      bool
	headers       map[string]string
	timeout       time.Duration
	traceFile     string
	sampler       sdktrace.Sampler
	resAttrs      []attribute.KeyValue
	devices       []semconv.GPU
	processors    []sdktrace.SpanProcessor
	exporter      sdktrace.SpanExporter
	syncExport    bool
	untracedMin   time.Duration
	untracedFrac  float64
	untracedOff   bool
	withoutGlobal bool
	logOut        io.Writer
	unsampledLink bool
}

func newConfig(opts []Option) config {
	c := config{
		untracedMin:  DefaultUntracedMin,
		untracedFrac: DefaultUntracedFraction,
		logOut:       os.Stderr,
	}
	for _, o := range opts {
		if o != nil {
			c = o.apply(c)
		}
	}
	if c.logOut == nil {
		c.logOut = io.Discard
	}
	return c
}

// WithServiceName sets the resource's service.name, overriding
// OTEL_SERVICE_NAME and a service.name in OTEL_RESOURCE_ATTRIBUTES.
func WithServiceName(name string) Option {
	return optionFunc(func(c config) config { c.serviceName = name; return c })
}

// WithEndpoint sends spans over OTLP to endpoint, overriding
// OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT. endpoint is a URL
// ("http://collector:4318", "https://tempo:4317") or host:port; a URL's scheme
// decides TLS (http means plaintext). It is a base URL as
// OTEL_EXPORTER_OTLP_ENDPOINT is: with http/protobuf, "/v1/traces" is appended
// unless the path already ends with it.
func WithEndpoint(endpoint string) Option {
	return optionFunc(func(c config) config { c.endpoint = endpoint; return c })
}

// WithProtocol chooses the OTLP transport, ProtocolGRPC or
// ProtocolHTTPProtobuf, overriding OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL. Setup
// fails on any other value.
func WithProtocol(protocol string) Option {
	return optionFunc(func(c config) config { c.protocol = protocol; return c })
}

// WithInsecure disables TLS towards the OTLP endpoint, like
// OTEL_EXPORTER_OTLP_INSECURE=true.
func WithInsecure() Option {
	return optionFunc(func(c config) config { c.insecure = true; return c })
}

// WithHeaders sets the headers (gRPC metadata) sent with every export,
// replacing OTEL_EXPORTER_OTLP_[TRACES_]HEADERS.
func WithHeaders(headers map[string]string) Option {
	h := make(map[string]string, len(headers))
	for k, v := range headers {
		h[k] = v
	}
	return optionFunc(func(c config) config { c.headers = h; return c })
}

// WithTimeout bounds each OTLP export, retries included, overriding
// OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT (default DefaultExportTimeout). The
// shutdown function returned by Setup also returns within about this time
// when the endpoint is unreachable.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(c config) config { c.timeout = d; return c })
}

// WithTraceFile sets the local OTLP JSON lines file used when no OTLP
// endpoint is configured (default DefaultTraceFile). The file is created when
// missing and appended to (earlier traces stay).
func WithTraceFile(path string) Option {
	return optionFunc(func(c config) config { c.traceFile = path; return c })
}

// WithSampler sets the sampler, overriding OTEL_TRACES_SAMPLER[_ARG].
func WithSampler(s sdktrace.Sampler) Option {
	return optionFunc(func(c config) config { c.sampler = s; return c })
}

// WithResourceAttributes adds attributes to the resource; they override
// OTEL_RESOURCE_ATTRIBUTES and the detected host and process attributes.
func WithResourceAttributes(attrs ...attribute.KeyValue) Option {
	a := append([]attribute.KeyValue(nil), attrs...)
	return optionFunc(func(c config) config { c.resAttrs = append(c.resAttrs, a...); return c })
}

// WithDevices describes the GPUs of this host in the resource, after the
// OpenTelemetry hardware semantic conventions (see semconv.GPUAttributes).
func WithDevices(devices []semconv.GPU) Option {
	d := append([]semconv.GPU(nil), devices...)
	return optionFunc(func(c config) config { c.devices = d; return c })
}

// WithSpanProcessor registers an extra span processor after the exporting one,
// for example an sdktrace.NewSimpleSpanProcessor over a
// tracetest.InMemoryExporter in tests.
func WithSpanProcessor(p sdktrace.SpanProcessor) Option {
	return optionFunc(func(c config) config {
		if p != nil {
			c.processors = append(c.processors, p)
		}
		return c
	})
}

// WithExporter replaces the OTLP or file exporter Setup would choose with
// exp (nil: no replacement). The dropped-span counter still wraps it.
func WithExporter(exp sdktrace.SpanExporter) Option {
	return optionFunc(func(c config) config { c.exporter = exp; return c })
}

// WithSyncExport exports each span as it ends (a simple span processor)
// instead of batching; for short command-line runs and tests. It ignores
// OTEL_BSP_*.
func WithSyncExport() Option {
	return optionFunc(func(c config) config { c.syncExport = true; return c })
}

// WithUntracedThreshold sets when the untraced-time processor reports a
// span's uncovered time: at least minimum AND at least fraction (0..1) of the
// span's duration. Defaults: DefaultUntracedMin and DefaultUntracedFraction.
func WithUntracedThreshold(minimum time.Duration, fraction float64) Option {
	return optionFunc(func(c config) config { c.untracedMin, c.untracedFrac = minimum, fraction; return c })
}

// WithoutUntraced leaves the untraced-time processor out.
func WithoutUntraced() Option {
	return optionFunc(func(c config) config { c.untracedOff = true; return c })
}

// WithoutGlobal keeps New (and Setup, through it) from installing its
// Provider and the W3C propagators as the otel globals: the caller starts
// spans from Telemetry.Provider and hands it on itself.
func WithoutGlobal() Option {
	return optionFunc(func(c config) config { c.withoutGlobal = true; return c })
}

// WithLogWriter sets where the one-line export failure messages go (default
// os.Stderr; nil: nowhere).
func WithLogWriter(w io.Writer) Option {
	return optionFunc(func(c config) config { c.logOut = w; return c })
}

// WithUnsampledCallerAsLink makes a span whose parent is a remote span
// context that is not sampled (W3C trace-flags 00, a caller that does not
// record) the root of a new, sampled trace with a span link to the caller's
// span context, instead of an unrecorded child: the daemon's default, so
// that every proof has a trace. It applies only while no sampler is
// configured: with WithSampler or OTEL_TRACES_SAMPLER set, that sampler
// decides exactly as it says (parentbased_* then follows the caller's flag).
// The spans are started through Telemetry.Provider (the global one after
// New without WithoutGlobal), not through the TracerProvider field.
func WithUnsampledCallerAsLink() Option {
	return optionFunc(func(c config) config { c.unsampledLink = true; return c })
}
