package gpu

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"
)

// kernelFakeDriver is keysFakeDriver with modules and launches: kernels
// do nothing, so device memory stays as copied (window sums read back as
// zeros, the point at infinity). Copies may land anywhere inside an
// allocation, and every host-to-device copy's bytes are kept.
type kernelFakeDriver struct {
	*keysFakeDriver
	kmu      sync.Mutex
	funcs    map[cudaspans.FunctionHandle]string
	launches []string
	htod     [][]byte
}

func newKernelFakeDriver(capacity int) *kernelFakeDriver {
	return &kernelFakeDriver{keysFakeDriver: newKeysFakeDriver(capacity), funcs: map[cudaspans.FunctionHandle]string{}}
}

func (d *kernelFakeDriver) ModuleLoad(cudaspans.ContextHandle, []byte) (cudaspans.ModuleHandle, error) {
	return cudaspans.ModuleHandle(d.handle()), nil
}
func (d *kernelFakeDriver) ModuleUnload(cudaspans.ContextHandle, cudaspans.ModuleHandle) error {
	return nil
}
func (d *kernelFakeDriver) ModuleFunction(_ cudaspans.ContextHandle, _ cudaspans.ModuleHandle, name string) (cudaspans.FunctionHandle, error) {
	h := cudaspans.FunctionHandle(d.handle())
	d.kmu.Lock()
	d.funcs[h] = name
	d.kmu.Unlock()
	return h, nil
}
func (d *kernelFakeDriver) FuncParams(cudaspans.ContextHandle, cudaspans.FunctionHandle) ([]cudaspans.ParamInfo, bool, error) {
	return nil, false, nil
}
func (d *kernelFakeDriver) Launch(_ cudaspans.ContextHandle, f cudaspans.FunctionHandle, _, _ cudaspans.Dim3, _ int, _ cudaspans.StreamHandle, _ []byte, _ []int) error {
	d.kmu.Lock()
	defer d.kmu.Unlock()
	d.launches = append(d.launches, d.funcs[f])
	return nil
}

// at returns the device bytes [p, p+n) inside one allocation.
func (d *kernelFakeDriver) at(p cudaspans.DevicePtr, n int) ([]byte, error) {
	for base, b := range d.mem {
		if p >= base && int(p-base)+n <= len(b) {
			return b[p-base : int(p-base)+n], nil
		}
	}
	return nil, fmt.Errorf("fake: %d bytes at %#x outside any allocation", n, p)
}

func (d *kernelFakeDriver) CopyHtoD(_ cudaspans.ContextHandle, dst cudaspans.DevicePtr, src unsafe.Pointer, n int, _ cudaspans.StreamHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.at(dst, n)
	if err != nil {
		return err
	}
	copy(b, unsafe.Slice((*byte)(src), n))
	d.copies++
	d.kmu.Lock()
	d.htod = append(d.htod, append([]byte(nil), b...))
	d.kmu.Unlock()
	return nil
}

func (d *kernelFakeDriver) CopyDtoH(_ cudaspans.ContextHandle, dst unsafe.Pointer, src cudaspans.DevicePtr, n int, _ cudaspans.StreamHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.at(src, n)
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(dst), n), b)
	return nil
}

