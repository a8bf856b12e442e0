package otelcuzk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// grpcMaxReconnectDelay caps the OTLP gRPC exporter's reconnect backoff.
const grpcMaxReconnectDelay = time.Second

// Telemetry is the tracing set up by New: the provider, where its spans go,
// and the count of spans lost to failed exports.
type Telemetry struct {
	// TracerProvider is the SDK provider. New installs Provider (this
	// provider, or its wrapper of WithUnsampledCallerAsLink) as the otel
	// global unless WithoutGlobal is given.
	TracerProvider *sdktrace.TracerProvider
	// Propagator is W3C TraceContext plus Baggage.
	Propagator propagation.TextMapPropagator

	provider trace.TracerProvider // TracerProvider, or its wrapper of WithUnsampledCallerAsLink
	exporter *countingExporter
	queue    *queueCounter
	opens    *openSpans
	protocol string // "file", ProtocolGRPC, ProtocolHTTPProtobuf or "custom"
	target   string // file path or endpoint as configured ("" when read by the exporter from the environment)
	// tracesPath is the URL path an OTLP/HTTP export is sent to
	// ("/v1/traces" unless a traces endpoint names its own); "" for the
	// other exporters.
	tracesPath string
	timeout    time.Duration

	once        sync.Once
	shutdownErr error
}

// Setup builds tracing with New, which, unless WithoutGlobal is given,
// installs its Provider and the W3C TraceContext+Baggage propagator as the
// otel globals, and returns the Telemetry's Shutdown. The error names what
// is wrong (an unwritable trace file, an unknown protocol, malformed OTEL_*
// values).
func Setup(ctx context.Context, opts ...Option) (shutdown func(context.Context) error, err error) {
	t, err := New(ctx, opts...)
	if err != nil {
		return func(context.Context) error { return nil }, err
	}
	return t.Shutdown, nil
}

