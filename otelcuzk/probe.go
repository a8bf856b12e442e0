package otelcuzk

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// http2Preface is the HTTP/2 client connection preface (RFC 9113, section
// 3.4) followed by an empty SETTINGS frame: what a gRPC client sends first.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"

// ProbeProtocol asks a plain-text (http://) OTLP endpoint which transport
// it speaks, before any span is exported, and returns an error of one line
// naming it and the setting to change when it speaks the other one than
// this Telemetry's protocol: a gRPC port (4317) answers an HTTP/1 request
// with an HTTP/2 SETTINGS frame, an OTLP/HTTP port (4318) answers the
// HTTP/2 preface with an HTTP/1 status line. Without this an export to
// 4318 over gRPC failed only at its timeout (11.6 s with the default),
// saying "http2: frame too large". It returns nil when the endpoint speaks
// the protocol, when it cannot tell (https, the file and custom exporters,
// no answer within timeout) and when the endpoint is unreachable (the
// export reports that). It waits at most timeout (or until ctx ends).
func (t *Telemetry) ProbeProtocol(ctx context.Context, timeout time.Duration) error {
	if t == nil || (t.protocol != ProtocolGRPC && t.protocol != ProtocolHTTPProtobuf) || !strings.HasPrefix(t.target, "http://") {
		return nil
	}
	hp, ok := endpointHostPort(t.target)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", hp)
	if err != nil {
		return nil
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	hello := http2Preface
	if t.protocol == ProtocolHTTPProtobuf {
		hello = "GET / HTTP/1.1\r\nHost: " + hp + "\r\nConnection: close\r\n\r\n"
	}
	if _, err := conn.Write([]byte(hello)); err != nil {
		return nil
	}
	buf := make([]byte, 16)
	n, _ := readAtLeast(conn, buf, 9)
	answer := buf[:n]
	switch {
	case t.protocol == ProtocolGRPC && bytes.HasPrefix(answer, []byte("HTTP/1.")):
		return fmt.Errorf("otelcuzk: %s", mixupLine(false, t.target))
	case t.protocol == ProtocolHTTPProtobuf && n >= 9 && answer[3] == 0x04 && !bytes.HasPrefix(answer, []byte("HTTP/")):
		// A frame header: 3 bytes of length, type 4 (SETTINGS).
		return fmt.Errorf("otelcuzk: %s", mixupLine(true, t.target))
	}
	return nil
}

// readAtLeast reads into buf until it holds min bytes, the connection
// ends or its deadline passes; it returns what it read.
func readAtLeast(conn net.Conn, buf []byte, min int) (int, error) {
	n := 0
	for n < min {
		k, err := conn.Read(buf[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// mixupLine names an OTLP endpoint that speaks the other transport:
// gRPC (speaksGRPC) to an OTLP/HTTP exporter, or HTTP/1 to a gRPC one.
func mixupLine(speaksGRPC bool, endpoint string) string {
	if speaksGRPC {
		return fmt.Sprintf("endpoint %s speaks gRPC, not OTLP/HTTP; set OTEL_EXPORTER_OTLP_PROTOCOL=grpc or use its OTLP/HTTP port (4318)", endpoint)
	}
	return fmt.Sprintf("endpoint %s speaks HTTP/1 (OTLP/HTTP), not gRPC; set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf or use its gRPC port (4317)", endpoint)
}
