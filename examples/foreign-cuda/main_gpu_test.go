package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/cupti"
)

// needGPU skips when the host has no CUDA device (CI); on a GPU host a
// missing CUPTI is a failure.
func needGPU(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if _, derr := cudaspans.Open(0); errors.Is(derr, cudaspans.ErrNoDevice) {
		t.Skipf("no CUDA device: %v (%v)", derr, err)
	}
	t.Fatal(err)
}

func TestForeignKernelsAndRangesUnderTheGoSpanGPU(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	needGPU(t, run(context.Background(), tp, 5, 1<<16))
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	one := func(name string) sdktrace.ReadOnlySpan {
		t.Helper()
		if len(byName[name]) != 1 {
			var names []string
			for n, v := range byName {
				names = append(names, fmt.Sprintf("%s×%d", n, len(v)))
			}
			t.Fatalf("%d spans named %q, want 1 (have %v)", len(byName[name]), name, names)
		}
		return byName[name][0]
	}
	job, outer := one(SpanJob), one("foreign.run")
	childOf := func(c, p sdktrace.ReadOnlySpan) {
		t.Helper()
		if c.Parent().SpanID() != p.SpanContext().SpanID() {
			t.Errorf("%s is under %s, want %s", c.Name(), c.Parent().SpanID(), p.Name())
		}
	}
	childOf(outer, job)
	up, comp, down := one("upload"), one("compute"), one("download")
	for _, s := range []sdktrace.ReadOnlySpan{up, comp, down, one("foreign.check"), one("foreign.free")} {
		childOf(s, outer)
	}
	if len(byName["scale"]) != 5 || len(byName["saxpy"]) != 5 {
		t.Fatalf("%d scale and %d saxpy spans, want 5 each", len(byName["scale"]), len(byName["saxpy"]))
	}
	for _, k := range append(byName["scale"], byName["saxpy"]...) {
		childOf(k, comp)
		// Inside the range, to within the clock calibration's uncertainty.
		if k.StartTime().Before(comp.StartTime().Add(-50e3)) || k.EndTime().After(comp.EndTime().Add(50e3)) {
			t.Errorf("kernel %v..%v outside its range %v..%v", k.StartTime(), k.EndTime(), comp.StartTime(), comp.EndTime())
		}
	}
	childOf(one("cuda.memcpy.htod"), up)
	childOf(one("cuda.memset"), up)
	childOf(one("cuda.memcpy.dtoh"), down)
	attrs := map[string]any{}
	for _, kv := range comp.Attributes() {
		attrs[string(kv.Key)] = kv.Value.AsInterface()
	}
	if attrs["nvtx.payload"] != int64(5) || attrs["nvtx.category"] != int64(7) {
		t.Errorf("compute range attributes %v, want payload 5 and category 7", attrs)
	}
	for _, kv := range one("foreign.free").Attributes() {
		if kv.Key == "nvtx.domain" && kv.Value.AsString() != "foreign" {
			t.Errorf("domain range in domain %q, want foreign", kv.Value.AsString())
		}
	}
}

func TestWithoutCUPTIRunFailsInOneLine(t *testing.T) {
	if cupti.LibraryLoads(cupti.DriverLibrary) != nil {
		t.Skip("no CUDA driver: run says that first (TestRunWithoutADriverSaysSo)")
	}
	err := run(context.Background(), sdktrace.NewTracerProvider(), 1, 16)
	if err == nil {
		t.Skip("CUPTI is installed here")
	}
	if !errors.Is(err, cupti.ErrNoCUPTI) && !errors.Is(err, cupti.ErrStart) {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error of several lines: %q", err)
	}
}

func TestStandaloneBuildsAndSaysWhyWithoutADriver(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	bin := filepath.Join(t.TempDir(), "foreign-cuda")
	if out, err := exec.Command("sh", "build.sh", bin).CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--iters", "0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "want 1 <= --iters") {
		t.Fatalf("bad flag: %v %q", err, out)
	}
	if _, derr := cudaspans.Open(0); derr == nil {
		return // a GPU host: TestGPUTrace* in cmd/cuzk runs it
	}
	out, err = exec.Command(bin).CombinedOutput()
	if err == nil || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 || !strings.Contains(string(out), "foreign-cuda:") {
		t.Fatalf("without a driver: %v %q, want one line and a failure", err, out)
	}
}
