package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"go.opentelemetry.io/otel/attribute"

	"github.com/otelcuzk/otelcuzk/cupti"
	"github.com/otelcuzk/otelcuzk/cupti/inject"
	"github.com/otelcuzk/otelcuzk/cupti/jobs"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
)

// Environment of the traced program.
const (
	envInjection   = "CUDA_INJECTION64_PATH" // the CUDA driver loads this library at cuInit
	envNVTX        = "NVTX_INJECTION64_PATH" // NVTX loads this one (libcuzkinject.so, then CUPTI) at the first NVTX call
	envGPUTraceSck = "CUZK_GPUTRACE_SOCK"    // where libcuzkinject.so sends its frames
	envCUPTIPath   = "CUZK_CUPTI_PATH"       // the CUPTI library libcuzkinject.so loads
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "gpu-trace",
		Usage:     "run a CUDA program unchanged, its kernels, copies and NVTX ranges traced as OTLP spans (CUPTI)",
		ArgsUsage: "[--] COMMAND [ARGS...]",
		Description: `Runs COMMAND with CUDA's injection mechanism (CUDA_INJECTION64_PATH) loading
libcuzkinject.so, a C library embedded in cuzk, which starts CUPTI activity
capture in the program and sends the records to this process over a Unix
socket; here they become spans, exported by the standard OTEL_* variables
(default: the file ` + otelcuzk.DefaultTraceFile + `).

   cuzk gpu-trace -- ./my-cuda-program --its-flags
   TRACEPARENT=00-<trace>-<span>-01 cuzk gpu-trace ./task   # a task's kernels in its trace

With TRACEPARENT set (a per-task program), every span goes under that
parent: one trace. Without it (a long-running program), each top-level NVTX
range and each --window of other GPU work is its own trace, exported as it
ends, with a resource naming the process. An NVTX range whose message
carries "traceparent=00-..." joins that trace, with its kernels. With
--jobs, work outside NVTX ranges that ran inside a job a daemon published
(cuzk serve --upstream) goes under that job. In a window, the gaps between
GPU work are cuda.idle spans.

Records still in CUDA's buffers when the program ends are flushed at
exit(), at each CUDA context's destruction (what a Go program does before
os.Exit) and at a fatal signal whose action the program left the default;
a program that ends otherwise (_exit, SIGKILL, Go's exit without
destroying its context) loses its last ` + "100 ms" + ` of records, and one line
says so. A run that yields no trace says why in one line.

CUPTI's API and external correlation records, which put a kernel under its
NVTX range, are made only while some thread has a push range open
(CUZK_GPUTRACE_API=1: always; =0: never); work outside every range needs
none. What remains is CUPTI's own cost inside each launch call, about 1 µs
on an H200 (bench/cupti.md). CUZK_GPUTRACE_KIND=kernel records KERNEL
instead of CONCURRENT_KERNEL (serialized kernels), CUZK_GPUTRACE_HWTRACE=1
asks for hardware kernel timestamps (Blackwell and later),
CUZK_CUPTI_PINNED=1 puts CUPTI's profiling buffers in pinned host memory;
none was cheaper on the H200.

The program is never stopped by tracing: if anything fails (no CUDA driver,
no CUPTI, CUPTI in use by another tool, this process gone) the program runs
untraced or the library detaches, and says so once. cuzk gpu-trace exits
with the program's exit code. --window must be more than 0, --drain 0 or more.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "cupti", Usage: "CUPTI library `PATH` (default: $CUZK_CUPTI, libcupti.so.13, .so.12, /usr/local/cuda)"},
			&cli.DurationFlag{Name: "window", Value: cupti.DefaultWindow, Usage: "length (more than 0) of a device window span for work outside NVTX ranges"},
			&cli.IntFlag{Name: "max-kernel-spans", Value: 256, Usage: "kernel spans per parent before further ones are aggregated per name"},
			&cli.StringFlag{Name: "trace-file", Usage: "OTLP JSON lines `FILE` when no OTLP endpoint is set (default " + otelcuzk.DefaultTraceFile + ")"},
			&cli.DurationFlag{Name: "drain", Value: 5 * time.Second, Usage: "how long to wait for the last records after the program exits"},
			&cli.StringFlag{Name: "jobs", Usage: "jobs `FILE` a daemon forwarding work to this program publishes (package cupti/jobs; default $" + jobs.EnvFile + "): work outside NVTX ranges goes under the job whose time window holds it"},
		},
		Action: runGPUTrace,
	})
}

func runGPUTrace(c *cli.Context) error {
	if w := c.Duration("window"); w <= 0 {
		return fmt.Errorf("gpu-trace: --window %v: want a positive duration (e.g. 1s)", w)
	}
	if d := c.Duration("drain"); d < 0 {
		return fmt.Errorf("gpu-trace: --drain %v: want 0 or more (e.g. 5s)", d)
	}
	args := c.Args().Slice()
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return errors.New("gpu-trace: want a COMMAND to run (cuzk gpu-trace [--] COMMAND ARGS...)")
	}
	bin, err := exec.LookPath(args[0])
	if err != nil {
		return fmt.Errorf("gpu-trace: %w", err)
	}
	// The captures read it; a typo is refused here, as cuzk prove does,
	// not said only where CUPTI starts.
	if _, _, err := cupti.ParseNoForcedFlush(os.Getenv(cupti.NoForcedFlushEnv)); err != nil {
		return fmt.Errorf("gpu-trace: %s=%w", cupti.NoForcedFlushEnv, err)
	}
	ctx := context.Background()
	warn := func(msg string) { fmt.Fprintln(gpuTraceStderr, "cuzk gpu-trace:", msg) }
	cmd := exec.Command(bin, args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr

	tr, terr := prepareTrace(c.String("cupti"))
	if terr != nil {
		// Tracing cannot start: the program runs untraced, as it would
		// have without gpu-trace, and its exit code is ours.
		warn(terr.Error() + "; running the program untraced")
		cmd.Env = os.Environ()
		return exitLike(runForwarding(cmd))
	}
	cmd.Env = tr.env(os.Environ())
	if err := cmd.Start(); err != nil {
		tr.cleanup()
		return fmt.Errorf("gpu-trace: %w", err)
	}
	name := filepath.Base(bin)
	topts := []otelcuzk.Option{otelcuzk.WithResourceAttributes(
		attribute.String("process.executable.name", name),
		attribute.String("process.executable.path", bin),
		attribute.Int("process.pid", cmd.Process.Pid),
		attribute.String("process.command", args[0]),
	)}
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		topts = append(topts, otelcuzk.WithServiceName(name))
	}
	if f := c.String("trace-file"); f != "" {
		topts = append(topts, otelcuzk.WithTraceFile(f))
	}
	tel, err := otelcuzk.New(ctx, topts...)
	if err != nil {
		warn(err.Error() + "; the program runs untraced")
		tr.cleanup()
		return exitLike(waitForwarding(cmd))
	}
	root := otelcuzk.ContextWithEnvTraceparent(ctx)
	ropts := []cupti.Option{
		cupti.WithTracerProvider(tel.TracerProvider),
		cupti.WithWindow(c.Duration("window")),
		cupti.WithMaxKernelSpans(c.Int("max-kernel-spans")),
		// Drops are said once at the end, with their count (droppedLine).
		cupti.WithLogger(func(s string) {
			if !strings.HasPrefix(s, "cupti: records dropped") {
				warn(s)
			}
		}),
	}
	if ix := jobs.NewIndex(c.String("jobs"), 50*time.Millisecond); ix != nil {
		ropts = append(ropts, cupti.WithJobs(ix.Find))
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		open     []net.Conn
		progs    []cupti.Program
		accepted = make(chan struct{})
	)
	go func() {
		defer close(accepted)
		for {
			conn, err := tr.ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, conn)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				p, err := cupti.ReadFrames(root, conn, ropts...)
				if err != nil {
					warn(err.Error())
				}
				mu.Lock()
				progs = append(progs, p)
				mu.Unlock()
			}()
		}
	}()
	werr := waitForwarding(cmd)
	// The program exited. A process that connected just before may still
	// be in the listener's backlog: accept for a moment more, then stop.
	if ul, ok := tr.ln.(*net.UnixListener); ok {
		ul.SetDeadline(time.Now().Add(200 * time.Millisecond))
	} else {
		tr.ln.Close()
	}
	<-accepted
	// Each library sent goodbye or its connection broke; give the last
	// records --drain to arrive.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(c.Duration("drain")):
		warn(fmt.Sprintf("records still arriving %s after the program exited; exporting what came", human.Duration(c.Duration("drain"))))
		mu.Lock()
		for _, conn := range open {
			conn.Close()
		}
		mu.Unlock()
		<-done
	}
	if err := tel.Shutdown(ctx); err != nil {
		warn(err.Error())
	}
	tr.cleanup()
	mu.Lock()
	for _, line := range traceOutcome(name, progs, werr, c.String("trace-file")) {
		warn(line)
	}
	mu.Unlock()
	return exitLike(werr)
}

// flushMS is the injection library's periodic flush (inject.c FLUSH_MS):
// what a program that ends with no flush point can lose.
const flushMS = 100

// traceOutcome says, one line each, what the run's trace lacks: no
// program connected, a program whose last records were lost (it ended
// with no flush point), or no spans at all. Nothing when all is well.
func traceOutcome(name string, progs []cupti.Program, werr error, traceFile string) []string {
	var lines []string
	how := "exited"
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			how = "was killed by " + ws.Signal().String()
		}
	}
	if len(progs) == 0 {
		return []string{fmt.Sprintf("no trace: %s %s without starting CUDA under the injection library (no cuInit, or CUDA did not load %s)", name, how, envInjection)}
	}
	spans := 0
	for _, p := range progs {
		spans += p.Stats.Spans
		if d := p.Stats.Dropped; d > 0 {
			lines = append(lines, droppedLine(name, p))
		}
		if p.Exited || p.Signal != 0 || p.ContextFlushes > 0 {
			continue
		}
		// It ended with no flush point: what CUPTI still held is gone.
		lines = append(lines, fmt.Sprintf("%s (pid %d) %s with no flush point (no exit(), CUDA context destroyed or catchable signal: _exit, SIGKILL, or Go's exit with its context alive): the GPU work of its last %d ms before that, %d records delivered up to then, is missing", name, p.PID, how, flushMS, p.Stats.Kernels+p.Stats.Memcpys+p.Stats.Memsets+p.Stats.Syncs))
	}
	if spans == 0 {
		where := "the trace"
		if traceFile != "" {
			where = traceFile
		}
		lines = append(lines, fmt.Sprintf("no trace: %s %s with no GPU work recorded by CUPTI; nothing written to %s", name, how, where))
	}
	return lines
}

// droppedLine says how many records a program's trace lost and why.
func droppedLine(name string, p cupti.Program) string {
	var why []string
	if c := p.Stats.Dropped - p.Stats.DroppedByReader; c > 0 {
		why = append(why, fmt.Sprintf("%d when CUPTI's activity buffers were full", c))
	}
	if r := p.Stats.DroppedByReader; r > 0 {
		why = append(why, fmt.Sprintf("%d when gpu-trace's reader fell behind (the injection library's queue was at its limit)", r))
	}
	return fmt.Sprintf("%s (pid %d) lost %d record%s: %s; the trace misses that GPU work", name, p.PID, p.Stats.Dropped, human.Plural(int(p.Stats.Dropped)), strings.Join(why, ", "))
}

// gpuTraceStderr is where gpu-trace's own lines go (a variable for the tests).
var gpuTraceStderr io.Writer = os.Stderr

// gpuTrace is what tracing one program needs: the injection library on
// disk, CUPTI's path and the socket the library connects to.
type gpuTrace struct {
	lib, cuptiPath, sock, dir string
	ln                        net.Listener
}

// driverLoads says whether the CUDA driver's library loads (a variable for
// the tests, which run on hosts with and without one).
var driverLoads = func() error { return cupti.LibraryLoads(cupti.DriverLibrary) }

// prepareTrace gets what tracing needs: CUPTI from cuptiFlag (--cupti,
// "" for the default paths), the injection library, the socket. Without a
// CUDA driver it says that alone: the CUPTI paths tried do not matter then.
func prepareTrace(cuptiFlag string) (*gpuTrace, error) {
	if v := os.Getenv(envInjection); v != "" {
		return nil, fmt.Errorf("%s is already set (%s: another tool injects into CUDA)", envInjection, v)
	}
	var paths []string
	if cuptiFlag != "" {
		paths = []string{cuptiFlag}
	}
	cuptiPath, _, err := cupti.Locate(paths...)
	if err != nil {
		if driverLoads() != nil {
			return nil, fmt.Errorf("no CUDA driver (%s) on this host; nothing to trace", cupti.DriverLibrary)
		}
		return nil, fmt.Errorf("no usable CUPTI (--cupti PATH or $CUZK_CUPTI names one): %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	lib, err := inject.WriteTo(filepath.Join(cache, "otelcuzk", "gpu-trace"))
	if err != nil {
		if lib, err = inject.WriteTo(filepath.Join(os.TempDir(), "otelcuzk-gpu-trace")); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "cuzk-gpu-trace-")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("listening on %s: %w", sock, err)
	}
	return &gpuTrace{lib: lib, cuptiPath: cuptiPath, sock: sock, dir: dir, ln: ln}, nil
}

func (t *gpuTrace) env(base []string) []string {
	env := make([]string, 0, len(base)+4)
	nvtxSet := false
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case envGPUTraceSck, envCUPTIPath, envInjection:
			continue
		case envNVTX:
			nvtxSet = true
		}
		env = append(env, kv)
	}
	env = append(env, envInjection+"="+t.lib, envGPUTraceSck+"="+t.sock, envCUPTIPath+"="+t.cuptiPath)
	if !nvtxSet {
		// The injection library itself (it starts the capture at the
		// first NVTX call, which may come before cuInit, and hands NVTX
		// on to CUPTI).
		env = append(env, envNVTX+"="+t.lib)
	}
	return env
}

func (t *gpuTrace) cleanup() {
	t.ln.Close()
	os.RemoveAll(t.dir)
}

// runForwarding starts cmd and waits for it, passing on the signals that
// would stop us.
func runForwarding(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("gpu-trace: %w", err)
	}
	return waitForwarding(cmd)
}

func waitForwarding(cmd *exec.Cmd) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			cmd.Process.Signal(s)
		case err := <-done:
			return err
		}
	}
}

// exitCode is an exit status to end cuzk with, silently (main).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exitLike turns the program's exit status into cuzk's: its code, or 128
// + the signal that killed it, as a shell reports.
func exitLike(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return exitCode(code)
	}
	return err
}
