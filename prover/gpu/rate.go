package gpu

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/gpu/kernels"
)

// Rates are the device's measured arithmetic throughputs, per second: the
// compute floor of the NTT (Fr multiplications) and of the MSM (Fp
// multiplications), and the 32-bit integer multiply-add rates they are
// built from (PTX mad.lo.u32 and mad.hi.u32).
type Rates struct {
	FrMul, FpMul, IMADLo, IMADHi float64
}

// rateModule is the NVRTC compile of the rate probes with defines.
func rateModule(defines map[string]string) kernels.Module {
	return kernels.Module{Name: "rate", Source: kernels.Rate, Opts: cudaspans.CompileOptions{
		Headers: map[string]string{"ff.cuh": kernels.FF}, Flags: []string{"-std=c++17"}, Defines: defines},
		Kernels: []string{"rate_fr_mul", "rate_fp_mul", "rate_imad"}}
}

// MeasureRates runs the probes of kernels/rate.cu on c's device: every
// thread of a grid of 8 blocks of 256 threads per multiprocessor runs
// independent chains of each operation; the rate is operations over the
// median wall time of 5 launches (after one warm-up), each long enough
// (milliseconds) that launch overhead does not count. The kernels are
// compiled with NVRTC (cached on disk), with defines (ff.cuh's macros, e.g.
// FF_MUL_EVENODD; nil for the defaults).
func MeasureRates(ctx context.Context, c *cudaspans.Context, defines map[string]string) (Rates, error) {
	var r Rates
	km := rateModule(defines)
	mod, err := c.Compile(ctx, km.Name, km.Source, km.Opts)
	if err != nil {
		return r, fmt.Errorf("gpu: compile rate probes: %w", err)
	}
	defer mod.Close()
	s, err := c.NewStream()
	if err != nil {
		return r, err
	}
	defer s.Close(ctx)
	const block, chains = 256, 4
	blocks := 8 * c.Device().Multiprocessors
	threads := blocks * block
	buf, err := c.Alloc(ctx, threads*48)
	if err != nil {
		return r, err
	}
	defer buf.Free()
	if err := s.Memset(ctx, buf.Ptr(), 0x11, threads*48); err != nil {
		return r, err
	}
	time1 := func(name string, iters uint32, args ...any) (time.Duration, error) {
		f, err := mod.Function(name)
		if err != nil {
			return 0, err
		}
		var ts []time.Duration
		for rep := 0; rep < 6; rep++ {
			t0 := time.Now()
			a := append([]any{buf.Ptr(), iters}, args...)
			if err := s.Launch(ctx, f, cudaspans.D1(blocks), cudaspans.D1(block), 0, a...); err != nil {
				return 0, err
			}
			if err := s.Synchronize(ctx); err != nil {
				return 0, err
			}
			if rep > 0 {
				ts = append(ts, time.Since(t0))
			}
		}
		slices.Sort(ts)
		return ts[len(ts)/2], nil
	}
	ops := func(iters, perIter int) float64 { return float64(threads) * float64(iters) * float64(perIter) }
	const fieldIters, imadIters = 256, 1 << 14
	d, err := time1("rate_fr_mul", fieldIters)
	if err != nil {
		return r, err
	}
	r.FrMul = ops(fieldIters, chains) / d.Seconds()
	if d, err = time1("rate_fp_mul", fieldIters); err != nil {
		return r, err
	}
	r.FpMul = ops(fieldIters, chains) / d.Seconds()
	if d, err = time1("rate_imad", imadIters, int32(0)); err != nil {
		return r, err
	}
	r.IMADLo = ops(imadIters, 8) / d.Seconds()
	if d, err = time1("rate_imad", imadIters, int32(1)); err != nil {
		return r, err
	}
	r.IMADHi = ops(imadIters, 8) / d.Seconds()
	return r, nil
}