// New builds a TracerProvider from options and the standard environment
// variables (OpenTelemetry specification, "Environment Variable
// Specification" and "OTLP Exporter Configuration"); options win over
// variables.
//
// Where spans go: WithExporter if given; else, if WithEndpoint,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT sets an
// endpoint, OTLP over the protocol of WithProtocol,
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL, default
// http/protobuf (the specification's default); the OTLP exporters themselves
// read OTEL_EXPORTER_OTLP_[TRACES_]HEADERS, INSECURE, TIMEOUT, CERTIFICATE and
// COMPRESSION. With no endpoint anywhere, spans go to the OTLP JSON lines file
// of WithTraceFile (default DefaultTraceFile).
//
// Processors, in order: the tracker of open spans (EndOpenSpans), the
// UntracedProcessor (unless WithoutUntraced), the
// exporting processor (batch, reading OTEL_BSP_*; or simple with
// WithSyncExport), then those of WithSpanProcessor. The sampler comes from
// WithSampler or OTEL_TRACES_SAMPLER[_ARG] (read by the SDK), default
// parentbased_always_on. The resource: see WithDevices,
// WithResourceAttributes, WithServiceName; OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES are read.
//
// Every exporter, WithExporter's included, is handed spans whose strings
// are valid UTF-8: invalid bytes in names, status messages, attribute keys
// and values (of spans, events, links, the resource and the scope) are
// replaced by U+FFFD (see ValidUTF8), since OTLP's protobuf encoding refuses
// the whole batch over one of them.
//
// Unless WithoutGlobal is given, New installs Provider as the otel global
// TracerProvider and Propagator as the global TextMapPropagator
// (otel.SetTracerProvider, otel.SetTextMapPropagator), so code that starts
// spans from the globals (otelgrpc, a library's default provider) records
// into this Telemetry; on error it installs nothing.
//
// An unwritable trace file, an unsupported protocol, and malformed or
// unsupported values of OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER[_ARG],
// OTEL_BSP_*, OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT or INSECURE are errors
// naming the variable.
func New(ctx context.Context, opts ...Option) (*Telemetry, error) {
	c := newConfig(opts)
	if err := checkEnv(c); err != nil {
		return nil, err
	}
	res, err := newResource(ctx, c)
	if err != nil {
		return nil, err
	}
	t := &Telemetry{
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		timeout:    exportTimeout(c),
		opens:      newOpenSpans(),
	}
	exp, err := t.newExporter(ctx, c)
	if err != nil {
		return nil, err
	}
	t.exporter = newCountingExporter(&splitExporter{next: &utf8Exporter{next: exp}}, c.logOut)
	t.exporter.timeout = t.timeout
	if hp, ok := endpointHostPort(t.target); ok && t.protocol != "file" && t.protocol != "custom" {
		t.exporter.probe = dialProbe(hp)
		t.exporter.endpoint = t.target
	}

	popts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(spanLimits()),
		sdktrace.WithSpanProcessor(t.opens)}
	if c.sampler != nil {
		popts = append(popts, sdktrace.WithSampler(c.sampler))
	}
	if !c.untracedOff {
		popts = append(popts, sdktrace.WithSpanProcessor(NewUntracedProcessor(c.untracedMin, c.untracedFrac)))
	}
	var exporting sdktrace.SpanProcessor
	queue := 0 // the batch processor's queue; none with a simple one
	if c.syncExport {
		exporting = sdktrace.NewSimpleSpanProcessor(t.exporter)
	} else {
		queue = batchQueueSize()
		exporting = sdktrace.NewBatchSpanProcessor(t.exporter, sdktrace.WithMaxQueueSize(queue))
	}
	t.queue = &queueCounter{SpanProcessor: exporting, exp: t.exporter, limit: int64(queue)}
	popts = append(popts, sdktrace.WithSpanProcessor(t.queue))
	for _, p := range c.processors {
		popts = append(popts, sdktrace.WithSpanProcessor(p))
	}
	t.TracerProvider = sdktrace.NewTracerProvider(popts...)
	t.provider = t.TracerProvider
	if c.unsampledLink && c.sampler == nil && firstEnv("OTEL_TRACES_SAMPLER") == "" {
		t.provider = &rootOnUnsampledProvider{tp: t.TracerProvider}
	}
	if !c.withoutGlobal {
		otel.SetTracerProvider(t.provider)
		otel.SetTextMapPropagator(t.Propagator)
	}
	return t, nil
}

// transportOptions gives the insecure, headers and timeout settings of c as
// options of one OTLP exporter package (gRPC or HTTP), through that
// package's own constructors; settings left unset give no option, so the
// exporter's environment defaults apply.
func transportOptions[O any](c config, insecure func() O, headers func(map[string]string) O, timeout func(time.Duration) O) []O {
	var o []O
	if c.insecure {
		o = append(o, insecure())
	}
	if c.headers != nil {
		o = append(o, headers(c.headers))
	}
	if c.timeout > 0 {
		o = append(o, timeout(c.timeout))
	}
	return o
}

