package cudaspans

import (
	"context"
	"testing"
	"time"
)

func TestKernelSpansCarryTheDurationsOfTheLaunchHook(t *testing.T) {
	f := newFixture(t)
	k := f.kernel(t, "ntt_radix2", time.Millisecond)
	s := f.stream(t)
	var asked []uint64
	SetLaunchCorrelation(nil, nil, func(ids []uint64) map[uint64]float64 {
		asked = append(asked, ids...)
		return map[uint64]float64{ids[0]: 0.987}
	})
	defer SetLaunchCorrelation(nil, nil, nil)
	ctx, parent := f.parent(context.Background(), "p")
	for i := 0; i < 2; i++ {
		if err := s.Launch(ctx, k, D1(1), D1(1), 0); err != nil {
			t.Fatal(err)
		}
	}
	buf, err := f.c.Alloc(ctx, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Memset(ctx, buf.Ptr(), 0, 64); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End()
	if len(asked) != 2 {
		t.Fatalf("hook asked for %d ids, want the 2 kernels' (not the memset)", len(asked))
	}
	spans := f.ended("ntt_radix2")
	var with int
	for _, sp := range spans {
		for _, kv := range sp.Attributes() {
			if kv.Key == "cuda.cupti_ms" && kv.Value.AsFloat64() == 0.987 {
				with++
			}
		}
	}
	if len(spans) != 2 || with != 1 {
		t.Fatalf("%d kernel spans, %d with cuda.cupti_ms, want 2 and 1 (the id the hook knew)", len(spans), with)
	}
}
