package keycache

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/internal/progress"
)

// setupRateFile, in the cache directory, holds the last groth16.Setup
// measured on this host: "CONSTRAINTS NANOSECONDS\n". It predicts the next
// setup's time, in proportion to its constraints (gnark's Setup is FFTs and
// fixed-base MSMs over the domain: close to linear at these sizes).
const setupRateFile = "setup-rate"

// estimateSetup predicts a setup of n constraints from the last one
// measured in dir (progress.Estimate of its setupRateFile); ok is false
// without one.
func estimateSetup(dir string, n int) (time.Duration, bool) {
	return progress.Estimate(filepath.Join(dir, setupRateFile), int64(n))
}

// recordSetup stores a setup of n constraints that took d, for the next
// estimate (progress.Record). A failure to write only loses the estimate.
func recordSetup(dir string, n int, d time.Duration) {
	progress.Record(filepath.Join(dir, setupRateFile), int64(n), d)
}

// setupNotice is the one line said when a setup of n constraints has run
// longer than progressAfter: what runs, how long it should take when a
// setup was measured here before, and, when the cache cannot store it
// (stores false), that the key will not be kept.
func setupNotice(n int, est time.Duration, known, stores bool) string {
	line := fmt.Sprintf("groth16 setup: %s, no cached key; ", constraintCount(n))
	switch {
	case known:
		line += fmt.Sprintf("about %s in all, from the last setup measured here", human.Duration(est))
	case stores:
		return line + "the first setup here has no estimate (the key is cached for the next run)"
	default:
		line += "the first setup here has no estimate"
	}
	if !stores {
		line += " (the key is not kept: the cache directory cannot be written)"
	}
	return line
}

// constraintCount is n with "constraint" or "constraints" ("1 constraint",
// "1024 constraints"), for the compile and setup lines.
func constraintCount(n int) string {
	return fmt.Sprintf("%d constraint%s", n, human.Plural(n))
}
