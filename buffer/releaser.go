package buffer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// ReleaseMode says when and where a large buffer's memory is given back
// (DESIGN.md, "Buffer release").
type ReleaseMode string

const (
	// ReleaseSync frees on the caller's goroutine, on the critical path, as
	// the destructors of the old C++ code did.
	ReleaseSync ReleaseMode = "sync"
	// ReleaseAsync hands the buffer to one background releaser that frees
	// buffers one at a time (to avoid munmap bursts); its span stays in the
	// caller's trace but off the caller's critical path.
	ReleaseAsync ReleaseMode = "async"
	// ReleasePool keeps Mmap buffers for reuse by a later Reuse of at most
	// their size; buffers of other kinds are freed at once.
	ReleasePool ReleaseMode = "pool"
)

// ErrUnknownReleaseMode is returned by ParseReleaseMode for any other name.
var ErrUnknownReleaseMode = semconv.NewError(semconv.ErrorTypeInvalidRequest, "unknown release mode (want sync, async or pool)")

// ParseReleaseMode maps "sync", "async" or "pool" to its mode.
func ParseReleaseMode(s string) (ReleaseMode, error) {
	switch m := ReleaseMode(s); m {
	case ReleaseSync, ReleaseAsync, ReleasePool:
		return m, nil
	}
	return "", fmt.Errorf("release mode %q: %w", s, ErrUnknownReleaseMode)
}

// Releaser frees Buffers in one ReleaseMode and records each release as a
// buffer.release span. It is safe for concurrent use. A nil *Releaser is
// a synchronous one on the global TracerProvider (package doc).
type Releaser struct {
	mode   ReleaseMode
	tracer trace.Tracer

	queue    chan releaseJob // async only
	stopping chan struct{}   // async only: closed when Close begins
	sendMu   sync.RWMutex    // held for reading by senders, for writing to close queue
	done     chan struct{}   // closed when the async worker exits

	mu        sync.Mutex
	pool      []*Mmap
	poolBytes int
	poolLimit int
	closed    bool
	errs      []error // async free failures, reported by Close
}

type releaseJob struct {
	ctx  context.Context
	name string
	buf  Buffer
	// after, when set, marks the job as AfterQueued's marker: no buffer,
	// a call once the releases queued before it are done.
	after func()
}

// Option configures a Releaser.
type Option interface{ apply(*config) }

type config struct {
	tp        trace.TracerProvider
	poolLimit int
	queueLen  int
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithTracerProvider sets the TracerProvider for buffer.release spans
// (default, and for a nil tp: the global one).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) {
		if tp != nil {
			c.tp = tp
		}
	})
}

// DefaultPoolLimit is the bytes a pool-mode Releaser keeps without
// WithPoolLimit: 64 GiB.
const DefaultPoolLimit = 64 << 30

// WithPoolLimit caps the bytes a pool-mode Releaser keeps (default
// DefaultPoolLimit); a buffer that would take the pool beyond it, one
// larger than the whole limit included, is freed synchronously instead.
// A limit of 0 or less keeps nothing.
func WithPoolLimit(bytes int) Option {
	return optionFunc(func(c *config) { c.poolLimit = bytes })
}

// NewReleaser returns a Releaser for mode; errors wrap
// ErrUnknownReleaseMode. In async mode it starts one background
// goroutine, stopped by Close. A sync Releaser needs no Close.
func NewReleaser(mode ReleaseMode, opts ...Option) (*Releaser, error) {
	if _, err := ParseReleaseMode(string(mode)); err != nil {
		return nil, err
	}
	cfg := config{tp: otel.GetTracerProvider(), poolLimit: DefaultPoolLimit, queueLen: 64}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	return newReleaser(mode, cfg), nil
}

func newReleaser(mode ReleaseMode, cfg config) *Releaser {
	r := &Releaser{
		mode:      mode,
		tracer:    semconv.Tracer(cfg.tp),
		poolLimit: cfg.poolLimit,
		done:      make(chan struct{}),
	}
	if mode == ReleaseAsync {
		r.queue = make(chan releaseJob, cfg.queueLen)
		r.stopping = make(chan struct{})
		go r.worker()
	} else {
		close(r.done)
	}
	return r
}