// newExporter chooses and builds the span exporter (see New).
func (t *Telemetry) newExporter(ctx context.Context, c config) (sdktrace.SpanExporter, error) {
	if c.exporter != nil {
		t.protocol = "custom"
		return c.exporter, nil
	}
	envEndpoint := firstEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	if c.endpoint == "" && envEndpoint == "" {
		path := c.traceFile
		if path == "" {
			path = DefaultTraceFile
		}
		t.protocol, t.target = "file", path
		return NewFileExporter(path)
	}
	protocol := c.protocol
	if protocol == "" {
		protocol = firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol == "" {
		protocol = ProtocolHTTPProtobuf
	}
	t.protocol, t.target = protocol, c.endpoint
	if t.target == "" {
		t.target = envEndpoint
		if err := checkEnvEndpoint(protocol, envEndpoint); err != nil {
			return nil, err
		}
	}
	switch protocol {
	case ProtocolGRPC:
		var o []otlptracegrpc.Option
		if c.endpoint != "" {
			if strings.Contains(c.endpoint, "://") {
				o = append(o, otlptracegrpc.WithEndpointURL(c.endpoint))
			} else {
				o = append(o, otlptracegrpc.WithEndpoint(c.endpoint))
			}
		} else if _, err := url.Parse(envEndpoint); err != nil {
			// The SDK reads the variable as a URL: a host:port whose
			// host is an IP ("10.0.0.5:4317") does not parse, and it
			// exported to localhost:4317 instead (after logging a line
			// of its own). Given as the option it means, it is honoured.
			o = append(o, otlptracegrpc.WithEndpoint(envEndpoint))
		}
		o = append(o, transportOptions(c, otlptracegrpc.WithInsecure, otlptracegrpc.WithHeaders, otlptracegrpc.WithTimeout)...)
		// gRPC's default reconnect backoff grows to 120 s: a Collector
		// that restarts would be dialled again only minutes later, and every
		// batch meanwhile fails at once with the cached dial error although
		// the endpoint answers again (the cooldown's probe sees it). Capped
		// at grpcMaxReconnectDelay, the spans of a proof that starts once the
		// Collector is back arrive whole.
		// An export waits for the connection to be ready (WaitForReady)
		// rather than failing at once while gRPC is between reconnects:
		// that quick Unavailable left the rest of the export timeout to
		// the exporter's own retry, whose first wait is 5 s, so a
		// Collector that came up lost the next export and 10 s of
		// cooldown. A dead endpoint still fails the export at its timeout.
		o = append(o, otlptracegrpc.WithDialOption(grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: grpcMaxReconnectDelay},
			MinConnectTimeout: 5 * time.Second,
		}), grpc.WithDefaultCallOptions(grpc.WaitForReady(true))))
		exp, err := otlptracegrpc.New(ctx, o...)
		if err != nil {
			return nil, fmt.Errorf("OTLP gRPC exporter for %q: %w", t.target, err)
		}
		return exp, nil
	case ProtocolHTTPProtobuf:
		t.tracesPath = httpTracesPath(c.endpoint)
		var o []otlptracehttp.Option
		if c.endpoint != "" {
			if strings.Contains(c.endpoint, "://") {
				u, err := url.Parse(c.endpoint)
				if err != nil || u.Host == "" {
					return nil, fmt.Errorf("OTLP endpoint %q is not a URL or host:port", c.endpoint)
				}
				if !strings.HasSuffix(u.Path, "/v1/traces") {
					u.Path = strings.TrimRight(u.Path, "/") + "/v1/traces"
				}
				o = append(o, otlptracehttp.WithEndpointURL(u.String()))
			} else {
				o = append(o, otlptracehttp.WithEndpoint(c.endpoint))
			}
		}
		o = append(o, transportOptions(c, otlptracehttp.WithInsecure, otlptracehttp.WithHeaders, otlptracehttp.WithTimeout)...)
		exp, err := otlptracehttp.New(ctx, o...)
		if err != nil {
			return nil, fmt.Errorf("OTLP HTTP exporter for %q: %w", t.target, err)
		}
		return exp, nil
	default:
		return nil, fmt.Errorf("OTLP protocol %q is not supported (want %q or %q)", protocol, ProtocolGRPC, ProtocolHTTPProtobuf)
	}
}

// httpTracesPath is the URL path the OTLP/HTTP exporter posts spans to,
// as it reads its endpoint: the option's URL path with /v1/traces added
// (newExporter adds it), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT's path as it
// is, OTEL_EXPORTER_OTLP_ENDPOINT's with /v1/traces added; "/v1/traces"
// for a host:port.
func httpTracesPath(option string) string {
	const signal = "/v1/traces"
	base, add := option, true
	if option == "" {
		if base = firstEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); base != "" {
			add = false
		} else {
			base = firstEnv("OTEL_EXPORTER_OTLP_ENDPOINT")
		}
	}
	u, err := url.Parse(base)
	if !strings.Contains(base, "://") || err != nil {
		return signal
	}
	switch {
	case !add && u.Path != "":
		return u.Path
	case !add:
		return "/"
	case strings.HasSuffix(u.Path, signal):
		return u.Path
	}
	return strings.TrimRight(u.Path, "/") + signal
}

