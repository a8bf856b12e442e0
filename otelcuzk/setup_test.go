package otelcuzk

import (
	"bytes"
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// otelVars are every variable Setup or the libraries it uses read; tests
// clear them so the machine's environment cannot leak in.
var otelVars = []string{
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
	"OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
	"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_COUNT_LIMIT",
	"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
	"OTEL_SPAN_EVENT_COUNT_LIMIT", "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT",
	"OTEL_SPAN_LINK_COUNT_LIMIT", "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT",
}

func init() {
	for _, s := range []string{"ENDPOINT", "PROTOCOL", "HEADERS", "INSECURE", "TIMEOUT", "CERTIFICATE", "COMPRESSION",
		"CLIENT_CERTIFICATE", "CLIENT_KEY"} {
		otelVars = append(otelVars, "OTEL_EXPORTER_OTLP_"+s, "OTEL_EXPORTER_OTLP_TRACES_"+s)
	}
}

func clearEnv(t *testing.T) {
	t.Helper()
	for _, v := range otelVars {
		t.Setenv(v, "")
	}
}

// newTel builds a Telemetry that leaves the globals alone and whose file
// fallback, if chosen, lands in a temporary directory.
func newTel(t *testing.T, opts ...Option) *Telemetry {
	t.Helper()
	opts = append([]Option{WithoutGlobal(), WithTraceFile(filepath.Join(t.TempDir(), "trace.jsonl"))}, opts...)
	tel, err := New(context.Background(), opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

// emit makes n root spans with no children.
func emit(tel *Telemetry, n int) {
	tr := tel.TracerProvider.Tracer("test")
	for i := 0; i < n; i++ {
		_, s := tr.Start(context.Background(), "op", trace.WithAttributes(attribute.Int("i", i)))
		s.End()
	}
}

func shutdown(t *testing.T, tel *Telemetry) {
	t.Helper()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// send makes n spans through a new Telemetry built with opts (see newTel)
// and shuts it down, which must flush them without an error.
func send(t *testing.T, n int, opts ...Option) {
	t.Helper()
	tel := newTel(t, opts...)
	emit(tel, n)
	shutdown(t, tel)
}

// sendOne sends one span (see send), which r must then hold alone; who
// names the receiver in the failure.
// envGRPCReceiver clears the OTEL_ variables and points
// OTEL_EXPORTER_OTLP_ENDPOINT at a new OTLP/gRPC receiver (the protocol
// variables still say which exporter is used).
func envGRPCReceiver(t *testing.T) *receiver {
	t.Helper()
	clearEnv(t)
	r := &receiver{}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+startGRPCReceiver(t, r, nil))
	return r
}

func sendOne(t *testing.T, r *receiver, who string) {
	t.Helper()
	send(t, 1)
	if r.spanCount() != 1 {
		t.Fatalf("%s got %d spans, want 1", who, r.spanCount())
	}
}

// envReceiver clears the OTEL_ variables and points
// OTEL_EXPORTER_OTLP_ENDPOINT at a new OTLP/HTTP receiver.
func envReceiver(t *testing.T) *receiver {
	t.Helper()
	clearEnv(t)
	r := &receiver{}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", startHTTPReceiver(t, r, false).URL)
	return r
}

func TestEndpointVarSelectsOTLPOverFile(t *testing.T) {
	clearEnv(t)
	r := &receiver{}
	srv := startHTTPReceiver(t, r, false)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	tel := newTel(t)
	if p, target := tel.Destination(); p != ProtocolHTTPProtobuf || target != srv.URL {
		t.Fatalf("Destination = %s %s, want http/protobuf %s", p, target, srv.URL)
	}
	emit(tel, 3)
	shutdown(t, tel)
	got := r.got()
	if len(got) == 0 || r.spanCount() != 3 {
		t.Fatalf("receiver got %d spans in %d requests, want 3", r.spanCount(), len(got))
	}
	// No protocol set: http/protobuf, the specification's default, on the
	// signal path appended to the base URL.
	if got[0].proto != "http" || got[0].path != "/v1/traces" {
		t.Errorf("got %s request on %q, want http on /v1/traces", got[0].proto, got[0].path)
	}
}

func TestTracesEndpointVarIsUsedAsIs(t *testing.T) {
	clearEnv(t)
	r := &receiver{}
	srv := startHTTPReceiver(t, r, false)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1") // the per-signal variable wins
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", srv.URL+"/custom/traces")
	send(t, 1)
	got := r.got()
	if len(got) != 1 || got[0].path != "/custom/traces" {
		t.Fatalf("got %d requests (%v), want one on /custom/traces", len(got), got)
	}
}

func TestProtocolVarSelectsGRPC(t *testing.T) {
	r := envGRPCReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	send(t, 2)
	got := r.got()
	if len(got) == 0 || got[0].proto != "grpc" || r.spanCount() != 2 {
		t.Fatalf("got %v, want 2 spans over grpc", got)
	}
}

func TestTracesProtocolVarOverridesGeneralOne(t *testing.T) {
	r := envGRPCReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
	sendOne(t, r, "gRPC receiver")
}

func TestUnsupportedProtocolIsAnError(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	_, err := New(context.Background(), WithoutGlobal())
	if err == nil || !strings.Contains(err.Error(), `"http/json"`) {
		t.Fatalf("err = %v, want one naming http/json", err)
	}
	_, err = New(context.Background(), WithoutGlobal(), WithEndpoint("http://127.0.0.1:1"), WithProtocol("thrift"))
	if err == nil || !strings.Contains(err.Error(), `"thrift"`) {
		t.Fatalf("err = %v, want one naming thrift", err)
	}
}

func TestHeadersVarReachesReceiver(t *testing.T) {
	clearEnv(t)
	for _, proto := range []string{"grpc", "http/protobuf"} {
		t.Run(proto, func(t *testing.T) {
			r := &receiver{}
			if proto == "grpc" {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+startGRPCReceiver(t, r, nil))
			} else {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", startHTTPReceiver(t, r, false).URL)
			}
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s3cret,x-tenant=team%20a")
			send(t, 1)
			got := r.got()
			if len(got) != 1 {
				t.Fatalf("got %d requests, want 1", len(got))
			}
			h := map[string]string{}
			for k, v := range got[0].headers {
				h[strings.ToLower(k)] = v
			}
			if h["api-key"] != "s3cret" || h["x-tenant"] != "team a" {
				t.Errorf("headers = %v, want api-key=s3cret and x-tenant=team a", got[0].headers)
			}
		})
	}
}

func TestTimeoutVarBoundsExportToSlowReceiver(t *testing.T) {
	clearEnv(t)
	r := &receiver{block: 30 * time.Second}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+startGRPCReceiver(t, r, nil))
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "300")
	tel := newTel(t, WithLogWriter(nil))
	emit(tel, 1)
	start := time.Now()
	err := tel.Shutdown(context.Background())
	took := time.Since(start)
	if !errors.Is(err, ErrSpansDropped) {
		t.Fatalf("Shutdown err = %v, want ErrSpansDropped", err)
	}
	if took < 250*time.Millisecond || took > 1300*time.Millisecond {
		t.Fatalf("Shutdown took %v, want about the 300 ms export timeout", took)
	}
	if tel.DroppedSpans() != 1 {
		t.Errorf("DroppedSpans = %d, want 1", tel.DroppedSpans())
	}
}