// OrSync returns r, or for a nil r a synchronous Releaser whose spans go
// to tp (nil: the global TracerProvider). It is the one place a default
// Releaser is made; a sync Releaser needs no Close.
func OrSync(r *Releaser, tp trace.TracerProvider) *Releaser {
	if r != nil {
		return r
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return newReleaser(ReleaseSync, config{tp: tp})
}

// Mode returns the Releaser's mode (ReleaseSync for a nil Releaser).
func (r *Releaser) Mode() ReleaseMode {
	if r == nil {
		return ReleaseSync
	}
	return r.mode
}

// PoolLimit returns the bytes the Releaser's pool may keep (WithPoolLimit);
// it bounds only a pool-mode Releaser (0 for a nil one).
func (r *Releaser) PoolLimit() int {
	if r == nil {
		return 0
	}
	return r.poolLimit
}

// PoolBytes returns the bytes of the idle buffers the Releaser's pool
// keeps now for reuse (at most PoolLimit): 0 outside pool mode, after
// Close, and for a nil Releaser.
func (r *Releaser) PoolBytes() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.poolBytes
}

// Reuse returns a pooled Mmap buffer of at least size bytes (the smallest
// that fits), or nil when the pool has none (always nil outside pool
// mode). Its content is stale: the caller overwrites it. The caller owns
// it and hands it back with Release.
func (r *Releaser) Reuse(size int) *Mmap {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	best := -1
	for i, b := range r.pool {
		if b.Size() >= size && (best < 0 || b.Size() < r.pool[best].Size()) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := r.pool[best]
	r.pool = append(r.pool[:best], r.pool[best+1:]...)
	r.poolBytes -= b.Size()
	return b
}

type releaseParentKey struct{}

// WithReleaseParent returns ctx marked so that async-mode releases made
// under it (by this code or by a backend it calls) get the span of parent
// as their parent instead of ctx's own span. A prove passes its job's span:
// an async release runs after the step that made the buffer has ended, so
// its span belongs under the job, off the prove's critical path. Sync and
// pool releases ignore the mark (they are on the critical path). An
// inner mark replaces an outer one.
func WithReleaseParent(ctx, parent context.Context) context.Context {
	return context.WithValue(ctx, releaseParentKey{}, trace.SpanFromContext(parent))
}

// HasReleaseParent reports whether ctx carries a WithReleaseParent mark.
func HasReleaseParent(ctx context.Context) bool {
	_, ok := ctx.Value(releaseParentKey{}).(trace.Span)
	return ok
}

// Release gives buf back according to the mode, as a buffer.release span
// that is a child of the span in ctx (in async mode: of the span set by
// WithReleaseParent, when ctx has one), named by name (cuzk.buffer.name),
// with cuzk.buffer.kind, cuzk.buffer.bytes and cuzk.release.mode saying
// how it was released. Device memory is always freed at once (the next
// device allocation needs it back), and pool mode keeps only Mmap buffers
// (those Reuse hands out). A synchronous free returns Free's error; an
// async free records it on its span and Close returns it; a nil buf (or
// a typed nil, a (*Mmap)(nil)) is ignored.
func (r *Releaser) Release(ctx context.Context, name string, buf Buffer) error {
	if isNil(buf) {
		return nil
	}
	if r == nil {
		r = OrSync(nil, nil)
	}
	switch {
	case buf.Kind() == KindDevice:
		// Device memory goes back at once in every mode: the next device
		// allocation (an MSM workspace, a key evicted to make room) needs
		// it, and a queued or pooled free would make it fail.
		return r.free(ctx, name, buf, ReleaseSync)
	case r.mode == ReleaseAsync:
		if parent, ok := ctx.Value(releaseParentKey{}).(trace.Span); ok {
			ctx = trace.ContextWithSpan(ctx, parent)
		}
		if r.enqueue(releaseJob{ctx: ctx, name: name, buf: buf}) {
			return nil
		}
	case r.mode == ReleasePool:
		// Only Mmap buffers are pooled: they are what Reuse hands back to
		// the prover's allocations; a pooled buffer nobody asks for again
		// would only be held.
		m, ok := buf.(*Mmap)
		if !ok {
			break
		}
		size := m.Size()
		r.mu.Lock()
		if !r.closed && r.poolBytes+size <= r.poolLimit {
			r.pool = append(r.pool, m)
			r.poolBytes += size
			r.mu.Unlock()
			_, span := r.tracer.Start(ctx, semconv.SpanBufferRelease, trace.WithAttributes(attrs(name, buf.Kind(), size, ReleasePool)...))
			span.End()
			return nil
		}
		r.mu.Unlock()
	}
	return r.free(ctx, name, buf, ReleaseSync)
}

// attrs are a buffer.release span's attributes; how is the way this
// release happened (sync, async or pool), which may differ from r.mode.
func attrs(name string, kind Kind, size int, how ReleaseMode) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.KeyBufferName.String(name),
		semconv.KeyBufferKind.String(string(kind)),
		semconv.KeyBufferBytes.Int(size),
		semconv.KeyReleaseMode.String(string(how)),
	}
}

