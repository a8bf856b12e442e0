package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/logtest"
)

type gateWarmer struct {
	release chan struct{}
	err     error
}

func (g gateWarmer) Warmup(context.Context) error {
	<-g.release
	return g.err
}

func TestWarmupInBackgroundSaysSoWhenItTakesLongAndWhenItEnds(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{{nil, "cuda: kernels ready after"}, {errors.New("cuda backend: warm-up: no NVRTC"), "kernel warm-up failed after"}} {
		var out bytes.Buffer
		g := gateWarmer{make(chan struct{}), tc.err}
		done := warmupInBackground(context.Background(), g, &out, 10*time.Millisecond, warmupProgress{})
		time.Sleep(50 * time.Millisecond)
		close(g.release)
		<-done
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "cuda: compiling the kernel modules") || !strings.HasPrefix(lines[1], tc.want) {
			t.Errorf("output %q, want the compiling line then %q", out.String(), tc.want)
		}
		if tc.err != nil && (!strings.HasSuffix(lines[1], ": cuda backend: warm-up: no NVRTC") || strings.Count(lines[1], "cuda") != 1) {
			t.Errorf("failure line %q, want the error naming the backend once", lines[1])
		}
	}
	// A quick warm-up (kernel cache hit, or the CPU backend) prints nothing.
	var out bytes.Buffer
	g := gateWarmer{make(chan struct{}), nil}
	close(g.release)
	<-warmupInBackground(context.Background(), g, &out, time.Second, warmupProgress{})
	if out.Len() != 0 {
		t.Errorf("a quick warm-up printed %q", out.String())
	}
}

// A kernel compile that ran long is measured: the next one says how long
// it should take, and on a terminal (forced) draws a bar until it ends.
func TestALongKernelCompileIsMeasuredForTheNextEstimate(t *testing.T) {
	rate := filepath.Join(t.TempDir(), "kernel-compile-rate")
	run := func(force bool) string {
		var out logtest.Buffer
		g := gateWarmer{make(chan struct{}), nil}
		done := warmupInBackground(context.Background(), g, &out, 10*time.Millisecond, warmupProgress{RateFile: rate, Force: force})
		time.Sleep(400 * time.Millisecond)
		close(g.release)
		<-done
		return out.String()
	}
	if first := run(false); strings.Contains(first, "about") || strings.ContainsAny(first, "\r\x1b") {
		t.Errorf("first compile: %q, want no estimate and no bar off a terminal", first)
	}
	second := run(true)
	if !strings.Contains(second, "from the last compile measured here") || !strings.Contains(second, "cuda kernel compile") ||
		!strings.Contains(second, "cuda: kernels ready after") {
		t.Errorf("second compile: %q, want the estimate, a bar, then the ready line", second)
	}
}
