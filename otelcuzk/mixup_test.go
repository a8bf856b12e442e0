package otelcuzk

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/logtest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/otlptest"
)

// settingsListener answers every connection as an HTTP/2 (gRPC) server
// does an HTTP/1 request: with its SETTINGS frame (length 6, type 4), the
// bytes a Collector's 4317 sends. It returns the endpoint's URL.
func settingsListener(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				c.Read(buf)
				c.Write([]byte("\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x05\x00\x00\x40\x00"))
				time.Sleep(time.Second)
			}()
		}
	}()
	return "http://" + lis.Addr().String()
}

// OTLP/HTTP sent to a gRPC receiver (the 4317 mix-up) printed
// 'malformed HTTP response "\x00\x00\x06..."'; gRPC sent to an OTLP/HTTP
// receiver (4318) 'http2: frame too large'. The one log line names the
// endpoint, what it speaks and the setting to change.
func TestAnOTLPPortOfTheOtherProtocolIsNamedInOneLine(t *testing.T) {
	for _, c := range []struct {
		name, proto string
		grpc        bool
		want        string
	}{
		{"http to a grpc port", ProtocolHTTPProtobuf, true, "speaks gRPC, not OTLP/HTTP; set OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
		{"grpc to an http port", ProtocolGRPC, false, "speaks HTTP/1 (OTLP/HTTP), not gRPC; set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearEnv(t)
			var url string
			if c.grpc {
				url = settingsListener(t)
			} else {
				r := otlptest.NewReceiver("127.0.0.1:0")
				if err := r.Start(); err != nil {
					t.Fatal(err)
				}
				defer r.Stop()
				url = r.URL()
			}
			var log logtest.Buffer
			tel := newTel(t, WithEndpoint(url), WithProtocol(c.proto), WithInsecure(), WithLogWriter(&log),
				WithTimeout(3*time.Second), WithSyncExport(), WithoutUntraced())
			emit(tel, 1)
			tel.Shutdown(context.Background())
			out := log.String()
			if !strings.Contains(out, c.want) || !strings.Contains(out, strings.TrimPrefix(url, "http://")) {
				t.Fatalf("log %q, want one line naming the endpoint and %q", out, c.want)
			}
			if n := strings.Count(strings.TrimSpace(out), "\n"); n > 1 {
				t.Errorf("log of %d lines:\n%s", n+1, out)
			}
		})
	}
}

// ProbeProtocol names the mix-up before any export, in well under the
// export timeout (gRPC to an OTLP/HTTP port failed after 11.6 s): a real
// gRPC receiver for OTLP/HTTP, a real OTLP/HTTP receiver for gRPC; the
// right protocol, an https endpoint and a refusing port are no error.
func TestProbeProtocolNamesTheOtherTransportAtOnce(t *testing.T) {
	clearEnv(t)
	grpcRecv := otlptest.NewGRPCReceiver("127.0.0.1:0")
	httpRecv := otlptest.NewReceiver("127.0.0.1:0")
	for _, r := range []*otlptest.Receiver{grpcRecv, httpRecv} {
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		defer r.Stop()
	}
	refused := func() string {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := lis.Addr().String()
		lis.Close()
		return "http://" + addr
	}()
	for _, c := range []struct {
		name, url, proto, want string
	}{
		{"http to grpc", grpcRecv.URL(), ProtocolHTTPProtobuf, "speaks gRPC, not OTLP/HTTP; set OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
		{"grpc to http", httpRecv.URL(), ProtocolGRPC, "speaks HTTP/1 (OTLP/HTTP), not gRPC; set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"},
		{"grpc to grpc", grpcRecv.URL(), ProtocolGRPC, ""},
		{"http to http", httpRecv.URL(), ProtocolHTTPProtobuf, ""},
		{"refused", refused, ProtocolGRPC, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tel := newTel(t, WithEndpoint(c.url), WithProtocol(c.proto), WithInsecure(), WithLogWriter(nil))
			start := time.Now()
			err := tel.ProbeProtocol(context.Background(), 2*time.Second)
			if d := time.Since(start); d > time.Second {
				t.Errorf("probe took %v", d)
			}
			switch {
			case c.want == "" && err != nil:
				t.Errorf("ProbeProtocol: %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.url) || strings.Contains(err.Error(), "\n")):
				t.Errorf("ProbeProtocol: %v, want one line naming %s and %q", err, c.url, c.want)
			}
		})
	}
}

// ProbeEndpoint says in one line that nothing accepts a connection at the
// endpoint, naming it, and is nil where a receiver listens (whatever it
// speaks) and for the trace file.
func TestProbeEndpointNamesAnEndpointWhereNothingListens(t *testing.T) {
	clearEnv(t)
	recv := otlptest.NewReceiver("127.0.0.1:0")
	if err := recv.Start(); err != nil {
		t.Fatal(err)
	}
	defer recv.Stop()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + lis.Addr().String()
	lis.Close()
	for _, proto := range []string{ProtocolHTTPProtobuf, ProtocolGRPC} {
		tel := newTel(t, WithEndpoint(refused), WithProtocol(proto), WithInsecure(), WithLogWriter(nil))
		if err := tel.ProbeEndpoint(context.Background(), 2*time.Second); err == nil ||
			!strings.HasPrefix(err.Error(), "OTLP endpoint "+refused+" unreachable: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s to %s: %v, want one line naming it unreachable", proto, refused, err)
		}
		tel = newTel(t, WithEndpoint(recv.URL()), WithProtocol(proto), WithInsecure(), WithLogWriter(nil))
		if err := tel.ProbeEndpoint(context.Background(), 2*time.Second); err != nil {
			t.Errorf("%s to a listening receiver: %v", proto, err)
		}
	}
	if err := newTel(t).ProbeEndpoint(context.Background(), time.Second); err != nil {
		t.Errorf("the trace file: %v", err)
	}
}

