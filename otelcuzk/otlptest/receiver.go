// Package otlptest is a fake OTLP trace receiver for tests (OTLP/HTTP, or
// OTLP/gRPC with NewGRPCReceiver): it records the spans it is sent, can be
// stopped and started again on the same address (a collector going down
// and coming back), and Blackhole is an endpoint that accepts connections
// and never answers.
package otlptest

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Span is what the receiver keeps of one span: hex ids, the name, and the
// span contexts its links point to.
type Span struct {
	TraceID, SpanID, ParentID string
	Name                      string
	Links                     []Link
}

// Link is one span link: the hex ids of the span it points to.
type Link struct{ TraceID, SpanID string }

// Receiver serves OTLP/HTTP with binary protobuf bodies on /v1/traces (any
// path is accepted) and records the spans. Its methods are safe for
// concurrent use.
type Receiver struct {
	addr string

	mu        sync.Mutex
	spans     []Span
	counts    map[string]int // spans per hex trace id
	countOnly bool
	srv       *http.Server
	lis       net.Listener
	grpc      bool         // serve OTLP/gRPC instead (NewGRPCReceiver)
	maxBody   int          // RefuseLarger; 0: no limit
	gsrv      *grpc.Server // while started, with grpc
}

// CountOnly makes the receiver keep only the number of spans of each trace
// (Counts), not the spans: for long runs whose memory is being measured.
// Spans and Trace then return nothing.
func (r *Receiver) CountOnly() {
	r.mu.Lock()
	r.countOnly = true
	r.mu.Unlock()
}

// RefuseLarger makes the receiver refuse a request of more than n bytes,
// as a Collector refuses one over its limit: over HTTP with 413 Request
// Entity Too Large (the body's size), over gRPC with RESOURCE_EXHAUSTED
// "grpc: received message larger than max" (the message's encoded size).
// The refused request's spans are not recorded. n <= 0 removes the limit.
func (r *Receiver) RefuseLarger(n int) {
	r.mu.Lock()
	r.maxBody = n
	r.mu.Unlock()
}

// tooLarge reports whether a request of size bytes is over RefuseLarger's
// limit.
func (r *Receiver) tooLarge(size int) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxBody > 0 && size > r.maxBody, r.maxBody
}

// Counts returns the number of spans received per hex trace id.
func (r *Receiver) Counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.counts))
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}

// NewReceiver returns a stopped receiver that will listen on addr
// (host:port; "127.0.0.1:0" picks a free port on the first Start).
func NewReceiver(addr string) *Receiver { return &Receiver{addr: addr} }

// NewGRPCReceiver is NewReceiver for OTLP/gRPC (plaintext): its URL is the
// endpoint for OTEL_EXPORTER_OTLP_ENDPOINT with
// OTEL_EXPORTER_OTLP_PROTOCOL=grpc.
func NewGRPCReceiver(addr string) *Receiver { return &Receiver{addr: addr, grpc: true} }

// FreeAddr returns a 127.0.0.1 address nothing listens on now, for a
// receiver that starts later.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Start listens and serves; it retries for up to a second while the
// address is still held (a restart on the same port). Starting a started
// receiver is an error.
func (r *Receiver) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil || r.gsrv != nil {
		return errors.New("otlptest: receiver already started")
	}
	var lis net.Listener
	var err error
	for deadline := time.Now().Add(time.Second); ; {
		if lis, err = net.Listen("tcp", r.addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("otlptest: listen %s: %w", r.addr, err)
	}
	r.addr = lis.Addr().String()
	r.lis = lis
	if r.grpc {
		r.gsrv = grpc.NewServer()
		collectortrace.RegisterTraceServiceServer(r.gsrv, traceService{r: r})
		go r.gsrv.Serve(lis)
		return nil
	}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serveHTTP), ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(lis)
	return nil
}

// Stop closes the listener, lets the requests in progress be answered (up
// to a second) and closes every connection: exports fail with connection
// refused until the next Start, and a request the receiver recorded was
// answered, as a collector shutting down does. Stopping a stopped receiver
// does nothing.
func (r *Receiver) Stop() {
	r.mu.Lock()
	srv, gsrv := r.srv, r.gsrv
	r.srv, r.gsrv, r.lis = nil, nil, nil
	r.mu.Unlock()
	if gsrv != nil {
		done := make(chan struct{})
		go func() { gsrv.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
		}
		gsrv.Stop()
	}
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		srv.Close()
	}
}

// Addr is the host:port the receiver listens on (or will).
func (r *Receiver) Addr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addr
}

// URL is the endpoint for OTEL_EXPORTER_OTLP_ENDPOINT: "http://" + Addr.
func (r *Receiver) URL() string { return "http://" + r.Addr() }

// Spans returns a copy of the spans received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Trace returns the spans received of the trace with hex id traceID.
func (r *Receiver) Trace(traceID string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if big, _ := r.tooLarge(len(body)); big {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	m := &collectortrace.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(body, m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.record(m)
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// traceService is a Receiver's OTLP/gRPC trace service.
type traceService struct {
	collectortrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(_ context.Context, m *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	n := proto.Size(m)
	if big, max := s.r.tooLarge(n); big {
		return nil, status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", n, max)
	}
	s.r.record(m)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// record keeps the spans of one export request.
func (r *Receiver) record(m *collectortrace.ExportTraceServiceRequest) {
	var got []Span
	for _, rs := range m.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					ParentID: hex.EncodeToString(s.ParentSpanId), Name: s.Name}
				for _, l := range s.Links {
					sp.Links = append(sp.Links, Link{TraceID: hex.EncodeToString(l.TraceId), SpanID: hex.EncodeToString(l.SpanId)})
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	for _, sp := range got {
		r.counts[sp.TraceID]++
	}
	if !r.countOnly {
		r.spans = append(r.spans, got...)
	}
	r.mu.Unlock()
}

// Blackhole accepts TCP connections on 127.0.0.1 and never reads or
// answers: an OTLP export to it runs until its timeout.
type Blackhole struct {
	lis   net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// NewBlackhole starts a Blackhole on a free 127.0.0.1 port.
func NewBlackhole() (*Blackhole, error) { return NewBlackholeAt("127.0.0.1:0") }

// NewBlackholeAt starts a Blackhole listening on addr (host:port): a
// stopped Receiver's address, say, so an exporter that knew a working
// receiver there meets one that hangs.
func NewBlackholeAt(addr string) (*Blackhole, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	b := &Blackhole{lis: lis}
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
		}
	}()
	return b, nil
}

// URL is the endpoint for OTEL_EXPORTER_OTLP_ENDPOINT.
func (b *Blackhole) URL() string { return "http://" + b.lis.Addr().String() }

// Close stops accepting and closes the held connections.
func (b *Blackhole) Close() {
	b.lis.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		c.Close()
	}
	b.conns = nil
}
