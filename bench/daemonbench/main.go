// Command daemonbench measures the throughput of `cuzk serve`: N proofs
// submitted at once to one daemon, the serial engine (--synthesis-workers
// 0) against the pipelined one, in one run. It reports proofs per second,
// the device busy share (Σ device time over the wall time of the batch,
// and over the time from its first prove to its last, from the daemon's
// own trace: gpu.total where the backend records it, else pipeline.prove),
// the latency of a proof sent alone and where it went (queue, synthesis
// with its solver tasks and parts, device wait, prove), and the tuner's
// choice from GetStatus.
//
//	daemonbench -cuzk .dev/bin/cuzk -backend cuda -circuit merkle -runs 20:16,22:8 -out bench.txt
//	daemonbench -cuzk .dev/bin/cuzk -backend cuda -circuit merkle -mixed 20:24,22:8 -critical-every 4
//
// Each (size, mode) starts its own daemon with its own trace file, preloads
// the keys, proves once to warm up (kernels, key upload), then times the
// batch, then -lone proofs one after another for the latency, and stops
// the daemon with SIGTERM (which flushes its spans). -mixed proves the
// sizes on one daemon, interleaved, every -critical-every-th job of each
// size CRITICAL: per size and priority the waits for synthesis and for the
// device, and how many earlier NORMAL jobs each CRITICAL one overtook at
// each stage.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/spanfile"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/priority"
)

type run struct {
	log2, jobs int
}

func parseRuns(s string) ([]run, error) {
	var out []run
	for _, part := range strings.Split(s, ",") {
		lg, n, ok := strings.Cut(strings.TrimSpace(part), ":")
		a, err1 := strconv.Atoi(lg)
		b, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || a < 4 || a > 28 || b < 1 {
			return nil, fmt.Errorf("-runs %q: want LOG2:JOBS[,LOG2:JOBS...], e.g. 20:16,22:8", s)
		}
		out = append(out, run{a, b})
	}
	return out, nil
}

