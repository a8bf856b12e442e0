package cudaspans

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Stream is a CUDA stream whose operations become spans. Each operation
// is bracketed by two CUDA events on the stream; the events are read when
// the stream is synchronized (Synchronize, Context.Flush), so operations
// stay asynchronous. Call Synchronize before ending the span that was in
// the context of the operations, so their spans arrive while it is open.
// A Stream is safe for concurrent use, though operations from several
// goroutines run in whatever order they reach it.
type Stream struct {
	c  *Context
	h  StreamHandle
	id int

	mu         sync.Mutex
	pending    []*pendingOp
	anchor     *anchor
	reanchor   bool
	openPhases int // C phases begun on the stream and not yet ended
	closed     bool
}

var errStreamClosed = errors.New("cudaspans: stream is closed")

// anchor ties an event on the GPU clock to a wall-clock time read while
// the stream was idle (DESIGN.md, "GPU clock to wall clock").
type anchor struct {
	ev   EventHandle
	wall time.Time
}

// pendingOp is a device operation whose bracketing events are recorded
// and whose span waits for the stream's next synchronize.
type pendingOp struct {
	parent     context.Context
	name       string // span name
	kernel     string // kernel name; "" for copies, memsets and C phases
	attrs      []attribute.KeyValue
	bytes      int // copies: for cuda.gbps
	start, end EventHandle
	launch     uint64 // kernels: the launch's id (newLaunchID), never reused
	anchor     *anchor
	sess       *Session
}

// Handle returns the CUstream, for C code (cudaspans_begin takes it).
func (s *Stream) Handle() StreamHandle { return s.h }

// ID returns the stream's number within its context (cuda.stream).
func (s *Stream) ID() int { return s.id }

// Context returns the stream's context.
func (s *Stream) Context() *Context { return s.c }

func (s *Stream) hasPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) > 0
}

// Reanchor asks for a fresh clock anchor at the next point the stream is
// idle. Sessions call it on every stream, so each proof gets its own.
func (s *Stream) Reanchor() {
	s.mu.Lock()
	s.reanchor = true
	s.mu.Unlock()
}

// ensureAnchor renews the anchor when there is none, or when one is due
// and the stream is idle (nothing pending), so the anchor event runs at
// once and its GPU time is the host time read around it. Called with s.mu.
func (s *Stream) ensureAnchor() error {
	now := s.c.cfg.now()
	due := s.anchor == nil ||
		(len(s.pending) == 0 && s.openPhases == 0 && (s.reanchor || now.Sub(s.anchor.wall) > s.c.cfg.anchorMaxAge))
	if !due {
		return nil
	}
	ev, err := s.c.event()
	if err != nil {
		return err
	}
	// Two rounds: the first warms the driver's paths (a cold first record
	// can take far longer than the GPU does), the second is the anchor.
	var t0, t1 time.Time
	for round := 0; round < 2; round++ {
		t0 = s.c.cfg.now()
		if err := s.c.drv.EventRecord(s.c.h, ev, s.h); err != nil {
			s.c.putEvents(ev)
			return err
		}
		if err := s.c.drv.EventSynchronize(s.c.h, ev); err != nil {
			s.c.putEvents(ev)
			return err
		}
		t1 = s.c.cfg.now()
	}
	if s.anchor != nil {
		s.c.putEvents(s.anchor.ev)
	}
	// The event ran between t0 and t1 on an idle stream; the midpoint is
	// off by at most half the round trip (some µs).
	s.anchor = &anchor{ev: ev, wall: t0.Add(t1.Sub(t0) / 2)}
	s.reanchor = false
	return nil
}

// begin records the start event of an operation. Called with s.mu.
func (s *Stream) begin() (EventHandle, error) {
	if s.closed {
		return 0, errStreamClosed
	}
	if err := s.ensureAnchor(); err != nil {
		return 0, err
	}
	ev, err := s.c.event()
	if err != nil {
		return 0, err
	}
	if err := s.c.drv.EventRecord(s.c.h, ev, s.h); err != nil {
		s.c.putEvents(ev)
		return 0, err
	}
	return ev, nil
}

