package gpu

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/fakedevice"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/gputest"
	"github.com/otelcuzk/otelcuzk/prover/gpu/msm"
)

// fakeKernelBackend is a Backend on the fake device drv
// (internal/fakedevice; nil: a new one of 1 GiB): the MSM over two dummy
// modules (msm.FromModules), no NTT, ready.
func fakeKernelBackend(t *testing.T, drv *fakedevice.Driver) (*Backend, *fakedevice.Driver, *tracetest.SpanRecorder) {
	t.Helper()
	if drv == nil {
		drv = fakedevice.New(1 << 30)
	}
	rec, tp := spantest.New()
	c, err := cudaspans.Open(0, cudaspans.WithDriver(drv), cudaspans.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var mods [2]*cudaspans.Module
	for i := range mods {
		if mods[i], err = c.LoadModuleData(ctx, "msm", []byte("\x7fELF fake")); err != nil {
			t.Fatal(err)
		}
	}
	rel, err := buffer.NewReleaser(buffer.ReleaseSync, buffer.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	m, err := msm.FromModules(c, mods[0], mods[1], msm.WithTracerProvider(tp), msm.WithReleaser(rel))
	if err != nil {
		t.Fatal(err)
	}
	bases, err := msm.NewDeviceBases(ctx, c, msm.WithTracerProvider(tp), msm.WithReleaser(rel))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	b := &Backend{c: c, s: s, bases: bases, releaser: rel, tp: tp, tracer: tp.Tracer(semconv.ScopeName), hostCopy: backend.HostCopyStaged,
		cpu: cpu.New(tp), msm: m}
	b.warm = func(context.Context) error { return nil } // the modules above are loaded
	b.ready.Store(true)
	return b, drv, rec
}

// bytesOf views v as bytes.
func bytesOf[T any](v []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(v[0])))
}

func spanNames(rec *tracetest.SpanRecorder) string {
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	return strings.Join(names, " ")
}

// A base set without an ID (groth16.Prove without WithKeyID) is proved on
// the device without being kept resident (issue 11 item 5): no
// keys.preload, nothing left in DeviceBases or in device memory, and the
// set's points went to the device with the MSM's scalars.
func TestMSMOverABaseSetWithoutIDUploadsItForThatMSMOnly(t *testing.T) {
	b, drv, rec := fakeKernelBackend(t, nil)
	ctx := context.Background()
	used0, _, _ := drv.Stats()
	g1 := gputest.BaseSet("", 100)
	_, _, _, g2gen := curve.Generators()
	g2 := backend.BaseSet[curve.G2Affine]{Points: make([]curve.G2Affine, 50)}
	for i := range g2.Points {
		g2.Points[i] = g2gen
	}
	scalars := make([]fr.Element, 100)
	for i := range scalars {
		scalars[i].SetUint64(uint64(i + 1))
	}
	if _, err := b.MSMG1(ctx, backend.Call{Span: semconv.SpanMSMG1A}, g1, scalars); err != nil {
		t.Fatalf("MSMG1 over a set without an ID: %v", err)
	}
	if _, err := b.MSMG2(ctx, backend.Call{Span: semconv.SpanMSMG2B}, g2, scalars[:50]); err != nil {
		t.Fatalf("MSMG2 over a set without an ID: %v", err)
	}
	if ids := b.Bases().IDs(); len(ids) != 0 || b.Bases().Bytes() != 0 {
		t.Errorf("sets without an ID were kept resident: %v, %d bytes", ids, b.Bases().Bytes())
	}
	if used, _, _ := drv.Stats(); used != used0 {
		t.Errorf("device memory in use %d after the MSMs, %d before: the bases stayed", used, used0)
	}
	if names := spanNames(rec); strings.Contains(names, semconv.SpanKeysPreload) ||
		!strings.Contains(names, semconv.SpanMSMG1A) || !strings.Contains(names, semconv.SpanMSMG2B) {
		t.Errorf("spans %q: want msm.g1.a and msm.g2.b, no keys.preload", names)
	}
	// The points themselves were copied (with each MSM), byte for byte.
	var sawG1, sawG2 bool
	for _, c := range drv.HtoD() {
		sawG1 = sawG1 || bytes.Equal(c, bytesOf(g1.Points))
		sawG2 = sawG2 || bytes.Equal(c, bytesOf(g2.Points))
	}
	if !sawG1 || !sawG2 {
		t.Errorf("bases copied to the device: G1 %v, G2 %v", sawG1, sawG2)
	}
	if l := drv.Launches(); len(l) == 0 || l[len(l)-1] != "msm_window_sum_g2" {
		t.Errorf("kernels launched: %v", l)
	}
	// The same sets with an ID are kept (the contrast the test rests on).
	g1.ID = "k:g1.a"
	if _, err := b.MSMG1(ctx, backend.Call{Span: semconv.SpanMSMG1A}, g1, scalars); err != nil {
		t.Fatal(err)
	}
	if ids := b.Bases().IDs(); len(ids) != 1 || ids[0] != "k:g1.a" {
		t.Errorf("a set with an ID is not resident: %v", ids)
	}
}
