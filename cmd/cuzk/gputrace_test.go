package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/cupti"
	"github.com/otelcuzk/otelcuzk/cupti/inject"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// The gpu-trace tests run without a GPU: ../../cupti/testdata/fakecupti.c
// stands in for libcupti and fakeprog.c for a CUDA program that loads the
// injection library as the driver does at cuInit. What runs is the real
// libcuzkinject.so (its C, cz_core.c, the socket) and this command.

var fakeBuild struct {
	once      sync.Once
	dir, err  string
	cupti     string
	prog, lib string
}

// TestMain removes the fakes built for the package's tests.
func TestMain(m *testing.M) {
	// Every daemon a test starts keeps its jobs in memory, unless the test
	// gives it a --state-dir: none shares the user's journal.
	os.Setenv("CUZK_STATE_DIR", "none")
	code := m.Run()
	if fakeBuild.dir != "" {
		os.RemoveAll(fakeBuild.dir)
	}
	os.Exit(code)
}

func buildFakes(t *testing.T) (cuptiLib, prog string) {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	fakeBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "gputrace-fakes-")
		if err != nil {
			fakeBuild.err = err.Error()
			return
		}
		fakeBuild.dir = dir
		fakeBuild.cupti = filepath.Join(dir, "libcupti-fake.so")
		fakeBuild.prog = filepath.Join(dir, "fakeprog")
		for _, args := range [][]string{
			{"-shared", "-fPIC", "-o", fakeBuild.cupti, "../../cupti/testdata/fakecupti.c", "-lpthread"},
			{"-o", fakeBuild.prog, "testdata/gputrace/fakeprog.c", "-ldl"},
		} {
			if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
				fakeBuild.err = err.Error() + ": " + string(out)
				return
			}
		}
	})
	if fakeBuild.err != "" {
		t.Fatal(fakeBuild.err)
	}
	return fakeBuild.cupti, fakeBuild.prog
}

