package msm

import (
	"math/bits"
)

// Constants of kernels/msm.cuh, repeated for the host side of the plan.
const (
	msmSegment       = 128  // MSM_SEGMENT
	msmReduceSlice   = 32   // MSM_REDUCE_SLICE
	msmWindowThreads = 128  // MSM_WINDOW_SUM_THREADS
	msmScanThreads   = 1024 // MSM_SCAN_THREADS
	msmBlock         = 128  // threads per block of the point kernels
	msmMinChunk      = 1 << 12
	msmMaxPoints     = 1<<31 - 1 // point indices are 31 bits in a sorted entry
	msmAffineBytes   = 96        // G1Affine
	msmXYZZBytes     = 192       // ec.cuh g1_xyzz
	msmAffine2Bytes  = 192       // G2Affine
	msmXYZZ2Bytes    = 384       // ec.cuh g2_xyzz
	msmScalarBytes   = 32
	// msmAffineTail is MSM_AFFINE_TAIL: the affine bucket sums stop
	// halving when no bucket holds more points (the default tail).
	msmAffineTail = 16
	// msmAffineThreads is about how many threads one affine level aims
	// for: each thread takes ceil(outputs/msmAffineThreads) outputs (within
	// [msmAffineMinPer, msmAffineMaxPer]) and one inversion.
	msmAffineThreads = 1 << 17
	msmAffineMinPer  = 16
	msmAffineMaxPer  = 1024
)

// msmWindowBits is Pippenger's c for a chunk of n points: about log2(n) − 4
// (a window has 2^(c−1) buckets, so a bucket holds some 32 points), within
// [6, 16]. On an H200 c = 16 beat 14 and 18 at 2^20, 2^22 and 2^24
// (bench/msm.md).
func msmWindowBits(n int) int {
	lg := bits.Len(uint(n - 1))
	return min(16, max(6, lg-4))
}

// msmPlan is the shape of one device pass over n points.
type msmPlan struct {
	n, c, nwin, nb, segCap, m, nslices int
	// byte offsets into the workspace
	offScalars, offBases, offCounts, offBoff, offCursor, offSegOff, offSorted, offPartials, offSegB, offParts, offWSums int
	// The affine bucket sums (affine > 0, the tail): the points of the
	// odd levels' outputs (X, r1 per window) and the even levels' (Y, r2
	// per window), the second pair of count and offset arrays, the
	// windows' output totals and the largest bucket.
	affine, r1, r2                               int
	offX, offY, offCntA, offOffA, offTot, offMax int
	bytes                                        int
}

func msmAlign256(x int) int { return (x + 255) &^ 255 }

// newMSMPlan lays out the workspace of n points with window c; affine > 0
// adds the buffers of the affine bucket sums (with that tail).
func newMSMPlan(n, c int, withBases bool, g2 bool, affine int) msmPlan {
	affineBytes, xyzzBytes := msmAffineBytes, msmXYZZBytes
	if g2 {
		affineBytes, xyzzBytes = msmAffine2Bytes, msmXYZZ2Bytes
	}
	p := msmPlan{n: n, c: c}
	p.nwin = (256 + c - 1) / c
	p.nb = 1 << (c - 1)
	p.segCap = (n+msmSegment-1)/msmSegment + min(p.nb, n)
	p.m = max(1, min(msmReduceSlice, p.nb/1024))
	p.nslices = p.nb / p.m
	off := 0
	take := func(bytes int) int {
		o := off
		off = msmAlign256(off + bytes)
		return o
	}
	wb := p.nwin * p.nb * 4
	p.offScalars = take(n * msmScalarBytes)
	if withBases {
		p.offBases = take(n * affineBytes)
	}
	p.offCounts = take(wb)
	p.offBoff = take(wb)
	p.offCursor = take(wb)
	p.offSegOff = take(p.nwin * (p.nb + 1) * 4)
	p.offSorted = take(p.nwin * n * 4)
	p.offPartials = take(p.nwin * p.segCap * xyzzBytes)
	p.offSegB = take(p.nwin * p.segCap * 4)
	p.offParts = take(p.nwin * p.nslices * xyzzBytes)
	p.offWSums = take(p.nwin * xyzzBytes)
	if affine > 0 {
		// A level's output in one window: Σ ceil(k/2) over its buckets
		// ≤ n/2^(l+1) + nb (msmaffine.cuh), so the first level's fits in
		// r1 and every later one's in r2 (level 2, 4, ... write Y).
		p.affine = affine
		p.r1 = (n+1)/2 + p.nb
		p.r2 = (n+3)/4 + p.nb
		p.offX = take(p.nwin * p.r1 * affineBytes)
		p.offY = take(p.nwin * p.r2 * affineBytes)
		p.offCntA = take(wb)
		p.offOffA = take(wb)
		p.offTot = take(p.nwin * 4)
		p.offMax = take(4)
	}
	p.bytes = off
	return p
}

func (m *MSM) windowFor(n int) int {
	if m.window != 0 {
		return m.window
	}
	return msmWindowBits(n)
}

// firstChunk is the points of the first device pass of an MSM of n
// points: all of them, up to msmMaxPoints and WithMaxChunk (run halves it
// when the workspace does not fit).
func (m *MSM) firstChunk(n int) int {
	chunk := min(n, msmMaxPoints)
	if m.maxChunk > 0 {
		chunk = min(chunk, m.maxChunk)
	}
	return chunk
}

// WorkspaceBytes is the device workspace, in bytes, of an MSM of n
// scalars over resident bases on G1 (g2 false) or G2, as the MSM sizes it
// before any halving on out-of-memory: what a key's "msm.workspace" proof
// buffer (DeviceBases.ProofBuffer) must hold for the MSM to take it as it
// is. 0 for n ≤ 0.
func (m *MSM) WorkspaceBytes(n int, g2 bool) int {
	if n <= 0 {
		return 0
	}
	chunk := m.firstChunk(n)
	return newMSMPlan(chunk, m.windowFor(chunk), false, g2, m.affineTail(g2, chunk)).bytes
}

// affineLevels is how many halvings the affine bucket sums need so that
// no bucket of at most maxCount points holds more than tail.
func affineLevels(maxCount, tail int) int {
	l := 0
	for maxCount > tail {
		maxCount = (maxCount + 1) / 2
		l++
	}
	return l
}

// affinePer is the outputs per thread of an affine level with at most
// outputs outputs in all.
func affinePer(outputs int) int {
	return min(msmAffineMaxPer, max(msmAffineMinPer, (outputs+msmAffineThreads-1)/msmAffineThreads))
}

// affineTail is the tail of the group's affine bucket sums for a chunk of
// n points (0: XYZZ).
func (m *MSM) affineTail(g2 bool, n int) int {
	if g2 {
		if m.affineMaxG2 > 0 && n > m.affineMaxG2 {
			return 0
		}
		return m.affineG2
	}
	return m.affineG1
}