func main() {
	cuzk := flag.String("cuzk", "cuzk", "the cuzk binary")
	backend := flag.String("backend", "cuda", "daemon backend")
	circuit := flag.String("circuit", "merkle", "built-in circuit")
	runsFlag := flag.String("runs", "20:16,22:8", "LOG2:JOBS pairs: circuit size and proofs submitted at once")
	modes := flag.String("modes", "serial,pipelined", "engines to compare: serial (--synthesis-workers 0), pipelined (the daemon's default or -synthesis-workers)")
	synth := flag.Int("synthesis-workers", -1, "synthesis workers of the pipelined daemon (-1: its default)")
	release := flag.String("release", "async", "--release of the daemon")
	budget := flag.String("memory-budget", "", "--memory-budget of the daemon (default: its own)")
	dir := flag.String("dir", "", "folder for trace files and logs (default: a temporary one)")
	outPath := flag.String("out", "", "also write the report here")
	port := flag.Int("port", 9830, "first port to listen on (one per daemon)")
	mixed := flag.String("mixed", "", "LOG2:JOBS pairs proved by one pipelined daemon, interleaved, instead of -runs (e.g. 20:24,22:8)")
	criticalEvery := flag.Int("critical-every", 4, "with -mixed: every Nth job of each size is CRITICAL, the others NORMAL")
	lone := flag.Int("lone", 3, "proofs sent alone after the batch, for the latency (their median)")
	flag.Parse()
	var runs []run
	var err error
	if *mixed != "" {
		runs, err = parseRuns(*mixed)
	} else {
		runs, err = parseRuns(*runsFlag)
	}
	if err != nil {
		fatal(err)
	}
	if *criticalEvery < 1 {
		fatal(fmt.Errorf("-critical-every %d: want 1 or more", *criticalEvery))
	}
	if *lone < 1 {
		fatal(fmt.Errorf("-lone %d: want 1 or more", *lone))
	}
	if *dir == "" {
		if *dir, err = os.MkdirTemp("", "daemonbench"); err != nil {
			fatal(err)
		}
	} else if err := os.MkdirAll(*dir, 0o755); err != nil {
		fatal(err)
	}
	var w io.Writer = os.Stdout
	if *outPath != "" {
		f, err := os.Create(*outPath)
		if err != nil {
			fatal(err)
		}
		defer f.Close()
		w = io.MultiWriter(os.Stdout, f)
	}
	fmt.Fprintf(w, "daemonbench: %s backend %s, circuit %s, release %s, %s\n", *cuzk, *backend, *circuit, *release, time.Now().UTC().Format(time.RFC3339))
	if *mixed != "" {
		cfg := benchConfig{cuzk: *cuzk, backend: *backend, circuit: *circuit, release: *release, budget: *budget,
			synthesisWorkers: *synth, mode: "mixed", dir: *dir, port: *port, mixed: runs, criticalEvery: *criticalEvery}
		if err := benchMixed(w, cfg); err != nil {
			fatal(err)
		}
		return
	}
	fmt.Fprintf(w, "%-6s %-10s %5s %9s %9s %9s %9s %11s %11s\n", "size", "engine", "jobs", "wall s", "proofs/s", "gpu busy", "prove busy", "latency ms", "synth ms")
	p := *port
	for _, r := range runs {
		var base float64
		for _, mode := range strings.Split(*modes, ",") {
			workers := 0
			switch mode {
			case "serial":
			case "pipelined":
				workers = *synth
			default:
				fatal(fmt.Errorf("-modes: unknown engine %q", mode))
			}
			res, err := bench(benchConfig{cuzk: *cuzk, backend: *backend, circuit: *circuit, release: *release, budget: *budget,
				log2: r.log2, jobs: r.jobs, synthesisWorkers: workers, mode: mode, dir: *dir, port: p, lone: *lone})
			p++
			if err != nil {
				fmt.Fprintf(w, "2^%-4d %-10s error: %v\n", r.log2, mode, err)
				continue
			}
			ratio := ""
			if mode == "serial" {
				base = res.rate
			} else if base > 0 {
				ratio = fmt.Sprintf("  (%.2fx serial)", res.rate/base)
			}
			fmt.Fprintf(w, "2^%-4d %-10s %5d %9.2f %9.3f %8.1f%% %8.1f%% %11.0f %11.0f%s\n", r.log2, mode, r.jobs, res.wall.Seconds(), res.rate,
				100*res.gpuBusy, 100*res.proveBusy, benchutil.Ms(res.latency), benchutil.Ms(res.synth), ratio)
			fmt.Fprintf(w, "       %s\n", res.daemonLine)
			fmt.Fprintf(w, "       memory: daemon peak RSS %.1f GiB, engine peak admitted %.1f GiB, budget %.1f GiB\n",
				gb(res.rssPeak), gb(res.enginePeak), gb(res.budget))
			fmt.Fprintf(w, "       device busy from the first prove to the last: gpu %.1f%%, prove %.1f%% (window %.2f s); device per proof: gpu.total %.1f ms, pipeline.prove %.1f ms\n",
				100*res.gpuWindow, 100*res.proveWindow, res.window.Seconds(), benchutil.Ms(res.gpuPer), benchutil.Ms(res.provePer))
			fmt.Fprintf(w, "       lone proof (medians): total %.0f ms = queue %.1f + synthesis %.1f (solver tasks %s, parts %s) + device wait %.1f + prove %.1f ms; tuner: %s\n",
				benchutil.Ms(res.latency), benchutil.Ms(res.lone.queue), benchutil.Ms(res.lone.synth), res.lone.tasks, res.lone.parts,
				benchutil.Ms(res.lone.devWait), benchutil.Ms(res.lone.prove), res.tuning)
		}
	}
	fmt.Fprintf(w, "gpu busy = Σ gpu.total of the batch's proofs / wall; prove busy = Σ pipeline.prove / wall (over 100%% with several devices); latency = median Total of the proofs sent alone (-lone); synth = median pipeline.synthesize in the batch. Traces and logs in %s\n", *dir)
}

func gb(b uint64) float64 { return float64(b) / (1 << 30) }

// vmHWM is the peak resident set of process pid in bytes (VmHWM of
// /proc/PID/status), 0 where it cannot be read.
func vmHWM(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "daemonbench:", err)
	os.Exit(1)
}

type benchConfig struct {
	cuzk, backend, circuit, release string
	budget                          string
	log2, jobs, synthesisWorkers    int
	mode, dir                       string
	port                            int
	mixed                           []run // -mixed: the sizes and jobs of one daemon
	criticalEvery, lone             int
}

