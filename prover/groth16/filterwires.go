package groth16

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/buffer"
)

// filterChunk is the number of wires one task of filterWires counts and
// then copies: 2 MiB of wires, so a task is long against the cost of
// handing it out, and 2^20 wires still give 16 cores a chunk each.
const filterChunk = 1 << 16

// filterWires copies the wires whose flag in infinity is false, in order,
// into a new mmap'd buffer (taken from rel's pool when it has one) of
// len(wires) − nbInfinity elements: the scalars of the A or B MSM, whose
// bases in gnark's proving key (pk.G1.A, pk.G1.B) omit the points at
// infinity. It is a parallel stream compaction (the "pack" of Blelloch,
// "Prefix sums and their applications", CMU-CS-90-190, 1990) on at most
// GOMAXPROCS goroutines: each chunk of filterChunk wires counts its finite
// flags, an exclusive prefix sum over the chunk counts gives each chunk its
// offset in the output, and the chunks are copied in parallel. The output
// buffer is the only large allocation (besides it, one int per chunk and
// the goroutines).
//
// It returns a nil buffer and slice when no wire is kept. A flag slice of
// another length than wires, or a finite count other than len(wires) −
// nbInfinity, is an error wrapping ErrKeyMismatch; it is found before the
// buffer is taken, so an error holds no buffer.
func filterWires(rel *buffer.Releaser, wires []fr.Element, infinity []bool, nbInfinity int) (*buffer.Mmap, []fr.Element, error) {
	return filterWiresOn(rel, wires, infinity, nbInfinity, filterChunk, runtime.GOMAXPROCS(0))
}

// filterWiresOn is filterWires with the chunk length (> 0) and the most
// goroutines (tests use small chunks to reach the parallel path on small
// inputs).
func filterWiresOn(rel *buffer.Releaser, wires []fr.Element, infinity []bool, nbInfinity, chunk, workers int) (*buffer.Mmap, []fr.Element, error) {
	if len(infinity) != len(wires) {
		return nil, nil, fmt.Errorf("%w: %d infinity flags for %d wires", ErrKeyMismatch, len(infinity), len(wires))
	}
	nChunks := (len(wires) + chunk - 1) / chunk
	span := func(c int) (lo, hi int) { return c * chunk, min((c+1)*chunk, len(wires)) }

	// offsets[c] is first chunk c's finite count, then its exclusive
	// prefix sum: where chunk c's wires start in the output.
	offsets := make([]int, nChunks)
	eachChunk(nChunks, workers, func(c int) {
		lo, hi := span(c)
		offsets[c] = countFinite(infinity[lo:hi])
	})
	total := 0
	for c, k := range offsets {
		offsets[c] = total
		total += k
	}
	n := len(wires) - nbInfinity
	if total != n {
		return nil, nil, fmt.Errorf("%w: %d finite bases counted, key says %d", ErrKeyMismatch, total, n)
	}
	if n == 0 {
		return nil, nil, nil
	}
	hb, out, _, err := newFrBuffer(rel, n)
	if err != nil {
		return nil, nil, err
	}
	eachChunk(nChunks, workers, func(c int) {
		lo, hi := span(c)
		compactFinite(out[offsets[c]:], wires[lo:hi], infinity[lo:hi])
	})
	return hb, out, nil
}

// eachChunk calls f(c) for every c in [0, n), on at most workers
// goroutines that take the next chunk as they finish one, so chunks of
// unequal work (a run of wires at infinity copies nothing) balance. One
// worker runs on the calling goroutine.
func eachChunk(n, workers int, f func(c int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for c := range n {
			f(c)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for range workers {
		go func() {
			defer wg.Done()
			for c := int(next.Add(1) - 1); c < n; c = int(next.Add(1) - 1) {
				f(c)
			}
		}()
	}
	wg.Wait()
}

// countFinite counts the false flags, eight at a time: a Go bool is the
// byte 0 or 1, so the top byte of w·0x0101010101010101 is the sum of w's
// eight bytes.
func countFinite(infinity []bool) int {
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(infinity))), len(infinity))
	inf, i := 0, 0
	for ; i+8 <= len(b); i += 8 {
		inf += int(binary.LittleEndian.Uint64(b[i:]) * 0x0101010101010101 >> 56)
	}
	for ; i < len(b); i++ {
		inf += int(b[i])
	}
	return len(b) - inf
}

// compactFinite copies the wires whose flag is false to the front of dst,
// in order; dst holds at least their count.
func compactFinite(dst, wires []fr.Element, infinity []bool) {
	j := 0
	for i := range wires {
		if !infinity[i] {
			dst[j] = wires[i]
			j++
		}
	}
}