// exportTimeout is the effective OTLP export timeout: option, then the
// variables (integer milliseconds), then DefaultExportTimeout.
func exportTimeout(c config) time.Duration {
	if c.timeout > 0 {
		return c.timeout
	}
	if v := firstEnv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"); v != "" {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return DefaultExportTimeout
}

// DefaultBatchQueueSize is the batch span processor's queue, spans, when
// OTEL_BSP_MAX_QUEUE_SIZE is unset or 0: the SDK's (and the
// specification's) default.
const DefaultBatchQueueSize = 2048

// batchQueueSize is OTEL_BSP_MAX_QUEUE_SIZE (checkEnv checked it), else
// DefaultBatchQueueSize.
func batchQueueSize() int {
	if n, err := strconv.Atoi(firstEnv("OTEL_BSP_MAX_QUEUE_SIZE")); err == nil && n > 0 {
		return n
	}
	return DefaultBatchQueueSize
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// joinLine joins errs on one line (a command prints it as its one-line
// error), keeping each for errors.Is and errors.As. nil for none.
func joinLine(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	format := strings.TrimSuffix(strings.Repeat("%w; ", len(errs)), "; ")
	args := make([]any, len(errs))
	for i, e := range errs {
		args[i] = e
	}
	return fmt.Errorf(format, args...)
}

// Provider is the TracerProvider to start spans from, the one New installs
// as the global (unless WithoutGlobal): TracerProvider itself, or with
// WithUnsampledCallerAsLink (and no sampler configured) a wrapper of it that
// turns a span under an unsampled remote parent into a linked new root.
// A nil *Telemetry (New failed) gives a no-op provider.
func (t *Telemetry) Provider() trace.TracerProvider {
	if t == nil {
		return noop.NewTracerProvider()
	}
	return t.provider
}

// Destination says where spans go: protocol is "file", ProtocolGRPC,
// ProtocolHTTPProtobuf or "custom" (WithExporter); target is the file path
// or the endpoint as configured.
func (t *Telemetry) Destination() (protocol, target string) {
	if t == nil {
		return "", ""
	}
	return t.protocol, t.target
}

// DroppedSpans returns how many spans failed exports of this Telemetry have
// lost. Safe for concurrent use.
func (t *Telemetry) DroppedSpans() int64 {
	if t == nil {
		return 0
	}
	return t.exporter.dropped.Load()
}

// ShutdownMargin is what Telemetry.Shutdown may take beyond the export
// timeout: one second for the flush past its last export, one second for
// the processors and the exporter to stop (closing the connection or file).
const ShutdownMargin = 2 * time.Second

// ShutdownBound is the longest Shutdown takes: the export timeout plus
// ShutdownMargin, however the endpoint behaves (refusing connections,
// accepting them and never answering).
func (t *Telemetry) ShutdownBound() time.Duration {
	if t == nil {
		return 0
	}
	return t.timeout + ShutdownMargin
}

// Shutdown flushes the spans not yet exported, then shuts the provider and
// exporter down, within ShutdownBound (sooner if ctx ends; the stop itself
// always gets up to one second, in which the processors still export what
// is queued, even when ctx is done already). The spans still queued are
// tried even when an earlier failure put the exporter in its cooldown. Its
// error joins flush errors (other than ctx's end) and shutdown errors and,
// when spans were lost over the Telemetry's
// life (failed exports, or never exported: a full queue, the deadline), an
// error wrapping ErrSpansDropped with the count and the last export error.
// Calls after the first return the first result.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, t.timeout+time.Second)
		defer cancel()
		dl, _ := ctx.Deadline()
		// No export runs past the stop's second, even one the flush
		// started and stopped waiting for.
		t.exporter.stopBy.Store(dl.Add(time.Second).UnixNano())
		t.exporter.final.Store(true)
		errs := []error{}
		// The flush stopping at the deadline (the caller's, or a context
		// done already) is no error of its own: the processors' shutdown
		// below still exports what is queued, and whatever is lost is
		// counted and reported as ErrSpansDropped.
		if err := t.TracerProvider.ForceFlush(ctx); err != nil && !(ctx.Err() != nil && errors.Is(err, ctx.Err())) {
			errs = append(errs, fmt.Errorf("flush: %w", err))
		}
		// Shutdown gets a second of its own: had the flush used the whole
		// budget, the SDK would give up before stopping the processors and
		// leak the batch goroutine and the exporter's connection or file.
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer scancel()
		if err := t.TracerProvider.Shutdown(sctx); err != nil {
			errs = append(errs, fmt.Errorf("shutdown: %w", err))
		}
		t.queue.settle()
		if n := t.DroppedSpans(); n > 0 {
			why := "export not ended by the shutdown deadline"
			if err := t.exporter.err(); err != nil {
				why = "last error: " + errorLine(err)
			}
			errs = append(errs, fmt.Errorf("%w: %d spans to %s %s, %s", ErrSpansDropped, n, t.protocol, t.target, why))
		}
		t.shutdownErr = joinLine(errs)
	})
	return t.shutdownErr
}

