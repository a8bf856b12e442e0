package otelcuzk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ErrSpansDropped is returned (wrapped, with the last export error) by
// Telemetry.Shutdown when spans were lost to failed exports.
var ErrSpansDropped = errors.New("otelcuzk: spans dropped by the exporter")

// droppedTotal counts spans lost to failed exports over all Telemetry values
// of the process.
var droppedTotal atomic.Int64

// DroppedSpans returns how many spans failed exports have lost since the
// process started, over every Setup or New. Safe for concurrent use.
func DroppedSpans() int64 { return droppedTotal.Load() }

// RegisterMetrics registers the observable counter MetricSpansDropped
// ("cuzk.spans.dropped", unit "{span}") on meter; it reports DroppedSpans.
// It returns the meter's registration error.
func RegisterMetrics(meter metric.Meter) error {
	_, err := meter.Int64ObservableCounter(MetricSpansDropped,
		metric.WithDescription("Spans lost because their export failed (endpoint unreachable, timeout, write error)."),
		metric.WithUnit("{span}"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(DroppedSpans())
			return nil
		}))
	if err != nil {
		return fmt.Errorf("otelcuzk: register %s: %w", MetricSpansDropped, err)
	}
	return nil
}

// exportCooldown is how long after a failed export further exports are
// dropped without trying: with an unreachable endpoint each try blocks for
// the export timeout, and with a simple (synchronous) processor that would
// be on every span's End. It doubles with each consecutive failure, up to
// maxCooldownShift doublings (5 s to 320 s), and resets on success.
const (
	exportCooldown   = 5 * time.Second
	maxCooldownShift = 6
)

// countingExporter counts the spans of failed exports and reports each burst
// of failures with one log line, instead of the line per batch the batch
// processor would log through otel.Handle: it returns nil to the processor
// after counting, and Telemetry.Shutdown reports the loss. For
// exportCooldown after a failure it drops batches without trying.
type countingExporter struct {
	next     sdktrace.SpanExporter
	log      io.Writer
	dropped  atomic.Int64
	failing  atomic.Bool
	retryAt  atomic.Int64 // unix ns before which exports are dropped untried
	cooldown time.Duration
	now      func() time.Time

	failures int // consecutive failed tries; guarded by mu

	mu      sync.Mutex
	lastErr error
}

func newCountingExporter(next sdktrace.SpanExporter, log io.Writer) *countingExporter {
	return &countingExporter{next: next, log: log, cooldown: exportCooldown, now: time.Now}
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	n := int64(len(spans))
	if e.now().UnixNano() < e.retryAt.Load() {
		e.dropped.Add(n)
		droppedTotal.Add(n)
		return nil
	}
	err := e.next.ExportSpans(ctx, spans)
	if err == nil {
		e.failing.Store(false)
		e.mu.Lock()
		e.failures = 0
		e.mu.Unlock()
		return nil
	}
	e.dropped.Add(n)
	droppedTotal.Add(n)
	e.mu.Lock()
	e.lastErr = err
	e.failures++
	wait := e.cooldown << min(e.failures-1, maxCooldownShift)
	e.retryAt.Store(e.now().Add(wait).UnixNano())
	e.mu.Unlock()
	if !e.failing.Swap(true) && e.log != nil {
		fmt.Fprintf(e.log, "otelcuzk: span export failed, dropping spans until it recovers: %v\n", err)
	}
	return nil
}

func (e *countingExporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }

func (e *countingExporter) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastErr
}