func runGPUTraceCmd(t *testing.T, env map[string]string, args ...string) ([]tracefile.Span, error) {
	t.Helper()
	lib, _ := buildFakes(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, k := range []string{"TRACEPARENT", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SERVICE_NAME", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	file := filepath.Join(t.TempDir(), "trace.jsonl")
	argv := append([]string{"cuzk", "gpu-trace", "--cupti", lib, "--window", "200ms", "--trace-file", file, "--"}, args...)
	err := newApp().Run(argv)
	f, ferr := os.Open(file)
	if ferr != nil {
		return nil, errors.Join(err, ferr)
	}
	defer f.Close()
	spans, rerr := tracefile.ReadOTLPJSONLines(f)
	if rerr != nil {
		t.Fatal(rerr)
	}
	return spans, err
}

func byName(t *testing.T, spans []tracefile.Span, name string) tracefile.Span {
	t.Helper()
	var found []tracefile.Span
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("%d spans named %q, want 1 (have %v)", len(found), name, names)
	}
	return found[0]
}

func TestGPUTraceTurnsAForeignProgramsRecordsIntoSpans(t *testing.T) {
	_, prog := buildFakes(t)
	before := time.Now()
	spans, err := runGPUTraceCmd(t, nil, prog, "basic")
	if err != nil {
		t.Fatal(err)
	}
	phase, inner := byName(t, spans, "phase"), byName(t, spans, "inner")
	k1, k2, orphan := byName(t, spans, "kern_in_phase"), byName(t, spans, "kern_in_inner"), byName(t, spans, "orphan")
	window := byName(t, spans, cupti.SpanWindow)
	if phase.ParentID != "" {
		t.Fatal("a top-level NVTX range without TRACEPARENT is not the root of its own trace")
	}
	for _, c := range []struct{ child, parent tracefile.Span }{{inner, phase}, {k1, phase}, {k2, inner}, {orphan, window}} {
		if c.child.ParentID != c.parent.SpanID || c.child.TraceID != c.parent.TraceID {
			t.Errorf("%s is not a child of %s", c.child.Name, c.parent.Name)
		}
	}
	if window.TraceID == phase.TraceID {
		t.Error("the device window shares the range's trace; want a trace per window")
	}
	if got := k1.Attrs["cuda.cupti_ms"]; got != 2.0 {
		t.Errorf("kernel duration %v ms, want 2", got)
	}
	if k1.Duration() != 2*time.Millisecond {
		t.Errorf("kernel span lasts %v, want 2ms", k1.Duration())
	}
	// CUPTI's clock here is CLOCK_MONOTONIC: only the calibration puts the
	// spans at the time they ran.
	if k1.Start.Before(before.Add(-time.Second)) || k1.Start.After(time.Now().Add(time.Second)) {
		t.Errorf("kernel at %v, the test ran from %v: calibration is off", k1.Start, before)
	}
	if _, ok := k1.Attrs["cuda.clock.uncertainty_ns"]; !ok {
		t.Error("no calibration uncertainty on the kernel span")
	}
	if phase.Service != "fakeprog" {
		t.Errorf("service.name %q, want the program's name", phase.Service)
	}
}

// CUPTI's API records (what puts a kernel under its NVTX range) are on
// only while a range is open: switched on by the push, before its first
// launch, off again once none has been open for a writer tick, and on
// again for the next range. fakeprog checks the switches from inside
// (exit 7, 8 or 9 when one is wrong); the spans show every kernel in its
// range and the others under the device window.
func TestGPUTraceAPIRecordsOnlyWhileARangeIsOpen(t *testing.T) {
	_, prog := buildFakes(t)
	spans, err := runGPUTraceCmd(t, nil, prog, "lazyapi")
	if err != nil {
		t.Fatalf("%v (fakeprog lazyapi: 7 API records on outside a range, 8 off inside one, 9 not switched on again)", err)
	}
	first, second := byName(t, spans, "first"), byName(t, spans, "second")
	for _, c := range []struct {
		kernel string
		parent tracefile.Span
	}{{"lazy_in_first", first}, {"lazy_in_second", second}} {
		if k := byName(t, spans, c.kernel); k.ParentID != c.parent.SpanID {
			t.Errorf("%s is not a child of range %q", c.kernel, c.parent.Name)
		}
	}
	windows := map[string]bool{}
	for _, s := range spans {
		if s.Name == cupti.SpanWindow {
			windows[s.SpanID] = true
		}
	}
	for _, name := range []string{"lazy_before", "lazy_between"} {
		if k := byName(t, spans, name); !windows[k.ParentID] {
			t.Errorf("%s, launched outside every range, is not under a device window", name)
		}
	}
	// Always on (CUZK_GPUTRACE_API=1): the first check fails.
	if _, err := runGPUTraceCmd(t, map[string]string{"CUZK_GPUTRACE_API": "1"}, prog, "lazyapi"); err == nil {
		t.Error("with CUZK_GPUTRACE_API=1 the API records were off outside a range")
	}
}

func TestGPUTraceUnderTRACEPARENTIsOneTrace(t *testing.T) {
	_, prog := buildFakes(t)
	const tid, sid = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	spans, err := runGPUTraceCmd(t, map[string]string{"TRACEPARENT": "00-" + tid + "-" + sid + "-01"}, prog, "basic")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range spans {
		if s.TraceID != tid {
			t.Errorf("%s in trace %s, want the TRACEPARENT's", s.Name, s.TraceID)
		}
	}
	if p := byName(t, spans, "phase"); p.ParentID != sid {
		t.Errorf("phase under %q, want the TRACEPARENT span", p.ParentID)
	}
	if w := byName(t, spans, cupti.SpanWindow); w.ParentID != sid {
		t.Errorf("window under %q, want the TRACEPARENT span", w.ParentID)
	}
}

func TestGPUTraceRangeWithTraceparentJoinsThatTrace(t *testing.T) {
	_, prog := buildFakes(t)
	const tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	spans, err := runGPUTraceCmd(t, nil, prog, "traceparent", "00-"+tid+"-"+sid+"-01")
	if err != nil {
		t.Fatal(err)
	}
	r, k := byName(t, spans, "request"), byName(t, spans, "kern_request")
	if r.TraceID != tid || r.ParentID != sid {
		t.Fatalf("range in %s under %s, want %s under %s", r.TraceID, r.ParentID, tid, sid)
	}
	if k.TraceID != tid || k.ParentID != r.SpanID {
		t.Fatal("the range's kernel is not its child in that trace")
	}
}

func TestGPUTraceUnbalancedRanges(t *testing.T) {
	_, prog := buildFakes(t)
	spans, err := runGPUTraceCmd(t, nil, prog, "unbalanced")
	if err != nil {
		t.Fatal(err)
	}
	open := byName(t, spans, "left open")
	if open.Attrs["nvtx.unclosed"] != true {
		t.Fatalf("range open at exit: attrs %v, want nvtx.unclosed", open.Attrs)
	}
	if k := byName(t, spans, "kern_open"); k.ParentID != open.SpanID {
		t.Fatal("kernel of the open range is not its child")
	}
}

func TestGPUTraceExitsWithTheProgramsCode(t *testing.T) {
	_, prog := buildFakes(t)
	spans, err := runGPUTraceCmd(t, nil, prog, "exit", "3")
	var code exitCode
	if !errors.As(err, &code) || code != 3 {
		t.Fatalf("err %v, want exit status 3", err)
	}
	byName(t, spans, "before_exit")
}

func TestGPUTraceWithoutCUPTIRunsTheProgramUntraced(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	err := newApp().Run([]string{"cuzk", "gpu-trace", "--cupti", "/nonexistent/libcupti.so", "--", "sh", "-c", "exit 4"})
	var code exitCode
	if !errors.As(err, &code) || code != 4 {
		t.Fatalf("err %v, want the program run with its exit status 4", err)
	}
	if err := newApp().Run([]string{"cuzk", "gpu-trace"}); err == nil || !strings.Contains(err.Error(), "want a COMMAND") {
		t.Fatalf("no command: %v", err)
	}
}

// runInjected runs fakeprog with the injection library pointed at sock,
// as gpu-trace would, and returns its stderr.
func runInjected(t *testing.T, sock string, env ...string) (string, error) {
	t.Helper()
	lib, prog := buildFakes(t)
	so, err := inject.WriteTo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prog, "basic")
	cmd.Env = append(os.Environ(), "CUDA_INJECTION64_PATH="+so, "CUZK_CUPTI_PATH="+lib, "CUZK_GPUTRACE_SOCK="+sock)
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	return stderr.String(), err
}

