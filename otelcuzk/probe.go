package otelcuzk

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"
)

// http2Preface is the HTTP/2 client connection preface (RFC 9113, section
// 3.4) followed by an empty SETTINGS frame: what a gRPC client sends first.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"

// ProbeProtocol asks a plain-text (http://) OTLP endpoint which transport
// it speaks, before any span is exported, and returns an error of one line
// naming it and the setting or port to change when it is no OTLP endpoint
// of this Telemetry's protocol:
//
//   - a gRPC port (4317) answers an HTTP/1 request with an HTTP/2 SETTINGS
//     frame, and an OTLP/HTTP port (4318) answers the HTTP/2 preface with
//     an HTTP/1 status line: without this an export to 4318 over gRPC
//     failed only at its timeout (11.6 s with the default), saying "http2:
//     frame too large";
//   - a web page's port (Jaeger's UI, 16686) answers the OTLP/HTTP probe,
//     an export of no spans posted where the exporter posts, with a 2xx
//     whose Content-Type is neither protobuf nor JSON (an HTML page): the
//     exporter takes any such 2xx for success, and cuzk prove said "trace
//     sent" of a trace that was lost.
//
// It returns nil when the endpoint speaks the protocol, when it cannot tell
// (https: the probe has not the exporter's TLS settings, which it leaves as
// they are; the file and custom exporters; no answer within timeout; an
// error status such as 401, which the export reports) and when the
// endpoint is unreachable (the export reports that). It waits at most
// timeout (or until ctx ends). The probe sends no span and no header of
// OTEL_EXPORTER_OTLP_HEADERS.
func (t *Telemetry) ProbeProtocol(ctx context.Context, timeout time.Duration) error {
	if t == nil || !strings.HasPrefix(t.target, "http://") {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, hp, err := t.dialEndpoint(ctx)
	if conn == nil || err != nil {
		return nil
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	hello := http2Preface
	if t.protocol == ProtocolHTTPProtobuf {
		// An ExportTraceServiceRequest of no spans: its encoding is empty.
		hello = "POST " + t.tracesPath + " HTTP/1.1\r\nHost: " + hp + "\r\nContent-Type: " + otlpProtobuf +
			"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
	}
	if _, err := conn.Write([]byte(hello)); err != nil {
		return nil
	}
	br := bufio.NewReader(conn)
	answer, _ := br.Peek(9)
	switch {
	case t.protocol == ProtocolGRPC && bytes.HasPrefix(answer, []byte("HTTP/1.")):
		return errors.New(mixupLine(false, t.target))
	case t.protocol == ProtocolHTTPProtobuf && len(answer) >= 9 && answer[3] == 0x04 && !bytes.HasPrefix(answer, []byte("HTTP/")):
		// A frame header: 3 bytes of length, type 4 (SETTINGS).
		return errors.New(mixupLine(true, t.target))
	case t.protocol == ProtocolHTTPProtobuf && bytes.HasPrefix(answer, []byte("HTTP/1.")):
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return nil
		}
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode/100 == 2 && !otlpResponseType(ct, resp.ContentLength) {
			return errors.New(webPageLine(t.target, resp.Status, ct))
		}
	}
	return nil
}

// ProbeEndpoint dials this Telemetry's OTLP endpoint (TCP, within timeout
// or until ctx ends) and returns an error of one line, "OTLP endpoint
// ENDPOINT unreachable: REASON" (wrapping the dial's error: connection
// refused, i/o timeout, no such host), when nothing accepts a connection
// there. It returns nil when one does (whatever it speaks: see
// ProbeProtocol), for the file and custom exporters, and for an endpoint
// it cannot read as host and port (New refused the malformed ones). It
// sends nothing.
func (t *Telemetry) ProbeEndpoint(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, _, err := t.dialEndpoint(ctx)
	if err != nil {
		return fmt.Errorf("OTLP endpoint %s unreachable: %w", t.target, err)
	}
	if conn != nil {
		conn.Close()
	}
	return nil
}

// dialEndpoint opens a TCP connection to the OTLP endpoint's host:port
// (hp) until ctx ends; a nil conn and error when there is none to dial:
// the file and custom exporters, an endpoint that is no host and port.
func (t *Telemetry) dialEndpoint(ctx context.Context) (conn net.Conn, hp string, err error) {
	if t == nil || (t.protocol != ProtocolGRPC && t.protocol != ProtocolHTTPProtobuf) {
		return nil, "", nil
	}
	hp, ok := endpointHostPort(t.target)
	if !ok {
		return nil, "", nil
	}
	var d net.Dialer
	conn, err = d.DialContext(ctx, "tcp", hp)
	return conn, hp, err
}

// otlpProtobuf is the Content-Type of OTLP/HTTP's binary protobuf encoding.
const otlpProtobuf = "application/x-protobuf"

// otlpResponseType reports whether a 2xx answer of Content-Type ct and
// length n (-1: unknown) can be an OTLP/HTTP receiver's: binary protobuf or
// JSON (OTLP/HTTP, section "OTLP/HTTP Response"), or no body at all.
func otlpResponseType(ct string, n int64) bool {
	if ct == "" {
		return n == 0
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == otlpProtobuf || mt == "application/json")
}

// webPageLine names an endpoint that answered an OTLP/HTTP export with a
// 2xx page of another type (Jaeger's UI, 16686): no OTLP receiver.
func webPageLine(endpoint, status, ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt == "" {
		mt = "no Content-Type"
	}
	return fmt.Sprintf("endpoint %s answered an OTLP export with a web page (%s, %s): a UI's port, not OTLP; use the OTLP/HTTP port (4318 on Jaeger and the Collector; Jaeger's UI is 16686)", endpoint, status, mt)
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
