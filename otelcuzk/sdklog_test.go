package otelcuzk

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
)

// The SDK's errors come out on one line each; its "parse url" error for a
// host:port endpoint (honoured by New for gRPC) and its info messages do
// not; a "parse url" error for anything else still does.
func TestSDKLoggerWritesErrorsOnOneLineAndDropsTheHostPortParseLine(t *testing.T) {
	var buf bytes.Buffer
	l := logr.New(&sdkLogSink{w: &buf})
	l.Error(errors.New(`parse "127.0.0.1:4317": first path segment in URL cannot contain colon`), "parse url", "input", "127.0.0.1:4317")
	l.WithValues("input", "[::1]:4317").Error(errors.New("x"), "parse url")
	l.Info("exporting spans", "n", 3)
	l.V(1).Info("a warning") // the SDK's warnings: not written
	if buf.Len() != 0 {
		t.Fatalf("wrote %q, want nothing", buf.String())
	}
	l.Error(errors.New("bad\nthing"), "parse url", "input", "http://[::1")
	l.Error(errors.New("boom"), "exporter failed", "count", 2)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 || lines[0] != `otelcuzk: OpenTelemetry SDK: parse url: bad thing input="http://[::1"` ||
		lines[1] != `otelcuzk: OpenTelemetry SDK: exporter failed: boom count="2"` {
		t.Errorf("lines %q", lines)
	}
}

// New with a gRPC endpoint variable of the form IP:port, the SDK logger
// installed: nothing is logged.
func TestSetSDKLoggerQuietsTheGRPCHostPortEndpoint(t *testing.T) {
	clearEnv(t)
	var buf bytes.Buffer
	SetSDKLogger(&buf)
	t.Cleanup(func() { otel.SetLogger(logr.Discard()) })
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", closedPort(t))
	tel := newTel(t, WithLogWriter(nil), WithTimeout(100*time.Millisecond))
	_ = tel.Shutdown(t.Context())
	if buf.Len() != 0 {
		t.Errorf("SDK logged %q", buf.String())
	}
}
