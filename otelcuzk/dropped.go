package otelcuzk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// ErrSpansDropped is returned (wrapped, with the last export error) by
// Telemetry.Shutdown when spans were lost to failed exports.
var ErrSpansDropped = semconv.NewError(semconv.ErrorTypeUnavailable, "spans dropped by the exporter")

// droppedTotal counts spans lost to failed exports over all Telemetry values
// of the process.
var droppedTotal atomic.Int64

// uncertainTotal counts, of droppedTotal, the spans of failed exports
// whose request may still have reached the collector.
var uncertainTotal atomic.Int64

// DroppedSpans returns how many spans failed exports have lost since the
// process started, over every Setup or New. Safe for concurrent use.
func DroppedSpans() int64 { return droppedTotal.Load() }

// DroppedSpansUncertain returns how many of DroppedSpans were in exports
// whose outcome is unknown: the export timed out, or its connection broke
// under the request, after the request may have reached the collector.
// They are counted as dropped (the exporter cannot know), so the spans a
// collector lacks are between DroppedSpans − DroppedSpansUncertain and
// DroppedSpans. Safe for concurrent use.
func DroppedSpansUncertain() int64 { return uncertainTotal.Load() }

// RegisterMetrics registers the observable counter MetricSpansDropped
// ("cuzk.spans.dropped", unit "{span}") on meter; it reports DroppedSpans.
// It returns the meter's registration error.
func RegisterMetrics(meter metric.Meter) error {
	if meter == nil {
		return fmt.Errorf("register %s: nil meter", semconv.MetricSpansDropped)
	}
	_, err := meter.Int64ObservableCounter(semconv.MetricSpansDropped,
		metric.WithDescription("Spans lost because their export failed (endpoint unreachable, timeout, write error)."),
		metric.WithUnit("{span}"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(DroppedSpans())
			return nil
		}))
	if err != nil {
		return fmt.Errorf("register %s: %w", semconv.MetricSpansDropped, err)
	}
	return nil
}

// exportCooldown is how long after a failed export further exports are
// dropped without trying: with an unreachable endpoint each try blocks for
// the export timeout, and with a simple (synchronous) processor that would
// be on every span's End. It doubles with each consecutive failure, up to
// maxCooldownShift doublings (5 s to 80 s), and resets on success. When the
// failed endpoint refused TCP connections, it is dialled again before each
// batch of the cooldown (at most every probeEvery if dials hang), and the
// cooldown ends as soon as it accepts: a collector that comes back gets the
// next batch, not one 80 s later. An OTLP endpoint that accepts connections
// and fails quickly (an error status) is tried on every batch; one that
// hangs (a blackhole) waits out the cooldown.
const (
	exportCooldown   = 5 * time.Second
	maxCooldownShift = 4
	probeEvery       = time.Second
	probeTimeout     = 200 * time.Millisecond
)

// countingExporter counts the spans of failed exports and reports each burst
// of failures with one log line, instead of the line per batch the batch
// processor would log through otel.Handle: it returns nil to the processor
// after counting, and Telemetry.Shutdown reports the loss. For the cooldown
// after a failure it drops batches without trying.
//
// Each export gets the export timeout of its own, whatever the caller's
// context says: a ForceFlush with a 10 ms deadline bounds how long its
// caller waits, not the export, so a healthy but slower exporter is neither
// counted as failed nor put in cooldown, and the batch is delivered.
type countingExporter struct {
	next    sdktrace.SpanExporter
	log     io.Writer
	dropped atomic.Int64
	// pending counts the spans queueCounter passed to the batch processor
	// and no export has taken yet: those in its queue or in the batch it
	// is filling.
	pending atomic.Int64
	// acct guards handed (spans passed to ExportSpans, whatever became of
	// them), inflight (those of exports not ended yet) and settled
	// (queueCounter.settle ran: later spans, and those still in flight
	// then, are counted already).
	acct     sync.Mutex
	handed   int64
	inflight int64
	settled  bool
	failing  atomic.Bool
	retryAt  atomic.Int64 // unix ns before which exports are dropped untried
	final    atomic.Bool  // set by Telemetry.Shutdown: its first export is tried despite a cooldown
	stopBy   atomic.Int64 // unix ns; once set (Shutdown), no export runs past it
	cooldown time.Duration
	timeout  time.Duration // bound of one export
	now      func() time.Time
	// probe reports whether the OTLP endpoint accepts a TCP connection; nil
	// for the file and custom exporters.
	probe func() bool
	// endpoint is the OTLP endpoint as configured, for protocolMixup.
	endpoint string

	mu        sync.Mutex
	failures  int // consecutive failed tries
	lastErr   error
	refused   bool // the endpoint refused TCP at the last failure
	lastProbe time.Time
	probeSlow bool // the last dial took half its timeout or more
}

