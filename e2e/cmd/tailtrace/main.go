// Command tailtrace sends traces shaped like proofs to a Collector, for the
// tail-sampling tests: the first span of a trace goes out at once and its
// verdict (the root span, with its status and so its length) only after
// -verdict-after, as a long proof's engine.job does. Every span is
// exported the moment it ends (a synchronous span processor), so the
// Collector sees the first span -verdict-after before the root.
//
//	tailtrace -verdict-after 3s -error   one trace, root ERROR after 3 s
//	tailtrace -verdict-after 3s          one slow trace
//	tailtrace -n 40                      40 fast, successful traces
//	tailtrace -late-after 3s -fillers 8  one failed trace; 3 s later 8 fast
//	                                     ones, then a late child span of the
//	                                     first
//	tailtrace -root-first -verdict-after 12s -error
//	                                     the root ends at once, as the server
//	                                     span of a SubmitProof without trace
//	                                     context does; its child e2e.job
//	                                     ends ERROR 12 s later
//
// The OTLP gRPC endpoint and service name come from the OTEL_* variables.
// It prints each trace id (32 hex digits) on a line of its own, the
// traces of -n in order.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tailtrace:", err)
		os.Exit(1)
	}
}

func run() error {
	verdictAfter := flag.Duration("verdict-after", 0, "time from the first span to the root's end")
	failed := flag.Bool("error", false, "end the root span with status ERROR")
	n := flag.Int("n", 1, "traces to send")
	lateAfter := flag.Duration("late-after", 0, "send -fillers traces this long after a failed trace's root, then a late child span of it")
	fillers := flag.Int("fillers", 0, "fast traces sent between a -late-after trace's root and its late span")
	children := flag.Int("children", 0, "extra child spans per trace, each with 6 attributes as the prover's layer spans carry (for measuring the Collector's memory per span)")
	rootFirst := flag.Bool("root-first", false, "end the root at once and put the verdict on a child e2e.job (a SubmitProof's trace)")
	batch := flag.Bool("batch", false, "export through a batch span processor instead of span by span")
	flag.Parse()
	ctx := context.Background()
	exp, err := otlptracegrpc.New(ctx)
	if err != nil {
		return err
	}
	// Each span goes out as it ends, so the Collector sees the first span
	// of a trace before its verdict; -batch sends them as the SDK's
	// default batch processor does (for the memory measurement).
	proc := sdktrace.WithSyncer(exp)
	if *batch {
		proc = sdktrace.WithBatcher(exp)
	}
	tp := sdktrace.NewTracerProvider(proc)
	defer tp.Shutdown(ctx)
	tr := tp.Tracer("github.com/otelcuzk/otelcuzk/e2e/cmd/tailtrace")

	proof := func(wait time.Duration, fail bool) (context.Context, trace.Span) {
		ctx, root := tr.Start(ctx, "e2e.proof")
		_, q := tr.Start(ctx, "e2e.queue")
		q.End() // exported now: the Collector's decision_wait starts here
		for i := range *children {
			_, c := tr.Start(ctx, "e2e.layer", trace.WithAttributes(
				attribute.Int("cuzk.msm.points", 1<<20+i), attribute.Int("cuda.device.ordinal", 0),
				attribute.String("cuzk.stage", "prove"), attribute.String("cuzk.circuit.id", "mulchain"),
				attribute.Float64("cuzk.untraced.ms", 0.25), attribute.Bool("cuzk.resident", true)))
			c.End()
		}
		verdict := root
		if *rootFirst {
			root.End()
			_, verdict = tr.Start(ctx, "e2e.job")
		}
		time.Sleep(wait)
		if fail {
			verdict.SetStatus(codes.Error, "planted failure")
		}
		verdict.End()
		fmt.Println(root.SpanContext().TraceID())
		return ctx, root
	}
	if *lateAfter > 0 {
		ctx, _ := proof(0, true)
		// The failed trace is decided meanwhile; then the fillers push it
		// out of num_traces, and only the decision cache remembers it.
		time.Sleep(*lateAfter)
		for range *fillers {
			proof(0, false)
		}
		_, late := tr.Start(ctx, "e2e.release")
		late.End()
		return tp.ForceFlush(context.Background())
	}
	for range *n {
		proof(*verdictAfter, *failed)
	}
	return tp.ForceFlush(context.Background())
}
