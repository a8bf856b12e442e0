package circuits

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/consensys/gnark/constraint"

	"github.com/otelcuzk/otelcuzk/internal/human"
)

// MemAvailable returns the kernel's estimate of memory available for new
// work without swapping, in bytes (MemAvailable in /proc/meminfo, Linux ≥
// 3.14). It returns an error where /proc/meminfo has no such line.
func MemAvailable() (uint64, error) { return meminfo("/proc/meminfo", "MemAvailable") }

// MemTotal returns the host's physical memory, in bytes (MemTotal in
// /proc/meminfo). It returns an error where /proc/meminfo cannot be read
// or has no such line.
func MemTotal() (uint64, error) { return meminfo("/proc/meminfo", "MemTotal") }

// meminfo returns the value of the line key of the meminfo file at path
// (in kB there), in bytes.
func meminfo(path, key string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", key, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == key+":" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse %s in %s: %w", key, path, err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return 0, fmt.Errorf("no %s line in %s", key, path)
}

// CheckMemory estimates the memory that compiling, setting up and proving
// circuit name at constraints needs, and returns an error wrapping
// ErrTooLargeForHost when it exceeds MemAvailable, before anything is allocated.
// Errors also wrap ErrUnknownCircuit, ErrNotBuiltin or ErrBadConstraints
// (constraints not positive or above MaxConstraints).
func CheckMemory(name string, constraints int) error {
	avail, err := MemAvailable()
	if err != nil {
		return err
	}
	return checkMemory(name, constraints, avail)
}

func checkMemory(name string, constraints int, avail uint64) error {
	s, err := LookupBuiltin(name)
	if err != nil {
		return err
	}
	if err := checkConstraints(constraints); err != nil {
		return err
	}
	need := s.MemoryBytes(constraints)
	if need > avail {
		return fmt.Errorf("%w: %s with %d constraints needs about %s, %s available",
			ErrTooLargeForHost, name, constraints, human.Bytes(need), human.Bytes(avail))
	}
	return nil
}

// The memory model of a Groth16 proof of BLS12-381 with gnark on the CPU
// backend, in bytes (issue 14 item 5). Its source is what each step
// allocates, with two constants fitted to the peak resident sets measured
// by bench/circuit-memory.sh on a 2-core VM at 2^14 to 2^20 constraints
// (bench/memory.md, where the table and the fit are): every estimate
// below is within 25 % of those measurements.
const (
	// RuntimeBytes is the resident set of a cuzk process before any
	// circuit: the Go runtime, the binary, the telemetry (measured 24–26 MiB).
	RuntimeBytes = 25 << 20
	// setupKeyFactor is groth16.Setup's peak over the key it makes: the
	// wires' evaluations and the points in Jacobian form before the batch
	// conversion, and the Go heap's growth before a collection (fitted:
	// 2.3–2.7 from 2^18 to 2^20).
	setupKeyFactor = 2.6
	// setupFixedBytes is the rest of setup's peak at small sizes (fitted).
	setupFixedBytes = 15 << 20
	// bucketG1Bytes and bucketG2Bytes are the resident bytes of one MSM
	// bucket of gnark-crypto's Pippenger: an affine bucket (96 B in G1,
	// 192 B in G2) and its extended-Jacobian twin (192, 384 B), of which
	// the batch-affine variant touches only a part (fitted: one third).
	bucketG1Bytes = 96 + 192/2
	bucketG2Bytes = 192 + 384/2
)

// KeyMemory estimates the host memory of one Groth16 proving key of
// BLS12-381 for wires wires and a domain of domain points, bytes: the G1
// bases of A, B and K (at most wires each, 96-byte affine points), of Z
// (domain), and the G2 bases of B (192-byte points). Measured on the key
// as loaded, it is 5–14 % under (rangecheck's commitment bases are not
// counted).
func KeyMemory(domain, wires int) uint64 {
	return 96*(3*uint64(max(wires, 0))+uint64(max(domain, 0))) + 192*uint64(max(wires, 0))
}