type result struct {
	wall               time.Duration
	rate               float64
	gpuBusy, proveBusy float64
	latency, synth     time.Duration
	daemonLine         string
	// rssPeak is the daemon's VmHWM (pinned host memory included: it is
	// resident), budget and enginePeak its memory budget and the largest
	// reserved + keys it admitted, from GetStatus; bytes.
	rssPeak, budget, enginePeak uint64
	// gpuWindow and proveWindow are the busy shares over window, the time
	// from the batch's first pipeline.prove start to its last end (the
	// steady state, without the first synthesis); gpuPer and provePer the
	// device time per proof.
	gpuWindow, proveWindow   float64
	window, gpuPer, provePer time.Duration
	lone                     loneSplit
	tuning                   string // the tuner's line for the size, from GetStatus
	traceFile                string
}

// loneSplit is where a lone proof's time went: medians over the lone
// proofs of their engine.queue, pipeline.synthesize, gpu.queue and
// pipeline.prove, and the solver tasks and parts of their syntheses.
type loneSplit struct {
	queue, synth, devWait, prove time.Duration
	tasks, parts                 string
}

var listening = regexp.MustCompile(`listening on (\S+) .*`)

func bench(cfg benchConfig) (*result, error) {
	return benchWith(cfg, drive)
}

// benchWith starts the daemon of cfg, runs driveFn against it, stops it
// and reads its trace file into the result.
func benchWith(cfg benchConfig, driveFn func(context.Context, benchConfig, *client.Client) (*result, error)) (*result, error) {
	name := fmt.Sprintf("%s-2e%d", cfg.mode, cfg.log2) // "2e20", not "2^20": plain file names travel anywhere
	traceFile := filepath.Join(cfg.dir, name+".jsonl")
	logFile := filepath.Join(cfg.dir, name+".log")
	_ = os.Remove(traceFile)
	logf, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	// A job journal of its own for each daemon: with the default state
	// directory a later run's request ids would be answered from an
	// earlier run's finished jobs, and nothing would be proved.
	stateDir, err := os.MkdirTemp(cfg.dir, name+"-state-")
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--backend", cfg.backend, "--release", cfg.release, "--listen", fmt.Sprintf("127.0.0.1:%d", cfg.port),
		"--metrics-listen", "", "--trace-file", traceFile, "--queue-size", strconv.Itoa(max(64, 2*cfg.jobs)),
		"--synthesis-workers", strconv.Itoa(cfg.synthesisWorkers), "--shutdown-timeout", "10m", "--state-dir", stateDir}
	if cfg.budget != "" {
		args = append(args, "--memory-budget", cfg.budget)
	}
	cmd := exec.Command(cfg.cuzk, args...)
	cmd.Env = os.Environ()
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		cmd.Env = append(cmd.Env, k+"=")
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addrCh := make(chan string, 1)
	var line string
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && !sent {
				line = strings.TrimPrefix(sc.Text(), "cuzk serve: ")
				addrCh <- m[1]
				sent = true
			}
		}
		if !sent {
			close(addrCh)
		}
	}()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		return cmd.Wait()
	}
	var addr string
	select {
	case a, ok := <-addrCh:
		if !ok {
			cmd.Wait()
			return nil, fmt.Errorf("daemon exited before listening (log %s)", logFile)
		}
		addr = a
	case <-time.After(5 * time.Minute):
		stop()
		return nil, fmt.Errorf("daemon not listening after 5 min (log %s)", logFile)
	}
	res, err := driveServing(cfg, addr, driveFn)
	if res != nil {
		res.rssPeak = vmHWM(cmd.Process.Pid)
	}
	if serr := stop(); serr != nil && err == nil {
		err = fmt.Errorf("daemon exit: %v (log %s)", serr, logFile)
	}
	if err != nil {
		return nil, err
	}
	res.daemonLine = line
	res.traceFile = traceFile
	if cfg.mixed != nil {
		return res, nil // benchMixed reads the trace
	}
	if err := fromTrace(traceFile, res); err != nil {
		return nil, err
	}
	return res, nil
}