func TestInjectionFailuresDetachAndSaySoOnce(t *testing.T) {
	listen := func(t *testing.T, serve func(net.Conn)) string {
		sock := filepath.Join(t.TempDir(), "s")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go serve(c)
			}
		}()
		return sock
	}
	drain := func(c net.Conn) {
		defer c.Close()
		cupti.ReadFrames(context.Background(), c, cupti.WithLogger(func(string) {}))
	}
	cases := []struct {
		name, want string
		sock       func(t *testing.T) string
		env        []string
	}{
		{"no reader", "cannot reach cuzk gpu-trace", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, nil},
		{"CUPTI in use", "MULTIPLE_SUBSCRIBERS", func(t *testing.T) string { return listen(t, drain) }, []string{"FAKE_CUPTI_BUSY=1"}},
		{"wrong version", "CUPTI API version 12 is older than 18", func(t *testing.T) string { return listen(t, drain) }, []string{"FAKE_CUPTI_VERSION=12"}},
		{"reader gone", "lost the connection", func(t *testing.T) string { return listen(t, func(c net.Conn) { c.Close() }) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stderr, err := runInjected(t, tc.sock(t), tc.env...)
			if err != nil {
				t.Fatalf("the traced program failed: %v (%s)", err, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) || !strings.HasSuffix(lines[0], "the program runs on untraced") {
				t.Fatalf("stderr %q, want one line naming %q", stderr, tc.want)
			}
		})
	}
}