func (r *Releaser) free(ctx context.Context, name string, buf Buffer, how ReleaseMode) error {
	kind, size := buf.Kind(), buf.Size()
	_, span := r.tracer.Start(ctx, semconv.SpanBufferRelease, trace.WithAttributes(attrs(name, kind, size, how)...))
	defer span.End()
	free := buf.Free
	if m, ok := buf.(*Mmap); ok {
		// Its OnUnmap functions' spans (a device backend's
		// cuda.host_unregister) go under this buffer.release.
		free = func() error { return m.FreeContext(trace.ContextWithSpan(ctx, span)) }
	}
	if err := free(); err != nil {
		semconv.SetError(span, err)
		return fmt.Errorf("release %s (%s, %d bytes): %w", name, kind, size, err)
	}
	return nil
}

// enqueue hands j to the async worker, waiting while the queue is full,
// and reports false when Close has begun (the caller then frees it).
// Senders hold sendMu for reading, so Close closes the queue only when no
// send is under way.
func (r *Releaser) enqueue(j releaseJob) bool {
	r.sendMu.RLock()
	defer r.sendMu.RUnlock()
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return false
	}
	// Keep the parent span but drop the caller's cancellation: the
	// release must happen even after the job is done.
	j.ctx = context.WithoutCancel(j.ctx)
	select {
	case r.queue <- j:
		return true
	case <-r.stopping:
		return false
	}
}

func (r *Releaser) worker() {
	defer close(r.done)
	for j := range r.queue {
		if j.after != nil {
			j.after()
			continue
		}
		if err := r.free(j.ctx, j.name, j.buf, ReleaseAsync); err != nil {
			r.mu.Lock()
			r.errs = append(r.errs, err)
			r.mu.Unlock()
		}
	}
}

// AfterQueued calls f once every buffer given to Release before this call
// has been freed: at once in sync and pool modes (their Release frees or
// pools before it returns), after the queued frees in async mode (one
// worker frees in order), or at once after Close. A memory budget uses it
// to count a proof's buffers until they are really gone. f must not block;
// a nil f is ignored.
func (r *Releaser) AfterQueued(f func()) {
	if f == nil {
		return
	}
	if r != nil && r.mode == ReleaseAsync && r.enqueue(releaseJob{ctx: context.Background(), after: f}) {
		return
	}
	f()
}

// Close frees pooled buffers, waits for pending async releases (or until
// ctx is done) and returns any release errors. Release after Close frees
// synchronously. Closing a nil Releaser, or twice, returns nil.
func (r *Releaser) Close(ctx context.Context) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	pool := r.pool
	r.pool, r.poolBytes = nil, 0
	r.mu.Unlock()
	if r.queue != nil {
		// Wake senders waiting on a full queue (they free synchronously),
		// then close the queue once no send is under way; the worker
		// drains what was queued.
		close(r.stopping)
		r.sendMu.Lock()
		close(r.queue)
		r.sendMu.Unlock()
	}
	var errs []error
	for _, b := range pool {
		if err := b.FreeContext(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("releaser close: %w", ctx.Err()))
	}
	r.mu.Lock()
	errs = append(errs, r.errs...)
	r.mu.Unlock()
	return errors.Join(errs...)
}

// isNil reports whether buf is nil or holds a nil pointer (a (*Mmap)(nil)
// passed as a Buffer): nothing to release.
func isNil(buf Buffer) bool {
	if buf == nil {
		return true
	}
	rv := reflect.ValueOf(buf)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