func newCountingExporter(next sdktrace.SpanExporter, log io.Writer) *countingExporter {
	return &countingExporter{next: next, log: log, cooldown: exportCooldown, timeout: DefaultExportTimeout, now: time.Now}
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	n := int64(len(spans))
	e.pending.Add(-n)
	e.acct.Lock()
	settled := e.settled
	if !settled {
		e.handed += n
		e.inflight += n
	}
	e.acct.Unlock()
	if settled {
		// Past the shutdown's accounting these spans are counted as
		// dropped already (queueCounter.settle).
		return nil
	}
	return e.export(ctx, spans)
}

// export is ExportSpans for spans counted in flight: it tries them (or
// drops them in a cooldown), then takes them out of flight unless the
// shutdown's accounting counted them as dropped meanwhile (an export that
// outlived Shutdown: its outcome is no longer counted).
func (e *countingExporter) export(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	n := int64(len(spans))
	ok, uncertain, failed := e.try(ctx, spans)
	e.acct.Lock()
	defer e.acct.Unlock()
	if !e.settled {
		// Under acct, so the shutdown's accounting counts these spans
		// either in flight or dropped, never both or neither.
		e.inflight -= n
		if !ok {
			e.drop(failed)
			if uncertain {
				uncertainTotal.Add(failed)
			}
		}
	}
	return nil
}

// try exports spans unless the exporter is cooling down and reports
// whether they were delivered, and for spans not delivered whether the
// collector may have received them all the same (uncertainOutcome); a
// failure is noted (cooldown, log line) but not counted.
//
// failed is how many of the spans were not delivered: all of them, or those
// of the halves still refused when splitExporter split a batch refused as
// too large.
func (e *countingExporter) try(ctx context.Context, spans []sdktrace.ReadOnlySpan) (ok, uncertain bool, failed int64) {
	final := e.final.Swap(false)
	if !final && e.coolingDown() {
		return false, false, int64(len(spans))
	}
	deadline := e.now().Add(e.timeout)
	if s := e.stopBy.Load(); s != 0 && s < deadline.UnixNano() {
		deadline = time.Unix(0, s)
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	began := time.Now()
	err := e.next.ExportSpans(ctx, spans)
	// A connection that broke under the request, from an endpoint that
	// still accepts connections, is most often a pooled connection the
	// collector closed as it restarted ("connection reset", "broken pipe",
	// EOF): up to two more tries, after a pause that lets the HTTP
	// transport notice its closed connections. An error status is not
	// retried here (the exporter retries those it may).
	for _, pause := range []time.Duration{20 * time.Millisecond, 100 * time.Millisecond} {
		if err == nil || e.probe == nil || !brokenConnection(err) || time.Since(began)+pause >= e.timeout/2 || ctx.Err() != nil {
			break
		}
		time.Sleep(pause)
		e.mu.Lock()
		reachable := e.runProbe()
		e.mu.Unlock()
		if !reachable {
			break
		}
		err = e.next.ExportSpans(ctx, spans)
	}
	if err == nil {
		e.failing.Store(false)
		e.mu.Lock()
		e.failures = 0
		e.mu.Unlock()
		return true, false, 0
	}
	elapsed := time.Since(began)
	e.mu.Lock()
	e.lastErr = err
	e.failures++
	cool := true
	if e.probe != nil {
		// The cooldown spares the exporter's caller a wait: after a try
		// that hung (a blackhole, retries) or against a refusing endpoint
		// (dialled before each batch meanwhile). A quick failure from a
		// reachable endpoint (an error status) costs a round trip, so each
		// batch is still tried.
		e.refused = !e.runProbe()
		cool = e.refused || elapsed >= e.timeout/2
	}
	if cool {
		wait := e.cooldown << min(e.failures-1, maxCooldownShift)
		e.retryAt.Store(e.now().Add(wait).UnixNano())
	}
	e.mu.Unlock()
	if !e.failing.Swap(true) && e.log != nil {
		if hint := protocolMixup(err, e.endpoint); hint != "" {
			fmt.Fprintf(e.log, "otelcuzk: span export failed, dropping spans until it recovers: %s\n", hint)
		} else {
			fmt.Fprintf(e.log, "otelcuzk: span export failed, dropping spans until it recovers: %s\n", errorLine(err))
		}
	}
	failed = int64(len(spans))
	var pe *partialExportError
	if errors.As(err, &pe) {
		failed = int64(pe.failed)
	}
	return false, uncertainOutcome(err), failed
}

// protocolMixup names, in one line, an OTLP endpoint that speaks the other
// OTLP transport than the exporter's, from the error the exporter got:
// OTLP/HTTP sent to a gRPC port (4317) reads an HTTP/2 SETTINGS frame as
// its response ("malformed HTTP response \"\x00\x00\x06..."), and gRPC
// sent to an HTTP/1 port (4318) reads an HTTP/1 answer as a frame ("http2:
// frame too large"). "" for any other error.
func protocolMixup(err error, endpoint string) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "malformed HTTP response") && strings.Contains(msg, `\x00\x00`):
		return mixupLine(true, endpoint)
	case strings.Contains(msg, "http2: frame too large"):
		return mixupLine(false, endpoint)
	}
	return ""
}

