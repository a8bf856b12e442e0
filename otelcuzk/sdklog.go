package otelcuzk

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
)

// SetSDKLogger installs, as the OpenTelemetry SDK's global logger
// (otel.SetLogger), one that writes each SDK error to w on one line
// ("otelcuzk: OpenTelemetry SDK: MSG: ERR key=value ..."), and drops the
// SDK's "parse url" error for an OTLP endpoint variable given as host:port:
// the gRPC exporter reads OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT as a URL
// itself and logs that line (from its stdr logger, with a date and a
// source file) although New honours host:port for gRPC and refuses it for
// HTTP before the exporter runs. Info messages (the SDK's warnings, V(1),
// and below) are dropped, as the SDK's default logger drops them.
//
// It is for programs that own their process's logging (cuzk): a library
// embedding otelcuzk keeps its own logger by not calling it.
func SetSDKLogger(w io.Writer) {
	otel.SetLogger(logr.New(&sdkLogSink{w: w}))
}

// sdkLogSink is the logr.LogSink of SetSDKLogger.
type sdkLogSink struct {
	mu     *sync.Mutex
	w      io.Writer
	values []any
}

func (s *sdkLogSink) Init(logr.RuntimeInfo) {
	if s.mu == nil {
		s.mu = &sync.Mutex{}
	}
}

// Enabled is false for every Info level: only errors are written (logr
// writes an Error whatever the level); the SDK logs warnings at V(1),
// information at V(4) and debugging at V(8).
func (s *sdkLogSink) Enabled(int) bool { return false }

func (s *sdkLogSink) Info(int, string, ...any) {}

func (s *sdkLogSink) Error(err error, msg string, kv ...any) {
	kv = append(append([]any(nil), s.values...), kv...)
	if msg == "parse url" && hostPortInput(kv) {
		return
	}
	line := "otelcuzk: OpenTelemetry SDK: " + msg
	if err != nil {
		line += ": " + err.Error()
	}
	for i := 0; i+1 < len(kv); i += 2 {
		line += fmt.Sprintf(" %v=%q", kv[i], fmt.Sprint(kv[i+1]))
	}
	line = strings.Join(strings.Fields(line), " ")
	if s.mu != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	fmt.Fprintln(s.w, line)
}

func (s *sdkLogSink) WithValues(kv ...any) logr.LogSink {
	return &sdkLogSink{mu: s.mu, w: s.w, values: append(append([]any(nil), s.values...), kv...)}
}

func (s *sdkLogSink) WithName(string) logr.LogSink { return s }

// hostPortInput reports whether the "input" value of kv is host:port
// without a scheme (what New passes to the gRPC exporter as an endpoint).
func hostPortInput(kv []any) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		if k, _ := kv[i].(string); k == "input" {
			v := fmt.Sprint(kv[i+1])
			_, _, err := net.SplitHostPort(v)
			return err == nil && !strings.Contains(v, "://")
		}
	}
	return false
}
