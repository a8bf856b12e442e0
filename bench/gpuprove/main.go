// Command gpuprove compares full Groth16 proofs on the CUDA backend with
// the CPU backend on the same host, circuit, keys and witness, in one run;
// then reproduces the story of DESIGN.md (issue 4, item 6): the same large
// circuit proved through the Prover with --release sync and with
// --release async, every layer traced to an OTLP JSON lines file, read back
// with otelcuzk/tracefile, and a table of pipeline.prove, gnarkgroth16.prove,
// gpu.total, buffer.release and the untraced time for both modes.
//
//	gpuprove -circuit merkle -log2 20,22 -reps 3                # on the GPU host
//	gpuprove -backends cpu -log2 12,14 -story-log2 14 -reps 2  # a quick check without a GPU
//	gpuprove -backends cuda -host-copy staged,registered -release pool -log2 22 -story-log2 0
//	                                     # pooled buffers, kept registered with the driver
//
// Each phase prints its time as it goes (compile and gnarkgroth16.Setup at 2^22
// take minutes on 16 cores). Results go to stdout and to -out (default
// $OUT/gpuprove.txt when $OUT is set, else gpuprove.txt). Keys come from the
// key cache ($CUZK_CACHE_DIR or -cache-dir). Results: bench/gpuprove.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/logger"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	_ "github.com/otelcuzk/otelcuzk/prover/gpu" // registers the cuda backend
	"github.com/otelcuzk/otelcuzk/prover/gpu/fixedbase"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
	"github.com/otelcuzk/otelcuzk/prover/setup"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/host"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

type options struct {
	circuit    string // the release story's: the last of circuits
	circuits   []string
	bitSplits  []groth16.BitSplit
	sizes      []int
	reps       int
	backends   []string
	hostCopies []backend.HostCopy
	release    buffer.ReleaseMode // the timed variants' Releaser
	msmG2      []backend.G2Placement
	storyLog2  int
	storyReps  int
	cacheDir   string
	traceFile  string
	setup      string
}

var out io.Writer = os.Stdout