func TestGPUTraceSurvivesAKernelNameThatIsNoPointer(t *testing.T) {
	_, prog := buildFakes(t)
	spans, err := runGPUTraceCmd(t, nil, prog, "badname")
	if err != nil {
		t.Fatalf("the traced program failed: %v", err)
	}
	byName(t, spans, cupti.SpanUnknown)
	byName(t, spans, "good_after_bad")
}

// --window must be positive: 0 or a negative length would make no device
// window at all; refused in one line before the program runs.
func TestGPUTraceRefusesAWindowThatIsNotPositive(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	for _, w := range []string{"0", "-1s", "0s"} {
		err := newApp().Run([]string{"cuzk", "gpu-trace", "--window", w, "--", "touch", marker})
		if err == nil || !strings.Contains(err.Error(), "--window") || !strings.Contains(err.Error(), "want a positive duration") || strings.Contains(err.Error(), "\n") {
			t.Errorf("--window %s: err %v, want a one-line refusal", w, err)
		}
		if _, serr := os.Stat(marker); serr == nil {
			t.Fatalf("--window %s: the program ran", w)
		}
	}
}

// --drain must not be negative (it waited no time and then said records
// were "still arriving -1s after the program exited").
func TestGPUTraceRefusesANegativeDrain(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	err := newApp().Run([]string{"cuzk", "gpu-trace", "--drain", "-1s", "--", "touch", marker})
	if err == nil || err.Error() != "gpu-trace: --drain -1s: want 0 or more (e.g. 5s)" {
		t.Errorf("--drain -1s: err %v, want a one-line refusal", err)
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Error("--drain -1s: the program ran")
	}
}

// A bad CUZK_CUPTI_NO_FORCED_FLUSH is refused in one line before the
// program runs, on a host without a GPU too (cupti said it only when
// CUPTI started, so a typo went unseen).
func TestGPUTraceRefusesABadNoForcedFlushValue(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	t.Setenv(cupti.NoForcedFlushEnv, "bogus")
	err := newApp().Run([]string{"cuzk", "gpu-trace", "--", "touch", marker})
	if err == nil || err.Error() != `gpu-trace: CUZK_CUPTI_NO_FORCED_FLUSH="bogus" is not 0, 1 or a duration such as 500ms` {
		t.Errorf("CUZK_CUPTI_NO_FORCED_FLUSH=bogus: err %v, want a one-line refusal", err)
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Error("CUZK_CUPTI_NO_FORCED_FLUSH=bogus: the program ran")
	}
}

// The help names the trace file gpu-trace writes by default, and no other.
func TestGPUTraceHelpNamesTheDefaultTraceFile(t *testing.T) {
	var out bytes.Buffer
	app := newApp()
	app.Writer = &out
	if err := app.Run([]string{"cuzk", "gpu-trace", "--help"}); err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`[\w.-]+\.jsonl`).FindAllString(out.String(), -1)
	if len(names) == 0 {
		t.Fatalf("the help names no trace file:\n%s", out.String())
	}
	for _, n := range names {
		if n != otelcuzk.DefaultTraceFile {
			t.Errorf("the help names %s, but the default trace file is %s", n, otelcuzk.DefaultTraceFile)
		}
	}
}

