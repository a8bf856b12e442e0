package main

import (
	"context"
	"time"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// loopSource is a kernel of a few µs on the H200: 2^16 elements, each
// a short chain of multiply-adds.
const loopSource = `
extern "C" __global__ void short_kernel(float *x, unsigned n) {
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float v = x[i];
		for (int k = 0; k < 16; k++) v = v * 0.999f + 0.001f;
		x[i] = v;
	}
}`

// runLoop launches n short kernels through cudaspans (batches of 1000,
// each ended by a Synchronize, which emits the spans and, with CUPTI on,
// puts cuda.cupti_ms on them) with capture off, on, and on without
// cuda.cupti_ms, reps rounds after a warm-up of each, and compares the
// wall time of the whole loop by median.
func runLoop(ctx context.Context, n, reps int) error {
	_, tp, _, closeTracing, err := benchutil.SyncTracing()
	if err != nil {
		return err
	}
	defer closeTracing(ctx)
	c, s, fns, err := openKernels(ctx, tp, "short_kernel", loopSource, "short_kernel")
	if err != nil {
		return err
	}
	defer c.Close()
	fn := fns[0]
	const elems = 1 << 16
	buf, err := c.Alloc(ctx, elems*4)
	if err != nil {
		return err
	}
	defer c.Free(ctx, buf)
	loop := func() (time.Duration, error) {
		t0 := time.Now()
		for i := 0; i < n; i++ {
			if err := s.Launch(ctx, fn, cudaspans.D1(elems/256), cudaspans.D1(256), 0, buf.Ptr(), uint32(elems)); err != nil {
				return 0, err
			}
			if (i+1)%1000 == 0 || i == n-1 {
				if err := s.Synchronize(ctx); err != nil {
					return 0, err
				}
			}
		}
		return time.Since(t0), nil
	}
	times := make([][]time.Duration, len(variantNames))
	for i := -3; i < 3*reps; i++ {
		v := (i + 3) % 3
		capt, err := startVariant(ctx, tp, v)
		if err != nil {
			return err
		}
		d, err := loop()
		if capt != nil {
			capt.Close(ctx)
			if st := capt.Stats(); v == 1 && i >= 0 {
				say("loop %d, capture on (%s): %d kernel spans with cuda.cupti_ms, %d without; %d deduplicated, %d CUPTI kernel spans of its own (cudaspans' launches traced twice when > 0)",
					i/3, flushMode(), st.CudaspansWithCUPTI, st.CudaspansWithoutCUPTI, st.Deduplicated, st.Kernels)
			}
		}
		if err != nil {
			return err
		}
		if i < 0 {
			say("loop warm-up, capture %s: %d kernels in %.1f ms", variantNames[v], n, benchutil.Ms(d))
			continue
		}
		say("loop %d, capture %s: %d kernels in %.1f ms (%.2f µs each)", i/3, variantNames[v], n, benchutil.Ms(d), float64(d.Microseconds())/float64(n))
		times[v] = append(times[v], d)
	}
	mOff := benchutil.Median(times[0])
	for v := 1; v < 3; v++ {
		m := benchutil.Median(times[v])
		say("loop of %d kernels, median of %d: capture %s %.1f ms against off %.1f ms: overhead %+.2f %% (target <= 2 %%)",
			n, reps, variantNames[v], benchutil.Ms(m), benchutil.Ms(mOff), 100*(float64(m)/float64(mOff)-1))
	}
	return nil
}