// uncertainOutcome reports whether a failed export's request may have
// reached the collector: it timed out (over HTTP, or gRPC's
// DEADLINE_EXCEEDED) or its connection broke under it. A refused
// connection or an error status is a request the collector did not take.
func uncertainOutcome(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded || brokenConnection(err)
}

// coolingDown reports whether an export now is to be dropped untried.
func (e *countingExporter) coolingDown() bool {
	now := e.now()
	if now.UnixNano() >= e.retryAt.Load() {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// A refusal comes back at once (a round trip): dial before each batch.
	// A dial that hung to its timeout (a host that drops packets) is tried
	// at most every probeEvery, so a span's End never waits on it often.
	if e.refused && e.probe != nil && (!e.probeSlow || now.Sub(e.lastProbe) >= probeEvery) {
		if e.runProbe() {
			e.retryAt.Store(0)
			return false
		}
	}
	return true
}

// brokenConnection reports whether err is a connection that failed under
// a request (reset, closed, cut short), not an answer.
func brokenConnection(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// runProbe dials the endpoint and notes when and how slowly; e.mu held.
func (e *countingExporter) runProbe() bool {
	start := time.Now()
	ok := e.probe()
	e.lastProbe, e.probeSlow = e.now(), time.Since(start) >= probeTimeout/2
	return ok
}

func (e *countingExporter) drop(n int64) {
	e.dropped.Add(n)
	droppedTotal.Add(n)
}

func (e *countingExporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }

func (e *countingExporter) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastErr
}

// dialProbe returns a probe that dials hostport over TCP.
func dialProbe(hostport string) func() bool {
	return func() bool {
		c, err := net.DialTimeout("tcp", hostport, probeTimeout)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
}

// queueCounter wraps the exporting span processor and counts the sampled
// spans handed to it, so that no span is lost uncounted. A span that would
// overflow the batch processor's queue (limit spans, OTEL_BSP_MAX_QUEUE_SIZE:
// an export hangs or the spans end faster than they are sent) is dropped
// here and counted at once, so DroppedSpans and cuzk_spans_dropped_total
// see it while the process runs; the processor, whose queue holds as many,
// then never drops one silently. Shutdown counts the rest: spans still
// queued when the shutdown deadline passed, and spans that ended while it
// shut down (the provider hands spans that end after its Shutdown to no
// processor).
type queueCounter struct {
	sdktrace.SpanProcessor
	exp     *countingExporter
	limit   int64 // spans the batch processor may hold; 0: no queue (simple processor)
	ended   atomic.Int64
	stopped atomic.Bool
	settled atomic.Bool
}

func (q *queueCounter) OnEnd(s sdktrace.ReadOnlySpan) {
	if s == nil || !s.SpanContext().IsSampled() {
		return
	}
	if q.stopped.Load() || !q.reserve() {
		q.exp.drop(1)
		return
	}
	q.ended.Add(1)
	q.SpanProcessor.OnEnd(s)
}

// reserve takes a place in the batch processor's queue for one span, or
// reports false when its limit spans wait already. The queue's channel
// holds at most the spans reserved and not yet exported, so it never
// overflows.
func (q *queueCounter) reserve() bool {
	if q.limit <= 0 {
		return true
	}
	for {
		n := q.exp.pending.Load()
		if n >= q.limit {
			return false
		}
		if q.exp.pending.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (q *queueCounter) Shutdown(ctx context.Context) error {
	q.stopped.Store(true)
	err := q.SpanProcessor.Shutdown(ctx)
	q.settle()
	return err
}

// settle counts as dropped the spans that ended but were never handed to
// the exporter, and those of exports that had not ended (an exporter that
// hangs past its context). It runs once, after the processor's shutdown.
func (q *queueCounter) settle() {
	if q.settled.Swap(true) {
		return
	}
	q.exp.acct.Lock()
	q.exp.settled = true
	lost := q.ended.Load() - q.exp.handed + q.exp.inflight
	q.exp.acct.Unlock()
	if lost > 0 {
		q.exp.drop(lost)
	}
}

// errorLine is err's message on one line of at most maxErrorLine bytes: an
// HTML error page that an endpoint (a proxy, a load balancer) answered with
// is named by its size instead of quoted, and line breaks are folded.
func errorLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	s := err.Error()
	if i := strings.Index(s, "body: "); i >= 0 {
		rest := strings.TrimSpace(s[i+len("body: "):])
		if isHTML(rest) {
			tail := ""
			if strings.HasSuffix(rest, ")") {
				tail = ")"
			}
			s = fmt.Sprintf("%sbody: an HTML page of %d bytes%s", s[:i], len(rest)-len(tail), tail)
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxErrorLine {
		cut := maxErrorLine
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

const maxErrorLine = 300

func isHTML(s string) bool {
	l := strings.ToLower(s[:min(len(s), 64)])
	for _, p := range []string{"<!doctype html", "<html", "<head", "<body", "<?xml", "<!--"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}
