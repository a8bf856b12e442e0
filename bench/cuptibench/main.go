// Command cuptibench measures, on a GPU host, what CUPTI activity capture
// (package cupti) costs a full CUDA prove and how well CUPTI's kernel
// durations agree with cudaspans' CUDA-event durations, in one run:
//
//	cuptibench -circuit merkle -log2 20 -reps 5
//
// Proofs cycle through capture off, on, and on without cuda.cupti_ms on
// cudaspans' spans (WithoutCudaspansDurations: CUPTI's durations neither
// taken nor waited for at each Synchronize), one warm-up of each first,
// on one CUDA backend, so drift of clocks and caches falls on both sides;
// the prove time (synthesis excluded) is compared by median. Every kernel span
// of the proofs with capture on carries cuda.gpu_ms (events) and
// cuda.cupti_ms (CUPTI); agreement is counted against max(1 %, 2 µs).
// Results go to stdout and -out. bench/cupti.md says how to read them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/logger"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/cupti"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	_ "github.com/otelcuzk/otelcuzk/prover/gpu" // registers the cuda backend
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

var out io.Writer = os.Stdout

func say(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }

func main() {
	circuit := flag.String("circuit", "merkle", "built-in circuit")
	lg := flag.Int("log2", 20, "log2 of the constraint count")
	reps := flag.Int("reps", 5, "timed proofs with capture off, and as many with it on")
	backend := flag.String("backend", "cuda", "prover backend (cpu: a check of this program without a GPU)")
	cacheDir := benchutil.CacheDirFlag()
	loopN := flag.Int("loop", 0, "instead of proofs: this many short kernels through cudaspans (e.g. 100000), capture off vs on")
	agreeN := flag.Int("agree", 0, "instead of proofs: this many kernels of 5 µs to 2 ms in each of three arrangements (queued, idle stream, SMs held), CUPTI's durations against the events'")
	outPath := flag.String("out", "", "results file (default $OUT/cuptibench.txt when $OUT is set, else stdout only)")
	flag.Parse()
	logger.Disable()
	if *outPath == "" && os.Getenv("OUT") != "" {
		*outPath = os.Getenv("OUT") + "/cuptibench.txt"
	}
	if *outPath != "" {
		f, err := os.Create(*outPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cuptibench:", err)
			os.Exit(1)
		}
		defer f.Close()
		out = io.MultiWriter(os.Stdout, f)
	}
	if *agreeN > 0 {
		if err := runAgree(context.Background(), *agreeN); err != nil {
			say("cuptibench: %v", err)
			os.Exit(1)
		}
		return
	}
	if *loopN > 0 {
		if err := runLoop(context.Background(), *loopN, *reps); err != nil {
			say("cuptibench: %v", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background(), *backend, *circuit, *lg, *reps, *cacheDir); err != nil {
		say("cuptibench: %v", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, backendName, circuit string, lg, reps int, cacheDir string) error {
	if path, v, err := cupti.Locate(); err != nil {
		return err
	} else {
		say("CUPTI %s, API version %d", path, v)
	}
	cache, err := keycache.New(cacheDir)
	if err != nil {
		return err
	}
	in, ccs, err := benchutil.Compile(circuit, lg)
	if err != nil {
		return err
	}
	t0 := time.Now()
	k, err := cache.Load(ctx, ccs)
	if err != nil {
		return err
	}
	say("%s 2^%d: %d constraints, keys in %.1f s (cache hit %v)", circuit, lg, ccs.GetNbConstraints(), time.Since(t0).Seconds(), k.CacheHit)
	w, err := in.Witness(1)
	if err != nil {
		return err
	}
	pub, err := w.Public()
	if err != nil {
		return err
	}
	rec, tp, rel, closeTracing, err := benchutil.SyncTracing()
	if err != nil {
		return err
	}
	defer closeTracing(ctx)
	open, ok := backend.Lookup(backendName)
	if !ok {
		return errors.New("no backend " + backendName + " registered in this binary")
	}
	// The device settings of cuzk prove: CUZK_CUDA_HOST_COPY and
	// CUZK_CUDA_MSM_G2, which the backend no longer reads itself.
	b, err := open(ctx, backend.Options{TracerProvider: tp, Releaser: rel, Device: benchutil.DeviceSettingsFromEnv()})
	if err != nil {
		return err
	}
	defer b.Close()

	// The three variants of variantNames in turn.
	times := make([][]time.Duration, len(variantNames))
	var stats cupti.Stats
	for i := -3; i < 3*reps; i++ {
		v := (i + 3) % 3
		c, err := startVariant(ctx, tp, v)
		if err != nil {
			return err
		}
		runtime.GC()
		proof, _, d, err := benchutil.Prove(ctx, ccs, k, w, b, rel, tp)
		if c != nil {
			c.Close(ctx)
			if i >= 0 && v == 1 {
				s := c.Stats()
				stats.Kernels += s.Kernels
				stats.Memcpys += s.Memcpys
				stats.Memsets += s.Memsets
				stats.Syncs += s.Syncs
				stats.Deduplicated += s.Deduplicated
				stats.Dropped += s.Dropped
				stats.CudaspansWithCUPTI += s.CudaspansWithCUPTI
				stats.CudaspansWithoutCUPTI += s.CudaspansWithoutCUPTI
			}
		}
		if err != nil {
			return err
		}
		if err := groth16.Verify(proof, k.VK, pub); err != nil {
			return fmt.Errorf("proof does not verify: %w", err)
		}
		if i < 0 {
			say("warm-up, capture %s: prove %.1f ms", variantNames[v], benchutil.Ms(d))
			rec.Reset()
			continue
		}
		say("proof %d, capture %s: prove %.1f ms", i/3, variantNames[v], benchutil.Ms(d))
		times[v] = append(times[v], d)
		if v == 2 {
			// Agreement is read from the "on" proofs only.
			keepOn(rec)
		}
	}
	off, on, lite := times[0], times[1], times[2]
	mOff, mOn := benchutil.Median(off), benchutil.Median(on)
	say("\nprove, median of %d: capture off %.1f ms, on %.1f ms: overhead %+.2f %% (target <= 2 %%)",
		reps, benchutil.Ms(mOff), benchutil.Ms(mOn), 100*(float64(mOn)/float64(mOff)-1))
	say("capture on without cupti_ms: median %.1f ms: overhead %+.2f %%", benchutil.Ms(benchutil.Median(lite)),
		100*(float64(benchutil.Median(lite))/float64(benchutil.Median(off))-1))
	say("records with capture on (timed proofs): %d kernel, %d memcpy, %d memset, %d sync spans of CUPTI's own; %d deduplicated (cudaspans' work); %d dropped",
		stats.Kernels, stats.Memcpys, stats.Memsets, stats.Syncs, stats.Deduplicated, stats.Dropped)
	say("cudaspans kernel spans with capture on (timed proofs, %s): %d with cuda.cupti_ms, %d without", flushMode(), stats.CudaspansWithCUPTI, stats.CudaspansWithoutCUPTI)
	agreement("proofs", onSpans)
	return nil
}

// flushMode names how the "on" captures give cudaspans' spans their
// cuda.cupti_ms: without a forced CUPTI flush, spans held for their
// records (cupti's default), or with one at each Synchronize
// ($CUZK_CUPTI_NO_FORCED_FLUSH=0, cupti.NoForcedFlushEnv, the only value
// that asks for it; a value cupti does not take keeps the default, and
// cupti says so).
func flushMode() string {
	switch v := os.Getenv(cupti.NoForcedFlushEnv); v {
	case "0":
		return cupti.NoForcedFlushEnv + "=0: forced flush at each Synchronize"
	case "", "1":
		return "no forced flush (the default), spans held for their records"
	default:
		return cupti.NoForcedFlushEnv + "=" + v + ": no forced flush, spans held for their records"
	}
}

// onSpans are the spans of the proofs with capture on (and cupti_ms).
var onSpans []sdktrace.ReadOnlySpan

// keepOn moves the recorded spans of the last off/on/lite round's "on"
// proof into onSpans: the round's spans are recorded in order, so those
// carrying cuda.cupti_ms are the "on" proof's.
func keepOn(rec *otelcuzk.Recorder) {
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == "cuda.cupti_ms" {
				onSpans = append(onSpans, s)
				break
			}
		}
	}
	rec.Reset()
}

// agreement compares cuda.cupti_ms with cuda.gpu_ms on every kernel span
// that has both; label names the set in the line.
func agreement(label string, spans []sdktrace.ReadOnlySpan) {
	var diffs []float64 // ms, CUPTI − events
	within := 0
	for _, s := range spans {
		var cu, ev float64
		var hasCu, hasEv bool
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "cuda.cupti_ms":
				cu, hasCu = kv.Value.AsFloat64(), true
			case "cuda.gpu_ms":
				ev, hasEv = kv.Value.AsFloat64(), true
			}
		}
		if !hasCu || !hasEv {
			continue
		}
		d := cu - ev
		diffs = append(diffs, d)
		if math.Abs(d) <= math.Max(0.01*ev, 0.002) {
			within++
		}
	}
	if len(diffs) == 0 {
		say("agreement (%s): no kernel span carried both durations (was the cudaspans hook installed?)", label)
		return
	}
	abs := make([]float64, len(diffs))
	for i, d := range diffs {
		abs[i] = math.Abs(d)
	}
	sort.Float64s(abs)
	sort.Float64s(diffs)
	q := func(x []float64, p float64) float64 { return x[int(p*float64(len(x)-1))] }
	say("agreement (%s) over %d kernels: %d (%.1f %%) within max(1 %%, 2 µs); CUPTI − events: median %+.4f ms, |diff| p50 %.4f, p99 %.4f, max %.4f ms",
		label, len(diffs), within, 100*float64(within)/float64(len(diffs)), q(diffs, 0.5), q(abs, 0.5), q(abs, 0.99), abs[len(abs)-1])
	// The event pair around a launch also times the GPU's own start of
	// the kernel, a fixed part: with the median difference taken off, how
	// many agree says whether the rest is that offset or varies.
	off := q(diffs, 0.5)
	fixed := 0
	for _, d := range diffs {
		if math.Abs(d-off) <= 0.002 {
			fixed++
		}
	}
	say("agreement (%s), the median difference %+.4f ms taken off: %d (%.1f %%) within 2 µs; CUPTI − events p1 %+.4f, p99 %+.4f ms",
		label, off, fixed, 100*float64(fixed)/float64(len(diffs)), q(diffs, 0.01), q(diffs, 0.99))
}
