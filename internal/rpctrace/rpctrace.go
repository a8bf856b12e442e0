// Package rpctrace decides which calls of cuzk.v1.ProvingEngine make spans,
// for the daemon (prover/server) and its Go client (prover/client), which
// both trace their calls with otelgrpc's stats handlers.
//
// A call that starts work (Prove, SubmitProof, CancelProof, PreloadKeys,
// EvictKeys) is always traced: its span is the root of the proof's trace,
// or a child of the caller's span. A call that only reads (GetStatus,
// GetMetrics, AwaitProof: Polls) is traced only inside a trace the caller
// samples; alone it makes no span. cuzk submit reads the job's stage five
// times a second, and a monitor polls every few seconds: as root spans each
// poll was a trace of its own in Jaeger (52 beside 7 proofs in one daemon's
// file). The proof's own time is all in the trace of the call that made it.
package rpctrace

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

// Polls are the full method names of the calls that read the daemon's
// state and start no work.
var Polls = map[string]bool{
	cuzkv1.ProvingEngine_GetStatus_FullMethodName:  true,
	cuzkv1.ProvingEngine_GetMetrics_FullMethodName: true,
	cuzkv1.ProvingEngine_AwaitProof_FullMethodName: true,
}

// Handler returns h (otelgrpc's client or server stats handler) except
// that a poll (Polls) for which sampled(ctx) is false is neither traced nor
// measured: sampled says whether the caller's trace context, in ctx or its
// incoming metadata, is a sampled span. Safe for concurrent use when h and
// sampled are.
func Handler(h stats.Handler, sampled func(context.Context) bool) stats.Handler {
	return &handler{Handler: h, sampled: sampled}
}

type handler struct {
	stats.Handler
	sampled func(context.Context) bool
}

// untraced marks the context of a call h does not see.
type untraced struct{}

func (h *handler) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if Polls[info.FullMethodName] && !h.sampled(ctx) {
		return context.WithValue(ctx, untraced{}, true)
	}
	return h.Handler.TagRPC(ctx, info)
}

func (h *handler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if ctx.Value(untraced{}) != nil {
		return
	}
	h.Handler.HandleRPC(ctx, s)
}

// CallerSampled is the sampled function of a client's Handler: whether the
// span in ctx, the caller's, is sampled.
func CallerSampled(ctx context.Context) bool { return trace.SpanContextFromContext(ctx).IsSampled() }

// IncomingSampled returns the sampled function of a server's Handler:
// whether the trace context that props reads from the call's metadata is a
// sampled span.
func IncomingSampled(props propagation.TextMapPropagator) func(context.Context) bool {
	return func(ctx context.Context) bool {
		md, _ := metadata.FromIncomingContext(ctx)
		return trace.SpanContextFromContext(props.Extract(context.Background(), mdCarrier(md))).IsSampled()
	}
}

// mdCarrier reads gRPC metadata (lower-case keys) as a TextMapCarrier.
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
