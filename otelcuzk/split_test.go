package otelcuzk

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/otlptest"
)

// A collector that refuses a request over 8 KB (HTTP 413, gRPC
// RESOURCE_EXHAUSTED) gets a batch of 40 spans of about 1 KB in halves,
// not lost whole; a span too large on its own is the only one lost, and
// counted.
func TestABatchRefusedAsTooLargeIsSplitNotDropped(t *testing.T) {
	for _, proto := range []string{ProtocolHTTPProtobuf, ProtocolGRPC} {
		for _, oneTooBig := range []bool{false, true} {
			name := proto
			if oneTooBig {
				name += "/one span too large alone"
			}
			t.Run(name, func(t *testing.T) {
				clearEnv(t)
				t.Setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "20000")
				var r *otlptest.Receiver
				if proto == ProtocolGRPC {
					r = otlptest.NewGRPCReceiver("127.0.0.1:0")
				} else {
					r = otlptest.NewReceiver("127.0.0.1:0")
				}
				if err := r.Start(); err != nil {
					t.Fatal(err)
				}
				defer r.Stop()
				r.RefuseLarger(8 << 10)
				tel := newTel(t, WithEndpoint(r.URL()), WithProtocol(proto), WithInsecure(), WithLogWriter(nil), WithoutUntraced())
				tr := tel.Provider().Tracer("test")
				want := 40
				for i := 0; i < 40; i++ {
					v := strings.Repeat("x", 1000)
					if oneTooBig && i == 17 {
						v = strings.Repeat("y", 10000)
						want--
					}
					_, s := tr.Start(context.Background(), "op", trace.WithAttributes(attribute.String("v", v)))
					s.End()
				}
				tel.Shutdown(context.Background())
				if got := len(r.Spans()); got != want {
					t.Errorf("received %d spans, want %d", got, want)
				}
				if got := tel.DroppedSpans(); got != int64(40-want) {
					t.Errorf("%d dropped, want %d", got, 40-want)
				}
			})
		}
	}
}
