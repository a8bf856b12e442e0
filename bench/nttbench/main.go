// Command nttbench times the GPU NTT (prover/gpu) against gnark-crypto's FFT
// on the same host's cores, in the same run, against the byte floor (each
// element read and written once, over the measured device-to-device copy
// bandwidth) and against the multiply floor (the n/2·log2 n butterfly
// multiplications over the Fr multiplication rate measured by
// gpu.MeasureRates). Results go to bench/ntt.md.
//
//	go build -o .dev/bin/nttbench ./bench/nttbench   # here
//	./.dev/bin/nttbench -sizes 20,24,27                # on the GPU host
package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/device"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/gpu"
	"github.com/otelcuzk/otelcuzk/prover/gpu/ntt"
)

func main() {
	sizes := flag.String("sizes", "20,24,27", "log2 sizes, comma-separated")
	reps := flag.Int("reps", 10, "timed GPU repetitions (median reported)")
	hmax := flag.Int("computeh-max", 24, "largest log2 size for the compute_h comparison")
	variants := flag.String("variants", "", "kernel macro sets to compare, ';'-separated, each K=V,K=V (see ntt.WithDefines)")
	flag.Parse()
	if *variants != "" {
		benchutil.Exit("nttbench", runVariants(*variants))
	}
	benchutil.Exit("nttbench", run(*sizes, *reps, *hmax))
}