func TestUnreachableEndpointShutdownReturnsWithinTimeout(t *testing.T) {
	clearEnv(t)
	// A port nobody listens on: the exporters retry until the timeout.
	l := closedPort(t)
	for _, proto := range []string{ProtocolGRPC, ProtocolHTTPProtobuf} {
		t.Run(proto, func(t *testing.T) {
			tel := newTel(t, WithEndpoint("http://"+l), WithProtocol(proto), WithTimeout(500*time.Millisecond), WithLogWriter(nil))
			emit(tel, 5)
			start := time.Now()
			err := tel.Shutdown(context.Background())
			took := time.Since(start)
			if err == nil || !errors.Is(err, ErrSpansDropped) || !strings.Contains(err.Error(), l) {
				t.Fatalf("Shutdown err = %v, want ErrSpansDropped naming %s", err, l)
			}
			if took > 1500*time.Millisecond {
				t.Fatalf("Shutdown took %v with a 500 ms timeout", took)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
			t.Logf("%v", err)
		})
	}
}

func TestInsecureVarAllowsPlaintextGRPC(t *testing.T) {
	clearEnv(t)
	r := &receiver{}
	addr := startGRPCReceiver(t, r, nil)
	_, port, _ := strings.Cut(addr, ":")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:"+port) // no scheme: TLS unless INSECURE
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "500")

	tel := newTel(t, WithLogWriter(nil))
	emit(tel, 1)
	if err := tel.Shutdown(context.Background()); !errors.Is(err, ErrSpansDropped) {
		t.Fatalf("TLS towards a plaintext receiver: err = %v, want ErrSpansDropped", err)
	}
	if r.spanCount() != 0 {
		t.Fatalf("plaintext receiver got spans without INSECURE")
	}

	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	sendOne(t, r, "with INSECURE=true the receiver")
}

