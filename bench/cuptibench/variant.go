package main

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cupti"
)

// variantNames are the capture variants the overhead runs cycle through,
// by index: capture off, on, and on without cuda.cupti_ms on cudaspans'
// spans (WithoutCudaspansDurations: CUPTI's durations neither taken nor
// waited for at each Synchronize). "on" takes them as cupti's default or
// $CUZK_CUPTI_NO_FORCED_FLUSH says (flushMode).
var variantNames = []string{"off", "on", "on, no cupti_ms"}

// startVariant starts the capture of variant v of variantNames on tp: nil
// for off, else a Capture the caller closes. Errors are cupti.Start's.
func startVariant(ctx context.Context, tp trace.TracerProvider, v int) (*cupti.Capture, error) {
	if v == 0 {
		return nil, nil
	}
	opts := []cupti.Option{cupti.WithTracerProvider(tp)}
	if v == 2 {
		opts = append(opts, cupti.WithoutCudaspansDurations())
	}
	return cupti.Start(ctx, opts...)
}