// benchMixed runs the sizes of cfg.mixed on one daemon: after a warm-up
// proof of each, all their jobs submitted at once, interleaved (the sizes
// in turn, in proportion to their jobs), every cfg.criticalEvery-th of
// each size CRITICAL and the others NORMAL; then per size and priority the jobs'
// median wait for synthesis (engine.queue), for a device (gpu.queue) and
// total, and how many jobs submitted before each CRITICAL job of the same
// size began their synthesis or prove after it (CRITICAL ahead at both
// stages), with the proofs per second and device busy share of the batch.
func benchMixed(w io.Writer, cfg benchConfig) error {
	cfg.log2 = cfg.mixed[0].log2
	res, err := benchWith(cfg, driveMixed)
	if err != nil {
		return err
	}
	spans, err := spanfile.Read(res.traceFile)
	if err != nil {
		return err
	}
	jobs := jobsOf(spans)
	var batch []*jobTrace
	var gpu time.Duration
	batchTraces := map[string]bool{}
	for id, j := range jobs {
		if strings.HasPrefix(j.requestID, "mixed-") {
			batch = append(batch, j)
			batchTraces[id] = true
		}
	}
	for _, s := range spans {
		if s.Name == "gpu.total" && batchTraces[s.TraceID] {
			gpu += s.Duration()
		}
	}
	total := 0
	for _, r := range cfg.mixed {
		total += r.jobs
	}
	fmt.Fprintf(w, "mixed: %d jobs (%s), every %d CRITICAL, one daemon (%s)\n", total, runsString(cfg.mixed), cfg.criticalEvery, res.daemonLine)
	fmt.Fprintf(w, "  wall %.2f s, %.3f proofs/s, gpu busy %.1f%% of the wall\n", res.wall.Seconds(), res.rate, 100*gpu.Seconds()/res.wall.Seconds())
	fmt.Fprintf(w, "  %-6s %-9s %5s %14s %14s %12s %22s\n", "size", "priority", "jobs", "queue wait ms", "device wait ms", "total ms", "earlier jobs passed")
	for _, r := range cfg.mixed {
		for _, pr := range []string{"CRITICAL", "NORMAL"} {
			var q, d, t []time.Duration
			passedSynth, passedProve := 0, 0
			for _, j := range batch {
				if j.constraints != int64(1)<<r.log2 || j.priority != pr {
					continue
				}
				q, d, t = append(q, j.queue), append(d, j.devWait), append(t, j.total)
				if pr != "CRITICAL" {
					continue
				}
				for _, o := range batch {
					if o.priority == "CRITICAL" || !o.submitted.Before(j.submitted) || o.constraints != j.constraints {
						continue
					}
					if o.synthStart.After(j.synthStart) {
						passedSynth++
					}
					if o.proveStart.After(j.proveStart) {
						passedProve++
					}
				}
			}
			if len(q) == 0 {
				continue
			}
			passed := "-"
			if pr == "CRITICAL" {
				passed = fmt.Sprintf("synth %d, prove %d", passedSynth, passedProve)
			}
			fmt.Fprintf(w, "  2^%-4d %-9s %5d %14.0f %14.0f %12.0f %22s\n", r.log2, pr, len(q), benchutil.Ms(benchutil.Median(q)),
				benchutil.Ms(benchutil.Median(d)), benchutil.Ms(benchutil.Median(t)), passed)
		}
	}
	fmt.Fprintf(w, "  earlier jobs passed: NORMAL jobs of the same size submitted before the CRITICAL ones that began their synthesis (prove) after them, summed. Trace %s\n", res.traceFile)
	return nil
}

func runsString(rs []run) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%d at 2^%d", r.jobs, r.log2))
	}
	return strings.Join(parts, ", ")
}