// host:port with an IP host, which the SDK's own reading of the variable
// cannot parse (it sent to localhost:4317): the spans reach that address.
func TestGRPCHostPortWithAnIPHostIsWhereTheSpansGo(t *testing.T) {
	clearEnv(t)
	r := &receiver{}
	addr := startGRPCReceiver(t, r, nil) // 127.0.0.1:port, never port 4317's default
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", addr)
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2000")
	sendOne(t, r, "the receiver at "+addr)
}

func TestCertificateVarTrustsSelfSignedReceiver(t *testing.T) {
	clearEnv(t)
	t.Run("grpc", func(t *testing.T) {
		cert, pemPath := selfSignedCert(t)
		r := &receiver{}
		addr := startGRPCReceiver(t, r, &cert)
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://"+addr)
		t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "500")
		tel := newTel(t, WithLogWriter(nil))
		emit(tel, 1)
		if err := tel.Shutdown(context.Background()); !errors.Is(err, ErrSpansDropped) || r.spanCount() != 0 {
			t.Fatalf("untrusted certificate: err = %v, spans = %d; want a failed export", err, r.spanCount())
		}
		t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", pemPath)
		sendOne(t, r, "with the certificate the receiver")
	})
	t.Run("http", func(t *testing.T) {
		r := &receiver{}
		srv := startHTTPReceiver(t, r, true)
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
		t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "500")
		t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", "")
		tel := newTel(t, WithLogWriter(nil))
		emit(tel, 1)
		if err := tel.Shutdown(context.Background()); !errors.Is(err, ErrSpansDropped) || r.spanCount() != 0 {
			t.Fatalf("untrusted certificate: err = %v, spans = %d; want a failed export", err, r.spanCount())
		}
		t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", writeCertPEM(t, srv))
		sendOne(t, r, "with the certificate the receiver")
	})
}

func TestSamplerVarChangesWhatArrives(t *testing.T) {
	r := envReceiver(t)

	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	send(t, 50)
	if n := r.spanCount(); n != 0 {
		t.Fatalf("always_off: %d spans arrived", n)
	}

	t.Setenv("OTEL_TRACES_SAMPLER", "traceidratio")
	t.Setenv("OTEL_TRACES_SAMPLER_ARG", "0.25")
	send(t, 400)
	// Binomial(400, 0.25): mean 100, standard deviation about 8.7.
	if n := r.spanCount(); n < 50 || n > 150 {
		t.Fatalf("traceidratio 0.25: %d of 400 spans arrived", n)
	}

	// The option overrides the variable.
	before := r.spanCount()
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	send(t, 10, WithSampler(sdktrace.AlwaysSample()))
	if n := r.spanCount() - before; n != 10 {
		t.Fatalf("WithSampler(AlwaysSample) over always_off: %d of 10 spans arrived", n)
	}
}

func TestBSPMaxExportBatchSizeVarLimitsBatches(t *testing.T) {
	r := envReceiver(t)
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "3")
	send(t, 10)
	got := r.got()
	if r.spanCount() != 10 {
		t.Fatalf("got %d spans, want 10", r.spanCount())
	}
	for _, e := range got {
		if e.spanCount() > 3 {
			t.Fatalf("a batch of %d spans with OTEL_BSP_MAX_EXPORT_BATCH_SIZE=3", e.spanCount())
		}
	}
	if len(got) < 4 {
		t.Fatalf("%d requests for 10 spans in batches of 3", len(got))
	}
}