// Without CUPTI, the reason is short: no CUDA driver says that alone (the
// CUPTI paths tried do not matter); with a driver, the CUPTI failure and
// how to name one, then the detail.
func TestGPUTraceSaysNoDriverFirst(t *testing.T) {
	t.Setenv("CUDA_INJECTION64_PATH", "")
	os.Unsetenv("CUDA_INJECTION64_PATH")
	missing := filepath.Join(t.TempDir(), "libcupti.so.13")
	defer func(f func() error) { driverLoads = f }(driverLoads)

	driverLoads = func() error { return errors.New("libcuda.so.1: cannot open shared object file") }
	_, err := prepareTrace(missing)
	if err == nil || err.Error() != "no CUDA driver (libcuda.so.1) on this host; nothing to trace" {
		t.Errorf("no driver: err %v", err)
	}
	driverLoads = func() error { return nil }
	_, err = prepareTrace(missing)
	if err == nil || !strings.HasPrefix(err.Error(), "no usable CUPTI (--cupti PATH or $CUZK_CUPTI names one): ") || !strings.Contains(err.Error(), missing) || !errors.Is(err, cupti.ErrNoCUPTI) {
		t.Errorf("a driver, no CUPTI: err %v", err)
	}
}

// Every way a program ends either flushes its last records or says, in
// one line, that they are lost; gpu-trace always exits with the
// program's code (issue 23, item 1). The fake program ends as a Go
// program does (context destroyed, then exit_group: no atexit handler),
// by _exit, by SIGTERM and by a crash.
func TestGPUTraceExitPaths(t *testing.T) {
	_, prog := buildFakes(t)
	cases := []struct {
		name   string
		args   []string
		code   int
		kernel string // the span that must be there ("" for none)
		line   string // a line gpu-trace must say ("" for none)
	}{
		{"go exit after destroying its context", []string{"goexit"}, 0, "before_goexit", ""},
		{"_exit", []string{"_exit", "5"}, 5, "", "with no flush point"},
		{"SIGTERM", []string{"sigterm"}, 128 + 15, "before_sigterm", ""},
		{"crash", []string{"crash"}, 128 + 11, "before_crash", ""},
		{"exit", []string{"exit", "0"}, 0, "before_exit", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			defer func(w io.Writer) { gpuTraceStderr = w }(gpuTraceStderr)
			gpuTraceStderr = &stderr
			spans, err := runGPUTraceCmd(t, nil, append([]string{prog}, tc.args...)...)
			var code exitCode
			if tc.code == 0 && err != nil && !errors.As(err, &code) {
				t.Fatalf("err %v", err)
			}
			errors.As(err, &code)
			if int(code) != tc.code {
				t.Fatalf("exit %d (err %v), want %d", code, err, tc.code)
			}
			if tc.kernel != "" {
				if errors.Is(err, os.ErrNotExist) {
					t.Fatalf("no trace file; stderr %q", stderr.String())
				}
				byName(t, spans, tc.kernel)
			}
			out := strings.TrimSpace(stderr.String())
			if tc.line == "" && out != "" {
				t.Errorf("gpu-trace said %q, want nothing", out)
			}
			if tc.line != "" {
				lost := 0
				for _, l := range strings.Split(out, "\n") {
					if strings.Contains(l, tc.line) {
						lost++
					}
				}
				if lost != 1 {
					t.Errorf("stderr %q, want one line saying %q", out, tc.line)
				}
				if !strings.Contains(out, "no trace: fakeprog exited with no GPU work recorded") {
					t.Errorf("stderr %q, want the no-trace line", out)
				}
			}
		})
	}
}

// A program that never starts CUDA yields no trace and says why in one
// line, with its own exit code.
func TestGPUTraceSaysWhyThereIsNoTrace(t *testing.T) {
	buildFakes(t)
	var stderr bytes.Buffer
	defer func(w io.Writer) { gpuTraceStderr = w }(gpuTraceStderr)
	gpuTraceStderr = &stderr
	_, err := runGPUTraceCmd(t, nil, "sh", "-c", "exit 6")
	var code exitCode
	if !errors.As(err, &code) || code != 6 {
		t.Fatalf("err %v, want exit status 6", err)
	}
	out := strings.TrimSpace(stderr.String())
	if strings.Count(out, "\n") != 0 || !strings.HasPrefix(out, "cuzk gpu-trace: no trace: sh exited without starting CUDA") {
		t.Fatalf("stderr %q, want one line saying why", out)
	}
}

