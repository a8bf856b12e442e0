package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

// DefaultBudgetShare is the share of physical memory the proofs in flight
// may hold when no budget is given: the rest is for the Go heap of the
// daemon, the page cache of the key files and the other processes.
const DefaultBudgetShare = 0.7

// MemoryBudget is a parsed memory budget (cuzk serve --memory-budget):
// Bytes, or a Share of physical memory when Share > 0. The zero value is
// no budget. WithMemoryBudget takes its Resolve'd bytes.
type MemoryBudget struct {
	Bytes uint64
	Share float64 // of physical memory, in (0, 1]; used when > 0
}

// ParseMemoryBudget reads "" (DefaultBudgetShare), "0" (none), a number of
// bytes with an optional unit, or a percentage of physical memory ("70%").
// KiB, MiB, GiB and TiB (and K, M, G, T) are powers of 1024; kB (KB), MB,
// GB and TB are powers of 1000, as the SI and IEC units say ("10GB" is
// 10,000,000,000 bytes, 9.3 GiB). Units are read without regard to case.
// Errors name the value.
func ParseMemoryBudget(s string) (MemoryBudget, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return MemoryBudget{Share: DefaultBudgetShare}, nil
	}
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || v <= 0 || v > 100 || math.IsNaN(v) {
			return MemoryBudget{}, fmt.Errorf("%q: want a share above 0%% and at most 100%%", s)
		}
		return MemoryBudget{Share: v / 100}, nil
	}
	num := strings.TrimRight(s, "KMGTiBkmgtib")
	unit := strings.ToUpper(strings.TrimSpace(s[len(num):]))
	scale, ok := budgetUnits[unit]
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v*scale >= 1<<63 {
		return MemoryBudget{}, fmt.Errorf("%q: want bytes (64GiB, 512MiB, 10GB, 1073741824), a share (70%%) or 0", s)
	}
	n := uint64(v * scale)
	if n == 0 && v != 0 {
		// "0.5" is no budget of half a byte, and not "0" (none) either.
		return MemoryBudget{}, fmt.Errorf("%q: less than one byte; want bytes (64GiB, 512MiB, 10GB, 1073741824), a share (70%%) or 0", s)
	}
	return MemoryBudget{Bytes: n}, nil
}

// budgetUnits are ParseMemoryBudget's units, upper-cased, in bytes: the
// binary ones (KiB, and K alone) powers of 1024, the decimal ones (kB)
// powers of 1000.
var budgetUnits = map[string]float64{"": 1, "B": 1,
	"K": 1 << 10, "KIB": 1 << 10, "KB": 1e3,
	"M": 1 << 20, "MIB": 1 << 20, "MB": 1e6,
	"G": 1 << 30, "GIB": 1 << 30, "GB": 1e9,
	"T": 1 << 40, "TIB": 1 << 40, "TB": 1e12,
}

// Resolve returns the budget in bytes on a host with total bytes of
// physical memory (0 when unknown: no budget from a share).
func (b MemoryBudget) Resolve(total uint64) uint64 {
	if b.Share > 0 {
		return uint64(float64(total) * b.Share)
	}
	return b.Bytes
}

// PhysicalMemory returns the host's physical memory in bytes
// (circuits.MemTotal), 0 where it cannot be read.
func PhysicalMemory() uint64 {
	n, err := circuits.MemTotal()
	if err != nil {
		return 0
	}
	return n
}
