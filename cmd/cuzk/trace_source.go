package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// traceBackend is where --jaeger or --tempo (at most one) fetches a trace
// by id, for cuzk trace and cuzk trace diff; both empty reads FILEs.
type traceBackend struct{ jaeger, tempo string }

// remote says whether a backend is set.
func (b traceBackend) remote() bool { return b.jaeger != "" || b.tempo != "" }

// flag names the flag that set it and its URL ("--jaeger URL").
func (b traceBackend) flag() string {
	if b.jaeger != "" {
		return "--jaeger " + b.jaeger
	}
	return "--tempo " + b.tempo
}

// fetch reads trace id from the backend within timeout (the backends'
// errors: tracefile.ErrTraceNotFound for a 404).
func (b traceBackend) fetch(ctx context.Context, timeout time.Duration, id string) ([]tracefile.Span, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: timeout}
	var spans []tracefile.Span
	var err error
	if b.jaeger != "" {
		spans, err = tracefile.FetchJaeger(ctx, client, b.jaeger, id)
	} else {
		spans, err = tracefile.FetchTempo(ctx, client, b.tempo, id)
	}
	if errors.Is(err, tracefile.ErrTraceNotFound) {
		if port := otlpPort(b.jaeger + b.tempo); port != "" {
			err = fmt.Errorf("%w (%s is the OTLP port, where traces are sent; traces are read from the query API: Jaeger's UI port, 16686 by default, or Tempo's HTTP port, 3200)", err, port)
		}
	}
	return spans, err
}

// otlpPort is the port of rawURL when it is one of OTLP's standard ports
// (4317 gRPC, 4318 HTTP), which take traces but serve no query API: a
// --jaeger or --tempo URL there finds no trace. "" otherwise.
func otlpPort(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	if p := u.Port(); p == "4317" || p == "4318" {
		return p
	}
	return ""
}