// endpointHostPort is the host:port an OTLP endpoint (a URL or host:port)
// connects to; false when it names none.
func endpointHostPort(endpoint string) (string, bool) {
	if endpoint == "" {
		return "", false
	}
	if !strings.Contains(endpoint, "://") {
		if _, _, err := net.SplitHostPort(endpoint); err != nil {
			return "", false
		}
		return endpoint, true
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", false
	}
	if u.Port() != "" {
		return u.Host, true
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port), true
}

// checkEnvEndpoint refuses an OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT the
// exporter would misread: the HTTP exporter needs a URL (given
// "127.0.0.1:4318" it logs a parse error and posts to https://localhost:4318
// instead), the gRPC one host:port or a URL, either speaks only http or
// https, and a URL must parse (the SDK logs one that does not on a line
// of its own and falls back to its default endpoint).
func checkEnvEndpoint(protocol, endpoint string) error {
	name := "OTEL_EXPORTER_OTLP_ENDPOINT"
	if firstEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		name = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	}
	scheme, rest, hasScheme := strings.Cut(endpoint, "://")
	switch {
	case hasScheme && scheme != "http" && scheme != "https":
		return fmt.Errorf("%s=%q: scheme %q, want http or https", name, endpoint, scheme)
	case hasScheme && rest == "":
		return fmt.Errorf("%s=%q: no host", name, endpoint)
	case !hasScheme && protocol == ProtocolHTTPProtobuf:
		return fmt.Errorf("%s=%q: %s needs a URL, e.g. %q", name, endpoint, protocol, "http://"+endpoint)
	case !hasScheme:
		// gRPC dials host:port as the target dns:///host:port: a port
		// left out or a host that target cannot hold ("0%:") fails there,
		// in an error that names no variable.
		_, port, err := net.SplitHostPort(endpoint)
		if err == nil && port == "" {
			err = errors.New("no port")
		}
		if err == nil {
			_, err = url.Parse("dns:///" + endpoint)
		}
		if err != nil {
			return fmt.Errorf("%s=%q: %s needs host:port or a URL, e.g. %q", name, endpoint, protocol, "http://localhost:4317")
		}
	}
	// A URL that does not parse ("http://[::1") the SDK logs on its own
	// line and replaces by its default endpoint: refuse it here, as one
	// error.
	if hasScheme {
		if _, err := url.Parse(endpoint); err != nil {
			var uerr *url.Error
			if errors.As(err, &uerr) {
				err = uerr.Err
			}
			return fmt.Errorf("%s=%q: not a URL: %v", name, endpoint, err)
		}
	}
	return nil
}