func run(sizeList string, reps, hmax int) error {
	ctx := context.Background()
	c, s, err := device.Open()
	if err != nil {
		return err
	}
	defer c.Close()
	e, err := ntt.New(ctx, c)
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Println(device.Line(c))

	// Device-to-device copy bandwidth, bytes read plus written.
	const copyBytes = 4 << 30
	x, err := c.Alloc(ctx, copyBytes)
	if err != nil {
		return err
	}
	y, err := c.Alloc(ctx, copyBytes)
	if err != nil {
		return err
	}
	var ct []time.Duration
	for i := 0; i < 6; i++ {
		t0 := time.Now()
		if err := s.CopyDtoD(ctx, y.Ptr(), x.Ptr(), copyBytes); err != nil {
			return err
		}
		if err := s.Synchronize(ctx); err != nil {
			return err
		}
		if i > 0 {
			ct = append(ct, time.Since(t0))
		}
	}
	x.Free()
	y.Free()
	bw := 2 * float64(copyBytes) / benchutil.Median(ct).Seconds() // bytes/s
	fmt.Printf("d2d copy: %.0f GB/s (read+write, 4 GiB, median of 5)\n", bw/1e9)
	// The compute floor: the NTT's n/2·log2 n butterflies each take one Fr
	// Montgomery multiplication (ff.cuh's, measured at full occupancy).
	rates, err := gpu.MeasureRates(ctx, c, nil)
	if err != nil {
		return err
	}
	fmt.Printf("measured rates (kernels/rate.cu): Fr mul %.1f G/s, Fp mul %.1f G/s, 32-bit mad.lo %.0f G/s, mad.hi %.0f G/s\n\n",
		rates.FrMul/1e9, rates.FpMul/1e9, rates.IMADLo/1e9, rates.IMADHi/1e9)

	fmt.Println("| size | GPU forward NTT (ms) | gnark-crypto FFT, host cores (ms) | CPU/GPU | byte floor (ms) | GPU/byte floor | multiply floor (ms) | GPU/multiply floor | tables (ms) | equal |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	var hrows []string
	for _, f := range strings.Split(sizeList, ",") {
		logn, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		n := 1 << logn
		d := fft.NewDomain(uint64(n))
		v := benchutil.RandomScalars(n)
		buf, err := c.Alloc(ctx, n*32)
		if err != nil {
			return err
		}
		if err := cudaspans.HtoD(ctx, s, buf.Ptr(), v); err != nil {
			return err
		}
		if err := s.Synchronize(ctx); err != nil {
			return err
		}
		// The first call builds the domain's tables.
		t0 := time.Now()
		if err := e.Transform(ctx, s, d, buf.Ptr(), ntt.DIF, false, false); err != nil {
			return err
		}
		if err := s.Synchronize(ctx); err != nil {
			return err
		}
		first := time.Since(t0)
		var gt []time.Duration
		for i := 0; i < reps; i++ {
			t0 := time.Now()
			if err := e.Transform(ctx, s, d, buf.Ptr(), ntt.DIF, false, false); err != nil {
				return err
			}
			if err := s.Synchronize(ctx); err != nil {
				return err
			}
			gt = append(gt, time.Since(t0))
		}
		gpuT := benchutil.Median(gt)
		// Checked run on the original input.
		if err := cudaspans.HtoD(ctx, s, buf.Ptr(), v); err != nil {
			return err
		}
		if err := e.Transform(ctx, s, d, buf.Ptr(), ntt.DIF, false, false); err != nil {
			return err
		}
		got := make([]fr.Element, n)
		if err := cudaspans.DtoH(ctx, s, got, buf.Ptr()); err != nil {
			return err
		}
		if err := s.Synchronize(ctx); err != nil {
			return err
		}
		cpuReps := 3
		if logn >= 26 {
			cpuReps = 1
		}
		var cts []time.Duration
		var want []fr.Element
		for i := 0; i < cpuReps; i++ {
			want = slices.Clone(v)
			runtime.GC()
			t0 := time.Now()
			d.FFT(want, fft.DIF)
			cts = append(cts, time.Since(t0))
		}
		cpuT := benchutil.Median(cts)
		equal := slices.Equal(got, want)
		floor := time.Duration(2 * float64(n*32) / bw * 1e9)
		mulFloor := time.Duration(float64(n/2) * float64(logn) / rates.FrMul * 1e9)
		fmt.Printf("| 2^%d | %.3f | %.1f | %.0fx | %.3f | %.1fx | %.3f | %.2fx | %.1f | %v |\n", logn, benchutil.Ms(gpuT), benchutil.Ms(cpuT), benchutil.Ms(cpuT)/benchutil.Ms(gpuT),
			benchutil.Ms(floor), benchutil.Ms(gpuT)/benchutil.Ms(floor), benchutil.Ms(mulFloor), benchutil.Ms(gpuT)/benchutil.Ms(mulFloor), benchutil.Ms(first-gpuT), equal)
		want, got = nil, nil

		if logn <= hmax {
			row, err := computeH(ctx, c, e, s, d, n)
			if err != nil {
				return err
			}
			hrows = append(hrows, row)
		}
		buf.Free()
		runtime.GC()
	}
	if len(hrows) > 0 {
		fmt.Println()
		fmt.Println("| size | GPU compute_h, data resident (ms) | GPU compute_h with copies, Backend path (ms) | CPU backend compute_h (ms) | CPU/GPU | equal |")
		fmt.Println("|---|---|---|---|---|---|")
		for _, r := range hrows {
			fmt.Println(r)
		}
	}
	return nil
}

func computeH(ctx context.Context, c *cudaspans.Context, e *ntt.Engine, s *cudaspans.Stream, d *fft.Domain, n int) (string, error) {
	a, b, cc := benchutil.RandomScalars(n), benchutil.RandomScalars(n), benchutil.RandomScalars(n)
	var bufs []*cudaspans.DeviceBuffer
	defer func() {
		for _, b := range bufs {
			b.Free()
		}
	}()
	for range 3 {
		buf, err := c.Alloc(ctx, n*32)
		if err != nil {
			return "", err
		}
		bufs = append(bufs, buf)
	}
	upload := func() error {
		for i, v := range [][]fr.Element{a, b, cc} {
			if err := cudaspans.HtoD(ctx, s, bufs[i].Ptr(), v); err != nil {
				return err
			}
		}
		return nil
	}
	var resident, withCopies []time.Duration
	got := make([]fr.Element, n)
	for i := 0; i < 4; i++ {
		t0 := time.Now()
		if err := upload(); err != nil {
			return "", err
		}
		t1 := time.Now()
		if err := e.ComputeH(ctx, s, d, bufs[0].Ptr(), bufs[1].Ptr(), bufs[2].Ptr()); err != nil {
			return "", err
		}
		t2 := time.Now()
		if err := cudaspans.DtoH(ctx, s, got, bufs[0].Ptr()); err != nil {
			return "", err
		}
		if err := s.Synchronize(ctx); err != nil {
			return "", err
		}
		if i > 0 {
			resident = append(resident, t2.Sub(t1))
			withCopies = append(withCopies, time.Since(t0))
		}
	}
	want := slices.Clone(a)
	runtime.GC()
	t0 := time.Now()
	if err := cpu.New(nil).ComputeH(ctx, "", d, want, slices.Clone(b), slices.Clone(cc)); err != nil {
		return "", err
	}
	cpuT := time.Since(t0)
	g := benchutil.Median(resident)
	return fmt.Sprintf("| 2^%d | %.2f | %.2f | %.1f | %.0fx | %v |", bitsLen(n), benchutil.Ms(g), benchutil.Ms(benchutil.Median(withCopies)), benchutil.Ms(cpuT),
		benchutil.Ms(cpuT)/benchutil.Ms(benchutil.Median(withCopies)), slices.Equal(got, want)), nil
}

func bitsLen(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

// runVariants compiles the NTT kernels with each macro set, checks every
// transform against gnark-crypto (2^11, 2^20) and compute_h against the CPU
// backend (2^16), and times the forward NTT and compute_h at 2^24.
func runVariants(list string) error {
	ctx := context.Background()
	c, s, err := device.Open()
	if err != nil {
		return err
	}
	defer c.Close()
	type ref struct {
		d  *fft.Domain
		in []fr.Element
		// out[dec][inverse][coset]
		out [2][2][2][]fr.Element
	}
	refs := map[int]*ref{}
	for _, logn := range []int{11, 20} {
		n := 1 << logn
		r := &ref{d: fft.NewDomain(uint64(n)), in: benchutil.RandomScalars(n)}
		for dec := 0; dec < 2; dec++ {
			for inv := 0; inv < 2; inv++ {
				for co := 0; co < 2; co++ {
					v := slices.Clone(r.in)
					var opts []fft.Option
					if co == 1 {
						opts = append(opts, fft.OnCoset())
					}
					fd := fft.DIF
					if dec == 1 {
						fd = fft.DIT
					}
					if inv == 1 {
						r.d.FFTInverse(v, fd, opts...)
					} else {
						r.d.FFT(v, fd, opts...)
					}
					r.out[dec][inv][co] = v
				}
			}
		}
		refs[logn] = r
	}
	const hlog = 16
	hd := fft.NewDomain(1 << hlog)
	ha, hb, hc := benchutil.RandomScalars(1<<hlog), benchutil.RandomScalars(1<<hlog), benchutil.RandomScalars(1<<hlog)
	hwant := slices.Clone(ha)
	if err := cpu.New(nil).ComputeH(ctx, "", hd, hwant, slices.Clone(hb), slices.Clone(hc)); err != nil {
		return err
	}
	const blog = 24
	bn := 1 << blog
	bd := fft.NewDomain(uint64(bn), fft.WithoutPrecompute())
	bv := benchutil.RandomScalars(bn)
	var bufs []*cudaspans.DeviceBuffer
	for range 3 {
		b, err := c.Alloc(ctx, bn*32)
		if err != nil {
			return err
		}
		defer b.Free()
		if err := cudaspans.HtoD(ctx, s, b.Ptr(), bv); err != nil {
			return err
		}
		bufs = append(bufs, b)
	}
	fmt.Println("| kernel macros | equal (8 transforms at 2^11 and 2^20, compute_h 2^16) | forward NTT 2^24 (ms) | compute_h 2^24, resident (ms) | Fr mul (G/s) | Fp mul (G/s) | multiply floor 2^24 (ms) |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, vs := range strings.Split(list, ";") {
		defs, err := device.Defines(vs)
		if err != nil {
			return err
		}
		e, err := ntt.New(ctx, c, ntt.WithDefines(defs))
		if err != nil {
			fmt.Printf("| %s | compile failed: %v | | |\n", vs, err)
			continue
		}
		equal := true
		for logn, r := range refs {
			n := 1 << logn
			buf, err := c.Alloc(ctx, n*32)
			if err != nil {
				return err
			}
			got := make([]fr.Element, n)
			for dec := 0; dec < 2; dec++ {
				for inv := 0; inv < 2; inv++ {
					for co := 0; co < 2; co++ {
						if err := cudaspans.HtoD(ctx, s, buf.Ptr(), r.in); err != nil {
							return err
						}
						if err := e.Transform(ctx, s, r.d, buf.Ptr(), ntt.Decimation(dec), inv == 1, co == 1); err != nil {
							return err
						}
						if err := cudaspans.DtoH(ctx, s, got, buf.Ptr()); err != nil {
							return err
						}
						if err := s.Synchronize(ctx); err != nil {
							return err
						}
						equal = equal && slices.Equal(got, r.out[dec][inv][co])
					}
				}
			}
			buf.Free()
		}
		{
			var hb3 []*cudaspans.DeviceBuffer
			for _, v := range [][]fr.Element{ha, hb, hc} {
				b, err := c.Alloc(ctx, len(v)*32)
				if err != nil {
					return err
				}
				if err := cudaspans.HtoD(ctx, s, b.Ptr(), v); err != nil {
					return err
				}
				hb3 = append(hb3, b)
			}
			if err := e.ComputeH(ctx, s, hd, hb3[0].Ptr(), hb3[1].Ptr(), hb3[2].Ptr()); err != nil {
				return err
			}
			got := make([]fr.Element, len(ha))
			if err := cudaspans.DtoH(ctx, s, got, hb3[0].Ptr()); err != nil {
				return err
			}
			if err := s.Synchronize(ctx); err != nil {
				return err
			}
			equal = equal && slices.Equal(got, hwant)
			for _, b := range hb3 {
				b.Free()
			}
		}
		var ft, ht []time.Duration
		for i := 0; i < 11; i++ {
			t0 := time.Now()
			if err := e.Transform(ctx, s, bd, bufs[i%3].Ptr(), ntt.DIF, false, false); err != nil {
				return err
			}
			if err := s.Synchronize(ctx); err != nil {
				return err
			}
			if i > 0 {
				ft = append(ft, time.Since(t0))
			}
		}
		for i := 0; i < 3; i++ {
			t0 := time.Now()
			if err := e.ComputeH(ctx, s, bd, bufs[0].Ptr(), bufs[1].Ptr(), bufs[2].Ptr()); err != nil {
				return err
			}
			ht = append(ht, time.Since(t0))
		}
		rates, err := gpu.MeasureRates(ctx, c, defs)
		if err != nil {
			return err
		}
		floor := float64(bn/2) * blog / rates.FrMul * 1e3
		fmt.Printf("| %s | %v | %.3f | %.2f | %.1f | %.1f | %.3f |\n", vs, equal, benchutil.Ms(benchutil.Median(ft)), benchutil.Ms(benchutil.Median(ht)),
			rates.FrMul/1e9, rates.FpMul/1e9, floor)
		e.Close()
	}
	fmt.Println()
	return nil
}
