package buffer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// slowBuffer is a Buffer whose Free takes a while and may fail.
type slowBuffer struct {
	kind  Kind
	size  int
	delay time.Duration
	err   error
	freed atomic.Int32
}

func (b *slowBuffer) Kind() Kind { return b.kind }
func (b *slowBuffer) Size() int  { return b.size }
func (b *slowBuffer) Free() error {
	time.Sleep(b.delay)
	b.freed.Add(1)
	return b.err
}

func newReleaseRecorder(t *testing.T, mode ReleaseMode, opts ...Option) (*Releaser, *tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r, err := NewReleaser(mode, append(opts, WithTracerProvider(tp))...)
	if err != nil {
		t.Fatal(err)
	}
	return r, rec, tp
}

func releaseSpans(rec *tracetest.SpanRecorder) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == semconv.SpanBufferRelease {
			out = append(out, s)
		}
	}
	return out
}

// relAttr is the value of key on s, as a Go value (nil when absent).
func relAttr(s sdktrace.ReadOnlySpan, key string) any {
	for _, kv := range s.Attributes() {
		if kv.Key == attribute.Key(key) {
			return kv.Value.AsInterface()
		}
	}
	return nil
}

func TestParseReleaseModeRejectsUnknownNames(t *testing.T) {
	for _, s := range []string{"sync", "async", "pool"} {
		if m, err := ParseReleaseMode(s); err != nil || string(m) != s {
			t.Errorf("%s: %v %v", s, m, err)
		}
	}
	if _, err := ParseReleaseMode("later"); !errors.Is(err, ErrUnknownReleaseMode) {
		t.Errorf("later: %v", err)
	}
	if _, err := NewReleaser("later"); !errors.Is(err, ErrUnknownReleaseMode) {
		t.Errorf("NewReleaser(later): %v", err)
	}
}

