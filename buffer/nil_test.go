package buffer

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestANilReleaserIsSynchronous proves the one meaning of a nil Releaser:
// every method works and frees at once, as a sync Releaser does.
func TestANilReleaserIsSynchronous(t *testing.T) {
	var r *Releaser
	if r.Mode() != ReleaseSync {
		t.Errorf("nil Releaser mode %s, want sync", r.Mode())
	}
	b := &slowBuffer{kind: KindMmap, size: 8}
	if err := r.Release(context.Background(), "x", b); err != nil || b.freed.Load() != 1 {
		t.Errorf("nil Releaser: Release %v, freed %d, want freed once before it returns", err, b.freed.Load())
	}
	if r.Reuse(1) != nil {
		t.Error("nil Releaser pooled a buffer")
	}
	called := false
	r.AfterQueued(func() { called = true })
	if !called {
		t.Error("nil Releaser: AfterQueued did not call f at once")
	}
	if err := r.Close(context.Background()); err != nil {
		t.Errorf("nil Releaser: Close %v", err)
	}
}

func TestOrSyncKeepsAReleaserAndMakesASyncOneOnTheGivenProvider(t *testing.T) {
	async, err := NewReleaser(ReleaseAsync)
	if err != nil {
		t.Fatal(err)
	}
	defer async.Close(context.Background())
	if OrSync(async, nil) != async {
		t.Error("OrSync replaced a non-nil Releaser")
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r := OrSync(nil, tp)
	if r.Mode() != ReleaseSync {
		t.Errorf("OrSync(nil) mode %s, want sync", r.Mode())
	}
	b := &slowBuffer{kind: KindPinned, size: 8}
	if err := r.Release(context.Background(), "stage", b); err != nil || b.freed.Load() != 1 {
		t.Fatalf("Release %v, freed %d", err, b.freed.Load())
	}
	if s := releaseSpans(rec); len(s) != 1 || relAttr(s[0], "cuzk.release.mode") != "sync" || relAttr(s[0], "cuzk.buffer.kind") != "pinned" {
		t.Errorf("OrSync(nil, tp) spans on tp: %v, want one sync buffer.release of kind pinned", s)
	}
}

func TestHasReleaseParentSeesTheMark(t *testing.T) {
	ctx := context.Background()
	if HasReleaseParent(ctx) {
		t.Error("a bare context has a release parent")
	}
	if !HasReleaseParent(WithReleaseParent(ctx, ctx)) {
		t.Error("WithReleaseParent's mark not seen")
	}
}
