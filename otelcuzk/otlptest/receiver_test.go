package otlptest

import (
	"context"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
)

// protocol of the receiver the test sends to (send).
var protocol = otelcuzk.ProtocolHTTPProtobuf

func send(t *testing.T, url, name string) (traceID string, err error) {
	t.Helper()
	tel, err := otelcuzk.New(context.Background(), otelcuzk.WithoutGlobal(), otelcuzk.WithEndpoint(url), otelcuzk.WithProtocol(protocol),
		otelcuzk.WithSyncExport(), otelcuzk.WithTimeout(500*time.Millisecond), otelcuzk.WithLogWriter(nil))
	if err != nil {
		t.Fatal(err)
	}
	_, s := tel.TracerProvider.Tracer("t").Start(context.Background(), name)
	s.End()
	return s.SpanContext().TraceID().String(), tel.Shutdown(context.Background())
}

func TestReceiverRecordsStopsAndComesBackOnTheSameAddress(t *testing.T) {
	for _, c := range []struct {
		protocol string
		make     func(string) *Receiver
	}{{otelcuzk.ProtocolHTTPProtobuf, NewReceiver}, {otelcuzk.ProtocolGRPC, NewGRPCReceiver}} {
		t.Run(c.protocol, func(t *testing.T) {
			protocol = c.protocol
			defer func() { protocol = otelcuzk.ProtocolHTTPProtobuf }()
			receiverStopsAndComesBack(t, c.make)
		})
	}
}

func receiverStopsAndComesBack(t *testing.T, newReceiver func(string) *Receiver) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	r := newReceiver(addr)
	if _, err := send(t, r.URL(), "while down"); err == nil {
		t.Fatal("export to a receiver not started succeeded")
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	id, err := send(t, r.URL(), "up")
	if err != nil || len(r.Trace(id)) != 1 || r.Trace(id)[0].Name != "up" {
		t.Fatalf("send while up: %v, trace %v", err, r.Trace(id))
	}
	r.Stop()
	if _, err := send(t, r.URL(), "down again"); err == nil {
		t.Fatal("export to a stopped receiver succeeded")
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if r.Addr() != addr {
		t.Fatalf("restarted on %s, want %s", r.Addr(), addr)
	}
	id, err = send(t, r.URL(), "back")
	if err != nil || len(r.Trace(id)) != 1 || len(r.Spans()) != 2 || r.Counts()[id] != 1 || len(r.Counts()) != 2 {
		t.Fatalf("send after restart: %v, %d spans in all, counts %v", err, len(r.Spans()), r.Counts())
	}
	r.CountOnly()
	id, err = send(t, r.URL(), "counted")
	if err != nil || r.Counts()[id] != 1 || len(r.Spans()) != 2 {
		t.Fatalf("count only: %v, counts %v, %d spans kept", err, r.Counts(), len(r.Spans()))
	}
}

func TestBlackholeHoldsAnExportUntilItsTimeout(t *testing.T) {
	b, err := NewBlackhole()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	start := time.Now()
	_, err = send(t, b.URL(), "lost")
	if took := time.Since(start); err == nil || took < 400*time.Millisecond {
		t.Fatalf("export to a blackhole: %v after %v, want a failure after the 500 ms timeout", err, took)
	}
}
