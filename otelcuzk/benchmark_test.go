package otelcuzk

import (
	"context"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// BenchmarkSpanWithUntracedProcessor measures a parent with two children
// through the untraced processor (no exporter), against BenchmarkSpanBare.
func BenchmarkSpanWithUntracedProcessor(b *testing.B) {
	benchSpans(b, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(NewUntracedProcessor(DefaultUntracedMin, DefaultUntracedFraction))))
}

// BenchmarkSpanBare is the same spans with no processor.
func BenchmarkSpanBare(b *testing.B) {
	benchSpans(b, sdktrace.NewTracerProvider())
}

func benchSpans(b *testing.B, tp *sdktrace.TracerProvider) {
	tr := tp.Tracer("bench")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		pctx, p := tr.Start(ctx, semconv.SpanGroth16Prove)
		_, c1 := tr.Start(pctx, semconv.SpanMSMG1A)
		c1.End()
		_, c2 := tr.Start(pctx, semconv.SpanMSMG1B)
		c2.End()
		p.End()
	}
}

// BenchmarkMarshalOTLPJSON encodes a batch of 100 spans as one OTLP JSON line.
func BenchmarkMarshalOTLPJSON(b *testing.B) {
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))
	tr := tp.Tracer("bench")
	for i := 0; i < 100; i++ {
		_, s := tr.Start(context.Background(), semconv.SpanMSMG1A)
		s.SetAttributes(semconv.KeyMSMSize.Int(1<<20), semconv.KeyBackend.String("cpu"))
		s.End()
	}
	spans := mem.GetSpans().Snapshots()
	b.ReportAllocs()
	for b.Loop() {
		line, err := MarshalOTLPJSON(TracesData(spans))
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(line)))
	}
}

// BenchmarkFileExporter writes 100-span batches to a file.
func BenchmarkFileExporter(b *testing.B) {
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))
	for i := 0; i < 100; i++ {
		_, s := tp.Tracer("bench").Start(context.Background(), semconv.SpanMSMG1A)
		s.End()
	}
	spans := mem.GetSpans().Snapshots()
	e, err := NewFileExporter(filepath.Join(b.TempDir(), "bench.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	b.ReportAllocs()
	for b.Loop() {
		if err := e.ExportSpans(context.Background(), spans); err != nil {
			b.Fatal(err)
		}
	}
}