func TestBSPScheduleDelayVarExportsBeforeShutdown(t *testing.T) {
	r := envReceiver(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	tel := newTel(t)
	emit(tel, 2)
	deadline := time.Now().Add(3 * time.Second) // the default delay is 5 s
	for r.spanCount() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if r.spanCount() != 2 {
		t.Fatalf("with a 20 ms schedule delay %d spans arrived before shutdown", r.spanCount())
	}
}

func TestServiceNameAndResourceAttributesVars(t *testing.T) {
	r := envReceiver(t)
	t.Setenv("OTEL_SERVICE_NAME", "prover-7")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=lab,service.name=ignored")
	send(t, 1)
	got := r.got()
	if len(got) != 1 {
		t.Fatalf("got %d requests", len(got))
	}
	for key, want := range map[string]string{
		"service.name":                "prover-7", // OTEL_SERVICE_NAME wins over the attributes
		"deployment.environment.name": "lab",
		"telemetry.sdk.language":      "go",
	} {
		if v, _ := got[0].resourceAttr(key); v != want {
			t.Errorf("resource %s = %q, want %q", key, v, want)
		}
	}
	for _, key := range []string{"host.name", "process.pid", "process.runtime.name"} {
		if _, ok := got[0].resourceAttr(key); !ok {
			t.Errorf("resource lacks %s", key)
		}
	}
	if _, ok := got[0].resourceAttr("process.command_args"); ok {
		t.Error("resource carries the command line")
	}

	// Options win over both variables.
	send(t, 1, WithServiceName("opt-name"), WithResourceAttributes(attribute.String("deployment.environment.name", "prod")))
	got = r.got()
	if v, _ := got[1].resourceAttr("service.name"); v != "opt-name" {
		t.Errorf("WithServiceName: service.name = %q", v)
	}
	if v, _ := got[1].resourceAttr("deployment.environment.name"); v != "prod" {
		t.Errorf("WithResourceAttributes: deployment.environment.name = %q", v)
	}
}

func TestMalformedResourceAttributesVarIsAnError(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "novalue")
	_, err := New(context.Background(), WithoutGlobal(), WithExporter(tracetest.NewNoopExporter()))
	if err == nil || !strings.Contains(err.Error(), "OTEL_RESOURCE_ATTRIBUTES") {
		t.Fatalf("err = %v, want one naming OTEL_RESOURCE_ATTRIBUTES", err)
	}
}

// A malformed entry is New's one error, with no line logged before it (the
// SDK logs a bad escape through otel.Handle and carries on).
func TestMalformedResourceAttributesVarIsOneErrorAndNoLogLine(t *testing.T) {
	var logged bytes.Buffer
	log.SetOutput(&logged)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	for _, v := range []string{"a=%zz", "a=1,b", "=v", "a=1,,b=2"} {
		clearEnv(t)
		t.Setenv("OTEL_RESOURCE_ATTRIBUTES", v)
		_, err := New(context.Background(), WithoutGlobal(), WithExporter(tracetest.NewNoopExporter()))
		if err == nil || !strings.Contains(err.Error(), "OTEL_RESOURCE_ATTRIBUTES") {
			t.Errorf("%q: err = %v, want one naming OTEL_RESOURCE_ATTRIBUTES", v, err)
		}
	}
	if logged.Len() > 0 {
		t.Errorf("logged before the error: %q", logged.String())
	}
}

func TestDefaultServiceName(t *testing.T) {
	clearEnv(t)
	mem := tracetest.NewInMemoryExporter()
	tel := newTel(t, WithExporter(mem), WithSyncExport())
	emit(tel, 1)
	spans := mem.GetSpans() // before Shutdown, which resets the in-memory exporter
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	if v, ok := spans[0].Resource.Set().Value("service.name"); !ok || v.AsString() != DefaultServiceName {
		t.Fatalf("service.name = %v, want %s", v.Emit(), DefaultServiceName)
	}
}

