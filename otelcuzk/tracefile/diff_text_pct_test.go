package tracefile

import (
	"testing"
	"time"
)

// Under a sub-millisecond baseline the Δ % column is the absolute delta,
// written as the Δ ms column writes it (ASCII sign, three decimals): it
// read "+0.0 ms" for a delta of −0.032 ms, and "−0.1 ms" with U+2212 beside
// the column's "-".
func TestPctTextOfASubMillisecondBaselineIsTheSignedDelta(t *testing.T) {
	for _, c := range []struct {
		a, b time.Duration
		want string
	}{
		{101 * time.Microsecond, 69 * time.Microsecond, "-0.032 ms"},
		{593 * time.Microsecond, 537 * time.Microsecond, "-0.056 ms"},
		{603 * time.Microsecond, 631 * time.Microsecond, "+0.028 ms"},
		{10 * time.Millisecond, 12 * time.Millisecond, "+20.0%"},
	} {
		n := &DiffNode{A: c.a, B: c.b, CountA: 1, CountB: 1, TracesA: 1, TracesB: 1}
		if got := pctText(n); got != c.want {
			t.Errorf("A %v B %v: %q, want %q", c.a, c.b, got, c.want)
		}
	}
}
