package fixedbase

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// TestKernelsCompileWithNVRTC compiles both modules (G1, G2) for sm_90,
// the H200's architecture, with NVRTC and no device, as New hands them to
// the driver, and checks each image exports its kernels. Skipped without
// an NVRTC library (scripts/fetch-nvrtc.sh) unless OTELCUZK_REQUIRE_NVRTC=1.
func TestKernelsCompileWithNVRTC(t *testing.T) {
	for _, m := range Modules() {
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
