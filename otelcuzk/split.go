package otelcuzk

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// splitExporter exports a batch that the collector refuses as too large
// (HTTP 413, gRPC RESOURCE_EXHAUSTED or "message larger than max") in two
// halves, each split again while refused, instead of losing the whole
// batch: only a single span refused on its own is lost. The span limits
// (spanLimits) keep one span small, so a refused batch is one of many
// spans whose sum is too large.
type splitExporter struct {
	next sdktrace.SpanExporter
}

// partialExportError is a split export's error: failed of its spans were
// not delivered (the rest were); countingExporter counts failed dropped.
type partialExportError struct {
	err    error
	failed int
}

func (e *partialExportError) Error() string {
	return fmt.Sprintf("%d spans refused as too large: %v", e.failed, e.err)
}

func (e *partialExportError) Unwrap() error { return e.err }

func (e *splitExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.next.ExportSpans(ctx, spans)
	if err == nil || len(spans) < 2 || !refusedAsTooLarge(err) {
		return err
	}
	failed, last := e.split(ctx, spans)
	if failed == 0 {
		return nil
	}
	return &partialExportError{err: last, failed: failed}
}

// split exports spans as two halves, halving a refused one again; it
// returns how many spans were not delivered and the last error.
func (e *splitExporter) split(ctx context.Context, spans []sdktrace.ReadOnlySpan) (failed int, last error) {
	mid := len(spans) / 2
	for _, half := range [][]sdktrace.ReadOnlySpan{spans[:mid], spans[mid:]} {
		if ctx.Err() != nil {
			return failed + len(half), ctx.Err()
		}
		err := e.next.ExportSpans(ctx, half)
		switch {
		case err == nil:
		case len(half) > 1 && refusedAsTooLarge(err):
			f, l := e.split(ctx, half)
			failed += f
			if l != nil {
				last = l
			}
		default:
			failed, last = failed+len(half), err
		}
	}
	return failed, last
}

func (e *splitExporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }

// refusedAsTooLarge reports whether err is a collector's refusal of a
// request for its size: gRPC RESOURCE_EXHAUSTED, or grpc-go's "message
// larger than max", or the OTLP/HTTP exporter's error for a 413 status
// ("413 Request Entity Too Large").
func refusedAsTooLarge(err error) bool {
	if status.Code(err) == codes.ResourceExhausted {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "larger than max") ||
		strings.Contains(msg, strconv.Itoa(http.StatusRequestEntityTooLarge)+" "+http.StatusText(http.StatusRequestEntityTooLarge))
}
