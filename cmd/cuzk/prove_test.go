package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/maintest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// runCuzk runs the command line in-process and returns stdout, stderr and
// the error main would print (exit status 1).
func runCuzk(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errOut
	err := app.Run(append([]string{"cuzk"}, args...))
	return out.String(), errOut.String(), err
}

func TestProveWritesProofTraceAndWaterfall(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	proof, traceFile := filepath.Join(dir, "p.bin"), filepath.Join(dir, "t.jsonl")
	out, errOut, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "1024",
		"--backend", "cpu", "--release", "async", "--proof", proof, "--trace-file", traceFile)
	if err != nil {
		t.Fatalf("prove: %v\n%s", err, errOut)
	}
	for _, want := range []string{"engine.job", "engine.queue", "keys.load", "pipeline.synthesize", "pipeline.prove",
		"groth16.prove", "groth16.compute_h", "ntt.inverse_coset", "msm.g1.h", "msm.g2.b", "buffer.release",
		"pipeline.serialize", "proof.verify", "ACCEPTED", proof, traceFile} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if fi, err := os.Stat(proof); err != nil || fi.Size() == 0 {
		t.Fatalf("proof file: %v", err)
	}
	data, err := os.ReadFile(traceFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"resourceSpans"`, `"engine.job"`, `"msm.g1.a"`, `"buffer.release"`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("trace file lacks %s", want)
		}
	}
	noTempFiles(t, dir)

	// Pool and sync modes too.
	for _, mode := range []string{"sync", "pool"} {
		if _, errOut, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "1024",
			"--backend", "cpu", "--release", mode, "--proof", proof, "--trace-file", traceFile); err != nil {
			t.Fatalf("--release %s: %v\n%s", mode, err, errOut)
		}
	}
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestProveBadInputFailsOnOneLineWithoutProofFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	proof, traceFile := filepath.Join(dir, "p.bin"), filepath.Join(dir, "t.jsonl")
	base := func(extra ...string) []string {
		args := []string{"prove", "--circuit", "mulchain", "--constraints", "256", "--backend", "cpu",
			"--proof", proof, "--trace-file", traceFile}
		return append(args, extra...)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown circuit", base("--circuit", "fibonacci"), "unknown circuit"},
		{"zero constraints", base("--constraints", "0"), "bad constraint count"},
		{"negative constraints", base("--constraints", "-5"), "bad constraint count"},
		{"too large for memory", base("--constraints", "4294967296"), "too large for this machine's memory"},
		{"too large for any proof", base("--constraints", "1099511627776"), "above 2^32"},
		// Refused before the circuit is built: building these at this size
		// ran out of memory (merkle, rangecheck) or grew without bound (porep).
		{"merkle too large for memory", base("--circuit", "merkle", "--constraints", "4294967296"), "too large for this machine's memory"},
		{"rangecheck too large for memory", base("--circuit", "rangecheck", "--constraints", "4294967296"), "too large for this machine's memory"},
		{"porep too large for memory", base("--circuit", "porep", "--constraints", "4294967296"), "too large for this machine's memory"},
		{"unwritable proof path", base("--proof", filepath.Join(dir, "no", "such", "dir", "p.bin")), "proof file"},
		{"proof path is a directory", base("--proof", dir), "is a directory"},
		{"unwritable trace path", base("--trace-file", filepath.Join(dir, "no", "such", "t.jsonl")), "trace"},
		{"unknown release mode", base("--release", "later"), `--release "later": unknown release mode (want sync, async or pool)`},
		{"unknown backend", base("--backend", "tpu"), "unknown backend"},
		{"cuda without the backend", base("--backend", "cuda"), "backend unavailable"},
		{"merkle below one level", base("--circuit", "merkle", "--constraints", "100"), "merkle needs at least"},
		{"constraints out of range", base("--constraints", "99999999999999999999"), "value out of range"},
		{"constraints not a number", base("--constraints", "many"), "--constraints many: not an integer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out, _, err := runCuzk(t, c.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error on several lines: %q", err)
			}
			if _, serr := os.Stat(proof); serr == nil {
				t.Error("a proof file was written")
			}
			noTempFiles(t, dir)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// On a host without a GPU, --backend cuda says once that the backend is
// unavailable and why; it read "cuda backend: backend unavailable: cuda:
// no CUDA device: dlopen libcuda.so.1: ...", each wrapper naming it again.
// The line ends with what to do (backendHint); it gave no hint.
func TestProveCUDAWithoutDeviceSaysItOnce(t *testing.T) {
	if _, err := cudaspans.Devices(); err == nil {
		t.Skip("this host has a CUDA device")
	}
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	_, _, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "256", "--backend", "cuda",
		"--proof", filepath.Join(dir, "p.bin"), "--trace-file", filepath.Join(dir, "t.jsonl"))
	if err == nil {
		t.Fatal("proved on cuda without a device")
	}
	msg, hint, ok := strings.Cut(err.Error(), "; ")
	if !ok || hint != "use --backend cpu, or --backend auto to fall back to the CPU" {
		t.Errorf("error %q does not end with what to do", err)
	}
	if !strings.HasPrefix(msg, "cuda backend unavailable: no CUDA device: ") || strings.Count(msg, "unavailable") != 1 ||
		strings.Count(msg, "backend") != 1 || strings.Count(msg, "no CUDA device") != 1 || strings.Contains(msg, "\n") {
		t.Errorf("error %q, want one line 'cuda backend unavailable: no CUDA device: REASON'", msg)
	}
	if !errors.Is(err, backend.ErrUnavailable) || !errors.Is(err, cudaspans.ErrNoDevice) {
		t.Errorf("error %q wraps neither backend.ErrUnavailable nor cudaspans.ErrNoDevice", msg)
	}
}

func TestProveWithUnreachableOTLPEndpointFailsFast(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	// host:port is an endpoint for gRPC only; over http/protobuf it is a
	// misconfiguration (TestOTLPConfigErrorsAreReportedBeforeAnyProbe).
	for ep, protocol := range map[string]string{"http://127.0.0.1:1": "http/protobuf", "127.0.0.1:1": "grpc"} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", ep)
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
		t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")
		proof := filepath.Join(dir, "p.bin")
		start := time.Now()
		_, _, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "256", "--backend", "cpu", "--proof", proof)
		// Said with what to do: a receiver there, or no endpoint and the
		// trace in the file prove writes without one.
		if err == nil || !strings.HasPrefix(err.Error(), "OTLP endpoint "+ep+" unreachable: ") || strings.Contains(err.Error(), "\n") ||
			!strings.HasSuffix(err.Error(), ": start a receiver there (Jaeger, an OpenTelemetry Collector) or unset OTEL_EXPORTER_OTLP_ENDPOINT to write the trace to ./cuzk-trace.jsonl (--trace-file) instead") {
			t.Errorf("%s: err = %v, want one line naming the unreachable endpoint and what to do", ep, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v", ep, d)
		}
		if _, serr := os.Stat(proof); serr == nil {
			t.Errorf("%s: proof written", ep)
		}
		noTempFiles(t, dir)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "notaurl")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	if _, _, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "256", "--backend", "cpu",
		"--proof", filepath.Join(dir, "p.bin")); err == nil || !strings.Contains(err.Error(), "needs a URL") {
		t.Errorf("endpoint notaurl: %v, want it called malformed, not unreachable", err)
	}
}

// nestedBracket returns the first line of out with a bracket inside a
// bracket, or "".
func nestedBracket(out string) string {
	for _, line := range strings.Split(out, "\n") {
		depth := 0
		for _, r := range line {
			switch r {
			case '(':
				if depth++; depth > 1 {
					return line
				}
			case ')':
				depth--
			}
		}
	}
	return ""
}

// cuzk setup printed "merkle, 2048 constraints (1 inclusion proof of
// depth 24 (MiMC), 300 filler): keys made by ...".
func TestSetupSaysItsCircuitWithoutABracketInABracket(t *testing.T) {
	out, _, err := runCuzk(t, "setup", "--circuit", "merkle", "--constraints", "2048", "--backend", "cpu", "--cache-dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "merkle, 2048 constraints: 1 inclusion proof") {
		t.Errorf("setup's line does not name the circuit's shape after a colon:\n%s", out)
	}
	if line := nestedBracket(out); line != "" {
		t.Errorf("a bracket inside a bracket: %q", line)
	}
}

func TestSetupCachesTheKeyOnce(t *testing.T) {
	dir := t.TempDir()
	args := []string{"setup", "--circuit", "mulchain", "--constraints", "512", "--cache-dir", dir}
	out1, _, err := runCuzk(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	out2, _, err := runCuzk(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out1, "made by groth16.Setup") || !strings.Contains(out2, "already cached") {
		t.Errorf("first %q, second %q", out1, out2)
	}
	// A test binary has no VCS revision, as go run's: the circuit cache is
	// keyed by its executable, and the second setup reuses the circuit.
	if !strings.Contains(out2, "compiled circuit from the cache") {
		t.Errorf("second setup %q did not reuse the compiled circuit", out2)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.keys"))
	if len(files) != 1 {
		t.Errorf("cache holds %v", files)
	}
	if _, _, err := runCuzk(t, "setup", "--circuit", "nosuch", "--cache-dir", dir); err == nil || !strings.Contains(err.Error(), "unknown circuit") {
		t.Errorf("unknown circuit: %v", err)
	}
	// prove then reuses the key setup made.
	proof := filepath.Join(t.TempDir(), "p.bin")
	if _, _, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "512", "--backend", "cpu",
		"--cache-dir", dir, "--proof", proof, "--trace-file", filepath.Join(t.TempDir(), "t.jsonl")); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.keys")); len(files) != 1 {
		t.Errorf("prove made another key: %v", files)
	}
}

// TestHelperProcessMain is not a test: run with CUZK_HELPER_MAIN=1 by
// TestProveExitsNonZero, it is the cuzk program itself (the os/exec
// helper-process pattern), so exit codes are tested without a build.
func TestHelperProcessMain(t *testing.T) { maintest.HelperMain(t, "CUZK_HELPER_MAIN", "cuzk", main) }

func TestProveExitsNonZeroWithOneLineOnStderr(t *testing.T) {
	dir := t.TempDir()
	proof := filepath.Join(dir, "p.bin")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessMain$", "--",
		"prove", "--circuit", "mulchain", "--constraints", "0", "--proof", proof)
	cmd.Env = append(os.Environ(), "CUZK_HELPER_MAIN=1", "CUZK_CACHE_DIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("exit: %v, want a non-zero status", err)
	}
	if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "bad constraint count") {
		t.Errorf("stderr %q, want one line naming the problem", stderr.String())
	}
	if _, err := os.Stat(proof); err == nil {
		t.Error("proof file written")
	}
}

func TestProveWithAnUnsampledTraceStillReportsTheProof(t *testing.T) {
	clearOTLPEnv(t)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	proof := filepath.Join(dir, "p.bin")
	out, errOut, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "512", "--backend", "cpu",
		"--proof", proof, "--trace-file", filepath.Join(dir, "t.jsonl"))
	if err != nil {
		t.Fatalf("prove with always_off: %v\n%s", err, errOut)
	}
	for _, want := range []string{"ACCEPTED", proof, "not sampled"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "engine.job") {
		t.Errorf("a waterfall was printed for a trace the sampler dropped:\n%s", out)
	}
}

func TestProveSaysTheTraceWasNotDeliveredWhenTheExportFails(t *testing.T) {
	clearOTLPEnv(t)
	// A collector that accepts connections and never answers.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+silentListener(t))
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "500")
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	traceFile := filepath.Join(dir, "t.jsonl")
	out, _, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "512", "--backend", "cpu",
		"--proof", filepath.Join(dir, "p.bin"), "--trace-file", traceFile)
	if err == nil || !strings.Contains(err.Error(), "trace export") {
		t.Errorf("want a trace export error, got %v", err)
	}
	if !strings.Contains(out, "NOT delivered") || strings.Contains(out, "trace     sent") {
		t.Errorf("output claims delivery:\n%s", out)
	}
	// The trace the export lost is in the local trace file, and prove
	// says where.
	if !strings.Contains(out, "written to "+traceFile+" instead") {
		t.Errorf("output does not say where the trace was kept:\n%s", out)
	}
	m := regexp.MustCompile(`trace id ([0-9a-f]{32})`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no trace id in the output:\n%s", out)
	}
	tout, terr, err := runCuzk(t, "trace", "--trace-id", m[1], traceFile)
	if err != nil || !strings.Contains(tout, "engine.job") || !strings.Contains(tout, "groth16.prove") {
		t.Errorf("cuzk trace of the kept trace: %v\n%s%s", err, tout, terr)
	}
}

// gRPC sent to an OTLP/HTTP port (4318) failed only at the export
// timeout, 11.6 s later, with 'http2: frame too large': prove now names
// the mix-up in one line before it proves, and writes no proof.
func TestProveNamesAnOTLPPortOfTheOtherTransportAtOnce(t *testing.T) {
	otlpEnvReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	proof := filepath.Join(dir, "p.bin")
	start := time.Now()
	_, _, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "256", "--backend", "cpu", "--proof", proof)
	if err == nil || !strings.Contains(err.Error(), "speaks HTTP/1 (OTLP/HTTP), not gRPC; set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf") ||
		strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line naming the OTLP/HTTP port", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if _, serr := os.Stat(proof); serr == nil {
		t.Error("proof written")
	}
}

func TestUnknownCommandsStrayArgumentsAndBadFlagsFailOnOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"bogus"},
		{"prove", "extra"},
		{"setup", "extra"},
		{"serve", "extra"},
		{"submit", "extra"},
		{"submit", "--bogus"},
		{"serve", "--bogus"},
		{"trace", "--bogus", "x"},
	} {
		out, errOut, err := runCuzk(t, args...)
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("cuzk %v: %v, want a one-line error", args, err)
		}
		if out != "" || errOut != "" {
			t.Errorf("cuzk %v printed usage text:\n%s%s", args, out, errOut)
		}
	}
}

// stoppableRunner is a proof that ends as soon as its job is cancelled.
type stoppableRunner struct{ started chan struct{} }

func (r stoppableRunner) Run(ctx context.Context, _ *prover.Request) (*prover.Result, error) {
	close(r.started)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(10 * time.Second):
		return &prover.Result{}, nil
	}
}

// stubbornRunner is a step that cannot stop (a key setup): it ignores its
// context.
type stubbornRunner struct{ started chan struct{} }

func (r stubbornRunner) Run(context.Context, *prover.Request) (*prover.Result, error) {
	close(r.started)
	time.Sleep(20 * time.Second)
	return &prover.Result{}, nil
}

func TestAnInterruptDuringAStepThatCannotStopEndsTheCommandWithinSeconds(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	r := stubbornRunner{started: make(chan struct{})}
	go func() { <-r.started; interrupt() }()
	start := time.Now()
	if _, err := runJob(ctx, noop.NewTracerProvider(), r, "cpu:0", &prover.Request{RequestID: "x", Circuit: "mulchain"}); err == nil {
		t.Error("an interrupted job returned no error")
	}
	// The engine's cancel grace (1 s), not a second wait on top of it.
	if d := time.Since(start); d > 1800*time.Millisecond {
		t.Errorf("runJob returned %v after the interrupt", d)
	}
}

func TestAnInterruptStopsTheRunningProofAtOnce(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	r := stoppableRunner{started: make(chan struct{})}
	go func() { <-r.started; interrupt() }()
	start := time.Now()
	_, err := runJob(ctx, noop.NewTracerProvider(), r, "cpu:0", &prover.Request{RequestID: "x", Circuit: "mulchain"})
	if err == nil {
		t.Error("an interrupted job returned no error")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("runJob returned %v after the interrupt; the running proof was not stopped", d)
	}
}

// A trace file with a line cut short (a killed writer) neither fails the
// proof nor hides the trace: prove reports the verdict and proof and its
// waterfall (it reads only what it appended, so not the bad line), and
// trace shows the waterfall of the good lines, naming the bad one.
func TestATraceFileWithADamagedLineStillShowsTheProofAndTheTrace(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	proof, traceFile := filepath.Join(dir, "p.bin"), filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(traceFile, []byte(`{"resourceSpans":[{"resource":`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runCuzk(t, "prove", "--circuit", "mulchain", "--constraints", "1024",
		"--backend", "cpu", "--proof", proof, "--trace-file", traceFile)
	if err != nil {
		t.Fatalf("prove with a damaged trace file: %v\n%s", err, errOut)
	}
	for _, want := range []string{"engine.job", "ACCEPTED", proof} {
		if !strings.Contains(out, want) {
			t.Errorf("prove output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(errOut, "line 1") {
		t.Errorf("prove read the file before its own trace (it named the damaged line): %q", errOut)
	}
	out, errOut, err = runCuzk(t, "trace", traceFile)
	if err != nil {
		t.Fatalf("trace of a file with a damaged line: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "groth16.prove") || !strings.Contains(errOut, "line 1") {
		t.Errorf("trace: stdout %q, stderr %q; want the waterfall and a note on line 1", out, errOut)
	}
}

// An interrupted prove exits 130 (128+SIGINT, as submit does), saying no
// proof was written, and writes none.
func TestAnInterruptedProveExits130WithoutAProof(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	ctx, interrupt := context.WithCancel(context.Background())
	interrupt() // the signal's context is this one's child: already done
	proof := filepath.Join(dir, "p.bin")
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err := app.RunContext(ctx, []string{"cuzk", "prove", "--circuit", "mulchain", "--constraints", "64", "--backend", "cpu",
		"--proof", proof, "--trace-file", filepath.Join(dir, "t.jsonl")})
	var ec interface{ ExitCode() int }
	if !errors.As(err, &ec) || ec.ExitCode() != exitInterrupted || err.Error() != "interrupted by a signal; no proof written" {
		t.Errorf("interrupted prove: %v, want exit %d saying no proof was written", err, exitInterrupted)
	}
	if _, serr := os.Stat(proof); !os.IsNotExist(serr) {
		t.Errorf("an interrupted prove wrote %s (%v)", proof, serr)
	}
}

// SIGINT during the circuit compile (gnark's frontend.Compile cannot
// stop) left circuit.compile open: the trace had circuit.cache.read and
// circuit.frontend at its root and cuzk trace called it 100 % untraced.
// Now the run ends within seconds and every span of its trace is in the
// file under its parent, circuit.compile and engine.job ended with
// error.type canceled.
func TestSIGINTDuringTheCompileLeavesAWholeTraceEndedCanceled(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles merkle at 2^20")
	}
	clearOTLPEnv(t)
	dir := t.TempDir()
	traceFile := filepath.Join(dir, "t.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessMain$", "--",
		"prove", "--circuit", "merkle", "--constraints", "1048576", "--backend", "cpu",
		"--proof", filepath.Join(dir, "p.bin"), "--trace-file", traceFile)
	cmd.Env = append(os.Environ(), "CUZK_HELPER_MAIN=1", "CUZK_CACHE_DIR="+filepath.Join(dir, "cache"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The circuit cache's line comes at the first compile, just before
	// gnark's frontend runs.
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var said []string
	for l := range lines {
		said = append(said, l)
		if strings.HasPrefix(l, "circuit cache:") {
			break
		}
	}
	time.Sleep(300 * time.Millisecond)
	signalled := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range lines { // drained: the child must not block on stderr
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
			t.Errorf("exit %v, want %d", err, exitInterrupted)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("prove still running 20 s after SIGINT during the compile")
	}
	if d := time.Since(signalled); d > 8*time.Second {
		t.Errorf("prove took %v to end after SIGINT", d)
	}
	f, err := os.Open(traceFile)
	if err != nil {
		t.Fatalf("no trace file after the interrupted run (stderr %q): %v", said, err)
	}
	defer f.Close()
	spans, err := tracefile.ReadOTLPJSONLines(f)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]tracefile.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	errType := map[string]string{}
	for _, s := range spans {
		if s.ParentID == "" {
			if s.Name != "engine.job" {
				t.Errorf("%s is a root: its parent was never exported", s.Name)
			}
		} else if _, ok := byID[s.ParentID]; !ok {
			t.Errorf("%s's parent %s is not in the trace", s.Name, s.ParentID)
		}
		if v, ok := s.Attrs["error.type"].(string); ok {
			errType[s.Name] = v
		}
	}
	for _, name := range []string{"engine.job", "circuit.compile"} {
		if errType[name] != "canceled" {
			t.Errorf("%s: error.type %q, want canceled (spans: %d)", name, errType[name], len(spans))
		}
	}
}
