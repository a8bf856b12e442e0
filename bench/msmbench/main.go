// Command msmbench compares compile-time variants of the GPU MSM kernels
// (macros of prover/gpu/kernels: MSM_ACCUM_MIN_BLOCKS, FF_PTX_ADDSUB,
// FF_MUL_EVENODD, ...; and affine=N, not a macro: the bucket sums of
// msm.WithAffineBuckets(N), 0 for XYZZ) in one run on one device: each variant is compiled
// with NVRTC, checked against gnark-crypto's MultiExp (G1, and G2 when
// timed) on fresh random inputs and edge inputs, then timed over resident
// bases. Results go to bench/msm.md.
//
//	go build -o .dev/bin/msmbench ./bench/msmbench           # here
//	./.dev/bin/msmbench -log2 24 -variants 'default;MSM_ACCUM_MIN_BLOCKS=4;affine=16'   # on the GPU host
package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc"
	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/device"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/gpu/msm"
)

func main() {
	variants := flag.String("variants", "default", "';'-separated macro sets, each K=V,K=V ('default': none)")
	lg1 := flag.Int("log2", 24, "log2 size of the timed G1 MSM")
	lg2 := flag.Int("g2-log2", 0, "log2 size of the timed G2 MSM (0: G2 not timed)")
	reps := flag.Int("reps", 3, "timed runs per variant after one warm-up (median reported)")
	breakdown := flag.Bool("breakdown", false, "after each variant's timings, one more G1 (pinned) and G2 MSM with their kernel and copy spans summed by name")
	key := flag.Bool("key", false, "the timed MSMs' workspace a proof buffer kept for one key, as in a proof (backend.Call.KeyID), freed after each variant; else allocated and freed per MSM")
	flag.Parse()
	benchutil.Exit("msmbench", run(*variants, *lg1, *lg2, *reps, *breakdown, *key))
}

