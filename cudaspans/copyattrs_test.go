package cudaspans

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// WithCopyAttributes marks the host-device copies made under its context
// (both directions, outer attributes first), and no copy made without it.
func TestWithCopyAttributesMarksTheCopiesUnderIt(t *testing.T) {
	f := newFixture(t)
	s := f.stream(t)
	ctx := context.Background()
	buf, err := f.c.Alloc(ctx, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer f.c.Free(ctx, buf)
	host := make([]uint64, 8)
	mode, name := attribute.Key("cuzk.host_copy"), attribute.Key("cuzk.buffer.name")
	marked := WithCopyAttributes(WithCopyAttributes(ctx, mode.String("registered")), name.String("a"))
	if err := HtoD(marked, s, buf.Ptr(), host); err != nil {
		t.Fatal(err)
	}
	if err := DtoH(marked, s, host, buf.Ptr()); err != nil {
		t.Fatal(err)
	}
	if err := HtoD(ctx, s, buf.Ptr(), host); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	htod, dtoh := f.ended(semconv.SpanMemcpyHtoD), f.ended(semconv.SpanMemcpyDtoH)
	if len(htod) != 2 || len(dtoh) != 1 {
		t.Fatalf("%d htod and %d dtoh spans, want 2 and 1", len(htod), len(dtoh))
	}
	for _, sp := range []struct {
		what   string
		marked bool
		attrs  []attribute.KeyValue
	}{{"marked htod", true, htod[0].Attributes()}, {"marked dtoh", true, dtoh[0].Attributes()}, {"plain htod", false, htod[1].Attributes()}} {
		got := map[attribute.Key]string{}
		for _, kv := range sp.attrs {
			got[kv.Key] = kv.Value.Emit()
		}
		if got[semconv.KeyCUDABytes] != "64" {
			t.Errorf("%s: cuda.bytes %q, want 64", sp.what, got[semconv.KeyCUDABytes])
		}
		if sp.marked && (got[mode] != "registered" || got[name] != "a") {
			t.Errorf("%s: attributes %v, want cuzk.host_copy registered and cuzk.buffer.name a", sp.what, got)
		}
		if !sp.marked && (got[mode] != "" || got[name] != "") {
			t.Errorf("%s: attributes %v, want no mark", sp.what, got)
		}
	}
}
