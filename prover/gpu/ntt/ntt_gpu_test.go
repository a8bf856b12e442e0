package ntt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/gputest"
)

// openGPU opens device 0 with spans recorded in memory, or skips the test
// on a host without a CUDA driver or device.
func openGPU(t testing.TB) (*cudaspans.Context, *Engine, *cudaspans.Stream, *tracetest.SpanRecorder, trace.TracerProvider) {
	t.Helper()
	rec, tp := spantest.New()
	c, err := cudaspans.Open(0, cudaspans.WithTracerProvider(tp), cudaspans.WithKernelCacheDir(t.TempDir()))
	if errors.Is(err, cudaspans.ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), c, WithTracerProvider(tp))
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		c.Close()
	})
	return c, e, s, rec, tp
}

// gpuTransform uploads v, transforms it on the device, and returns the
// result.
func gpuTransform(t testing.TB, c *cudaspans.Context, e *Engine, s *cudaspans.Stream, d *fft.Domain, v []fr.Element, dec Decimation, inverse, coset bool) []fr.Element {
	t.Helper()
	ctx := context.Background()
	buf, err := c.Alloc(ctx, len(v)*frBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	// Poison the output first: an element the kernels never wrote shows.
	if err := s.Memset(ctx, buf.Ptr(), 0xa5, len(v)*frBytes); err != nil {
		t.Fatal(err)
	}
	if err := cudaspans.HtoD(ctx, s, buf.Ptr(), v); err != nil {
		t.Fatal(err)
	}
	if err := e.Transform(ctx, s, d, buf.Ptr(), dec, inverse, coset); err != nil {
		t.Fatal(err)
	}
	out := make([]fr.Element, len(v))
	if err := cudaspans.DtoH(ctx, s, out, buf.Ptr()); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	return out
}

func gnarkTransform(d *fft.Domain, v []fr.Element, dec Decimation, inverse, coset bool) []fr.Element {
	out := append([]fr.Element(nil), v...)
	var opts []fft.Option
	if coset {
		opts = append(opts, fft.OnCoset())
	}
	fdec := fft.DIF
	if dec == DIT {
		fdec = fft.DIT
	}
	if inverse {
		d.FFTInverse(out, fdec, opts...)
	} else {
		d.FFT(out, fdec, opts...)
	}
	return out
}

func edgeVector(kind string, n int) []fr.Element {
	v := make([]fr.Element, n)
	var x fr.Element
	switch kind {
	case "one":
		x.SetOne()
	case "r-1":
		x.SetOne()
		x.Neg(&x)
	}
	for i := range v {
		v[i] = x
	}
	return v
}

// TestNTTGPUMatchesGnarkCrypto: every transform (forward/inverse ×
// DIF/DIT × coset or not) equals gnark-crypto's on fresh random inputs at
// 2^1, 2^2, 2^10, 2^11, 2^16, 2^20 and 2^24 (set OTELCUZK_NTT_MAXLOG to
// change the largest), and on inputs all zero, all one and all r−1 at 2^10
// and 2^16.
func TestNTTGPUMatchesGnarkCrypto(t *testing.T) {
	c, e, s, _, _ := openGPU(t)
	maxLog := 24
	if v := os.Getenv("OTELCUZK_NTT_MAXLOG"); v != "" {
		fmt.Sscan(v, &maxLog)
	}
	for _, logn := range []int{1, 2, 10, 11, 16, 20, 24, 27} {
		if logn > maxLog {
			continue
		}
		n := 1 << logn
		d := fft.NewDomain(uint64(n))
		inputs := map[string][]fr.Element{"random": gputest.RandomVector(n)}
		if logn == 10 || logn == 16 {
			for _, k := range []string{"zero", "one", "r-1"} {
				inputs[k] = edgeVector(k, n)
			}
		}
		for kind, in := range inputs {
			for _, dec := range []Decimation{DIF, DIT} {
				for _, inverse := range []bool{false, true} {
					for _, coset := range []bool{false, true} {
						if logn >= 20 && kind == "random" {
							in = gputest.RandomVector(n) // fresh for each transform
						}
						name := fmt.Sprintf("2^%d/%s/%v/inverse=%v/coset=%v", logn, kind, dec, inverse, coset)
						start := time.Now()
						got := gpuTransform(t, c, e, s, d, in, dec, inverse, coset)
						gpu := time.Since(start)
						gputest.SameVectors(t, name, got, gnarkTransform(d, in, dec, inverse, coset))
						if logn >= 20 {
							t.Logf("%s: equal to gnark-crypto (GPU with copies %v)", name, gpu)
						}
					}
				}
			}
		}
	}
}

// TestComputeHGPUMatchesCPUBackend: the device compute_h equals the CPU
// backend's (gnark's computeH) element for element, and its steps are
// spans with the kernels as children, inside their parents.
func TestComputeHGPUMatchesCPUBackend(t *testing.T) {
	c, e, s, rec, tp := openGPU(t)
	ctx := context.Background()
	for _, logn := range []int{1, 10, 16, 20, 24} {
		n := 1 << logn
		d, a, b, cc, want := gputest.ComputeHCase(t, n)
		var bufs [3]*cudaspans.DeviceBuffer
		for i, v := range [][]fr.Element{a, b, cc} {
			buf, err := c.Alloc(ctx, n*frBytes)
			if err != nil {
				t.Fatal(err)
			}
			defer buf.Free()
			bufs[i] = buf
			if err := cudaspans.HtoD(ctx, s, buf.Ptr(), v); err != nil {
				t.Fatal(err)
			}
		}
		hctx, span := tp.Tracer("test").Start(ctx, semconv.SpanComputeH)
		start := time.Now()
		if err := e.ComputeH(hctx, s, d, bufs[0].Ptr(), bufs[1].Ptr(), bufs[2].Ptr()); err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		span.End()
		got := make([]fr.Element, n)
		if err := cudaspans.DtoH(ctx, s, got, bufs[0].Ptr()); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(ctx); err != nil {
			t.Fatal(err)
		}
		gputest.SameVectors(t, fmt.Sprintf("compute_h 2^%d", logn), got, want)
		t.Logf("compute_h 2^%d: equal to the CPU backend; GPU %v (data resident)", logn, elapsed)
	}
	gputest.CheckKernelSpansNested(t, rec)
}

// TestNTTGPUSecondStartUsesKernelCache: a second New on the same kernel
// cache compiles nothing.
func TestNTTGPUSecondStartUsesKernelCache(t *testing.T) {
	c, _, _, _, _ := openGPU(t)
	before := cudaspans.CompileCount()
	e2, err := New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if got := cudaspans.CompileCount(); got != before {
		t.Fatalf("second start ran NVRTC %d times", got-before)
	}
	if !e2.mod.FromCache() {
		t.Fatal("module not from the kernel cache")
	}
}

func TestNTTGPURejectsBadDomain(t *testing.T) {
	c, e, s, _, _ := openGPU(t)
	d := fft.NewDomain(8)
	d.Cardinality = 6 // not a power of two
	buf, err := c.Alloc(context.Background(), 8*frBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	if err := e.Transform(context.Background(), s, d, buf.Ptr(), DIF, false, false); err == nil {
		t.Fatal("a domain of 6 elements was accepted")
	}
}