func main() {
	var o options
	var sizes, backends, hostCopies, msmG2, outPath, circuitList, bitSplits, release string
	flag.StringVar(&circuitList, "circuit", "merkle", "comma-separated built-in circuits, each timed at every size: "+strings.Join(circuits.Names(), "|"))
	flag.StringVar(&bitSplits, "bit-split", "off", "bit split modes of the wire MSMs to time (groth16.BitSplit): auto|off|on")
	flag.StringVar(&sizes, "log2", "20,22", "comma-separated log2 of the constraint counts")
	flag.IntVar(&o.reps, "reps", 3, "timed proofs of each variant after one warm-up (median reported)")
	flag.StringVar(&backends, "backends", "cpu,cuda", "backends to compare; the first is the reference of the ratio")
	flag.StringVar(&hostCopies, "host-copy", "registered,staged", "host copy modes of the cuda backend to time: staged|register|registered|pageable")
	flag.StringVar(&release, "release", "sync", "release mode of the timed proofs' buffers: sync|async|pool (pool: each proof reuses the last one's host buffers, which -host-copy registered keeps registered)")
	flag.StringVar(&msmG2, "msm-g2", "gpu,cpu", "where the cuda backend's G2 MSM runs, each timed: gpu|cpu")
	flag.IntVar(&o.storyLog2, "story-log2", -1, "log2 size of the release story (sync vs async through the Prover); 0 skips it; default the largest size")
	flag.IntVar(&o.storyReps, "story-reps", 2, "timed pipeline runs per release mode after one warm-up")
	flag.StringVar(&o.setup, "setup", "cpu", "how missing keys are made: cpu (gnark's gnarkgroth16.Setup) or cuda (prover/setup with the GPU's fixed-base multiplications)")
	flag.StringVar(&o.cacheDir, "cache-dir", "", "proving key cache (default $CUZK_CACHE_DIR or <user cache>/otelcuzk/keys)")
	flag.StringVar(&o.traceFile, "trace-file", "", "trace file of the story (default gpuprove-trace.jsonl beside -out)")
	flag.StringVar(&outPath, "out", "", "results file (default $OUT/gpuprove.txt when $OUT is set, else gpuprove.txt)")
	flag.Parse()
	logger.Disable()

	err := func() error {
		var err error
		if o.sizes, err = parseInts(sizes); err != nil {
			return err
		}
		o.circuits = splitList(circuitList)
		if len(o.circuits) == 0 {
			return errors.New("-circuit: no circuit")
		}
		o.circuit = o.circuits[len(o.circuits)-1] // the release story's
		if o.bitSplits, err = parseEach("bit-split", bitSplits, groth16.ParseBitSplit, groth16.BitSplitAuto); err != nil {
			return err
		}
		if o.reps < 1 || o.storyReps < 1 {
			return errors.New("-reps and -story-reps must be at least 1")
		}
		o.backends = splitList(backends)
		for _, b := range o.backends {
			if _, ok := backend.Lookup(b); !ok {
				return fmt.Errorf("unknown backend %q", b)
			}
		}
		if o.hostCopies, err = parseEach("host-copy", hostCopies, backend.ParseHostCopy, backend.HostCopyRegistered); err != nil {
			return err
		}
		if o.release, err = buffer.ParseReleaseMode(release); err != nil {
			return fmt.Errorf("-release: %w", err)
		}
		if o.msmG2, err = parseEach("msm-g2", msmG2, backend.ParseG2Placement, backend.G2OnGPU); err != nil {
			return err
		}
		if o.storyLog2 < 0 {
			o.storyLog2 = slices.Max(o.sizes)
		}
		if outPath == "" {
			outPath = "gpuprove.txt"
			if d := os.Getenv("OUT"); d != "" {
				outPath = filepath.Join(d, "gpuprove.txt")
			}
		}
		if o.traceFile == "" {
			o.traceFile = filepath.Join(filepath.Dir(outPath), "gpuprove-trace.jsonl")
		}
		f, err := os.Create(outPath)
		if err != nil {
			return err
		}
		defer f.Close()
		out = io.MultiWriter(os.Stdout, f)
		return run(context.Background(), &o)
	}()
	if err != nil {
		fmt.Fprintln(out, "gpuprove:", err)
		os.Exit(1)
	}
}

func parseInts(s string) ([]int, error) {
	var r []int
	for _, f := range splitList(s) {
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 || v > 28 {
			return nil, fmt.Errorf("log2 size %q: want an integer in 1..28", f)
		}
		r = append(r, v)
	}
	if len(r) == 0 {
		return nil, errors.New("no sizes")
	}
	return r, nil
}

func splitList(s string) []string {
	var r []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			r = append(r, f)
		}
	}
	return r
}

