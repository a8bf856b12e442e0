package main

import (
	"context"
	"net/http"
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
	if b.jaeger != "" {
		return tracefile.FetchJaeger(ctx, client, b.jaeger, id)
	}
	return tracefile.FetchTempo(ctx, client, b.tempo, id)
}
