package buffer

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// MmapHolding finds the live buffer that holds a slice (all of it), and
// nothing once the buffer is unmapped or for memory outside every Mmap.
func TestMmapHoldingFindsTheBufferOfASlice(t *testing.T) {
	m, err := NewMmap(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	b := m.Bytes()
	for _, p := range [][]byte{b, b[100:200], b[len(b)-1:]} {
		if got := MmapHolding(p); got != m {
			t.Errorf("MmapHolding(b[%d:%d]) = %p, want %p", len(b)-len(p), len(p), got, m)
		}
	}
	if MmapHolding(make([]byte, 64)) != nil || MmapHolding(nil) != nil || MmapHolding(b[:0]) != nil {
		t.Error("MmapHolding found a buffer for heap memory or an empty slice")
	}
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if MmapHolding(b[:10]) != nil {
		t.Error("MmapHolding found an unmapped buffer")
	}
}

// OnUnmap's functions run once each, in order, with the memory still
// mapped (they read it), at the real unmap: not when a pool keeps the
// buffer, but at the pool's eviction of it and at its Close, under the
// buffer.release span. After the unmap OnUnmap refuses.
func TestOnUnmapRunsOnceAtTheRealUnmapStillMapped(t *testing.T) {
	r, rec, _ := newReleaseRecorder(t, ReleasePool, WithPoolLimit(1<<16))
	ctx := context.Background()
	var calls []string
	watch := func(m *Mmap, name string) {
		b := m.Bytes()
		b[7] = 42
		m.OnUnmap(func(ctx context.Context) {
			// Mapped still: reading it would fault otherwise.
			if b[7] != 42 {
				t.Errorf("%s: content changed before the unmap", name)
			}
			// A release's unmap passes its buffer.release span
			// (Close passes its caller's context).
			if name == "evicted" && !trace.SpanFromContext(ctx).SpanContext().IsValid() {
				t.Errorf("%s: OnUnmap's context has no span", name)
			}
			calls = append(calls, name)
		})
		m.OnUnmap(func(context.Context) { calls = append(calls, name+"'") })
	}
	kept, err := NewMmap(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	evicted, err := NewMmap(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	watch(kept, "kept")
	watch(evicted, "evicted")
	if err := r.Release(ctx, "kept", kept); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 0 {
		t.Fatalf("pooled buffer: OnUnmap functions ran (%v)", calls)
	}
	if got := r.Reuse(1 << 16); got != kept {
		t.Fatal("the pool did not hand back its buffer")
	}
	if err := r.Release(ctx, "kept", kept); err != nil {
		t.Fatal(err)
	}
	// Over the pool's limit: freed at once.
	if err := r.Release(ctx, "evicted", evicted); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0] != "evicted" || calls[1] != "evicted'" {
		t.Fatalf("after the eviction: calls %v, want [evicted evicted']", calls)
	}
	if evicted.OnUnmap(func(context.Context) { t.Error("OnUnmap after the unmap ran") }) {
		t.Error("OnUnmap on an unmapped buffer reported true")
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 4 || calls[2] != "kept" || calls[3] != "kept'" {
		t.Fatalf("after Close: calls %v, want the kept buffer's two once", calls)
	}
	if err := kept.Free(); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 4 {
		t.Errorf("a second Free ran the functions again: %v", calls)
	}
	if n := len(releaseSpans(rec)); n < 3 {
		t.Errorf("%d buffer.release spans, want at least 3", n)
	}
}
