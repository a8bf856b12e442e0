package ntt

import (
	"testing"

	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/gputest"
	"github.com/otelcuzk/otelcuzk/prover/gpu/kernels"
)

// TestGoMirrorsOfKernelConstantsMatchTheEmbeddedHeaders: the constants the
// NTT plan repeats (ntt.cuh's ScaleMode and LOG_TILE) equal those of the
// header this binary embeds and compiles (issue 13 item 1).
func TestGoMirrorsOfKernelConstantsMatchTheEmbeddedHeaders(t *testing.T) {
	gputest.CheckMirrors(t, "ntt.cuh", kernels.NTTHeader,
		gputest.Mirror{Name: "SCALE_NONE", Go: scaleNone},
		gputest.Mirror{Name: "SCALE_CONST", Go: scaleConst},
		gputest.Mirror{Name: "SCALE_TABLE", Go: scaleTable},
		gputest.Mirror{Name: "SCALE_TABLE_BREV", Go: scaleTableBrev},
		gputest.Mirror{Name: "LOG_TILE", Go: logTile})
}
