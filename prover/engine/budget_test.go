package engine

import (
	"strings"
	"testing"
)

func TestParseMemoryBudget(t *testing.T) {
	for in, want := range map[string]uint64{
		"0": 0, "1073741824": 1 << 30, "64GiB": 64 << 30, "512 MiB": 512 << 20, "1.5g": 3 << 29, "10k": 10 << 10,
		"2TiB": 2 << 40, "1kib": 1 << 10, "3 KiB": 3 << 10,
		// Decimal units are powers of ten, not GiB/MiB under another name.
		"10GB": 10e9, "1000MB": 1e9, "2TB": 2e12, "5kB": 5000, "5KB": 5000, "1.5gb": 15e8,
	} {
		b, err := ParseMemoryBudget(in)
		if err != nil || b.Share != 0 || b.Bytes != want {
			t.Errorf("ParseMemoryBudget(%q) = %+v, %v; want %d bytes", in, b, err, want)
		}
	}
	for in, want := range map[string]float64{"": DefaultBudgetShare, "50%": 0.5, "100%": 1} {
		if b, err := ParseMemoryBudget(in); err != nil || b.Share != want {
			t.Errorf("ParseMemoryBudget(%q) = %+v, %v; want a share of %v", in, b, err, want)
		}
	}
	if got := (MemoryBudget{Share: 0.5}).Resolve(10 << 30); got != 5<<30 {
		t.Errorf("50%% of 10 GiB = %d", got)
	}
	for _, bad := range []string{"-1", "lots", "12XB", "0%", "101%", "NaN", "1e30GiB", "%", "0.5", "0.9B"} {
		if _, err := ParseMemoryBudget(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseMemoryBudget(%q): %v, want an error naming it", bad, err)
		}
	}
}
