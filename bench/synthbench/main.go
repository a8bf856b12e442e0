// Command synthbench times one synthesis of a built-in circuit and its
// steps, before and after this project's changes to the copies, and
// gnark's R1CS solver at several task counts, interleaved in one run.
//
//	go build -buildvcs=true -o synthbench ./bench/synthbench
//	./synthbench -circuit merkle -log2 18,20 -reps 5 -tasks 1
//
// Per size it prints the medians (with min and max) of: the built-in's
// sample witness; gnark's Solve with its default task count
// (runtime.NumCPU) and with each count of -tasks; the synthesis before
// (gnark's Solve on GOMAXPROCS tasks, then the copy as it was: 4 KiB
// pages, one parallel pass per vector, the tail of a, b, c zeroed) and
// after (groth16.Synthesize: its synthesize.solve and synthesize.copy
// spans, the hints' CPU time from cuzk.solver.hint_cpu_ms), with the
// minor page faults of each step (getrusage, process-wide: nothing else
// runs), and the after/before ratios. A circuit with commitments
// (rangecheck) gets its proving key from the key cache (a setup when
// missing); gnark's bare Solve then runs with a stand-in commitment hint
// (any challenge satisfies a correct witness), so its times exclude the
// commitment MSM that groth16.Synthesize's solve includes. The compiled
// circuit comes from the circuit cache ($CUZK_CACHE_DIR or the user cache)
// when this binary has a clean VCS revision. Results: bench/synthesis.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/big"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/constraint/solver"
	fcs "github.com/consensys/gnark/frontend/cs"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/sys/unix"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/host"
	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

func main() {
	cf := benchutil.NewCircuitFlags("16,18", 5, "repetitions of each variant (after one warm-up)")
	cacheDir := benchutil.CacheDirFlag()
	taskList := flag.String("tasks", "1", "comma-separated task counts of gnark's Solve to time besides its default (runtime.NumCPU); empty for none")
	levelList := flag.String("level-tasks", "", "comma-separated solver task counts of groth16.Synthesize (the level solver, groth16.WithSolverTasks) to time besides its default; empty for none")
	gnarkToo := flag.Bool("gnark", true, "also time gnark's Solve and the synthesis before this project's copies (false: groth16.Synthesize only)")
	solverList := flag.String("solvers", "auto", "comma-separated solvers of the -level-tasks variants (groth16.WithSolver): auto, levels, components")
	sizes := cf.Parse("synthbench")
	var solvers []groth16.Solver
	for _, f := range strings.Split(*solverList, ",") {
		sv, err := groth16.ParseSolver(strings.TrimSpace(f))
		if err != nil {
			benchutil.Exit("synthbench", fmt.Errorf("-solvers: %w", err))
		}
		solvers = append(solvers, sv)
	}
	tasks := parseTasks("-tasks", *taskList)
	level := parseTasks("-level-tasks", *levelList)
	benchutil.Exit("synthbench", run(*cf.Circuit, sizes, *cf.Reps, *cacheDir, tasks, level, solvers, *gnarkToo))
}

// parseTasks reads a comma-separated list of positive task counts.
func parseTasks(flagName, list string) []int {
	var tasks []int
	for _, f := range strings.Split(list, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "synthbench: bad %s %q: want positive integers\n", flagName, f)
			os.Exit(2)
		}
		tasks = append(tasks, n)
	}
	return tasks
}

// series is a benchutil.Series with the minor page faults and CPU time of
// each run.
type series struct {
	benchutil.Series
	faults []int64         // minor page faults per run
	cpu    []time.Duration // CPU time (user + system, all threads) per run
}

func newSeries(name string) *series { return &series{Series: benchutil.Series{Name: name}} }

func (s *series) median() time.Duration { return benchutil.Median(s.Times) }

func (s *series) String() string {
	line := s.Line(44)
	if len(s.faults) > 0 {
		f := slices.Clone(s.faults)
		slices.Sort(f)
		line += fmt.Sprintf("  %8d minor faults", f[len(f)/2])
	}
	if len(s.cpu) > 0 {
		line += fmt.Sprintf("  CPU %7.1f ms", benchutil.Ms(benchutil.Median(s.cpu)))
	}
	return line
}