// driveMixed preloads and warms up every size of cfg.mixed, then submits
// their jobs at once, interleaved, and waits for them.
func driveMixed(ctx context.Context, cfg benchConfig, c *client.Client) (*result, error) {
	for _, r := range cfg.mixed {
		n := uint64(1) << r.log2
		if _, _, err := c.PreloadKeys(ctx, cfg.circuit, n); err != nil {
			return nil, fmt.Errorf("preload keys of 2^%d: %w", r.log2, err)
		}
		if _, err := c.Prove(ctx, client.Request{RequestID: fmt.Sprintf("warm-mixed-%d", r.log2), Circuit: cfg.circuit, Constraints: n}); err != nil {
			return nil, fmt.Errorf("warm-up proof of 2^%d: %w", r.log2, err)
		}
	}
	// Interleaved: at each step the size furthest behind its share.
	var order []client.Request
	left := make([]int, len(cfg.mixed))
	total := 0
	for i, r := range cfg.mixed {
		left[i] = r.jobs
		total += r.jobs
	}
	for k := range total {
		best := -1
		for i, r := range cfg.mixed {
			if left[i] == 0 {
				continue
			}
			if best < 0 || float64(left[i])/float64(r.jobs) > float64(left[best])/float64(cfg.mixed[best].jobs) {
				best = i
			}
		}
		left[best]--
		pr := client.Priority(priority.Normal)
		if (cfg.mixed[best].jobs-left[best])%cfg.criticalEvery == 0 {
			pr = priority.Critical // every Nth of each size
		}
		order = append(order, client.Request{RequestID: fmt.Sprintf("mixed-%d", k), Circuit: cfg.circuit,
			Constraints: uint64(1) << cfg.mixed[best].log2, Priority: pr})
	}
	start := time.Now()
	var g errgroup.Group
	for _, r := range order {
		// In order: each submitted before the next (Submit, then Await).
		info, err := c.Submit(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("submit %s: %w", r.RequestID, err)
		}
		g.Go(func() error {
			_, err := c.Await(ctx, info.ID, 30*time.Minute)
			return err
		})
	}
	err := g.Wait()
	wall := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("mixed proof: %w", err)
	}
	return &result{wall: wall, rate: float64(len(order)) / wall.Seconds()}, nil
}

// drive preloads and warms up on the SERVING daemon of c, then
// times the batch and three lone proofs.
func drive(ctx context.Context, cfg benchConfig, c *client.Client) (*result, error) {
	n := uint64(1) << cfg.log2
	if _, _, err := c.PreloadKeys(ctx, cfg.circuit, n); err != nil {
		return nil, fmt.Errorf("preload keys: %w", err)
	}
	req := func(id string) client.Request {
		return client.Request{RequestID: id, Circuit: cfg.circuit, Constraints: n}
	}
	if _, err := c.Prove(ctx, req("warm-"+cfg.mode)); err != nil {
		return nil, fmt.Errorf("warm-up proof: %w", err)
	}
	start := time.Now()
	var g errgroup.Group
	for i := range cfg.jobs {
		g.Go(func() error {
			_, err := c.Prove(ctx, req(fmt.Sprintf("batch-%s-%d", cfg.mode, i)))
			return err
		})
	}
	err := g.Wait()
	wall := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("batch proof: %w", err)
	}
	var lat []time.Duration
	for i := range cfg.lone {
		r, err := c.Prove(ctx, req(fmt.Sprintf("alone-%s-%d", cfg.mode, i)))
		if err != nil {
			return nil, fmt.Errorf("lone proof: %w", err)
		}
		lat = append(lat, r.Timings.Total)
	}
	res := &result{wall: wall, rate: float64(cfg.jobs) / wall.Seconds(), latency: benchutil.Median(lat)}
	if st, err := c.Status(ctx); err == nil {
		res.budget, res.enginePeak = st.Memory.Budget, st.Memory.Peak
		res.tuning = tuningLine(st, n)
	}
	return res, nil
}

// tuningLine is the tuner's choice for constraints n from a status, "none"
// without one.
func tuningLine(st *client.Status, n uint64) string {
	for _, tu := range st.Tuning {
		if tu.Constraints == n {
			return fmt.Sprintf("%d workers, %d solver tasks, synthesis %.0f ms / device %.0f ms (%s)",
				tu.Workers, tu.SolverTasks, tu.SynthesisMs, tu.DeviceMs, tu.Reason)
		}
	}
	return "none"
}