// webUI serves what Jaeger's UI (16686) serves on any path and method: 200
// and an HTML page. It records the method and path of each request.
func webUI(t *testing.T) (url string, requests func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><head><title>Jaeger UI</title></head><body></body></html>")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) }
}

// An OTLP/HTTP endpoint set to a UI's port (Jaeger's 16686 answers the
// export with 200 and an HTML page, which the exporter takes for success)
// is named in one line before any export: a UI's port, not OTLP, and the
// OTLP port. The probe posts where the exporter would (/v1/traces after
// OTEL_EXPORTER_OTLP_ENDPOINT's path, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT's
// path as it is); a real receiver, protobuf or JSON, is no error.
func TestProbeProtocolNamesAWebUIPort(t *testing.T) {
	ui, requests := webUI(t)
	jsonRecv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "{}")
	}))
	defer jsonRecv.Close()
	protoRecv := otlptest.NewReceiver("127.0.0.1:0")
	if err := protoRecv.Start(); err != nil {
		t.Fatal(err)
	}
	defer protoRecv.Stop()
	const want = "a UI's port, not OTLP; use the OTLP/HTTP port (4318 "
	for _, c := range []struct {
		name, env, value, opt, path, want string
	}{
		{"option", "", "", ui, "POST /v1/traces", want},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT", ui + "/otlp/", "", "POST /otlp/v1/traces", want},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ui + "/spans", "", "POST /spans", want},
		{"JSON receiver", "", "", jsonRecv.URL, "", ""},
		{"protobuf receiver", "OTEL_EXPORTER_OTLP_ENDPOINT", protoRecv.URL(), "", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearEnv(t)
			var opts []Option
			if c.env != "" {
				t.Setenv(c.env, c.value)
			} else {
				opts = append(opts, WithEndpoint(c.opt))
			}
			before := len(requests())
			tel := newTel(t, append(opts, WithProtocol(ProtocolHTTPProtobuf), WithInsecure(), WithLogWriter(nil))...)
			err := tel.ProbeProtocol(context.Background(), 2*time.Second)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("ProbeProtocol: %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "200 OK, text/html") ||
				strings.HasPrefix(err.Error(), "otelcuzk:") || strings.Contains(err.Error(), "\n")):
				t.Errorf("ProbeProtocol: %v, want one line naming the UI's answer and %q", err, c.want)
			}
			if c.path != "" {
				if got := requests()[before:]; len(got) != 1 || got[0] != c.path {
					t.Errorf("the probe sent %q, want %q", got, c.path)
				}
			}
		})
	}
}
