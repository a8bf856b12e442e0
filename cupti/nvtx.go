package cupti

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
)

// NVTXMessage returns the message for an outer NVTX range that makes the
// range, and the GPU work launched inside it, join the trace of the span
// in ctx: name, a space and "traceparent=00-<trace>-<span>-<flags>" (W3C
// Trace Context). Any language's NVTX call may carry it (C's
// nvtxRangePushA, Python's torch.cuda.nvtx.range_push, Rust's
// nvtx::range_push!); a Go program passes it to its NVTX binding (a C
// helper through cgo, as examples/foreign-cuda does). Without a valid
// span in ctx it returns name alone.
func NVTXMessage(ctx context.Context, name string) string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	if tp := c["traceparent"]; tp != "" {
		return name + " traceparent=" + tp
	}
	return name
}