// finish records the end event and queues the op. Called with s.mu.
func (s *Stream) finish(op *pendingOp) error {
	ev, err := s.c.event()
	if err != nil {
		s.c.putEvents(op.start)
		return err
	}
	if err := s.c.drv.EventRecord(s.c.h, ev, s.h); err != nil {
		s.c.putEvents(op.start, ev)
		return err
	}
	op.end = ev
	op.anchor = s.anchor
	s.pending = append(s.pending, op)
	return nil
}

// do runs one device operation between two events and queues its span.
func (s *Stream) do(ctx context.Context, op *pendingOp, call func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	start, err := s.begin()
	if err != nil {
		return err
	}
	if err := call(); err != nil {
		s.c.putEvents(start)
		return err
	}
	s.prepare(ctx, op, start)
	return s.finish(op)
}

func (s *Stream) prepare(ctx context.Context, op *pendingOp, start EventHandle) {
	op.parent = ctx
	op.start = start
	op.sess = sessionFrom(ctx)
	op.attrs = append(op.attrs,
		semconv.KeyCUDAStream.Int(s.id),
		semconv.KeyCUDADeviceOrdinal.Int(s.c.dev.Ordinal),
		semconv.KeyCUDAClock.String("gpu"))
}

// timedLauncher is implemented by drivers that record the start event,
// launch and record the end event in one call (the real driver: one cgo
// crossing and one cuCtxSetCurrent instead of three). launch is the id
// the launch hook (SetLaunchCorrelation) is called with.
type timedLauncher interface {
	LaunchTimed(c ContextHandle, f FunctionHandle, grid, block Dim3, sharedBytes int, s StreamHandle,
		params []byte, offsets []int, start, end EventHandle, launch uint64) error
}

