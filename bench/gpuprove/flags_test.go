package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// A list flag is its words parsed in order, its default when empty, and a
// word the parser refuses is an error after the flag's name.
func TestParseEachParsesTheWordsOrGivesTheDefault(t *testing.T) {
	got, err := parseEach("host-copy", " register,pageable ,", backend.ParseHostCopy, backend.HostCopyStaged)
	if err != nil || !slices.Equal(got, []backend.HostCopy{backend.HostCopyRegister, backend.HostCopyPageable}) {
		t.Errorf("two words: %v, %v", got, err)
	}
	got, err = parseEach("host-copy", "", backend.ParseHostCopy, backend.HostCopyStaged)
	if err != nil || !slices.Equal(got, []backend.HostCopy{backend.HostCopyStaged}) {
		t.Errorf("no word: %v, %v; want the default alone", got, err)
	}
	if _, err := parseEach("msm-g2", "gpu,fpga", backend.ParseG2Placement, backend.G2OnGPU); err == nil ||
		!strings.HasPrefix(err.Error(), "-msm-g2: ") || !strings.Contains(err.Error(), `"fpga"`) {
		t.Errorf("a bad word: %v, want -msm-g2: and the word", err)
	}
}
