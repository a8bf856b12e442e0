// Command synthbench times one synthesis of a built-in circuit and its
// steps, and gnark's R1CS solver at several task counts, interleaved, so
// the cost of the solver's per-level barriers shows next to the solve
// itself.
//
//	go build -buildvcs=true -o synthbench ./bench/synthbench
//	./synthbench -circuit merkle -log2 20,22 -reps 5 -tasks 1,4,8
//
// Per size it prints the medians (with min and max) of: gnark's Solve with
// its default task count (runtime.NumCPU) and with each count of -tasks
// (default 1); prover.Synthesize (the pipeline's synthesis: solve
// and copies into mmap'd buffers) and its synthesize.solve and
// synthesize.copy spans; and the built-in's sample witness. The compiled
// circuit comes from the circuit cache ($CUZK_CACHE_DIR or the user cache)
// when this binary has a clean VCS revision. Results: bench/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/consensys/gnark/backend/witness"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/logger"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/host"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

func main() {
	circuit := flag.String("circuit", "merkle", "built-in circuit")
	sizes := flag.String("log2", "16,18", "comma-separated log2 of the constraint counts")
	reps := flag.Int("reps", 5, "repetitions of each variant (after one warm-up)")
	cacheDir := flag.String("cache-dir", "", "key and circuit cache (default $CUZK_CACHE_DIR or the user cache)")
	taskList := flag.String("tasks", "1", "comma-separated task counts of gnark's Solve to time besides its default (runtime.NumCPU)")
	flag.Parse()
	logger.Disable()
	var tasks []int
	for _, f := range strings.Split(*taskList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "synthbench: bad -tasks %q: want positive integers\n", f)
			os.Exit(2)
		}
		tasks = append(tasks, n)
	}
	if err := run(*circuit, *sizes, *reps, *cacheDir, tasks); err != nil {
		fmt.Fprintln(os.Stderr, "synthbench:", err)
		os.Exit(1)
	}
}

type series struct {
	name  string
	times []time.Duration
}

func (s *series) String() string {
	t := slices.Clone(s.times)
	slices.Sort(t)
	return fmt.Sprintf("%-34s %9.1f ms  [%.1f, %.1f]", s.name, benchutil.Ms(benchutil.Median(t)), benchutil.Ms(t[0]), benchutil.Ms(t[len(t)-1]))
}

func run(circuit, sizes string, reps int, cacheDir string, tasks []int) error {
	fmt.Printf("host: %s, GOMAXPROCS %d\n", host.String(), runtime.GOMAXPROCS(0))
	cache, err := keycache.New(cacheDir, keycache.WithProgress(os.Stderr, false))
	if err != nil {
		return err
	}
	for _, f := range strings.Split(sizes, ",") {
		lg, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || lg < 1 || lg > 30 {
			return fmt.Errorf("bad -log2 %q", f)
		}
		n := 1 << lg
		in, err := circuits.Build(circuit, n)
		if err != nil {
			return err
		}
		t0 := time.Now()
		comp, err := cache.Compile(context.Background(), circuit, n, in.Compile)
		if err != nil {
			return err
		}
		r1cs := comp.CCS.(*cs.R1CS)
		fmt.Printf("\n%s 2^%d (%s): %d levels, circuit.compile %.2f s (cache %v)\n",
			circuit, lg, in.Shape, len(r1cs.Levels), time.Since(t0).Seconds(), comp.CacheHit)

		rec := otelcuzk.NewRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		var w witness.Witness
		picked := 0
		witnessS := &series{name: "sample witness (native MiMC)"}
		gnarkDefault := &series{name: fmt.Sprintf("gnark Solve, %d tasks (default)", runtime.NumCPU())}
		var gnarkTasks []*series
		for _, k := range tasks {
			gnarkTasks = append(gnarkTasks, &series{name: fmt.Sprintf("gnark Solve, %d tasks", k)})
		}
		synth := &series{name: "prover.Synthesize"}
		solveS := &series{name: "  synthesize.solve"}
		copyS := &series{name: "  synthesize.copy"}
		variants := []func() error{
			func() error {
				t := time.Now()
				_, err := r1cs.Solve(w)
				gnarkDefault.times = append(gnarkDefault.times, time.Since(t))
				return err
			},
			func() error {
				for i, k := range tasks {
					t := time.Now()
					if _, err := r1cs.Solve(w, solver.WithNbTasks(k)); err != nil {
						return err
					}
					gnarkTasks[i].times = append(gnarkTasks[i].times, time.Since(t))
				}
				return nil
			},
			func() error {
				rec.Reset()
				t := time.Now()
				asg, err := prover.Synthesize(context.Background(), comp.CCS, w, prover.WithTracerProvider(tp))
				synth.times = append(synth.times, time.Since(t))
				if err != nil {
					return err
				}
				for _, s := range rec.Ended() {
					d := s.EndTime().Sub(s.StartTime())
					switch s.Name() {
					case otelcuzk.SpanSynthesizeSolve:
						solveS.times = append(solveS.times, d)
						for _, a := range s.Attributes() {
							if a.Key == otelcuzk.KeySolverTasks {
								picked = int(a.Value.AsInt64())
							}
						}
					case otelcuzk.SpanSynthesizeCopy:
						copyS.times = append(copyS.times, d)
					}
				}
				return asg.Release(context.Background(), nil)
			},
		}
		for rep := 0; rep <= reps; rep++ {
			t := time.Now()
			if w, err = in.Witness(1); err != nil {
				return err
			}
			if rep > 0 {
				witnessS.times = append(witnessS.times, time.Since(t))
			}
			for _, v := range variants {
				if err := v(); err != nil {
					return err
				}
			}
			if rep == 0 { // warm-up
				for _, s := range append([]*series{gnarkDefault, synth, solveS, copyS}, gnarkTasks...) {
					s.times = nil
				}
			}
			runtime.GC()
		}
		solveS.name = fmt.Sprintf("  synthesize.solve (%d tasks)", picked)
		for _, s := range append(append([]*series{witnessS, gnarkDefault}, gnarkTasks...), synth, solveS, copyS) {
			fmt.Println("  " + s.String())
		}
	}
	return nil
}