// usage returns the process's minor page faults and CPU time (user +
// system) so far.
func usage() (int64, time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return ru.Minflt, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timed runs f, appending its wall time, minor page faults and CPU time
// to s: on a loaded host the wall time varies with the scheduler, the CPU
// time much less.
func (s *series) timed(f func() error) error {
	f0, c0 := usage()
	t := time.Now()
	err := f()
	s.Add(time.Since(t))
	f1, c1 := usage()
	s.faults = append(s.faults, f1-f0)
	s.cpu = append(s.cpu, c1-c0)
	return err
}

// copyVariant is one way of copying a solution into fresh mmap'd buffers:
// old is the synthesis copy before bench/synthesis.md's change (4 KiB
// pages, one parallel pass per vector, the tail past the source zeroed even
// in a fresh, already zero mapping); new is groth16.Synthesize's
// (synthesize.copy: huge-page advice, the four vectors' pieces in one
// queue, a fresh tail left alone), with huge false its 4 KiB-page form.
type copyVariant struct{ old, huge bool }

func (v copyVariant) run(sol *cs.R1CSSolution, domain int) error {
	type vec struct {
		dst, src []fr.Element
	}
	var vecs []vec
	var bufs []*buffer.Mmap
	defer func() {
		for _, b := range bufs {
			b.Free()
		}
	}()
	for _, x := range []struct {
		src fr.Vector
		n   int
	}{{sol.W, len(sol.W)}, {sol.A, domain}, {sol.B, domain}, {sol.C, domain}} {
		hb, err := buffer.NewMmap(x.n * fr.Bytes)
		if err != nil {
			return err
		}
		bufs = append(bufs, hb)
		if v.huge {
			unix.Madvise(hb.Bytes(), unix.MADV_HUGEPAGE)
		}
		vecs = append(vecs, vec{unsafe.Slice((*fr.Element)(unsafe.Pointer(unsafe.SliceData(hb.Bytes()))), x.n), x.src})
	}
	const piece = 1 << 16
	type job struct{ v, lo int }
	pass := func(jobs []job) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < runtime.GOMAXPROCS(0); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1)) - 1; i < len(jobs); i = int(next.Add(1)) - 1 {
					x := vecs[jobs[i].v]
					lo := jobs[i].lo
					hi := min(lo+piece, len(x.dst))
					k := 0
					if lo < len(x.src) {
						k = copy(x.dst[lo:hi], x.src[lo:min(hi, len(x.src))])
					}
					clear(x.dst[lo+k : hi])
				}
			}()
		}
		wg.Wait()
	}
	var all []job
	for i, x := range vecs {
		n := len(x.dst)
		if !v.old {
			n = min(n, len(x.src))
		}
		var jobs []job
		for lo := 0; lo < n; lo += piece {
			jobs = append(jobs, job{i, lo})
		}
		if v.old {
			pass(jobs)
		} else {
			all = append(all, jobs...)
		}
	}
	pass(all)
	return nil
}

// standInCommitment answers gnark's commitment hint with a value derived
// from its inputs, so that gnark's bare Solve runs on a circuit with
// commitments (no MSM: the prover's hint computes the real commitment).
func standInCommitment() solver.Option {
	return solver.OverrideHint(solver.GetHintID(fcs.Bsb22CommitmentComputePlaceholder), func(_ *big.Int, in, out []*big.Int) error {
		var acc fr.Element
		for _, x := range in {
			var e fr.Element
			e.SetBigInt(x)
			acc.Add(&acc, &e)
		}
		acc.Add(&acc, new(fr.Element).SetUint64(7))
		acc.BigInt(out[0])
		return nil
	})
}