// doLaunch is do for a kernel launch, in one driver call where it can.
func (s *Stream) doLaunch(ctx context.Context, op *pendingOp, f *Function, grid, block Dim3, shared int, params []byte, offs []int) error {
	op.launch = newLaunchID()
	tl, ok := s.c.drv.(timedLauncher)
	if !ok {
		return s.do(ctx, op, func() error {
			return s.c.drv.Launch(s.c.h, f.h, grid, block, shared, s.h, params, offs)
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStreamClosed
	}
	if err := s.ensureAnchor(); err != nil {
		return err
	}
	start, err := s.c.event()
	if err != nil {
		return err
	}
	end, err := s.c.event()
	if err != nil {
		s.c.putEvents(start)
		return err
	}
	if err := tl.LaunchTimed(s.c.h, f.h, grid, block, shared, s.h, params, offs, start, end, op.launch); err != nil {
		s.c.putEvents(start, end)
		return err
	}
	s.prepare(ctx, op, start)
	op.end = end
	op.anchor = s.anchor
	s.pending = append(s.pending, op)
	return nil
}

// Synchronize waits for the stream's work, then emits the spans of its
// completed operations as children of the spans that were in their
// contexts. It returns the first driver error.
func (s *Stream) Synchronize(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStreamClosed
	}
	if err := s.c.drv.StreamSynchronize(s.c.h, s.h); err != nil {
		return err
	}
	ops := s.pending
	s.pending = nil
	return s.c.emit(ops, s.id)
}

// Close synchronizes the stream (emitting its pending spans) and destroys
// it. The stream must not be used afterwards; a second Close is a no-op.
// Context.Close closes the streams still open.
func (s *Stream) Close(ctx context.Context) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil
	}
	err := s.Synchronize(ctx)
	c := s.c
	c.mu.Lock()
	for i, x := range c.streams {
		if x == s {
			c.streams = append(c.streams[:i], c.streams[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	return errors.Join(err, s.destroy())
}

// destroy frees the stream's anchor and the stream itself.
func (s *Stream) destroy() error {
	unregisterStream(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.anchor != nil {
		s.c.putEvents(s.anchor.ev)
		s.anchor = nil
	}
	return s.c.drv.StreamDestroy(s.c.h, s.h)
}

// CopyHtoD copies bytes from host memory at src to dst, asynchronously
// when src is pinned (PinnedBuffer, Registered); pageable memory is
// staged by the driver before the call returns. Span cuda.memcpy.htod.
func (s *Stream) CopyHtoD(ctx context.Context, dst DevicePtr, src unsafe.Pointer, bytes int) error {
	if bytes < 0 {
		return fmt.Errorf("cudaspans: copy of %d bytes", bytes)
	}
	op := &pendingOp{name: semconv.SpanMemcpyHtoD, bytes: bytes, attrs: copyAttrs(ctx, bytes)}
	return s.do(ctx, op, func() error { return s.c.drv.CopyHtoD(s.c.h, dst, src, bytes, s.h) })
}

// CopyDtoH copies bytes from src to host memory at dst. The host memory
// must stay valid until the stream is synchronized; into pageable memory
// the driver completes the copy before returning. Span cuda.memcpy.dtoh.
func (s *Stream) CopyDtoH(ctx context.Context, dst unsafe.Pointer, src DevicePtr, bytes int) error {
	if bytes < 0 {
		return fmt.Errorf("cudaspans: copy of %d bytes", bytes)
	}
	op := &pendingOp{name: semconv.SpanMemcpyDtoH, bytes: bytes, attrs: copyAttrs(ctx, bytes)}
	return s.do(ctx, op, func() error { return s.c.drv.CopyDtoH(s.c.h, dst, src, bytes, s.h) })
}

type copyAttrsKey struct{}

// WithCopyAttributes returns ctx whose host-device copies (CopyHtoD,
// CopyDtoH, HtoD, DtoH) carry attrs on their cuda.memcpy.* spans, after
// cuda.bytes: a caller says how the host memory was reached (for example
// cuzk.host_copy). Attributes of an outer call come first.
func WithCopyAttributes(ctx context.Context, attrs ...attribute.KeyValue) context.Context {
	prev, _ := ctx.Value(copyAttrsKey{}).([]attribute.KeyValue)
	return context.WithValue(ctx, copyAttrsKey{}, append(prev[:len(prev):len(prev)], attrs...))
}

// copyAttrs are a host-device copy's span attributes.
func copyAttrs(ctx context.Context, bytes int) []attribute.KeyValue {
	extra, _ := ctx.Value(copyAttrsKey{}).([]attribute.KeyValue)
	return append([]attribute.KeyValue{semconv.KeyCUDABytes.Int(bytes)}, extra...)
}

// CopyDtoD copies bytes between device buffers. Span cuda.memcpy.dtod.
func (s *Stream) CopyDtoD(ctx context.Context, dst, src DevicePtr, bytes int) error {
	if bytes < 0 {
		return fmt.Errorf("cudaspans: copy of %d bytes", bytes)
	}
	op := &pendingOp{name: semconv.SpanMemcpyDtoD, bytes: bytes, attrs: []attribute.KeyValue{semconv.KeyCUDABytes.Int(bytes)}}
	return s.do(ctx, op, func() error { return s.c.drv.CopyDtoD(s.c.h, dst, src, bytes, s.h) })
}

// Memset sets bytes of device memory at dst to value. Span cuda.memset.
func (s *Stream) Memset(ctx context.Context, dst DevicePtr, value byte, bytes int) error {
	if bytes < 0 {
		return fmt.Errorf("cudaspans: memset of %d bytes", bytes)
	}
	op := &pendingOp{name: semconv.SpanCUDAMemset, attrs: []attribute.KeyValue{semconv.KeyCUDABytes.Int(bytes)}}
	return s.do(ctx, op, func() error { return s.c.drv.MemsetD8(s.c.h, dst, value, bytes, s.h) })
}

// AsBytes views the memory of v (plain data: no Go pointers inside) as
// len(v)*sizeof(T) bytes, without a copy: for a host buffer handed to a
// copy or a file as bytes. nil for an empty v.
func AsBytes[T any](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(v[0])))
}

// HtoD copies the elements of src (plain data: no Go pointers inside) to
// dst, len(src)*sizeof(T) bytes. See CopyHtoD.
func HtoD[T any](ctx context.Context, s *Stream, dst DevicePtr, src []T) error {
	if len(src) == 0 {
		return nil
	}
	return s.CopyHtoD(ctx, dst, unsafe.Pointer(&src[0]), len(src)*int(unsafe.Sizeof(src[0])))
}

// DtoH copies len(dst)*sizeof(T) bytes from src into dst. See CopyDtoH.
func DtoH[T any](ctx context.Context, s *Stream, dst []T, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return s.CopyDtoH(ctx, unsafe.Pointer(&dst[0]), src, len(dst)*int(unsafe.Sizeof(dst[0])))
}
