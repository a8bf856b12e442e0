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
	for _, c := range []struct {
		name    string
		goValue int
	}{
		{"SCALE_NONE", scaleNone},
		{"SCALE_CONST", scaleConst},
		{"SCALE_TABLE", scaleTable},
		{"SCALE_TABLE_BREV", scaleTableBrev},
		{"LOG_TILE", logTile},
	} {
		if v := gputest.HeaderInt(t, kernels.NTTHeader, c.name); v != c.goValue {
			t.Errorf("%s is %d in ntt.cuh, %d on the Go side", c.name, v, c.goValue)
		}
	}
}