func run(circuit string, sizes []int, reps int, cacheDir string, tasks, level []int, solvers []groth16.Solver, gnarkToo bool) error {
	fmt.Printf("host: %s, GOMAXPROCS %d, load %s\n", host.String(), runtime.GOMAXPROCS(0), loadAvg())
	cache, err := keycache.New(cacheDir, keycache.WithProgress(os.Stderr, false))
	if err != nil {
		return err
	}
	for _, lg := range sizes {
		if err := runSize(cache, circuit, lg, reps, tasks, level, solvers, gnarkToo); err != nil {
			return err
		}
	}
	fmt.Printf("\nload at the end: %s\n", loadAvg())
	return nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func runSize(cache *keycache.Cache, circuit string, lg, reps int, tasks, level []int, solvers []groth16.Solver, gnarkToo bool) error {
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
	wires := r1cs.GetNbInternalVariables() + r1cs.GetNbPublicVariables() + r1cs.GetNbSecretVariables()
	fmt.Printf("\n%s 2^%d (%s): %d constraints, %d wires, %d levels, circuit.compile %.2f s (cache %v)\n",
		circuit, lg, in.Shape, r1cs.GetNbConstraints(), wires, len(r1cs.Levels), time.Since(t0).Seconds(), comp.CacheHit)
	domain := 1
	for domain < r1cs.GetNbConstraints() {
		domain <<= 1
	}

	var synthOpts []groth16.SynthesizeOption
	var bare []solver.Option
	if info, ok := r1cs.CommitmentInfo.(constraint.Groth16Commitments); ok && len(info) > 0 {
		kk, err := cache.LoadHashed(context.Background(), comp.CCS, comp.Hash)
		if err != nil {
			return err
		}
		synthOpts = append(synthOpts, groth16.WithProvingKey(kk.PK))
		bare = append(bare, standInCommitment())
		fmt.Printf("  %d commitment(s): gnark's bare Solve uses a stand-in commitment hint (no MSM)\n", len(info))
	}

	rec := otelcuzk.NewRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	synthOpts = append(synthOpts, prover.WithTracerProvider(tp))
	var w witness.Witness
	var hintCalls int64
	hintMs := []float64{}
	witnessS := newSeries("sample witness")
	gnarkDefault := newSeries(fmt.Sprintf("gnark Solve, %d tasks (default)", runtime.NumCPU()))
	var gnarkTasks []*series
	for _, k := range tasks {
		gnarkTasks = append(gnarkTasks, newSeries(fmt.Sprintf("gnark Solve, %d tasks", k)))
	}
	beforeSolve := newSeries(fmt.Sprintf("before: gnark Solve, %d tasks", runtime.GOMAXPROCS(0)))
	beforeCopy := newSeries("before: copy (4 KiB pages, 4 passes)")
	beforeTotal := newSeries("before: solve + copy")
	newCopy := newSeries("new copy (huge pages, 1 pass)")
	smallCopy := newSeries("new copy with 4 KiB pages")
	after := newSeries("after: groth16.Synthesize")
	afterSolve := newSeries("  synthesize.solve")
	afterCopy := newSeries("  synthesize.copy")
	afterCommit := newSeries("  msm.g1.commitment (in the solve)")
	type levelRun struct {
		tasks  int
		solver groth16.Solver
		s      *series
	}
	var levelRuns []levelRun
	for _, k := range level {
		for _, sv := range solvers {
			name := string(sv)
			if sv == groth16.SolverAuto {
				name = "auto"
			}
			levelRuns = append(levelRuns, levelRun{k, sv, newSeries(fmt.Sprintf("groth16.Synthesize, %d solver tasks, solver %s", k, name))})
		}
	}
	levelVariant := func() error {
		for _, lr := range levelRuns {
			var asg *groth16.Assignment
			if err := lr.s.timed(func() error {
				var err error
				asg, err = groth16.Synthesize(groth16.WithSolverTasks(context.Background(), lr.tasks), comp.CCS, w, append(synthOpts, groth16.WithSolver(lr.solver))...)
				return err
			}); err != nil {
				return err
			}
			if err := asg.Release(context.Background(), nil); err != nil {
				return err
			}
			runtime.GC()
		}
		return nil
	}
	variants := []func() error{
		func() error {
			return gnarkDefault.timed(func() error { _, err := r1cs.Solve(w, bare...); return err })
		},
		func() error {
			for i, k := range tasks {
				if err := gnarkTasks[i].timed(func() error {
					_, err := r1cs.Solve(w, append([]solver.Option{solver.WithNbTasks(k)}, bare...)...)
					return err
				}); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			var sol any
			t := time.Now()
			if err := beforeSolve.timed(func() error {
				var err error
				sol, err = r1cs.Solve(w, append([]solver.Option{solver.WithNbTasks(runtime.GOMAXPROCS(0))}, bare...)...)
				return err
			}); err != nil {
				return err
			}
			if err := beforeCopy.timed(func() error { return copyVariant{old: true}.run(sol.(*cs.R1CSSolution), domain) }); err != nil {
				return err
			}
			beforeTotal.Add(time.Since(t))
			// The same solution copied the new way, and the new way
			// without huge pages: what each change does alone.
			if err := newCopy.timed(func() error { return copyVariant{huge: true}.run(sol.(*cs.R1CSSolution), domain) }); err != nil {
				return err
			}
			return smallCopy.timed(func() error { return copyVariant{}.run(sol.(*cs.R1CSSolution), domain) })
		},
		func() error {
			rec.Reset()
			var asg *groth16.Assignment
			if err := after.timed(func() error {
				var err error
				asg, err = groth16.Synthesize(context.Background(), comp.CCS, w, synthOpts...)
				return err
			}); err != nil {
				return err
			}
			for _, s := range rec.Ended() {
				d := s.EndTime().Sub(s.StartTime())
				switch s.Name() {
				case semconv.SpanSynthesizeSolve:
					afterSolve.Add(d)
					for _, a := range s.Attributes() {
						switch a.Key {
						case semconv.KeySolverHintCalls:
							hintCalls = a.Value.AsInt64()
						case semconv.KeySolverHintCPU:
							hintMs = append(hintMs, a.Value.AsFloat64())
						}
					}
				case semconv.SpanSynthesizeCopy:
					afterCopy.Add(d)
				case semconv.SpanMSMG1Commitment:
					afterCommit.Add(d)
				}
			}
			return asg.Release(context.Background(), nil)
		},
	}
	if !gnarkToo {
		variants = variants[3:] // groth16.Synthesize only
	}
	variants = append(variants, levelVariant)
	var levelTasks []*series
	for _, lr := range levelRuns {
		levelTasks = append(levelTasks, lr.s)
	}
	all := append(append([]*series{witnessS, gnarkDefault, beforeSolve, beforeCopy, beforeTotal, newCopy, smallCopy, after, afterSolve, afterCopy, afterCommit}, gnarkTasks...), levelTasks...)
	for rep := 0; rep <= reps; rep++ {
		if err := witnessS.timed(func() error { var err error; w, err = in.Witness(1); return err }); err != nil {
			return err
		}
		for _, v := range variants {
			if err := v(); err != nil {
				return err
			}
			runtime.GC()
		}
		if rep == 0 { // warm-up
			for _, s := range all {
				s.Times, s.faults, s.cpu = nil, nil, nil
			}
			hintMs = hintMs[:0]
		}
	}
	for _, s := range append(append(append([]*series{witnessS, gnarkDefault}, gnarkTasks...), beforeSolve, beforeCopy, beforeTotal, newCopy, smallCopy, after, afterSolve, afterCopy, afterCommit), levelTasks...) {
		if len(s.Times) > 0 {
			fmt.Println("  " + s.String())
		}
	}
	if !gnarkToo {
		return nil
	}
	slices.Sort(hintMs)
	fmt.Printf("  hints: %d calls, %.1f ms CPU (median, summed over the solver's goroutines)\n", hintCalls, hintMs[len(hintMs)/2])
	fmt.Printf("  ratio new/old copy on the same solution: wall %.2fx, CPU %.2fx (4 KiB pages, 1 pass: wall %.2fx, CPU %.2fx)\n",
		float64(newCopy.median())/float64(beforeCopy.median()), float64(benchutil.Median(newCopy.cpu))/float64(benchutil.Median(beforeCopy.cpu)),
		float64(smallCopy.median())/float64(beforeCopy.median()), float64(benchutil.Median(smallCopy.cpu))/float64(benchutil.Median(beforeCopy.cpu)))
	fmt.Printf("  ratio after/before: synthesize.copy %.2fx, synthesis %.2fx; synthesize.solve is %.0f%% of groth16.Synthesize after\n",
		float64(afterCopy.median())/float64(beforeCopy.median()), float64(after.median())/float64(beforeTotal.median()),
		100*float64(afterSolve.median())/float64(after.median()))
	return nil
}
