package keycache

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/atomicfile"
	"github.com/otelcuzk/otelcuzk/internal/progress"
)

// setupRateFile, in the cache directory, holds the last groth16.Setup
// measured on this host: "CONSTRAINTS NANOSECONDS\n". It predicts the next
// setup's time, in proportion to its constraints (gnark's Setup is FFTs and
// fixed-base MSMs over the domain: close to linear at these sizes).
const setupRateFile = "setup-rate"

// lastSetup returns the constraints and duration of the setup recorded in
// dir, or ok false when none was (or the file is not ours).
func lastSetup(dir string) (constraints int, took time.Duration, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, setupRateFile))
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	n, err1 := strconv.Atoi(f[0])
	ns, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || n <= 0 || ns <= 0 {
		return 0, 0, false
	}
	return n, time.Duration(ns), true
}

// estimateSetup predicts a setup of n constraints from the last one
// measured in dir; ok is false without one.
func estimateSetup(dir string, n int) (time.Duration, bool) {
	last, took, ok := lastSetup(dir)
	if !ok || n <= 0 {
		return 0, false
	}
	return time.Duration(float64(took) * float64(n) / float64(last)), true
}

// recordSetup stores a setup of n constraints that took d, for the next
// estimate. A failure to write only loses the estimate.
func recordSetup(dir string, n int, d time.Duration) {
	_ = atomicfile.WriteBytes(filepath.Join(dir, setupRateFile), 0o644, []byte(fmt.Sprintf("%d %d\n", n, d.Nanoseconds())))
}

// setupNotice is the one line said when a setup of n constraints has run
// longer than progressAfter: what runs, and how long it should take when a
// setup was measured here before.
func setupNotice(n int, est time.Duration, known bool) string {
	if !known {
		return fmt.Sprintf("groth16 setup: %d constraints, no cached key; the first setup here has no estimate (the key is cached for the next run)", n)
	}
	return fmt.Sprintf("groth16 setup: %d constraints, no cached key; about %s in all, from the last setup measured here", n, progress.Round(est))
}
