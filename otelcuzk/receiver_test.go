package otelcuzk

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/otelcuzk/otelcuzk/internal/testcert"
)

// export is one request a fake OTLP receiver got.
type export struct {
	proto   string // "grpc" or "http"
	path    string // HTTP path
	headers map[string]string
	req     *collectortrace.ExportTraceServiceRequest
}

func (e export) spanCount() int {
	n := 0
	for _, rs := range e.req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	return n
}

func (e export) resourceAttr(key string) (string, bool) {
	for _, rs := range e.req.ResourceSpans {
		for _, kv := range rs.Resource.GetAttributes() {
			if kv.Key == key {
				return anyString(kv.Value), true
			}
		}
	}
	return "", false
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	default:
		return v.String()
	}
}

// receiver records what a fake OTLP endpoint received.
type receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu      sync.Mutex
	exports []export
	block   time.Duration // make Export hang this long (or until the caller gives up)
}

func (r *receiver) add(e export) {
	r.mu.Lock()
	r.exports = append(r.exports, e)
	r.mu.Unlock()
}

func (r *receiver) got() []export {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]export(nil), r.exports...)
}

func (r *receiver) spanCount() int {
	n := 0
	for _, e := range r.got() {
		n += e.spanCount()
	}
	return n
}

// Export implements the OTLP gRPC trace service.
func (r *receiver) Export(ctx context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	if r.block > 0 {
		select {
		case <-time.After(r.block):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	h := map[string]string{}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for k, v := range md {
			if len(v) > 0 {
				h[k] = v[0]
			}
		}
	}
	r.add(export{proto: "grpc", headers: h, req: req})
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// ServeHTTP implements OTLP/HTTP with binary protobuf bodies.
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	m := &collectortrace.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(body, m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h := map[string]string{}
	for k, v := range req.Header {
		h[http.CanonicalHeaderKey(k)] = v[0]
	}
	r.add(export{proto: "http", path: req.URL.Path, headers: h, req: m})
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// startGRPCReceiver serves OTLP/gRPC on 127.0.0.1 (TLS when cert is set) and
// returns its address host:port.
func startGRPCReceiver(t *testing.T, r *receiver, cert *tls.Certificate) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if cert != nil {
		opts = append(opts, grpc.Creds(credentials.NewServerTLSFromCert(cert)))
	}
	srv := grpc.NewServer(opts...)
	collectortrace.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// eachProtocol runs f as a subtest per OTLP protocol (gRPC, HTTP), with
// the OTEL_ variables cleared.
func eachProtocol(t *testing.T, f func(t *testing.T, protocol string)) {
	for _, p := range []string{ProtocolGRPC, ProtocolHTTPProtobuf} {
		t.Run(p, func(t *testing.T) {
			clearEnv(t)
			f(t, p)
		})
	}
}

// startReceiver serves OTLP for r over protocol (ProtocolGRPC or
// ProtocolHTTPProtobuf, plaintext) and returns the endpoint URL.
func startReceiver(t *testing.T, r *receiver, protocol string) string {
	t.Helper()
	if protocol == ProtocolGRPC {
		return "http://" + startGRPCReceiver(t, r, nil)
	}
	return startHTTPReceiver(t, r, false).URL
}

// startHTTPReceiver serves OTLP/HTTP on 127.0.0.1 and returns its base URL.
func startHTTPReceiver(t *testing.T, r *receiver, useTLS bool) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	if useTLS {
		srv = httptest.NewUnstartedServer(r)
		// The tests provoke handshake failures on purpose.
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
	} else {
		srv = httptest.NewServer(r)
	}
	t.Cleanup(srv.Close)
	return srv
}

// selfSignedCert makes a certificate for 127.0.0.1 and writes its PEM to a
// file, for OTEL_EXPORTER_OTLP_CERTIFICATE.
func selfSignedCert(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	cert, _ := testcert.New(t)
	path, _ := testcert.WritePEM(t, t.TempDir(), cert)
	return cert, path
}

// writeCertPEM writes an httptest TLS server's certificate for
// OTEL_EXPORTER_OTLP_CERTIFICATE.
func writeCertPEM(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// closedPort returns 127.0.0.1:port where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
