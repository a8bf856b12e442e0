package gpu

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// TestKernelsCompileWithNVRTC compiles every kernel module this package
// loads (the NTT, the G1 and G2 MSMs, the rate probes) for sm_90, the H200's
// architecture, with NVRTC and no device, exactly as NewNTT, NewMSM and
// MeasureRates hand them to the driver, and checks that each image exports
// its kernels. It needs an NVRTC library (CUDASPANS_NVRTC, or the default
// search; scripts/fetch-nvrtc.sh fetches one from Debian's archive, as make
// test does) and skips without one, unless OTELCUZK_REQUIRE_NVRTC=1.
func TestKernelsCompileWithNVRTC(t *testing.T) {
	if testing.Short() {
		t.Skip("compiling the G2 MSM takes about a minute; -short")
	}
	flags := []string{"-std=c++17"}
	for _, m := range []struct {
		name, source string
		opts         cudaspans.CompileOptions
		kernels      []string
	}{
		{"ntt", nttSource, cudaspans.CompileOptions{Headers: map[string]string{"ff.cuh": ffSource, "ntt.cuh": nttHeader}, Flags: flags},
			[]string{"ntt_pass", "ntt_powers", "groth16_pointwise"}},
		{"msm", msmSource, msmCompileOptions(false, cudaspans.CompileOptions{}),
			[]string{"msm_fill_u32", "msm_digits_count", "msm_bucket_scan", "msm_scatter", "msm_bucket_accumulate",
				"msm_segment_merge", "msm_bucket_reduce", "msm_window_sum"}},
		{"msm_g2", msmSource, msmCompileOptions(true, cudaspans.CompileOptions{}),
			[]string{"msm_digits_count", "msm_scatter", "msm_bucket_accumulate_g2", "msm_segment_merge_g2",
				"msm_bucket_reduce_g2", "msm_window_sum_g2"}},
		{"rate", rateSource, cudaspans.CompileOptions{Headers: map[string]string{"ff.cuh": ffSource}, Flags: flags},
			[]string{"rate_fr_mul", "rate_fp_mul", "rate_imad"}},
	} {
		opts := m.opts
		opts.Arch = "sm_90"
		start := time.Now()
		image, _, err := cudaspans.CompileImage(nil, m.name, m.source, opts)
		if errors.Is(err, cudaspans.ErrNoCompiler) && os.Getenv("OTELCUZK_REQUIRE_NVRTC") != "1" {
			t.Skipf("no NVRTC (set CUDASPANS_NVRTC; scripts/fetch-nvrtc.sh fetches one): %v", err)
		}
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		for _, k := range m.kernels {
			if !bytes.Contains(image, []byte(k+"\x00")) {
				t.Errorf("%s: the sm_90 image does not export %s", m.name, k)
			}
		}
		t.Logf("%s: %d-byte sm_90 image in %v", m.name, len(image), time.Since(start).Round(time.Millisecond))
	}
}
