// Command cpuprove compares this project's CPU Groth16 prove with gnark's
// own groth16.Prove on the same circuit, keys and witness, and tracing on
// (every layer, OTLP JSON file exporter) against tracing off, in one run
// with interleaved repetitions. Both sides include the R1CS solve, as
// gnark's Prove does.
//
//	go run ./bench/cpuprove -circuit merkle -log2 14,16 -reps 5
//
// Keys come from the key cache ($CUZK_CACHE_DIR or the user cache), so only
// the first run pays for groth16.Setup. Results: bench/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/logger"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/keys"
)

func main() {
	circuit := flag.String("circuit", "merkle", "built-in circuit")
	sizes := flag.String("log2", "14,16", "comma-separated log2 of the constraint counts")
	reps := flag.Int("reps", 5, "repetitions of each variant (after one warm-up)")
	flag.Parse()
	logger.Disable()
	if err := run(*circuit, *sizes, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "cpuprove:", err)
		os.Exit(1)
	}
}

type variant struct {
	name  string
	prove func() error
	times []time.Duration
}

func run(circuit, sizes string, reps int) error {
	ctx := context.Background()
	host, _ := os.Hostname()
	fmt.Printf("host %s, %s/%s, %d CPUs (GOMAXPROCS %d), %s, %s\n", host, runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), runtime.GOMAXPROCS(0), cpuModel(), runtime.Version())
	cache, err := keys.New("")
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

	fmt.Printf("%-9s %8s  %-22s %9s %9s %9s\n", "circuit", "log2 n", "variant", "median ms", "min ms", "ratio")
	for _, s := range strings.Split(sizes, ",") {
		lg, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("log2 %q: %w", s, err)
		}
		in, err := circuits.Build(circuit, 1<<lg)
		if err != nil {
			return err
		}
		ccs, err := in.Compile()
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
		check := func(p groth16.Proof, err error) error {
			if err != nil {
				return err
			}
			return groth16.Verify(p, k.VK, pub)
		}
		vs := []*variant{
			{name: "gnark groth16.Prove", prove: func() error { return check(groth16.Prove(ccs, k.PK, w)) }},
			{name: "ours, tracing off", prove: func() error {
				return check(prover.Prove(ctx, ccs, k.PK, w, prover.WithTracerProvider(noop.NewTracerProvider())))
			}},
			{name: "ours, tracing on", prove: func() error {
				// A job span as the root, as the pipeline has one.
				jctx, job := traced.Start(ctx, otelcuzk.SpanEngineJob)
				defer job.End()
				return check(prover.Prove(jctx, ccs, k.PK, w, prover.WithTracerProvider(tel.TracerProvider)))
			}},
		}
		for rep := -1; rep < reps; rep++ { // rep −1 warms up
			for _, v := range vs {
				runtime.GC()
				start := time.Now()
				if err := v.prove(); err != nil {
					return fmt.Errorf("%s: %w", v.name, err)
				}
				if rep >= 0 {
					v.times = append(v.times, time.Since(start))
				}
			}
		}
		base := median(vs[0].times)
		for i, v := range vs {
			ratio := float64(median(v.times)) / float64(base)
			label := "vs gnark"
			if i == 2 {
				ratio = float64(median(v.times)) / float64(median(vs[1].times))
				label = "vs off"
			}
			fmt.Printf("%-9s %8d  %-22s %9.1f %9.1f %7.3fx %s\n", circuit, lg, v.name,
				ms(median(v.times)), ms(slices.Min(v.times)), ratio, label)
		}
	}
	return nil
}

func median(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "model name") {
			if i := strings.Index(l, ":"); i >= 0 {
				return strings.TrimSpace(l[i+1:])
			}
		}
	}
	return "unknown CPU"
}
