package msm

import (
	"context"
	"errors"
	"testing"

	fr "github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// evictOnPreloadEnd evicts the set when keys.preload ends: the moment
// between PreloadG1's return and the MSM's acquire.
type evictOnPreloadEnd struct {
	sdktrace.SpanProcessor
	bases *DeviceBases
	id    string
	on    bool
}

func (p *evictOnPreloadEnd) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (p *evictOnPreloadEnd) OnEnd(s sdktrace.ReadOnlySpan) {
	if p.on && s.Name() == semconv.SpanKeysPreload {
		p.on = false
		_, _ = p.bases.Evict(context.Background(), p.id)
	}
}
func (p *evictOnPreloadEnd) Shutdown(context.Context) error   { return nil }
func (p *evictOnPreloadEnd) ForceFlush(context.Context) error { return nil }

func TestAnEvictBetweenUploadAndUseReuploadsInsteadOfFailingTheMSM(t *testing.T) {
	drv := newKeysFakeDriver(1 << 20)
	proc := &evictOnPreloadEnd{id: "k:g1.a"}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(proc))
	c, err := cudaspans.Open(0, cudaspans.WithDriver(drv), cudaspans.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	resident, err := NewDeviceBases(context.Background(), c, WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	proc.bases = resident
	s, _ := c.NewStream()
	set := testSet("k:g1.a", 100)
	if _, err := resident.PreloadG1(context.Background(), s, set); err != nil {
		t.Fatal(err)
	}
	proc.on = true
	m := &MSM{} // no kernels: past a successful acquire it fails with "msm: closed"
	_, err = m.G1Resident(context.Background(), backend.Call{}, s, resident, set, make([]fr.Element, 100))
	if errors.Is(err, ErrBaseSetEvicted) {
		t.Errorf("an Evict during the MSM call failed it with %v instead of uploading the set again", err)
	}
	if _, resident := resident.Get("k:g1.a"); !resident {
		t.Error("the set evicted before the MSM took hold of it was not uploaded again")
	}
	if _, _, copies := drv.Stats(); copies != 2 {
		t.Errorf("%d uploads, want 2 (the first, and the one after the eviction)", copies)
	}
}
