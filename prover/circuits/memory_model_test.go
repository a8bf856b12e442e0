package circuits

import (
	"math"
	"testing"
)

// Measurements of the built-in circuits (bench/memory.md): the 2-core
// development VM (AMD EPYC, 24 GiB, Linux 6.x, go1.26.8), 1 Dec 2026,
// load average 8 to 24; CPU backend; commands in bench/circuit-memory.sh.
// peakKB are /usr/bin/time -v's maximum resident set of `cuzk setup`
// (fresh key cache) and `cuzk prove --backend cpu` (keys cached); the
// memprobe rows are bench/memprobe's JSON (bytes): VmRSS at start, after
// compile and a GC (ccs), after the key load and a GC (keys), VmHWM of two
// back-to-back proofs (peak) and that peak over the memory held before
// them (above).
var (
	measuredPeaks = []struct {
		circuit          string
		constraints      int
		setupKB, proveKB int // 0: not measured
	}{
		{"merkle", 1 << 14, 70256, 86756},
		{"merkle", 1 << 16, 162868, 239828},
		{"merkle", 1 << 18, 448692, 552052},
		{"merkle", 1 << 20, 1659748, 1935360},
		{"porep", 1 << 17, 278860, 322740}, // prove: keys made in the same process
		{"porep", 1 << 18, 466076, 580588},
		{"rangecheck", 1 << 14, 85632, 121412},
		{"rangecheck", 1 << 16, 202068, 287952},
		{"rangecheck", 1 << 18, 552068, 832772},
	}
	memprobeRows = []struct {
		circuit                       string
		constraints, wires, committed int
		start, ccs, keys, peak, above uint64
	}{
		{"merkle", 16384, 16411, 0, 26583040, 29753344, 39845888, 85860352, 46030848},
		{"rangecheck", 16384, 24834, 8449, 27037696, 31940608, 47640576, 117895168, 70459392},
		{"merkle", 65536, 65631, 0, 26611712, 35434496, 76156928, 238247936, 162066432},
		{"rangecheck", 65536, 92162, 26625, 26546176, 41512960, 100143104, 272097280, 172408832},
		{"merkle", 262144, 262549, 0, 25378816, 56025088, 215416832, 607772672, 392310784},
		{"merkle", 1048576, 1050190, 0, 24416256, 142905344, 781283328, 2011254784, 1230016512},
		{"porep", 131072, 130416, 0, 24444928, 81317888, 146210816, 364908544, 218710016},
		{"porep", 262144, 260830, 0, 24473600, 126521344, 262905856, 659714048, 396849152},
		{"rangecheck", 262144, 352258, 90113, 24526848, 75251712, 301842432, 1012224000, 711954432},
	}
)

// within25 reports est against measured and fails beyond ±25 %.
func within25(t *testing.T, what string, est, measured uint64) {
	t.Helper()
	r := float64(est) / float64(measured)
	t.Logf("%-44s estimate %7.1f MiB, measured %7.1f MiB: %.2fx", what, float64(est)/(1<<20), float64(measured)/(1<<20), r)
	if math.Abs(r-1) > 0.25 {
		t.Errorf("%s: estimate %d bytes is %.2fx the measured %d (allowed 0.75–1.25)", what, est, r, measured)
	}
}

// MemoryBytes guards every use of a built-in circuit (cuzk setup, cuzk
// prove, a daemon's load): it is checked against the largest peak
// measured at that size, of the two commands and of memprobe's two
// back-to-back proofs.
func TestMemoryBytesWithin25PercentOfMeasuredPeaks(t *testing.T) {
	for _, m := range measuredPeaks {
		s, err := Lookup(m.circuit)
		if err != nil {
			t.Fatal(err)
		}
		peak := uint64(max(m.setupKB, m.proveKB)) << 10
		for _, r := range memprobeRows {
			if r.circuit == m.circuit && r.constraints == m.constraints {
				peak = max(peak, r.peak)
			}
		}
		within25(t, m.circuit+" "+itoa(m.constraints)+" MemoryBytes", s.MemoryBytes(m.constraints), peak)
	}
}

func TestProofAndKeyMemoryWithin25PercentOfMeasured(t *testing.T) {
	for _, m := range memprobeRows {
		d := 1
		for d < m.constraints {
			d <<= 1
		}
		name := m.circuit + " " + itoa(m.constraints)
		within25(t, name+" ProofMemory", ProofMemory(m.constraints, m.wires, m.committed), m.above)
		within25(t, name+" KeyMemory", KeyMemory(d, m.wires), m.keys-m.ccs)
		// What an engine's budget adds up for one proof beside its keys.
		held := RuntimeBytes + (m.ccs - m.start)
		within25(t, name+" held + keys + proof", held+KeyMemory(d, m.wires)+ProofMemory(m.constraints, m.wires, m.committed), m.peak)
	}
}

func itoa(n int) string {
	for k := 0; k < 40; k++ {
		if n == 1<<k {
			return "2^" + string(rune('0'+k/10)) + string(rune('0'+k%10))
		}
	}
	return "n"
}