// fakeKernelBackend is a Backend on the kernel fake: the MSM modules are
// loaded from dummy images (no NVRTC), the NTT is absent.
func fakeKernelBackend(t *testing.T) (*Backend, *kernelFakeDriver, *tracetest.SpanRecorder) {
	t.Helper()
	drv := newKernelFakeDriver(1 << 30)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c, err := cudaspans.Open(0, cudaspans.WithDriver(drv), cudaspans.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mod, err := c.LoadModuleData(ctx, "msm", []byte("\x7fELF fake"))
	if err != nil {
		t.Fatal(err)
	}
	fn := func(name string) *cudaspans.Function {
		f, err := mod.Function(name)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	sk := &msmScalarKernels{mod: mod, fill: fn("msm_fill_u32"), digits: fn("msm_digits_count"),
		scan: fn("msm_bucket_scan"), scatter: fn("msm_scatter")}
	var groups [2]*msmGroup
	for i, suffix := range []string{"", "_g2"} {
		g := &msmGroup{g2: i == 1, affineBytes: msmAffineBytes, xyzzBytes: msmXYZZBytes,
			accumulate: fn("msm_bucket_accumulate" + suffix), merge: fn("msm_segment_merge" + suffix),
			reduce: fn("msm_bucket_reduce" + suffix), windowSum: fn("msm_window_sum" + suffix)}
		if i == 1 {
			g.affineBytes, g.xyzzBytes = msmAffine2Bytes, msmXYZZ2Bytes
		}
		groups[i] = g.with(sk)
	}
	rel, err := cudaspans.NewReleaser(cudaspans.ReleaseSync, cudaspans.WithReleaseTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := NewResidentKeys(context.Background(), c, WithTracerProvider(tp), WithReleaser(rel))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	b := &Backend{c: c, s: s, keys: keys, releaser: rel, tracer: tp.Tracer(otelcuzk.ScopeName), hostCopy: HostCopyStaged,
		cpu: prover.NewCPU(tp),
		msm: &MSM{c: c, releaser: rel, tracer: tp.Tracer(otelcuzk.ScopeName), scalar: sk, g1: groups[0], g2: groups[1]}}
	b.warm = func(context.Context) error { return nil } // the modules above are loaded
	b.ready.Store(true)
	return b, drv, rec
}

func spanNames(rec *tracetest.SpanRecorder) string {
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	return strings.Join(names, " ")
}

// A base set without an ID (prover.Prove without WithKeyID) is proved on
// the device without being kept resident (issue 11 item 5): no
// keys.preload, nothing left in ResidentKeys or in device memory, and the
// set's points went to the device with the MSM's scalars.
func TestMSMOverABaseSetWithoutIDUploadsItForThatMSMOnly(t *testing.T) {
	b, drv, rec := fakeKernelBackend(t)
	ctx := context.Background()
	used0, _, _ := drv.stats()
	g1 := keysSet("", 100)
	_, _, _, g2gen := curve.Generators()
	g2 := prover.BaseSet[curve.G2Affine]{Points: make([]curve.G2Affine, 50)}
	for i := range g2.Points {
		g2.Points[i] = g2gen
	}
	scalars := make([]fr.Element, 100)
	for i := range scalars {
		scalars[i].SetUint64(uint64(i + 1))
	}
	if _, err := b.MSMG1(ctx, otelcuzk.SpanMSMG1A, g1, scalars); err != nil {
		t.Fatalf("MSMG1 over a set without an ID: %v", err)
	}
	if _, err := b.MSMG2(ctx, otelcuzk.SpanMSMG2B, g2, scalars[:50]); err != nil {
		t.Fatalf("MSMG2 over a set without an ID: %v", err)
	}
	if ids := b.Keys().IDs(); len(ids) != 0 || b.Keys().Bytes() != 0 {
		t.Errorf("sets without an ID were kept resident: %v, %d bytes", ids, b.Keys().Bytes())
	}
	if used, _, _ := drv.stats(); used != used0 {
		t.Errorf("device memory in use %d after the MSMs, %d before: the bases stayed", used, used0)
	}
	if names := spanNames(rec); strings.Contains(names, otelcuzk.SpanKeysPreload) ||
		!strings.Contains(names, otelcuzk.SpanMSMG1A) || !strings.Contains(names, otelcuzk.SpanMSMG2B) {
		t.Errorf("spans %q: want msm.g1.a and msm.g2.b, no keys.preload", names)
	}
	// The points themselves were copied (with each MSM), byte for byte.
	var sawG1, sawG2 bool
	for _, c := range drv.htod {
		sawG1 = sawG1 || bytes.Equal(c, msmBytesOf(g1.Points))
		sawG2 = sawG2 || bytes.Equal(c, msmBytesOf(g2.Points))
	}
	if !sawG1 || !sawG2 {
		t.Errorf("bases copied to the device: G1 %v, G2 %v", sawG1, sawG2)
	}
	if len(drv.launches) == 0 || drv.launches[len(drv.launches)-1] != "msm_window_sum_g2" {
		t.Errorf("kernels launched: %v", drv.launches)
	}
	// The same sets with an ID are kept (the contrast the test rests on).
	g1.ID = "k:g1.a"
	if _, err := b.MSMG1(ctx, otelcuzk.SpanMSMG1A, g1, scalars); err != nil {
		t.Fatal(err)
	}
	if ids := b.Keys().IDs(); len(ids) != 1 || ids[0] != "k:g1.a" {
		t.Errorf("a set with an ID is not resident: %v", ids)
	}
}