func TestOptionsOverrideEndpointProtocolAndHeaders(t *testing.T) {
	clearEnv(t)
	r := &receiver{}
	addr := startGRPCReceiver(t, r, nil)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+closedPort(t))
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=from-env")
	tel := newTel(t, WithEndpoint(addr), WithProtocol(ProtocolGRPC), WithInsecure(),
		WithHeaders(map[string]string{"api-key": "from-option"}))
	emit(tel, 1)
	shutdown(t, tel)
	got := r.got()
	if len(got) != 1 || got[0].headers["api-key"] != "from-option" {
		t.Fatalf("got %v, want one gRPC request with api-key=from-option", got)
	}
}

func TestWithEndpointHTTPAppendsSignalPath(t *testing.T) {
	clearEnv(t)
	r := &receiver{}
	srv := startHTTPReceiver(t, r, false)
	for _, c := range []struct{ endpoint, path string }{
		{srv.URL, "/v1/traces"},
		{srv.URL + "/otlp", "/otlp/v1/traces"},
		{srv.URL + "/otlp/v1/traces", "/otlp/v1/traces"},
		{strings.TrimPrefix(srv.URL, "http://"), "/v1/traces"}, // host:port, with WithInsecure
	} {
		r.mu.Lock()
		r.exports = nil
		r.mu.Unlock()
		send(t, 1, WithEndpoint(c.endpoint), WithInsecure())
		if got := r.got(); len(got) != 1 || got[0].path != c.path {
			t.Errorf("WithEndpoint(%q): got %v, want one request on %s", c.endpoint, got, c.path)
		}
	}
}

func TestSetupInstallsGlobals(t *testing.T) {
	clearEnv(t)
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })
	mem := tracetest.NewInMemoryExporter()
	shut, err := Setup(context.Background(), WithExporter(mem), WithSyncExport())
	if err != nil {
		t.Fatal(err)
	}
	_, s := otel.Tracer("x").Start(context.Background(), "via-global")
	s.End()
	if got := mem.GetSpans(); len(got) != 1 || got[0].Name != "via-global" {
		t.Fatalf("global tracer spans = %v", got)
	}
	if err := shut(context.Background()); err != nil {
		t.Fatal(err)
	}
	fields := otel.GetTextMapPropagator().Fields()
	if !strings.Contains(strings.Join(fields, ","), "traceparent") || !strings.Contains(strings.Join(fields, ","), "baggage") {
		t.Fatalf("global propagator fields = %v, want traceparent and baggage", fields)
	}
}

// New itself installs the globals (Setup only calls it), and WithoutGlobal
// keeps them as they were; New's doc says so. It said "New installs no
// globals" (a new user's trial), and a library caller that trusted it had
// its process's global provider replaced.
func TestNewInstallsGlobalsUnlessWithoutGlobalAsItsDocSays(t *testing.T) {
	clearEnv(t)
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })
	start := func(name string) {
		_, s := otel.Tracer("x").Start(context.Background(), name)
		s.End()
	}

	kept := tracetest.NewInMemoryExporter()
	keptTel, err := New(context.Background(), WithExporter(kept), WithSyncExport())
	if err != nil {
		t.Fatal(err)
	}
	defer keptTel.Shutdown(context.Background())
	start("after-new")
	if got := kept.GetSpans(); len(got) != 1 || got[0].Name != "after-new" {
		t.Fatalf("after New, the global tracer's spans reached %v, want New's provider", got)
	}
	if otel.GetTracerProvider() != keptTel.Provider() {
		t.Error("after New, the global provider is not Telemetry.Provider")
	}

	other := tracetest.NewInMemoryExporter()
	otherTel, err := New(context.Background(), WithExporter(other), WithSyncExport(), WithoutGlobal())
	if err != nil {
		t.Fatal(err)
	}
	defer otherTel.Shutdown(context.Background())
	start("after-without-global")
	if len(other.GetSpans()) != 0 || len(kept.GetSpans()) != 2 {
		t.Errorf("after New(WithoutGlobal()), the global tracer's span went to the new provider (%d spans) or nowhere", len(other.GetSpans()))
	}

	doc := funcDoc(t, "setup.go", "New")
	if strings.Contains(doc, "installs no globals") || !strings.Contains(doc, "Unless WithoutGlobal is given, New installs") {
		t.Errorf("New's doc does not say that it installs the globals unless WithoutGlobal:\n%s", doc)
	}
}

