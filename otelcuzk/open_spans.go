package otelcuzk

import (
	"context"
	"sort"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// openSpans is a span processor that keeps the spans started and not yet
// ended, so that a run cut short (a signal) can end them
// (Telemetry.EndOpenSpans) and export a whole trace: a span left open is
// never exported, and its children then read as roots whose parent's time
// nothing explains.
type openSpans struct {
	mu   sync.Mutex
	seq  uint64
	open map[spanKey]openSpan
}

type openSpan struct {
	seq  uint64 // start order: children start after their parents
	span sdktrace.ReadWriteSpan
}

func newOpenSpans() *openSpans { return &openSpans{open: map[spanKey]openSpan{}} }

func keyOf(sc trace.SpanContext) spanKey { return spanKey{sc.TraceID(), sc.SpanID()} }

func (p *openSpans) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	p.mu.Lock()
	p.seq++
	p.open[keyOf(s.SpanContext())] = openSpan{p.seq, s}
	p.mu.Unlock()
}

func (p *openSpans) OnEnd(s sdktrace.ReadOnlySpan) {
	p.mu.Lock()
	delete(p.open, keyOf(s.SpanContext()))
	p.mu.Unlock()
}

func (p *openSpans) Shutdown(context.Context) error   { return nil }
func (p *openSpans) ForceFlush(context.Context) error { return nil }

// endAll ends every open span with err (SetError), the last started first
// so that children end before their parents, and returns how many it ended.
func (p *openSpans) endAll(err error) int {
	p.mu.Lock()
	spans := make([]openSpan, 0, len(p.open))
	for _, s := range p.open {
		spans = append(spans, s)
	}
	p.mu.Unlock()
	sort.Slice(spans, func(i, j int) bool { return spans[i].seq > spans[j].seq })
	for _, s := range spans {
		semconv.SetError(s.span, err)
		s.span.End()
	}
	return len(spans)
}

// OpenSpans returns the number of spans started and not yet ended (sampled
// ones: an unsampled span is never recorded). Safe for concurrent use.
func (t *Telemetry) OpenSpans() int {
	if t == nil {
		return 0
	}
	t.opens.mu.Lock()
	defer t.opens.mu.Unlock()
	return len(t.opens.open)
}

// EndOpenSpans ends every span started and not yet ended, each as failed
// with err (status Error with err's message, error.type ErrorType(err):
// canceled for context.Canceled), children before their parents, and
// returns how many it ended. A command interrupted by a signal calls it
// before Shutdown, so the trace it exports is whole and says why it stopped
// even where a step could not stop (a compile or key setup left running);
// such a step's own End later is a no-op. Safe for concurrent use.
func (t *Telemetry) EndOpenSpans(err error) int {
	if t == nil {
		return 0
	}
	return t.opens.endAll(err)
}
