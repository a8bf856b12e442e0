package gpu

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/gpu/msm"
)

// TestWarmupGPUCompilesEveryModuleInParallelThenHitsTheCache: on an empty
// kernel cache, Warmup compiles every module (the NTT, the MSM's scalar
// part, the point parts of G1 and G2) under one gpu.warmup span, all at
// once (every compile starts before the first one ends); a second backend
// on the same cache loads them all without NVRTC. Logs the cold and warm
// warm-up times (issue 10 item 6: the first proof's extra time).
func TestWarmupGPUCompilesEveryModuleInParallelThenHitsTheCache(t *testing.T) {
	needDevice(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the default kernel cache, empty
	b, _, rec, _ := openBackend(t, buffer.ReleaseSync)
	ctx := context.Background()
	start := time.Now()
	if err := b.Warmup(ctx); err != nil {
		t.Fatal(err)
	}
	cold := time.Since(start)
	want := map[string]bool{"ntt": true}
	for _, m := range msm.Modules(cudaspans.CompileOptions{}) {
		want[m.Name] = true
	}
	// The bit split's batch addition (G1 and G2) is compiled beside them.
	for _, g2 := range []bool{false, true} {
		want[msm.BatchAddModule(g2, cudaspans.CompileOptions{}).Name] = true
	}
	var warmup string
	for _, s := range rec.Ended() {
		if s.Name() == semconv.SpanGPUWarmup {
			warmup = s.SpanContext().SpanID().String()
		}
	}
	var firstEnd, lastStart time.Time
	var lines []string
	for _, s := range rec.Ended() {
		if s.Name() != semconv.SpanCUDACompile {
			continue
		}
		var name string
		for _, kv := range s.Attributes() {
			if kv.Key == semconv.KeyCUDAModuleName {
				name = kv.Value.AsString()
			}
		}
		if !want[name] {
			t.Errorf("unexpected module %q compiled", name)
			continue
		}
		delete(want, name)
		if s.Parent().SpanID().String() != warmup {
			t.Errorf("cuda.compile of %s is not a child of gpu.warmup", name)
		}
		if firstEnd.IsZero() || s.EndTime().Before(firstEnd) {
			firstEnd = s.EndTime()
		}
		if s.StartTime().After(lastStart) {
			lastStart = s.StartTime()
		}
		lines = append(lines, name+" "+s.EndTime().Sub(s.StartTime()).Round(time.Millisecond).String())
	}
	if len(want) != 0 {
		t.Errorf("modules not compiled by Warmup: %v", want)
	}
	if !lastStart.Before(firstEnd) {
		t.Errorf("the compiles did not run at once: the last started at %v, after the first ended at %v", lastStart, firstEnd)
	}
	sort.Strings(lines)
	t.Logf("cold warm-up (empty kernel cache) %v: %v", cold.Round(time.Millisecond), lines)

	before := cudaspans.CompileCount()
	_, tp2 := spantest.New()
	b2, err := Open(ctx, backend.Options{TracerProvider: tp2})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	start = time.Now()
	if err := b2.Warmup(ctx); err != nil {
		t.Fatal(err)
	}
	if n := cudaspans.CompileCount() - before; n != 0 {
		t.Errorf("a warm-up on a full kernel cache ran NVRTC %d times", n)
	}
	t.Logf("warm-up from the kernel cache %v", time.Since(start).Round(time.Millisecond))
}
