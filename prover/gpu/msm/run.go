package msm

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// run computes the MSM over device bases at basesPtr, or over hostBases
// (points as bytes) when basesPtr is 0, and hands each chunk's window sums
// (nwin points in the group's XYZZ layout) and window size to combine.
// With a key ID (Call.KeyID) and a pool its workspace is the
// key's proof buffer in pool (kept for the next proof); else it is
// allocated and freed here.
func (m *MSM) run(ctx context.Context, call backend.Call, s *cudaspans.Stream, g2 bool, pool *DeviceBases, basesPtr cudaspans.DevicePtr,
	hostBases []byte, sc scalars, combine func(wsums []byte, c int)) (err error) {
	n := sc.n
	ctx, end := startCall(ctx, m.tracer, call, n)
	defer func() { end(err) }()
	if n == 0 {
		return nil
	}
	if s == nil {
		return errors.New("msm: nil stream")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g, err := m.group(ctx, g2)
	if err != nil {
		return err
	}

	chunk := m.firstChunk(n)
	withBases := basesPtr == 0
	// Find a chunk size whose workspace fits: halve on out-of-memory.
	var ws *cudaspans.DeviceBuffer
	var giveBack func() error
	var plan msmPlan
	for {
		plan = newMSMPlan(chunk, m.windowFor(chunk), withBases, g2, m.affineTail(g2, chunk))
		ws, giveBack, err = m.workspace(ctx, call.KeyID, pool, plan.bytes)
		if err == nil {
			break
		}
		if !errors.Is(err, cudaspans.ErrOutOfMemory) && !errors.Is(err, ErrBaseBudget) {
			return fmt.Errorf("msm: workspace of %d bytes: %w", plan.bytes, err)
		}
		if chunk <= msmMinChunk {
			return fmt.Errorf("msm: %d points, workspace of %d bytes for a chunk of %d: %w: %w",
				n, plan.bytes, chunk, ErrTooLarge, err)
		}
		chunk = max(msmMinChunk, chunk/2)
	}
	defer func() {
		if rerr := giveBack(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	nchunks := (n + chunk - 1) / chunk
	if span := trace.SpanFromContext(ctx); call.Span != "" {
		span.SetAttributes(semconv.KeyMSMWindowBits.Int(plan.c), semconv.KeyMSMChunks.Int(nchunks))
	}
	for start := 0; start < n; start += chunk {
		k := min(chunk, n-start)
		p := plan
		if k != plan.n {
			// The last chunk is smaller: same workspace, its own shape.
			p = newMSMPlan(k, m.windowFor(k), withBases, g2, m.affineTail(g2, chunk))
			if p.bytes > plan.bytes { // cannot happen: fewer points, no larger window
				return fmt.Errorf("msm: internal error: plan for %d points larger than for %d", k, plan.n)
			}
		}
		bp := basesPtr + cudaspans.DevicePtr(start*g.affineBytes)
		if withBases {
			bp = ws.Ptr() + cudaspans.DevicePtr(p.offBases)
			if err := cudaspans.HtoD(ctx, s, bp, hostBases[start*g.affineBytes:(start+k)*g.affineBytes]); err != nil {
				return fmt.Errorf("msm: copy bases: %w", err)
			}
		}
		wsums, err := m.pass(ctx, s, g, ws.Ptr(), p, bp, sc.slice(start, k))
		if err != nil {
			return err
		}
		combine(wsums, p.c)
	}
	return nil
}

// workspace returns a device workspace of at least bytes and the function
// that gives it back: the proof's key's buffer from pool (Call.KeyID),
// or one allocated now and released at once when there is no key or pool.
func (m *MSM) workspace(ctx context.Context, key string, pool *DeviceBases, bytes int) (*cudaspans.DeviceBuffer, func() error, error) {
	if key != "" && pool != nil {
		ws, done, err := pool.ProofBuffer(ctx, key, "msm.workspace", bytes)
		if err != nil {
			return nil, nil, err
		}
		return ws, func() error { done(); return nil }, nil
	}
	ws, err := m.c.Alloc(ctx, bytes)
	if err != nil {
		return nil, nil, err
	}
	return ws, func() error { return m.releaser.Release(ctx, "msm.workspace", ws) }, nil
}

// xyzzBuckets sums each bucket in XYZZ: segments of at most MSM_SEGMENT
// points in parallel, then the segments of a bucket pairwise.
func (m *MSM) xyzzBuckets(ctx context.Context, s *cudaspans.Stream, g *msmGroup, at func(int) cudaspans.DevicePtr, p msmPlan,
	bases cudaspans.DevicePtr) error {
	n, nb, segCap := uint32(p.n), uint32(p.nb), uint32(p.segCap)
	grid := cudaspans.Dim3{X: uint32((p.segCap + msmBlock - 1) / msmBlock), Y: uint32(p.nwin), Z: 1}
	if err := s.Launch(ctx, g.accumulate, grid, cudaspans.D1(msmBlock), 0,
		bases, at(p.offSorted), at(p.offCounts), at(p.offBoff), at(p.offSegOff), n, nb, segCap,
		at(p.offPartials), at(p.offSegB)); err != nil {
		return err
	}
	// Pairwise passes up to the longest possible bucket
	// (ceil(n/MSM_SEGMENT) segments); passes with nothing to add
	// return at once.
	maxSeg := (p.n + msmSegment - 1) / msmSegment
	for stride := 1; stride < maxSeg; stride <<= 1 {
		if err := s.Launch(ctx, g.merge, grid, cudaspans.D1(msmBlock), 0,
			at(p.offPartials), at(p.offSegB), at(p.offSegOff), nb, segCap, uint32(stride)); err != nil {
			return err
		}
	}
	return nil
}

// affineBuckets sums each bucket by levels of batched affine additions
// (msmaffine.cuh) until no bucket holds more than p.affine points, then
// the rest of each in XYZZ into its first segment of partials, where the
// window reduction reads it. The number of levels comes from the largest
// bucket, read back once after the first count.
func (m *MSM) affineBuckets(ctx context.Context, s *cudaspans.Stream, g *msmGroup, at func(int) cudaspans.DevicePtr, p msmPlan,
	bases cudaspans.DevicePtr) error {
	n, nb := uint32(p.n), uint32(p.nb)
	if g.affineLevel == nil || g.affineFinish == nil || g.affineScan == nil {
		return errors.New("internal error: affine bucket sums without their kernels")
	}
	if err := s.Launch(ctx, g.fill, cudaspans.D1(1), cudaspans.D1(32), 0, at(p.offMax), uint32(0), uint32(1)); err != nil {
		return err
	}
	type counts struct{ cnt, off int }
	in, out := counts{p.offCounts, p.offBoff}, counts{p.offCntA, p.offOffA}
	scan := func(maxPtr cudaspans.DevicePtr) error {
		return s.Launch(ctx, g.affineScan, cudaspans.D1(p.nwin), cudaspans.D1(msmScanThreads), 0,
			at(in.cnt), nb, at(out.cnt), at(out.off), at(p.offTot), maxPtr)
	}
	if err := scan(at(p.offMax)); err != nil {
		return err
	}
	top := make([]uint32, 1)
	if err := cudaspans.DtoH(ctx, s, top, at(p.offMax)); err != nil {
		return fmt.Errorf("copy the largest bucket: %w", err)
	}
	if err := s.Synchronize(ctx); err != nil {
		return err
	}
	levels := affineLevels(int(top[0]), p.affine)
	sorted := at(p.offSorted)
	var src cudaspans.DevicePtr
	var srcStride uint64
	for l := 0; l < levels; l++ {
		if l > 0 {
			if err := scan(0); err != nil {
				return err
			}
		}
		dst, dstStride := at(p.offX), uint64(p.r1)
		if l%2 == 1 {
			dst, dstStride = at(p.offY), uint64(p.r2)
		}
		outputs := (p.n+(1<<(l+1))-1)>>(l+1) + p.nb // per window, at most
		per := affinePer(outputs * p.nwin)
		threads := (outputs + per - 1) / per
		grid := cudaspans.Dim3{X: uint32((threads + msmBlock - 1) / msmBlock), Y: uint32(p.nwin), Z: 1}
		if err := s.Launch(ctx, g.affineLevel, grid, cudaspans.D1(msmBlock), 0,
			bases, sorted, n, src, srcStride, at(in.cnt), at(in.off), at(out.off), at(p.offTot), nb, uint32(per),
			dst, dstStride); err != nil {
			return err
		}
		sorted, src, srcStride = 0, dst, dstStride
		in, out = out, in
	}
	grid := cudaspans.Dim3{X: uint32((p.nb + msmBlock - 1) / msmBlock), Y: uint32(p.nwin), Z: 1}
	return s.Launch(ctx, g.affineFinish, grid, cudaspans.D1(msmBlock), 0,
		bases, sorted, n, src, srcStride, at(in.cnt), at(in.off), at(p.offSegOff), nb, uint32(p.segCap), at(p.offPartials))
}

// pass runs the kernels over one chunk and returns its window sums.
func (m *MSM) pass(ctx context.Context, s *cudaspans.Stream, g *msmGroup, ws cudaspans.DevicePtr, p msmPlan,
	bases cudaspans.DevicePtr, sc scalars) ([]byte, error) {
	at := func(off int) cudaspans.DevicePtr { return ws + cudaspans.DevicePtr(off) }
	n, c, nwin, nb := uint32(p.n), uint32(p.c), uint32(p.nwin), uint32(p.nb)
	segCap := uint32(p.segCap)
	wb := p.nwin * p.nb
	grid := func(x, y int) cudaspans.Dim3 { return cudaspans.Dim3{X: uint32(x), Y: uint32(y), Z: 1} }
	blocks := func(threads, per int) int { return (threads + per - 1) / per }

	steps := []func() error{
		func() error { return sc.copyTo(ctx, s, at(p.offScalars)) },
		func() error {
			return s.Launch(ctx, g.fill, cudaspans.D1(blocks(wb, 256)), cudaspans.D1(256), 0, at(p.offCounts), uint32(0), uint32(wb))
		},
		func() error {
			return s.Launch(ctx, g.digits, cudaspans.D1(blocks(p.n, 256)), cudaspans.D1(256), 0,
				at(p.offScalars), n, c, nwin, at(p.offCounts))
		},
		func() error {
			return s.Launch(ctx, g.scan, cudaspans.D1(p.nwin), cudaspans.D1(msmScanThreads), 0,
				at(p.offCounts), nb, at(p.offBoff), at(p.offCursor), at(p.offSegOff))
		},
		func() error {
			return s.Launch(ctx, g.scatter, cudaspans.D1(blocks(p.n, 256)), cudaspans.D1(256), 0,
				at(p.offScalars), n, c, nwin, at(p.offCursor), at(p.offSorted))
		},
		func() error {
			if p.affine > 0 {
				return m.affineBuckets(ctx, s, g, at, p, bases)
			}
			return m.xyzzBuckets(ctx, s, g, at, p, bases)
		},
		func() error {
			return s.Launch(ctx, g.reduce, grid(blocks(p.nslices, msmBlock), p.nwin), cudaspans.D1(msmBlock), 0,
				at(p.offPartials), at(p.offSegOff), nb, uint32(p.m), segCap, at(p.offParts))
		},
		func() error {
			return s.Launch(ctx, g.windowSum, cudaspans.D1(p.nwin), cudaspans.D1(msmWindowThreads), 0,
				at(p.offParts), uint32(p.nslices), at(p.offWSums))
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("msm: %w", err)
		}
	}
	wsums := make([]byte, p.nwin*g.xyzzBytes)
	if err := cudaspans.DtoH(ctx, s, wsums, at(p.offWSums)); err != nil {
		return nil, fmt.Errorf("msm: copy window sums: %w", err)
	}
	if err := s.Synchronize(ctx); err != nil {
		return nil, fmt.Errorf("msm: %w", err)
	}
	return wsums, nil
}