func run(list string, lg1, lg2, reps int, breakdown, key bool) error {
	ctx := context.Background()
	var rec *otelcuzk.Recorder
	var tracer trace.Tracer
	var open []cudaspans.Option
	if breakdown {
		// The spans of the device's copies and kernels (GPU-timed),
		// recorded in memory.
		rec = otelcuzk.NewRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		tracer = tp.Tracer("msmbench")
		open = append(open, cudaspans.WithTracerProvider(tp))
	}
	c, s, err := device.Open(open...)
	if err != nil {
		return err
	}
	defer c.Close()
	keys, err := msm.NewDeviceBases(ctx, c)
	if err != nil {
		return err
	}
	defer keys.EvictAll(ctx)
	fmt.Println(device.Line(c))

	_, _, g1, g2 := curve.Generators()
	r1 := curve.BatchScalarMultiplicationG1(&g1, benchutil.RandomScalars(1<<16))
	n1 := 1 << lg1
	set1 := backend.BaseSet[curve.G1Affine]{ID: "bench:g1", Points: benchutil.Repeat(r1, n1)}
	sc1 := benchutil.RandomScalars(n1)
	var set2 backend.BaseSet[curve.G2Affine]
	var sc2 []fr.Element
	var r2 []curve.G2Affine
	if lg2 > 0 {
		r2 = curve.BatchScalarMultiplicationG2(&g2, benchutil.RandomScalars(1<<14))
		set2 = backend.BaseSet[curve.G2Affine]{ID: "bench:g2", Points: benchutil.Repeat(r2, 1<<lg2)}
		sc2 = benchutil.RandomScalars(1 << lg2)
	}
	// The correctness inputs: 2^16 random points and scalars, with r−1,
	// 0, 1, infinity and a repeated base mixed in.
	check1, checkS := benchutil.EdgeCheckSet(r1)
	var want1 curve.G1Jac
	if _, err := want1.MultiExp(check1, checkS, ecc.MultiExpConfig{}); err != nil {
		return err
	}
	var want2 curve.G2Jac
	if lg2 > 0 {
		if _, err := want2.MultiExp(r2, checkS[:len(r2)], ecc.MultiExpConfig{}); err != nil {
			return err
		}
	}

	// The same scalars in pinned memory, as the backend's default (staged)
	// copy mode hands them to the MSM: the upload runs at the link's rate.
	pinned, err := c.AllocPinned(ctx, n1*32)
	if err != nil {
		return err
	}
	defer c.Free(ctx, pinned)
	sc1p := unsafe.Slice((*fr.Element)(pinned.Ptr()), n1)
	copy(sc1p, sc1)

	fmt.Printf("\n| variant | compile + checks (s) | G1 2^%d, scalars pageable (ms) | G1 2^%d, scalars pinned (ms) |", lg1, lg1)
	if lg2 > 0 {
		fmt.Printf(" G2 2^%d (ms) |", lg2)
	}
	fmt.Println(" equal to gnark |")
	fmt.Println("|---|---|---|---|" + strings.Repeat("---|", btoi(lg2 > 0)) + "---|")
	for _, v := range strings.Split(list, ";") {
		defs, err := device.Defines(v)
		if err != nil {
			return err
		}
		opts := []msm.Option{}
		if v, ok := defs["affine"]; ok {
			tail, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("variant affine=%q: want a number", v)
			}
			opts = append(opts, msm.WithAffineBuckets(tail))
			delete(defs, "affine")
		}
		t0 := time.Now()
		m, err := msm.New(ctx, c, append(opts, msm.WithCompileOptions(cudaspans.CompileOptions{Defines: defs}))...)
		if err != nil {
			fmt.Printf("| %s | failed: %v |\n", v, err)
			continue
		}
		equal := true
		got1, err := m.G1Host(ctx, backend.Call{}, s, check1, checkS)
		if err != nil {
			return err
		}
		equal = equal && got1.Equal(&want1)
		if lg2 > 0 {
			got2, err := m.G2Host(ctx, backend.Call{}, s, r2, checkS[:len(r2)])
			if err != nil {
				return err
			}
			equal = equal && got2.Equal(&want2)
		}
		compile := time.Since(t0)
		// The timed calls: with -key their workspace is one kept proof
		// buffer of a key whose sets are not the bench's (EvictKeySets
		// below frees only the buffer).
		call := backend.Call{}
		if key {
			call.KeyID = "msmbench-proof"
		}
		t1, err := benchutil.TimeMedian(reps, func() error { _, err := m.G1Resident(ctx, call, s, keys, set1, sc1); return err })
		if err != nil {
			return err
		}
		t1p, err := benchutil.TimeMedian(reps, func() error { _, err := m.G1Resident(ctx, call, s, keys, set1, sc1p); return err })
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %.1f | %.1f | %.1f |", v, compile.Seconds(), benchutil.Ms(t1), benchutil.Ms(t1p))
		if lg2 > 0 {
			t2, err := benchutil.TimeMedian(reps, func() error { _, err := m.G2Resident(ctx, call, s, keys, set2, sc2); return err })
			if err != nil {
				return err
			}
			fmt.Printf(" %.1f |", benchutil.Ms(t2))
		}
		fmt.Printf(" %v |\n", equal)
		if breakdown {
			if err := printBreakdown(ctx, rec, tracer, v, fmt.Sprintf("G1 2^%d pinned", lg1), func(ctx context.Context) error {
				_, err := m.G1Resident(ctx, call, s, keys, set1, sc1p)
				return err
			}); err != nil {
				return err
			}
			if lg2 > 0 {
				if err := printBreakdown(ctx, rec, tracer, v, fmt.Sprintf("G2 2^%d", lg2), func(ctx context.Context) error {
					_, err := m.G2Resident(ctx, call, s, keys, set2, sc2)
					return err
				}); err != nil {
					return err
				}
			}
		}
		m.Close()
		if key {
			if _, err := keys.EvictKeySets(ctx, call.KeyID); err != nil {
				return err
			}
		}
	}
	return nil
}

// printBreakdown runs f once under a span and prints the durations of
// that span's descendants (kernels, copies), summed by name, largest first.
func printBreakdown(ctx context.Context, rec *otelcuzk.Recorder, tracer trace.Tracer, variant, what string,
	f func(context.Context) error) error {
	ctx, span := tracer.Start(ctx, "breakdown")
	t0 := time.Now()
	err := f(ctx)
	total := time.Since(t0)
	span.End()
	if err != nil {
		return err
	}
	id := span.SpanContext().TraceID()
	sums := map[string]time.Duration{}
	counts := map[string]int{}
	ended := rec.Ended()
	rec.Reset()
	for _, sp := range ended {
		if sp.SpanContext().TraceID() == id && sp.Name() != "breakdown" {
			sums[sp.Name()] += sp.EndTime().Sub(sp.StartTime())
			counts[sp.Name()]++
		}
	}
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return int(sums[b] - sums[a]) })
	fmt.Printf("breakdown %s, %s: %.1f ms wall;", variant, what, benchutil.Ms(total))
	for _, n := range names {
		fmt.Printf(" %s %.2f ms (%d);", n, benchutil.Ms(sums[n]), counts[n])
	}
	fmt.Println()
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
