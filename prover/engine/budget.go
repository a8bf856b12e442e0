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
// bytes with an optional KiB, MiB, GiB or TiB suffix (KB, MB, GB, TB and
// K, M, G, T mean the same powers of 1024), or a percentage of physical
// memory ("70%"). Errors name the value.
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
	shift := map[string]uint{"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20,
		"G": 30, "GB": 30, "GIB": 30, "T": 40, "TB": 40, "TIB": 40}
	sh, ok := shift[unit]
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v*float64(uint64(1)<<sh) >= 1<<63 {
		return MemoryBudget{}, fmt.Errorf("%q: want bytes (64GiB, 512MiB, 1073741824), a share (70%%) or 0", s)
	}
	n := uint64(v * float64(uint64(1)<<sh))
	if n == 0 && v != 0 {
		// "0.5" is no budget of half a byte, and not "0" (none) either.
		return MemoryBudget{}, fmt.Errorf("%q: less than one byte; want bytes (64GiB, 512MiB, 1073741824), a share (70%%) or 0", s)
	}
	return MemoryBudget{Bytes: n}, nil
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
