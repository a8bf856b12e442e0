// Command gapspan emits one small trace with a planted gap, for the e2e
// tests: a root span "e2e.gap" with two 5 ms children and a 50 ms sleep
// between them that no child covers. Tracing comes from otelcuzk.Setup and
// the OTEL_* variables (the test points them at Jaeger), so the untraced
// processor must turn the sleep into an "untraced" child of about 50 ms.
// It prints the trace id (32 hex digits) on stdout.
//
// Flags change the trace for the Collector's tail-sampling test: -gap sets
// the planted gap, -error marks the root span failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gapspan:", err)
		os.Exit(1)
	}
}

func run() error {
	gap := flag.Duration("gap", 50*time.Millisecond, "uncovered time planted between the two children")
	failed := flag.Bool("error", false, "end the root span with status ERROR")
	flag.Parse()
	ctx := context.Background()
	shutdown, err := otelcuzk.Setup(ctx)
	if err != nil {
		return err
	}
	tr := otel.Tracer(semconv.ScopeName)
	ctx, root := tr.Start(ctx, "e2e.gap")
	child := func(name string) {
		_, s := tr.Start(ctx, name)
		time.Sleep(5 * time.Millisecond)
		s.End()
	}
	child("e2e.before")
	time.Sleep(*gap)
	child("e2e.after")
	if *failed {
		root.SetStatus(codes.Error, "planted failure")
	}
	root.End()
	fmt.Println(root.SpanContext().TraceID())
	return shutdown(context.Background())
}