// funcDoc is the doc comment of the function name declared in file of
// this package.
func funcDoc(t *testing.T, file, name string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name && fd.Doc != nil {
			return fd.Doc.Text()
		}
	}
	t.Fatalf("%s declares no documented func %s", file, name)
	return ""
}

func TestWithDevicesDescribesGPUsInResource(t *testing.T) {
	clearEnv(t)
	mem := tracetest.NewInMemoryExporter()
	tel := newTel(t, WithExporter(mem), WithSyncExport(), WithDevices([]semconv.GPU{
		{ID: "GPU-aaa", Ordinal: 0, Model: "NVIDIA H200", Vendor: "NVIDIA", DriverVersion: "570.86", MemoryBytes: 141 << 30},
		{Ordinal: 1, Model: "NVIDIA H200", Vendor: "NVIDIA", DriverVersion: "570.86"},
	}))
	emit(tel, 1)
	set := mem.GetSpans()[0].Resource.Set()
	ids, _ := set.Value("hw.id")
	types, _ := set.Value("hw.type")
	drivers, _ := set.Value("hw.driver_version")
	memv, _ := set.Value(attribute.Key(semconv.KeyHWGPUMemoryLimit))
	if got := ids.AsStringSlice(); len(got) != 2 || got[0] != "GPU-aaa" || got[1] != "gpu1" {
		t.Errorf("hw.id = %v", got)
	}
	if got := types.AsStringSlice(); len(got) != 2 || got[0] != "gpu" {
		t.Errorf("hw.type = %v", got)
	}
	if got := drivers.AsStringSlice(); len(got) != 2 || got[1] != "570.86" {
		t.Errorf("hw.driver_version = %v", got)
	}
	if got := memv.AsInt64Slice(); len(got) != 2 || got[0] != 141<<30 {
		t.Errorf("hw.gpu.memory.limit = %v", got)
	}
	if semconv.GPUAttributes(nil) != nil {
		t.Error("DeviceAttributes(nil) is not nil")
	}
}

func TestSetupInstallsUntracedProcessorByDefault(t *testing.T) {
	clearEnv(t)
	for _, off := range []bool{false, true} {
		mem := tracetest.NewInMemoryExporter()
		opts := []Option{WithExporter(mem), WithSyncExport(), WithUntracedThreshold(time.Millisecond, 0.01)}
		if off {
			opts = append(opts, WithoutUntraced())
		}
		tel := newTel(t, opts...)
		tr := tel.TracerProvider.Tracer("test")
		ctx, p := tr.Start(context.Background(), "parent", trace.WithTimestamp(at(0)))
		_, c := tr.Start(ctx, "child", trace.WithTimestamp(at(0)))
		c.End(trace.WithTimestamp(at(10)))
		p.End(trace.WithTimestamp(at(20)))
		n := 0
		for _, s := range mem.GetSpans() {
			if s.Name == semconv.SpanUntraced {
				n++
			}
		}
		if want := map[bool]int{false: 1, true: 0}[off]; n != want {
			t.Errorf("WithoutUntraced=%v: %d untraced spans, want %d", off, n, want)
		}
	}
}

func TestMalformedVarsAreErrorsNamingThem(t *testing.T) {
	for name, value := range map[string]string{
		"OTEL_TRACES_SAMPLER":            "alwayson",
		"OTEL_TRACES_SAMPLER_ARG":        "1.5",
		"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "lots",
		"OTEL_BSP_SCHEDULE_DELAY":        "-1",
		"OTEL_EXPORTER_OTLP_TIMEOUT":     "10s",
		"OTEL_EXPORTER_OTLP_INSECURE":    "yes please",
	} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			if name == "OTEL_TRACES_SAMPLER_ARG" {
				t.Setenv("OTEL_TRACES_SAMPLER", "traceidratio")
			}
			t.Setenv(name, value)
			_, err := New(context.Background(), WithoutGlobal(), WithExporter(tracetest.NewNoopExporter()))
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("err = %v, want one naming %s", err, name)
			}
		})
	}
	// An option in place of the variable makes the variable irrelevant.
	clearEnv(t)
	t.Setenv("OTEL_TRACES_SAMPLER", "xray")
	if _, err := New(context.Background(), WithoutGlobal(), WithExporter(tracetest.NewNoopExporter()), WithSampler(sdktrace.NeverSample())); err != nil {
		t.Fatalf("WithSampler did not override a bad OTEL_TRACES_SAMPLER: %v", err)
	}
}

