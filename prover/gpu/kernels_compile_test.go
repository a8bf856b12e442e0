package gpu

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/gpu/kernels"
	"github.com/otelcuzk/otelcuzk/prover/gpu/msm"
	"github.com/otelcuzk/otelcuzk/prover/gpu/ntt"
)

// TestKernelsCompileWithNVRTC compiles every kernel module this package
// loads (the NTT, the MSM's scalar part and the point parts of G1 and G2
// with the affine bucket sums' (msm.WithAffineBuckets),
// the batch addition of G1 and G2, the rate probes) for sm_90, the H200's
// architecture, with NVRTC and no device, exactly as NewNTT, NewMSM, Backend.Warmup and MeasureRates hand
// them to the driver, and checks that each image exports
// its kernels. It needs an NVRTC library (CUDASPANS_NVRTC, or the default
// search; scripts/fetch-nvrtc.sh fetches one from Debian's archive, as make
// test does) and skips without one, unless OTELCUZK_REQUIRE_NVRTC=1.
func TestKernelsCompileWithNVRTC(t *testing.T) {
	if testing.Short() {
		t.Skip("compiling the MSM modules takes minutes on a small host; -short")
	}
	mods := append([]kernels.Module{ntt.Module(nil)}, msm.Modules(cudaspans.CompileOptions{})...)
	// The affine bucket sums' modules that are not default ones (G2's is).
	for _, a := range msm.AffineModules(cudaspans.CompileOptions{}) {
		if !slices.ContainsFunc(mods, func(m kernels.Module) bool { return m.Name == a.Name }) {
			mods = append(mods, a)
		}
	}
	mods = append(mods, rateModule(nil), msm.BatchAddModule(false, cudaspans.CompileOptions{}), msm.BatchAddModule(true, cudaspans.CompileOptions{}))
	// In parallel, as Backend.Warmup compiles them (go test -parallel
	// bounds how many at once: GOMAXPROCS by default).
	for _, m := range mods {
		t.Run(m.Name, func(t *testing.T) {
			t.Parallel()
			opts := m.Opts
			opts.Arch = "sm_90"
			start := time.Now()
			image, _, err := cudaspans.CompileImage(nil, m.Name, m.Source, opts)
			if errors.Is(err, cudaspans.ErrNoCompiler) && os.Getenv("OTELCUZK_REQUIRE_NVRTC") != "1" {
				t.Skipf("no NVRTC (set CUDASPANS_NVRTC; scripts/fetch-nvrtc.sh fetches one): %v", err)
			}
			if err != nil {
				t.Fatalf("%s: %v", m.Name, err)
			}
			for _, k := range m.Kernels {
				if !bytes.Contains(image, []byte(k+"\x00")) {
					t.Errorf("%s: the sm_90 image does not export %s", m.Name, k)
				}
			}
			t.Logf("%s: %d-byte sm_90 image in %v", m.Name, len(image), time.Since(start).Round(time.Millisecond))
		})
	}
}