// parseEach parses each word of the comma-separated value of flag -name
// with parse; no word is def alone. The error is parse's, after the flag.
func parseEach[T any](name, list string, parse func(string) (T, error), def T) ([]T, error) {
	var out []T
	for _, s := range splitList(list) {
		v, err := parse(s)
		if err != nil {
			return nil, fmt.Errorf("-%s: %w", name, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		out = []T{def}
	}
	return out, nil
}

func say(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func run(ctx context.Context, o *options) error {
	hostname, _ := os.Hostname()
	say("gpuprove %s, host %s, %s", time.Now().UTC().Format(time.RFC3339), hostname, host.String())
	if devs, err := cudaspans.Devices(); err == nil {
		for _, d := range devs {
			say("gpu %d: %+v", d.Ordinal, d)
		}
	} else {
		say("gpu: %v", err)
	}
	var kopts []keycache.Option
	switch o.setup {
	case "cpu":
	case "cuda":
		e, err := fixedbase.Open(ctx, 0)
		if err != nil {
			return fmt.Errorf("-setup cuda: %w", err)
		}
		defer e.Close()
		kopts = append(kopts, keycache.WithSetup(func(ctx context.Context, ccs constraint.ConstraintSystem) (gnarkgroth16.ProvingKey, gnarkgroth16.VerifyingKey, error) {
			return setup.Setup(ctx, ccs, setup.WithMultiplier(e, "cuda"))
		}))
	default:
		return fmt.Errorf("-setup %q: want cpu or cuda", o.setup)
	}
	cache, err := keycache.New(o.cacheDir, kopts...)
	if err != nil {
		return err
	}
	var summary []string
	for _, lg := range o.sizes {
		for _, c := range o.circuits {
			lines, err := compareSize(ctx, o, cache, c, lg)
			if err != nil {
				return fmt.Errorf("%s 2^%d: %w", c, lg, err)
			}
			summary = append(summary, lines...)
		}
	}
	say("\n== summary: full prove (synthesis excluded), median of %d after one warm-up ==", o.reps)
	say("%-10s %6s %10s  %-36s %10s %10s %9s", "circuit", "log2 n", "constr.", "variant", "prove ms", "+synth ms", "ratio")
	for _, l := range summary {
		say("%s", l)
	}
	if o.storyLog2 > 0 {
		if err := story(ctx, o, 1<<o.storyLog2); err != nil {
			return fmt.Errorf("release story: %w", err)
		}
	}
	return nil
}

type variant struct {
	name, backend string
	hostCopy      backend.HostCopy
	msmG2         backend.G2Placement
	bitSplit      groth16.BitSplit
	prove, total  []time.Duration
	spans         map[string][]time.Duration // per proof, summed by span name
}

// compareSize builds the circuit and keys at 2^lg constraints and times
// each backend (and each host copy mode of cuda); it returns summary lines.
func compareSize(ctx context.Context, o *options, cache *keycache.Cache, circuit string, lg int) ([]string, error) {
	n := 1 << lg
	say("\n== %s, 2^%d constraints ==", circuit, lg)
	t0 := time.Now()
	in, err := circuits.Build(circuit, n)
	if err != nil {
		return nil, err
	}
	ccs, err := in.Compile()
	if err != nil {
		return nil, err
	}
	say("compile: %d constraints, %d wires (%s) in %.1f s", ccs.GetNbConstraints(),
		ccs.GetNbPublicVariables()+ccs.GetNbSecretVariables()+ccs.GetNbInternalVariables(), in.Shape, time.Since(t0).Seconds())
	t0 = time.Now()
	k, err := cache.Load(ctx, ccs)
	if err != nil {
		return nil, err
	}
	how := "gnarkgroth16.Setup"
	if k.CacheHit {
		how = "key cache"
	}
	say("keys: %s in %.1f s", how, time.Since(t0).Seconds())
	w, err := in.Witness(1)
	if err != nil {
		return nil, err
	}
	pub, err := w.Public()
	if err != nil {
		return nil, err
	}

	var vs []*variant
	for _, b := range o.backends {
		if b == "cuda" {
			for _, g2 := range o.msmG2 {
				for _, m := range o.hostCopies {
					for _, bs := range o.bitSplits {
						vs = append(vs, &variant{name: "cuda, " + string(m) + ", G2 " + string(g2) + ", bits " + bs.String(),
							backend: b, hostCopy: m, msmG2: g2, bitSplit: bs})
					}
				}
			}
			continue
		}
		for _, bs := range o.bitSplits {
			vs = append(vs, &variant{name: b + ", bits " + bs.String(), backend: b, bitSplit: bs})
		}
	}
	for _, v := range vs {
		if err := timeVariant(ctx, o, v, ccs, k, w, pub); err != nil {
			if errors.Is(err, backend.ErrUnavailable) {
				say("%s: skipped: %v", v.name, err)
				continue
			}
			return nil, fmt.Errorf("%s: %w", v.name, err)
		}
	}
	var lines []string
	var ref time.Duration
	for _, v := range vs {
		if len(v.prove) == 0 {
			continue
		}
		p := median(v.prove)
		if ref == 0 {
			ref = p
		}
		lines = append(lines, fmt.Sprintf("%-10s %6d %10d  %-36s %10.1f %10.1f %8.2fx", circuit, lg, ccs.GetNbConstraints(),
			v.name, benchutil.Ms(p), benchutil.Ms(median(v.total)), float64(ref)/float64(p)))
	}
	return lines, nil
}

// breakdown are the span names whose per-proof time is reported.
var breakdown = []string{semconv.SpanGroth16Prove, semconv.SpanGPULock, semconv.SpanComputeH,
	semconv.SpanMSMG1A, semconv.SpanMSMG1B, semconv.SpanMSMG1K, semconv.SpanMSMG1H, semconv.SpanMSMG2B,
	semconv.SpanMSMG1A + semconv.SpanSuffixBatchAdd, semconv.SpanMSMG1A + semconv.SpanSuffixTail,
	semconv.SpanMSMG1B + semconv.SpanSuffixBatchAdd, semconv.SpanMSMG1B + semconv.SpanSuffixTail,
	semconv.SpanMSMG1K + semconv.SpanSuffixBatchAdd, semconv.SpanMSMG1K + semconv.SpanSuffixTail,
	semconv.SpanMSMG2B + semconv.SpanSuffixBatchAdd, semconv.SpanMSMG2B + semconv.SpanSuffixTail,
	semconv.SpanMSMG1Commitment, semconv.SpanMSMG1CommitmentPok,
	semconv.SpanGroth16Assemble, semconv.SpanGPUTotal, semconv.SpanHostStage, semconv.SpanMemcpyHtoD,
	semconv.SpanMemcpyDtoH, semconv.SpanCUDAHostRegister, semconv.SpanBufferRelease}

func timeVariant(ctx context.Context, o *options, v *variant, ccs constraint.ConstraintSystem, k *keycache.Keys, w, pub witness.Witness) error {
	rec, tp, rel, closeTracing, err := benchutil.Tracing(o.release)
	if err != nil {
		return err
	}
	defer closeTracing(ctx)
	f, _ := backend.Lookup(v.backend)
	t0 := time.Now()
	b, err := f(ctx, backend.Options{TracerProvider: tp, Releaser: rel,
		Device: backend.DeviceSettings{HostCopy: v.hostCopy, MSMG2: v.msmG2}})
	if err != nil {
		return err
	}
	defer b.Close()
	// The CUDA backend compiles (or loads) its kernels at Warmup, not at
	// Open: both are in this figure, as Open alone was before.
	if w, ok := b.(backend.Warmer); ok {
		if err := w.Warmup(ctx); err != nil {
			return err
		}
	}
	say("%s: backend open and warm-up in %.2f s", v.name, time.Since(t0).Seconds())
	var warmIDs []string
	for rep := -1; rep < o.reps; rep++ {
		runtime.GC()
		t0 := time.Now()
		proof, t1, d, err := benchutil.Prove(ctx, ccs, k, w, b, rel, tp, prover.WithBitSplit(v.bitSplit))
		if err != nil {
			return err
		}
		t2 := t1.Add(d)
		if err := gnarkgroth16.Verify(proof, k.VK, pub); err != nil {
			return fmt.Errorf("proof %d does not verify: %w", rep, err)
		}
		label := "warm-up"
		if rep >= 0 {
			v.prove = append(v.prove, t2.Sub(t1))
			v.total = append(v.total, t2.Sub(t0))
			label = fmt.Sprintf("rep %d", rep)
		} else {
			for _, s := range rec.Ended() {
				warmIDs = append(warmIDs, s.SpanContext().TraceID().String())
			}
		}
		say("%s: %s: synthesize %.1f ms, prove %.1f ms, verified", v.name, label, benchutil.Ms(t1.Sub(t0)), benchutil.Ms(t2.Sub(t1)))
	}
	// Per-proof span times: the traces of the timed proofs, by name.
	byTrace := map[string]map[string]time.Duration{}
	for _, s := range rec.Ended() {
		id := s.SpanContext().TraceID().String()
		if slices.Contains(warmIDs, id) {
			continue
		}
		if byTrace[id] == nil {
			byTrace[id] = map[string]time.Duration{}
		}
		byTrace[id][s.Name()] += s.EndTime().Sub(s.StartTime())
	}
	v.spans = map[string][]time.Duration{}
	for _, m := range byTrace {
		if _, ok := m[semconv.SpanGroth16Prove]; !ok {
			continue
		}
		for _, name := range breakdown {
			v.spans[name] = append(v.spans[name], m[name])
		}
	}
	var parts []string
	for _, name := range breakdown {
		if d := median(v.spans[name]); d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1f", name, benchutil.Ms(d)))
		}
	}
	say("%s: median prove %.1f ms; spans per proof (ms, summed by name; MSMs overlap): %s", v.name,
		benchutil.Ms(median(v.prove)), strings.Join(parts, ", "))
	return nil
}

// storyRow is one pipeline run's figures, read back from the trace file.
type storyRow struct {
	job, pipelineProve, groth16Prove, gpuTotal     time.Duration
	release, releaseCritical                       time.Duration // all buffer.release; those under pipeline.prove
	releases                                       int
	untracedPipeline, untracedGroth16, untracedJob time.Duration
	releaseBytes                                   int64
}

// story proves the circuit at n constraints through the Prover in sync
// and then async release mode, with a job span as the root, spans to a
// trace file; then reads the file back and prints the table.
func story(ctx context.Context, o *options, n int) error {
	backend := o.backends[len(o.backends)-1]
	if backend == "cuda" {
		backend = "auto" // cuda, or cpu with a notice on a host without a GPU
	}
	say("\n== release story: %s, %d constraints, backend %s, through prover.Prover ==", o.circuit, n, backend)
	os.Remove(o.traceFile)
	tel, err := otelcuzk.New(ctx, otelcuzk.WithTraceFile(o.traceFile), otelcuzk.WithoutGlobal(),
		otelcuzk.WithServiceName("gpuprove"))
	if err != nil {
		return err
	}
	defer tel.Shutdown(ctx)
	tracer := tel.TracerProvider.Tracer("gpuprove")
	modes := []buffer.ReleaseMode{buffer.ReleaseSync, buffer.ReleaseAsync}
	ids := map[buffer.ReleaseMode][]string{}
	for _, mode := range modes {
		t0 := time.Now()
		rel, err := buffer.NewReleaser(mode, buffer.WithTracerProvider(tel.TracerProvider))
		if err != nil {
			return err
		}
		defer rel.Close(ctx)
		// The story runs as cuzk prove does, with the environment's
		// device settings (CUZK_CUDA_HOST_COPY, CUZK_CUDA_MSM_G2).
		pipe, err := prover.New(ctx, backend, prover.WithReleaser(rel), prover.WithDeviceSettings(benchutil.DeviceSettingsFromEnv()), prover.WithTracerProvider(tel.TracerProvider),
			prover.WithKeyCacheDir(o.cacheDir), prover.WithNotice(out))
		if err != nil {
			return err
		}
		for rep := -1; rep < o.storyReps; rep++ {
			runtime.GC()
			jctx, job := tracer.Start(ctx, semconv.SpanEngineJob)
			t1 := time.Now()
			res, err := pipe.Run(jctx, &prover.Request{RequestID: fmt.Sprintf("story-%s-%d", mode, rep),
				Circuit: o.circuit, Constraints: n, Verify: true})
			job.End()
			if err != nil {
				pipe.Close(ctx)
				return fmt.Errorf("%s: %w", mode, err)
			}
			if !res.Verified {
				pipe.Close(ctx)
				return fmt.Errorf("%s: proof rejected", mode)
			}
			label := "warm-up (compile, keys)"
			if rep >= 0 {
				ids[mode] = append(ids[mode], res.TraceID)
				label = fmt.Sprintf("rep %d", rep)
			}
			say("release %s, %s: Run %.1f ms (prove %.1f ms), verified", mode, label, benchutil.Ms(time.Since(t1)), benchutil.Ms(res.Timings.Prove))
		}
		// Async releases end before the flush.
		if err := errors.Join(pipe.Close(ctx), rel.Close(ctx)); err != nil {
			return err
		}
		say("release %s: pipeline done in %.1f s", mode, time.Since(t0).Seconds())
	}
	if err := tel.Shutdown(ctx); err != nil {
		return fmt.Errorf("flush the trace file: %w", err)
	}
	f, err := os.Open(o.traceFile)
	if err != nil {
		return err
	}
	spans, err := tracefile.ReadOTLPJSONLines(f)
	f.Close()
	if err != nil {
		return err
	}
	traces := map[string]tracefile.Trace{}
	for _, t := range tracefile.BuildTraces(spans) {
		traces[t.ID] = t
	}
	say("\nread back from %s (%d spans); per mode the median of %d runs, ms:", o.traceFile, len(spans), o.storyReps)
	say("%-6s %9s %11s %11s %9s %10s %9s %13s %12s %12s", "mode", "job", "pipe.prove", "g16.prove", "gpu.total",
		"buf.rel", "(count)", "rel. on path", "untr. pipe", "untr. g16")
	for _, mode := range modes {
		var rows []storyRow
		for _, id := range ids[mode] {
			t, ok := traces[id]
			if !ok {
				return fmt.Errorf("trace %s of release %s not in the file", id, mode)
			}
			rows = append(rows, storyOf(t))
		}
		col := func(f func(r storyRow) time.Duration) float64 {
			var ds []time.Duration
			for _, r := range rows {
				ds = append(ds, f(r))
			}
			return benchutil.Ms(median(ds))
		}
		say("%-6s %9.1f %11.1f %11.1f %9.1f %10.1f %9d %13.1f %12.1f %12.1f", mode,
			col(func(r storyRow) time.Duration { return r.job }),
			col(func(r storyRow) time.Duration { return r.pipelineProve }),
			col(func(r storyRow) time.Duration { return r.groth16Prove }),
			col(func(r storyRow) time.Duration { return r.gpuTotal }),
			col(func(r storyRow) time.Duration { return r.release }), rows[0].releases,
			col(func(r storyRow) time.Duration { return r.releaseCritical }),
			col(func(r storyRow) time.Duration { return r.untracedPipeline }),
			col(func(r storyRow) time.Duration { return r.untracedGroth16 }))
		say("%-6s released %.1f MB per proof", mode, float64(rows[0].releaseBytes)/1e6)
	}
	say("(job: engine.job, which ends when Run returns; buf.rel: all buffer.release spans of the job, summed; " +
		"rel. on path: those inside pipeline.prove; untr.: time of the span no child covers)")
	return nil
}

func storyOf(t tracefile.Trace) storyRow {
	var r storyRow
	t.Walk(func(n *tracefile.Node) bool {
		d := n.End.Sub(n.Start)
		switch n.Name {
		case semconv.SpanEngineJob:
			r.job = d
		case semconv.SpanPipelineProve:
			r.pipelineProve, r.untracedPipeline = d, n.Untraced
		case semconv.SpanGroth16Prove:
			r.groth16Prove, r.untracedGroth16 = d, n.Untraced
		case semconv.SpanGPUTotal:
			r.gpuTotal = d
		case semconv.SpanBufferRelease:
			r.release += d
			r.releases++
			if b, ok := n.Attrs[string(semconv.KeyBufferBytes)]; ok {
				r.releaseBytes += toInt64(b)
			}
		}
		return true
	})
	// Releases on the critical path: under pipeline.prove.
	t.Walk(func(n *tracefile.Node) bool {
		if n.Name != semconv.SpanPipelineProve {
			return true
		}
		var sum func(n *tracefile.Node)
		sum = func(n *tracefile.Node) {
			for _, c := range n.Children {
				if c.Name == semconv.SpanBufferRelease {
					r.releaseCritical += c.End.Sub(c.Start)
				}
				sum(c)
			}
		}
		sum(n)
		return false
	})
	return r
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	case float64:
		return int64(x)
	case string:
		i, _ := strconv.ParseInt(x, 10, 64)
		return i
	}
	return 0
}
