// Command daemonbench measures the throughput of `cuzk serve`: N proofs
// submitted at once to one daemon, the serial engine (--synthesis-workers
// 0) against the pipelined one, in one run. It reports proofs per second,
// the device busy share (Σ device time over the wall time of the batch,
// from the daemon's own trace: gpu.total where the backend records it,
// else pipeline.prove), and the latency of a proof sent alone.
//
//	daemonbench -cuzk .dev/bin/cuzk -backend cuda -circuit merkle -runs 20:16,22:8 -out bench.txt
//
// Each (size, mode) starts its own daemon with its own trace file, preloads
// the keys, proves once to warm up (kernels, key upload), then times the
// batch, then three proofs one after another for the latency, and stops
// the daemon with SIGTERM (which flushes its spans).
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
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	"github.com/otelcuzk/otelcuzk/prover/client"
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
	flag.Parse()
	runs, err := parseRuns(*runsFlag)
	if err != nil {
		fatal(err)
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
				log2: r.log2, jobs: r.jobs, synthesisWorkers: workers, mode: mode, dir: *dir, port: p})
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
		}
	}
	fmt.Fprintf(w, "gpu busy = Σ gpu.total of the batch's proofs / wall; prove busy = Σ pipeline.prove / wall (over 100%% with several devices); latency = median Total of 3 proofs sent alone; synth = median pipeline.synthesize in the batch. Traces and logs in %s\n", *dir)
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
}

var listening = regexp.MustCompile(`listening on (\S+) .*`)

func bench(cfg benchConfig) (*result, error) {
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
	res, err := drive(cfg, addr)
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
	if err := fromTrace(traceFile, res); err != nil {
		return nil, err
	}
	return res, nil
}

// drive waits for the daemon to be SERVING, preloads and warms up, then
// times the batch and three lone proofs.
func drive(cfg benchConfig, addr string) (*result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
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
	c, err := client.Dial(addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
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
	var wg sync.WaitGroup
	errs := make(chan error, cfg.jobs)
	for i := range cfg.jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Prove(ctx, req(fmt.Sprintf("batch-%s-%d", cfg.mode, i))); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("batch proof: %w", err)
	}
	var lat []time.Duration
	for i := range 3 {
		r, err := c.Prove(ctx, req(fmt.Sprintf("alone-%s-%d", cfg.mode, i)))
		if err != nil {
			return nil, fmt.Errorf("lone proof: %w", err)
		}
		lat = append(lat, r.Timings.Total)
	}
	slices.Sort(lat)
	res := &result{wall: wall, rate: float64(cfg.jobs) / wall.Seconds(), latency: lat[1]}
	if st, err := c.Status(ctx); err == nil {
		res.budget, res.enginePeak = st.Memory.Budget, st.Memory.Peak
	}
	return res, nil
}

// fromTrace sums the device time of the batch's proofs from the daemon's
// trace file: per engine.job whose request id starts with "batch-", its
// gpu.total spans and pipeline.prove spans, and the median synthesis.
func fromTrace(path string, res *result) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	spans, _, err := tracefile.ReadOTLPJSONLinesSkipping(f)
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
	for _, s := range spans {
		if !batch[s.TraceID] {
			continue
		}
		switch s.Name {
		case "gpu.total":
			gpu += s.Duration()
		case "pipeline.prove":
			prove += s.Duration()
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
	return nil
}