func TestMalformedHeadersCertificateOrProtocolVarsAreErrors(t *testing.T) {
	for name, env := range map[string][2]string{
		"headers without =":      {"OTEL_EXPORTER_OTLP_HEADERS", "garbage"},
		"traces headers, no key": {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "a=1,=2"},
		"headers bad escape":     {"OTEL_EXPORTER_OTLP_HEADERS", "a=%zz"},
		"missing certificate":    {"OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem"},
		"bogus protocol":         {"OTEL_EXPORTER_OTLP_PROTOCOL", "bogus"},
	} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(env[0], env[1])
			_, err := New(context.Background(), WithoutGlobal(), WithTraceFile(filepath.Join(t.TempDir(), "t.jsonl")))
			if err == nil || !strings.Contains(err.Error(), env[0]) {
				t.Errorf("%s=%q: %v, want an error naming the variable", env[0], env[1], err)
			}
		})
	}
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20x,tenant=a")
	tel, err := New(context.Background(), WithoutGlobal(), WithTraceFile(filepath.Join(t.TempDir(), "t.jsonl")))
	if err != nil {
		t.Fatalf("well-formed headers refused: %v", err)
	}
	shutdown(t, tel)
}

// slowExporter takes longer to export than the flush may wait.
type slowExporter struct {
	delay    time.Duration
	shutdown atomic.Bool
}

func (e *slowExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	time.Sleep(e.delay)
	return nil
}
func (e *slowExporter) Shutdown(context.Context) error { e.shutdown.Store(true); return nil }

func TestShutdownStopsTheExporterEvenWhenTheFlushUsedItsWholeBudget(t *testing.T) {
	clearEnv(t)
	exp := &slowExporter{delay: 1300 * time.Millisecond}
	tel, err := New(context.Background(), WithoutGlobal(), WithExporter(exp), WithTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_, s := tel.TracerProvider.Tracer("t").Start(context.Background(), "slow")
	s.End()
	start := time.Now()
	_ = tel.Shutdown(context.Background()) // the flush gives up after 1.1 s
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Shutdown took %v", d)
	}
	if !exp.shutdown.Load() {
		t.Error("the exporter was never shut down: its goroutine and connection leak")
	}
}

func TestEndpointVarsTheExporterWouldMisreadAreErrors(t *testing.T) {
	for _, tc := range []struct{ endpoint, protocol, want string }{
		{"127.0.0.1:4318", "http/protobuf", "needs a URL"},
		{"ftp://127.0.0.1:4318", "http/protobuf", `scheme "ftp"`},
		{"unix://x", "grpc", `scheme "unix"`},
		{"http://", "grpc", "no host"},
		// The SDK logs a URL that does not parse on a line of its own.
		{"http://[::1", "http/protobuf", "not a URL: missing ']' in host"},
		{"http://[::1", "grpc", "not a URL: missing ']' in host"},
		{"http://::bad", "grpc", `not a URL: invalid port "::bad"`},
		{"::bad", "grpc", "grpc needs host:port or a URL"},
		{"0%:", "grpc", "grpc needs host:port or a URL"},        // dns:///0%: does not parse (found by FuzzOTELEnv)
		{"localhost:", "grpc", "grpc needs host:port or a URL"}, // no port
		{"::bad", "http/protobuf", "needs a URL"},
	} {
		clearEnv(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", tc.endpoint)
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tc.protocol)
		_, err := New(context.Background(), WithoutGlobal())
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_ENDPOINT") {
			t.Errorf("%s over %s: %v, want an error naming the variable and %q", tc.endpoint, tc.protocol, err, tc.want)
		}
	}
	// host:port stays valid for gRPC, as the gRPC exporter reads it.
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4317")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "100")
	tel, err := New(context.Background(), WithoutGlobal(), WithLogWriter(nil))
	if err != nil {
		t.Fatalf("grpc with host:port: %v", err)
	}
	_ = tel.Shutdown(context.Background())
}