// ProofMemory estimates the peak host memory, in bytes, that one proof of
// an R1CS of constraints constraints, wires wires and committed private
// committed wires (gnark's api.Commit; 0 without commitments) adds to a
// process holding its circuit and keys:
//   - gnark's solver's vectors on the Go heap, the wires and a, b, c
//     (allocated with the domain's capacity), garbage once copied, counted
//     twice: with Go's default GOGC=100 the heap is collected when it has
//     doubled, so the previous proof's are often still there (the
//     measured peaks of back-to-back proofs);
//   - the mmap'd assignment: the wires and a, b, c padded to the domain;
//   - the two filtered copies of the wires for the MSMs of A and B, and
//     with commitments the wires of K without the committed ones;
//   - gnark-crypto's MSMs (four in G1 over the wires and H over the domain,
//     one in G2 over the wires, and per commitment two in G1 over its
//     committed wires, with their values): per MSM, the digits of the
//     scalars (a uint16 per scalar and window) and one bucket array per
//     window, as msmScratch computes them from gnark-crypto's own choice
//     of window.
//
// The domain is the next power of two of constraints. A CUDA backend does
// its MSMs on the device: for it the estimate is high by the MSM part.
func ProofMemory(constraints, wires, committed int) uint64 {
	n, w, k := uint64(max(constraints, 1)), uint64(max(wires, 1)), uint64(max(committed, 0))
	d := uint64(1)
	for d < n {
		d <<= 1
	}
	vectors := 32 * (3*(w+3*d) + 2*w)
	mem := vectors + 3*msmScratch(w, bucketG1Bytes) + msmScratch(d, bucketG1Bytes) + msmScratch(w, bucketG2Bytes)
	if k > 0 {
		mem += 2*msmScratch(k, bucketG1Bytes) + 2*32*k + 32*w
	}
	return mem
}

// CommittedWires is the number of private committed wires of ccs's
// commitments (api.Commit), ProofMemory's committed: 0 without any.
func CommittedWires(ccs constraint.ConstraintSystem) int {
	info, _ := ccs.GetCommitments().(constraint.Groth16Commitments)
	n := 0
	for _, c := range info {
		n += len(c.PrivateCommitted)
	}
	return n
}

// msmScratch is the memory of one gnark-crypto MultiExp over points
// points (BLS12-381, gnark-crypto v0.19 ecc/bls12-381/multiexp.go): the
// window c minimizes (fr.Bits+1)·(points + 2^c)/c over c in 4..16
// (bestC); the scalars split into ⌈255/c⌉ windows of uint16 digits
// (partitionScalars), and each window's goroutine holds 2^(c−1) buckets
// (processChunk*), bucket bytes each.
func msmScratch(points, bucket uint64) uint64 {
	best, c := 0.0, uint64(4)
	for k := uint64(4); k <= 16; k++ {
		cost := float64(256*(points+1<<k)) / float64(k)
		if k == 4 || cost < best {
			best, c = cost, k
		}
	}
	windows := (255 + c - 1) / c
	return windows * (2*points + (uint64(1)<<(c-1))*bucket)
}

// shape is what a built-in circuit's memory depends on besides its
// constraint count, measured on the compiled circuit (bench/memory.md).
type shape struct {
	// wiresPerConstraint is the R1CS's wires over its constraints.
	wiresPerConstraint float64
	// ccsBytesPerConstraint is the compiled R1CS held in memory (the
	// resident set after compile and a GC, less RuntimeBytes), per
	// constraint.
	ccsBytesPerConstraint float64
	// committedPerConstraint is the private committed wires (api.Commit)
	// over the constraints; 0 without commitments.
	committedPerConstraint float64
	// compileBytesPerConstraint is the peak resident set of gnark's
	// frontend.Compile of the circuit (the builder's structures and their
	// garbage, several times the compiled R1CS), less RuntimeBytes, per
	// constraint: /usr/bin/time's maximum RSS of a process that builds
	// and compiles it.
	compileBytesPerConstraint float64
}

// peakBytes estimates the peak resident set of a cuzk process that
// compiles a circuit of this shape at n constraints and then makes its
// keys (groth16.Setup: RuntimeBytes, the R1CS, setupKeyFactor × KeyMemory
// and setupFixedBytes) or proves with them (RuntimeBytes, the R1CS,
// KeyMemory and ProofMemory), whichever is larger: a check before the
// build cannot know whether the keys are cached. It saturates at the
// largest uint64 for absurd sizes (far above MaxConstraints, which
// checkMemory refuses first, so no saturated estimate is printed).
func (s shape) peakBytes(n int) uint64 {
	if n <= 0 {
		n = 1
	}
	if float64(n) > 1<<40 {
		return ^uint64(0)
	}
	w := int(s.wiresPerConstraint*float64(n)) + 1
	d := 1
	for d < n {
		d <<= 1
	}
	held := float64(RuntimeBytes) + s.ccsBytesPerConstraint*float64(n)
	keys := float64(KeyMemory(d, w))
	setup := held + setupKeyFactor*keys + setupFixedBytes
	prove := held + keys + float64(ProofMemory(n, w, int(s.committedPerConstraint*float64(n))))
	return uint64(max(setup, prove))
}