// driveServing gives driveFn a client of the daemon at addr once it is
// SERVING, and two hours for its proofs.
func driveServing(cfg benchConfig, addr string, driveFn func(context.Context, benchConfig, *client.Client) (*result, error)) (*result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	c, err := dialServing(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return driveFn(ctx, cfg, c)
}

// dialServing waits for the daemon at addr to be SERVING and dials it.
func dialServing(ctx context.Context, addr string) (*client.Client, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	for {
		r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("daemon never SERVING: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return client.Dial(addr)
}

// fromTrace sums the device time of the batch's proofs from the daemon's
// trace file: per engine.job whose request id starts with "batch-", its
// gpu.total spans and pipeline.prove spans, and the median synthesis.
func fromTrace(path string, res *result) error {
	spans, err := spanfile.Read(path)
	if err != nil {
		return err
	}
	batch := map[string]bool{} // trace ids of the batch
	for _, s := range spans {
		if id, _ := s.Attrs["cuzk.request.id"].(string); s.Name == "engine.job" && strings.HasPrefix(id, "batch-") {
			batch[s.TraceID] = true
		}
	}
	if len(batch) == 0 {
		return errors.New("no engine.job of the batch in the trace file")
	}
	var gpu, prove time.Duration
	var synth []time.Duration
	var first, last time.Time
	nproofs := 0
	for _, s := range spans {
		if !batch[s.TraceID] {
			continue
		}
		switch s.Name {
		case "gpu.total":
			gpu += s.Duration()
		case "pipeline.prove":
			prove += s.Duration()
			nproofs++
			if first.IsZero() || s.Start.Before(first) {
				first = s.Start
			}
			if s.End.After(last) {
				last = s.End
			}
		case "pipeline.synthesize":
			synth = append(synth, s.Duration())
		}
	}
	res.gpuBusy = gpu.Seconds() / res.wall.Seconds()
	res.proveBusy = prove.Seconds() / res.wall.Seconds()
	if len(synth) > 0 {
		slices.Sort(synth)
		res.synth = synth[len(synth)/2]
	}
	if nproofs > 0 && last.After(first) {
		res.window = last.Sub(first)
		res.gpuWindow, res.proveWindow = gpu.Seconds()/res.window.Seconds(), prove.Seconds()/res.window.Seconds()
		res.gpuPer, res.provePer = gpu/time.Duration(nproofs), prove/time.Duration(nproofs)
	}
	res.lone = loneOf(jobsOf(spans), "alone-")
	return nil
}

// jobTrace is one engine.job's trace, summed up.
type jobTrace struct {
	requestID, priority                 string
	constraints                         int64
	submitted                           time.Time
	queue, synth, devWait, prove, total time.Duration
	synthStart, proveStart              time.Time
	tasks, parts                        int64
}

// jobsOf sums up each engine.job of spans by trace.
func jobsOf(spans []tracefile.Span) map[string]*jobTrace {
	jobs := map[string]*jobTrace{}
	get := func(id string) *jobTrace {
		j := jobs[id]
		if j == nil {
			j = &jobTrace{}
			jobs[id] = j
		}
		return j
	}
	for _, s := range spans {
		j := get(s.TraceID)
		switch s.Name {
		case "engine.job":
			j.requestID, _ = s.Attrs["cuzk.request.id"].(string)
			j.priority, _ = s.Attrs["cuzk.priority"].(string)
			j.constraints, _ = s.Attrs["cuzk.circuit.constraints"].(int64)
			j.submitted, j.total = s.Start, s.Duration()
		case "engine.queue":
			j.queue += s.Duration()
		case "gpu.queue":
			j.devWait += s.Duration()
		case "pipeline.synthesize":
			j.synth += s.Duration()
			j.synthStart = s.Start
		case "pipeline.prove":
			j.prove += s.Duration()
			j.proveStart = s.Start
		case "synthesize.solve":
			j.tasks, _ = s.Attrs["cuzk.solver.tasks"].(int64)
			j.parts, _ = s.Attrs["cuzk.solver.parts"].(int64)
		}
	}
	return jobs
}

// loneOf is the split of the jobs whose request id starts with prefix.
func loneOf(jobs map[string]*jobTrace, prefix string) loneSplit {
	var q, sy, dw, pr []time.Duration
	var tasks, parts []string
	for _, j := range jobs {
		if !strings.HasPrefix(j.requestID, prefix) {
			continue
		}
		q, sy, dw, pr = append(q, j.queue), append(sy, j.synth), append(dw, j.devWait), append(pr, j.prove)
		tasks, parts = append(tasks, strconv.FormatInt(j.tasks, 10)), append(parts, strconv.FormatInt(j.parts, 10))
	}
	if len(q) == 0 {
		return loneSplit{tasks: "-", parts: "-"}
	}
	return loneSplit{queue: benchutil.Median(q), synth: benchutil.Median(sy), devWait: benchutil.Median(dw), prove: benchutil.Median(pr),
		tasks: strings.Join(tasks, ","), parts: strings.Join(parts, ",")}
}