// Records CUPTI could not keep (its buffers full) are said at the end in
// one line with their count and why; the kernels it did keep are spans.
func TestGPUTraceSaysHowManyRecordsWereLost(t *testing.T) {
	_, prog := buildFakes(t)
	var stderr bytes.Buffer
	defer func(w io.Writer) { gpuTraceStderr = w }(gpuTraceStderr)
	gpuTraceStderr = &stderr
	spans, err := runGPUTraceCmd(t, nil, prog, "drop")
	if err != nil {
		t.Fatalf("err %v; stderr %q", err, stderr.String())
	}
	byName(t, spans, "before_drop")
	byName(t, spans, "after_drop")
	out := strings.TrimSpace(stderr.String())
	want := regexp.MustCompile(`^cuzk gpu-trace: fakeprog \(pid \d+\) lost 40 records: 40 when CUPTI's activity buffers were full; the trace misses that GPU work$`)
	if !want.MatchString(out) {
		t.Fatalf("stderr %q, want one line matching %v", out, want)
	}
}

// A range pushed in a domain of its own, its message in the event
// attributes (Python's nvtx package, Rust's nvtx crate with a domain),
// joins the trace of its traceparent too, and says its domain.
func TestGPUTraceDomainRangeWithTraceparentJoinsThatTrace(t *testing.T) {
	_, prog := buildFakes(t)
	const tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	spans, err := runGPUTraceCmd(t, nil, prog, "domain", "00-"+tid+"-"+sid+"-01")
	if err != nil {
		t.Fatal(err)
	}
	r, k := byName(t, spans, "job"), byName(t, spans, "kern_domain")
	if r.TraceID != tid || r.ParentID != sid {
		t.Fatalf("range in %s under %s, want %s under %s", r.TraceID, r.ParentID, tid, sid)
	}
	if r.Attrs["nvtx.domain"] != "python.job" {
		t.Errorf("nvtx.domain %v, want python.job", r.Attrs["nvtx.domain"])
	}
	if k.TraceID != tid || k.ParentID != r.SpanID {
		t.Fatal("the range's kernel is not its child in that trace")
	}
}

// A real Go program (testdata/gputrace/goprog, cgo) ends through the Go
// runtime's exit, which runs no atexit handler, with the runtime's own
// signal handlers in place: destroying its CUDA context first is its
// flush point (main's return and os.Exit alike); with its context alive
// the last records are lost and one line says so.
func TestGPUTraceGoRuntimeExit(t *testing.T) {
	buildFakes(t)
	prog := filepath.Join(t.TempDir(), "goprog")
	if out, err := exec.Command("go", "build", "-o", prog, "./testdata/gputrace/goprog").CombinedOutput(); err != nil {
		t.Fatalf("go build goprog: %v\n%s", err, out)
	}
	cases := []struct {
		mode   string
		code   int
		kernel string
		line   string
	}{
		{"return", 0, "go_return", ""},
		{"osexit", 3, "go_osexit", ""},
		{"alive", 4, "", "with no flush point"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			var stderr bytes.Buffer
			defer func(w io.Writer) { gpuTraceStderr = w }(gpuTraceStderr)
			gpuTraceStderr = &stderr
			spans, err := runGPUTraceCmd(t, nil, prog, tc.mode)
			var code exitCode
			if err != nil && !errors.As(err, &code) && tc.kernel != "" {
				t.Fatalf("err %v; stderr %q", err, stderr.String())
			}
			errors.As(err, &code)
			if int(code) != tc.code {
				t.Fatalf("exit %d (err %v), want %d", code, err, tc.code)
			}
			out := strings.TrimSpace(stderr.String())
			if tc.kernel != "" {
				byName(t, spans, tc.kernel)
				if out != "" {
					t.Errorf("gpu-trace said %q, want nothing", out)
				}
				return
			}
			if strings.Count(out, tc.line) != 1 || !strings.Contains(out, "no trace: goprog exited with no GPU work recorded") {
				t.Errorf("stderr %q, want one line saying %q and the no-trace line", out, tc.line)
			}
		})
	}
}