func TestReleaseSyncFreesOnTheCallersPathWithASpan(t *testing.T) {
	r, rec, tp := newReleaseRecorder(t, ReleaseSync)
	ctx, parent := tp.Tracer("t").Start(context.Background(), "groth16.prove")
	b := &slowBuffer{kind: "mmap", size: 4096, delay: 20 * time.Millisecond}
	start := time.Now()
	if err := r.Release(ctx, "wires", b); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 20*time.Millisecond || b.freed.Load() != 1 {
		t.Fatalf("sync release returned before Free (freed %d)", b.freed.Load())
	}
	parent.End()
	spans := releaseSpans(rec)
	if len(spans) != 1 {
		t.Fatalf("%d buffer.release spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.EndTime().Sub(s.StartTime()) < 20*time.Millisecond {
		t.Errorf("span parent %v, duration %v", s.Parent().SpanID(), s.EndTime().Sub(s.StartTime()))
	}
	if relAttr(s, "cuzk.buffer.bytes") != int64(4096) || relAttr(s, "cuzk.buffer.kind") != "mmap" ||
		relAttr(s, "cuzk.release.mode") != "sync" || relAttr(s, "cuzk.buffer.name") != "wires" {
		t.Errorf("attributes %v", s.Attributes())
	}
	if err := r.Release(ctx, "x", &slowBuffer{kind: "mmap", size: 1, err: errors.New("EINVAL")}); err == nil {
		t.Error("a failing Free in sync mode returned no error")
	}
}

func TestReleaseAsyncReturnsAtOnceAndParentsUnderTheReleaseParent(t *testing.T) {
	r, rec, tp := newReleaseRecorder(t, ReleaseAsync)
	tr := tp.Tracer("t")
	jobCtx, job := tr.Start(context.Background(), "engine.job")
	proveCtx, prove := tr.Start(jobCtx, "groth16.prove")
	// A backend releases under its own step's span; the mark moves it.
	stepCtx, step := tr.Start(WithReleaseParent(proveCtx, jobCtx), "groth16.compute_h")
	b1 := &slowBuffer{kind: "pinned", size: 1 << 20, delay: 300 * time.Millisecond}
	b2 := &slowBuffer{kind: "mmap", size: 1 << 10, err: errors.New("munmap failed")}
	start := time.Now()
	if err := r.Release(stepCtx, "a", b1); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(proveCtx, "b", b2); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 150*time.Millisecond {
		t.Errorf("async Release blocked for %v (the free takes 300 ms)", time.Since(start))
	}
	step.End()
	prove.End()
	if err := r.Close(context.Background()); err == nil {
		t.Error("Close did not report the failed async free")
	}
	job.End()
	if b1.freed.Load() != 1 || b2.freed.Load() != 1 {
		t.Fatalf("freed %d, %d", b1.freed.Load(), b2.freed.Load())
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range releaseSpans(rec) {
		byName[relAttr(s, "cuzk.buffer.name").(string)] = s
	}
	if s := byName["a"]; s == nil || s.Parent().SpanID() != job.SpanContext().SpanID() {
		t.Errorf("release under WithReleaseParent: parent %v, want engine.job", s)
	}
	if s := byName["b"]; s == nil || s.Parent().SpanID() != prove.SpanContext().SpanID() {
		t.Errorf("release without the mark: want its own ctx's span (groth16.prove) as parent")
	}
	// After Close, Release frees synchronously.
	b3 := &slowBuffer{kind: "mmap", size: 1}
	if err := r.Release(context.Background(), "late", b3); err != nil || b3.freed.Load() != 1 {
		t.Errorf("release after Close: %v, freed %d", err, b3.freed.Load())
	}
}

func TestReleaseParentIsIgnoredInSyncMode(t *testing.T) {
	r, rec, tp := newReleaseRecorder(t, ReleaseSync)
	tr := tp.Tracer("t")
	jobCtx, job := tr.Start(context.Background(), "engine.job")
	proveCtx, prove := tr.Start(WithReleaseParent(jobCtx, jobCtx), "groth16.prove")
	if err := r.Release(proveCtx, "a", &slowBuffer{kind: "mmap", size: 1}); err != nil {
		t.Fatal(err)
	}
	prove.End()
	job.End()
	if s := releaseSpans(rec); len(s) != 1 || s[0].Parent().SpanID() != prove.SpanContext().SpanID() {
		t.Errorf("sync release must stay under the span on the critical path")
	}
}

func TestReleasePoolKeepsMmapBuffersForReuseWithinItsLimit(t *testing.T) {
	r, rec, _ := newReleaseRecorder(t, ReleasePool, WithPoolLimit(3*4096))
	small, big, over := newMmap(t, 4096), newMmap(t, 2*4096), newMmap(t, 2*4096)
	ctx := context.Background()
	for name, b := range map[string]*Mmap{"small": small, "big": big, "over": over} {
		if name == "over" {
			continue
		}
		if err := r.Release(ctx, name, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Release(ctx, "over", over); err != nil {
		t.Fatal(err)
	}
	pooled := func(when string, want int) {
		t.Helper()
		if got := r.PoolBytes(); got != want {
			t.Errorf("%s: PoolBytes() = %d, want %d", when, got, want)
		}
	}
	pooled("two kept, one over the limit freed", 3*4096)
	if small.Bytes() == nil || big.Bytes() == nil || over.Bytes() != nil {
		t.Errorf("pool of 3 pages: unmapped small %v big %v over %v, want only the one over the limit",
			small.Bytes() == nil, big.Bytes() == nil, over.Bytes() == nil)
	}
	if got := r.Reuse(4096 + 1); got != big {
		t.Errorf("Reuse(4097) = %p, want the 2-page buffer %p", got, big)
	}
	pooled("the 2-page buffer reused", 4096)
	if got := r.Reuse(500); got != small {
		t.Errorf("Reuse(500) = %p, want the smallest that fits %p", got, small)
	}
	if got := r.Reuse(1); got != nil {
		t.Errorf("empty pool returned %p", got)
	}
	pooled("both reused", 0)
	if err := r.Release(ctx, "a", small); err != nil {
		t.Fatal(err)
	}
	pooled("one given back", 4096)
	if err := r.Close(ctx); err != nil || small.Bytes() != nil {
		t.Errorf("Close: %v, pooled buffer still mapped %v", err, small.Bytes() != nil)
	}
	pooled("closed", 0)
	if got := (*Releaser)(nil).PoolBytes(); got != 0 {
		t.Errorf("nil Releaser's PoolBytes() = %d, want 0", got)
	}
	if err := big.Free(); err != nil {
		t.Fatal(err)
	}
	for _, s := range releaseSpans(rec) {
		want := "pool"
		if relAttr(s, "cuzk.buffer.name") == "over" {
			want = "sync" // over the limit: freed at once
		}
		if got := relAttr(s, "cuzk.release.mode"); got != want {
			t.Errorf("pool-mode span with mode %v, want %s", got, want)
		}
	}
	if n := len(releaseSpans(rec)); n != 4 {
		t.Errorf("%d buffer.release spans, want one per Release (4)", n)
	}
}

func newMmap(t *testing.T, size int) *Mmap {
	t.Helper()
	b, err := NewMmap(size)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMmapMapsAndUnmapsOnce(t *testing.T) {
	if _, err := NewMmap(0); err == nil {
		t.Error("a 0-byte host buffer was mapped")
	}
	b, err := NewMmap(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind() != "mmap" || b.Size() != 1<<16 || len(b.Bytes()) != 1<<16 || b.Bytes()[1<<16-1] != 0 {
		t.Fatalf("host buffer: kind %s size %d", b.Kind(), b.Size())
	}
	b.Bytes()[0] = 7
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil || b.Bytes() != nil || b.Size() != 0 {
		t.Errorf("second Free: %v, bytes %v", err, b.Bytes())
	}
}

func TestReleaseWaitingOnAFullAsyncQueueSurvivesClose(t *testing.T) {
	queueOf2 := optionFunc(func(c *config) { c.queueLen = 2 })
	r, err := NewReleaser(ReleaseAsync, queueOf2)
	if err != nil {
		t.Fatal(err)
	}
	// The worker sleeps in the first Free, two more releases fill the
	// queue, and the fourth sender waits on it while Close runs.
	bufs := make([]*slowBuffer, 4)
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		for i := range bufs {
			bufs[i] = &slowBuffer{kind: "mmap", size: 1, delay: 200 * time.Millisecond}
			_ = r.Release(context.Background(), "x", bufs[i])
		}
	}()
	time.Sleep(100 * time.Millisecond)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("Release panicked during Close: %v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Release still blocked after Close")
	}
	for i, b := range bufs {
		if n := b.freed.Load(); n != 1 {
			t.Errorf("buffer %d freed %d times, want exactly once", i, n)
		}
	}
}

func TestDeviceMemoryIsFreedAtOnceInEveryModeAndPoolKeepsOnlyMmapBuffers(t *testing.T) {
	for _, mode := range []ReleaseMode{ReleaseAsync, ReleasePool} {
		r, rec, _ := newReleaseRecorder(t, mode)
		dev := &slowBuffer{kind: "device", size: 1 << 20}
		pinned := &slowBuffer{kind: "pinned", size: 1 << 20}
		if err := r.Release(context.Background(), "msm.workspace", dev); err != nil {
			t.Fatal(err)
		}
		if dev.freed.Load() != 1 {
			t.Errorf("%s: device buffer not freed before Release returned: the next device allocation would fail", mode)
		}
		if err := r.Release(context.Background(), "stage", pinned); err != nil {
			t.Fatal(err)
		}
		mmapLike := &slowBuffer{kind: "mmap", size: 1 << 20}
		if err := r.Release(context.Background(), "not.mmap", mmapLike); err != nil {
			t.Fatal(err)
		}
		if mode == ReleasePool && (pinned.freed.Load() != 1 || mmapLike.freed.Load() != 1 || r.Reuse(1) != nil) {
			t.Errorf("pool: a pinned buffer, or an mmap-kind buffer that is not an Mmap, was kept (Reuse hands out only Mmap)")
		}
		if err := r.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, s := range releaseSpans(rec) {
			if relAttr(s, "cuzk.buffer.kind") == "device" && relAttr(s, "cuzk.release.mode") != "sync" {
				t.Errorf("%s: device release recorded as %v, want sync (how it happened)", mode, relAttr(s, "cuzk.release.mode"))
			}
		}
	}
}

// A buffer larger than the whole pool limit is freed at once, not kept
// (the pool is empty, so only its own size is over the limit), and a
// limit of 0 keeps nothing; PoolLimit says the limit each was given.
func TestReleasePoolFreesABufferLargerThanItsLimit(t *testing.T) {
	for _, limit := range []int{4096, 0} {
		r, rec, _ := newReleaseRecorder(t, ReleasePool, WithPoolLimit(limit))
		if got := r.PoolLimit(); got != limit {
			t.Errorf("PoolLimit() = %d, want %d", got, limit)
		}
		b := newMmap(t, 2*4096)
		if err := r.Release(context.Background(), "big", b); err != nil {
			t.Fatal(err)
		}
		if b.Bytes() != nil {
			t.Errorf("limit %d: a 2-page buffer is still mapped, want it freed", limit)
		}
		if got := r.Reuse(1); got != nil {
			t.Errorf("limit %d: Reuse(1) = %p, want nothing pooled", limit, got)
		}
		if s := releaseSpans(rec); len(s) != 1 || relAttr(s[0], "cuzk.release.mode") != "sync" {
			t.Errorf("limit %d: %d buffer.release spans, want one in mode sync", limit, len(s))
		}
	}
	if got := (*Releaser)(nil).PoolLimit(); got != 0 {
		t.Errorf("nil Releaser's PoolLimit() = %d, want 0 (it is synchronous)", got)
	}
	r, err := NewReleaser(ReleasePool)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.PoolLimit(); got != DefaultPoolLimit {
		t.Errorf("default PoolLimit() = %d, want DefaultPoolLimit (%d)", got, DefaultPoolLimit)
	}
}
