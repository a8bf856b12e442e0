package otelcuzk

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// rootOnUnsampledProvider hands out tracers that start a span whose parent
// is a remote span context not sampled (W3C trace-flags 00) as the root of a
// new trace, linked to that parent, instead of as an unrecorded child: a
// daemon whose caller does not sample still records its proofs, findable by
// their request id, and the link leads back to the caller's trace where the
// caller's own sampling did keep it. A sampled or local parent is left
// alone. See WithUnsampledCallerAsLink.
type rootOnUnsampledProvider struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (p *rootOnUnsampledProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return &rootOnUnsampledTracer{tr: p.tp.Tracer(name, opts...)}
}

type rootOnUnsampledTracer struct {
	embedded.Tracer
	tr trace.Tracer
}

func (t *rootOnUnsampledTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if psc := trace.SpanContextFromContext(ctx); psc.IsValid() && psc.IsRemote() && !psc.IsSampled() {
		opts = append(opts[:len(opts):len(opts)], trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: psc}))
	}
	return t.tr.Start(ctx, name, opts...)
}
