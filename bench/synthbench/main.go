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
	cf := benchutil.NewCircuitFlags("16,18", 5, "repetitions of each variant (after one warm-up)")
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
	sizes, err := cf.Log2()
	benchutil.Exit("synthbench", err)
	benchutil.Exit("synthbench", run(*cf.Circuit, sizes, *cf.Reps, *cacheDir, tasks))
}

func run(circuit string, sizes []int, reps int, cacheDir string, tasks []int) error {
	fmt.Printf("host: %s, GOMAXPROCS %d\n", host.String(), runtime.GOMAXPROCS(0))
	cache, err := keycache.New(cacheDir, keycache.WithProgress(os.Stderr, false))
	if err != nil {
		return err
	}
	for _, lg := range sizes {
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
		witnessS := &benchutil.Series{Name: "sample witness (native MiMC)"}
		gnarkDefault := &benchutil.Series{Name: fmt.Sprintf("gnark Solve, %d tasks (default)", runtime.NumCPU())}
		var gnarkTasks []*benchutil.Series
		for _, k := range tasks {
			gnarkTasks = append(gnarkTasks, &benchutil.Series{Name: fmt.Sprintf("gnark Solve, %d tasks", k)})
		}
		synth := &benchutil.Series{Name: "prover.Synthesize"}
		solveS := &benchutil.Series{Name: "  synthesize.solve"}
		copyS := &benchutil.Series{Name: "  synthesize.copy"}
		variants := []func() error{
			func() error {
				t := time.Now()
				_, err := r1cs.Solve(w)
				gnarkDefault.Add(time.Since(t))
				return err
			},
			func() error {
				for i, k := range tasks {
					t := time.Now()
					if _, err := r1cs.Solve(w, solver.WithNbTasks(k)); err != nil {
						return err
					}
					gnarkTasks[i].Add(time.Since(t))
				}
				return nil
			},
			func() error {
				rec.Reset()
				t := time.Now()
				asg, err := prover.Synthesize(context.Background(), comp.CCS, w, prover.WithTracerProvider(tp))
				synth.Add(time.Since(t))
				if err != nil {
					return err
				}
				for _, s := range rec.Ended() {
					d := s.EndTime().Sub(s.StartTime())
					switch s.Name() {
					case otelcuzk.SpanSynthesizeSolve:
						solveS.Add(d)
						for _, a := range s.Attributes() {
							if a.Key == otelcuzk.KeySolverTasks {
								picked = int(a.Value.AsInt64())
							}
						}
					case otelcuzk.SpanSynthesizeCopy:
						copyS.Add(d)
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
				witnessS.Add(time.Since(t))
			}
			for _, v := range variants {
				if err := v(); err != nil {
					return err
				}
			}
			if rep == 0 { // warm-up
				for _, s := range append([]*benchutil.Series{gnarkDefault, synth, solveS, copyS}, gnarkTasks...) {
					s.Times = nil
				}
			}
			runtime.GC()
		}
		solveS.Name = fmt.Sprintf("  synthesize.solve (%d tasks)", picked)
		for _, s := range append(append([]*benchutil.Series{witnessS, gnarkDefault}, gnarkTasks...), synth, solveS, copyS) {
			fmt.Println("  " + s.Line(34))
		}
	}
	return nil
}
