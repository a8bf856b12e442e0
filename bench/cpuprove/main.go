// Command cpuprove compares this project's CPU Groth16 prove with gnark's
// own gnarkgroth16.Prove on the same circuit, keys and witness, and tracing on
// (every layer, OTLP JSON file exporter) against tracing off, in one run
// with interleaved repetitions. Both sides include the R1CS solve, as
// gnark's Prove does.
//
//	go run ./bench/cpuprove -circuit merkle -log2 14,16 -reps 5
//
// Keys come from the key cache ($CUZK_CACHE_DIR or the user cache), so only
// the first run pays for gnarkgroth16.Setup. Results: bench/README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/keycache"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/host"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

func main() {
	cf := benchutil.NewCircuitFlags("14,16", 5, "repetitions of each variant (after one warm-up)")
	sizes := cf.Parse("cpuprove")
	benchutil.Exit("cpuprove", run(*cf.Circuit, sizes, *cf.Reps))
}

type variant struct {
	name  string
	prove func() error
	times []time.Duration // wall clock
	cpu   []time.Duration // user + system CPU time of the process
}

// cpuTime is the user plus system CPU time of this process so far: the
// work a prove did, which other processes on a shared machine disturb far
// less than its wall-clock time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func run(circuit string, sizes []int, reps int) error {
	ctx := context.Background()
	hostname, _ := os.Hostname()
	fmt.Printf("host %s, %s/%s, %s\n", hostname, runtime.GOOS, runtime.GOARCH, host.String())
	cache, err := keycache.New("")
	if err != nil {
		return err
	}
	traceDir, err := os.MkdirTemp("", "cpuprove")
	if err != nil {
		return err
	}
	defer os.RemoveAll(traceDir)
	tel, err := otelcuzk.New(ctx, otelcuzk.WithTraceFile(filepath.Join(traceDir, "trace.jsonl")), otelcuzk.WithoutGlobal())
	if err != nil {
		return err
	}
	defer tel.Shutdown(ctx)
	traced := tel.TracerProvider.Tracer("bench")

	fmt.Printf("%-8s %6s  %-20s %10s %10s %10s %14s %14s %14s\n", "circuit", "log2 n", "variant",
		"median ms", "min ms", "cpu ms", "median ratio", "min ratio", "cpu ratio")
	for _, lg := range sizes {
		in, ccs, err := benchutil.Compile(circuit, lg)
		if err != nil {
			return err
		}
		k, err := cache.Load(ctx, ccs)
		if err != nil {
			return err
		}
		w, err := in.Witness(1)
		if err != nil {
			return err
		}
		pub, _ := w.Public()
		check := func(p gnarkgroth16.Proof, err error) error {
			if err != nil {
				return err
			}
			return gnarkgroth16.Verify(p, k.VK, pub)
		}
		vs := []*variant{
			{name: "gnark gnarkgroth16.Prove", prove: func() error { return check(gnarkgroth16.Prove(ccs, k.PK, w)) }},
			{name: "ours, tracing off", prove: func() error {
				return check(groth16.Prove(ctx, ccs, k.PK, w, prover.WithTracerProvider(noop.NewTracerProvider())))
			}},
			{name: "ours, tracing on", prove: func() error {
				// A job span as the root, as the pipeline has one.
				jctx, job := traced.Start(ctx, semconv.SpanEngineJob)
				defer job.End()
				return check(groth16.Prove(jctx, ccs, k.PK, w, prover.WithTracerProvider(tel.TracerProvider)))
			}},
		}
		for rep := -1; rep < reps; rep++ { // rep −1 warms up
			// Rotate the order each round so that no variant always
			// follows the same one.
			for i := range vs {
				v := vs[(i+max(rep, 0))%len(vs)]
				runtime.GC()
				start, startCPU := time.Now(), cpuTime()
				if err := v.prove(); err != nil {
					return fmt.Errorf("%s: %w", v.name, err)
				}
				if rep >= 0 {
					v.times = append(v.times, time.Since(start))
					v.cpu = append(v.cpu, cpuTime()-startCPU)
				}
			}
		}
		// The end-to-end tracing ratio drowns in the noise of a shared
		// machine; the spans' own cost, measured alone, bounds it.
		spanCost, nbSpans, err := spanCostPerProof(ctx, ccs, k, w, tel)
		if err != nil {
			return err
		}
		defer fmt.Printf("%-8s %6d  spans of one traced proof: %d, creating and exporting them alone: %.3f ms = %.5fx of the median untraced prove\n",
			circuit, lg, nbSpans, benchutil.Ms(spanCost), 1+float64(spanCost)/float64(benchutil.Median(vs[1].times)))

		// Ratios: ours against gnark, and tracing on against tracing off.
		for i, v := range vs {
			ref, label := vs[0], "vs gnark"
			if i == 2 {
				ref, label = vs[1], "vs off"
			}
			fmt.Printf("%-8s %6d  %-20s %10.1f %10.1f %10.1f %7.3fx %-6s %7.3fx %-6s %7.3fx %-6s\n", circuit, lg, v.name,
				benchutil.Ms(benchutil.Median(v.times)), benchutil.Ms(slices.Min(v.times)), benchutil.Ms(benchutil.Median(v.cpu)),
				float64(benchutil.Median(v.times))/float64(benchutil.Median(ref.times)), label,
				float64(slices.Min(v.times))/float64(slices.Min(ref.times)), label,
				float64(benchutil.Median(v.cpu))/float64(benchutil.Median(ref.cpu)), label)
		}
	}
	return nil
}

// spanCostPerProof counts the spans of one traced proof, then times
// making that many spans (start, four attributes, end) through the file
// exporter's provider, averaged over 200 proofs' worth, flush included.
func spanCostPerProof(ctx context.Context, ccs constraint.ConstraintSystem, k *keycache.Keys, w witness.Witness, tel *otelcuzk.Telemetry) (time.Duration, int, error) {
	rec := otelcuzk.NewRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	if _, err := groth16.Prove(ctx, ccs, k.PK, w, prover.WithTracerProvider(tp)); err != nil {
		return 0, 0, err
	}
	n := len(rec.Ended()) + 1 // + the job span of the traced variant
	tr := tel.TracerProvider.Tracer("bench")
	const rounds = 200
	start := time.Now()
	for range rounds {
		jctx, job := tr.Start(ctx, semconv.SpanEngineJob)
		for range n - 1 {
			_, s := tr.Start(jctx, semconv.SpanMSMG1A)
			s.SetAttributes(semconv.KeyMSMSize.Int(1<<16), semconv.KeyBackend.String("cpu"),
				semconv.KeyBufferName.String("a"), semconv.KeyNTTSize.Int(1<<16))
			s.End()
		}
		job.End()
	}
	if err := tel.TracerProvider.ForceFlush(ctx); err != nil {
		return 0, 0, err
	}
	return time.Since(start) / rounds, n, nil
}
