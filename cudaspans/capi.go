package cudaspans

/*
#include <stdint.h>
*/
import "C"

import (
	"context"
	"sync"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// The C API of cudaspans.h, bridged with //export. C code refers to spans
// by uint64 handles into this registry.

type centry struct {
	ctx  context.Context // parent of nested phases
	span trace.Span      // host phase; nil otherwise
	dev  *pendingOp      // device phase; nil otherwise
	s    *Stream         // stream of a device phase
	root bool            // registered by CParent, released by its func
}

var creg = struct {
	sync.Mutex
	m       map[uint64]*centry
	next    uint64
	streams map[StreamHandle]*Stream
}{m: map[uint64]*centry{}, streams: map[StreamHandle]*Stream{}}

func registerStream(s *Stream) {
	creg.Lock()
	creg.streams[s.h] = s
	creg.Unlock()
}

func unregisterStream(s *Stream) {
	creg.Lock()
	if creg.streams[s.h] == s {
		delete(creg.streams, s.h)
	}
	creg.Unlock()
}

func cput(e *centry) uint64 {
	creg.Lock()
	defer creg.Unlock()
	creg.next++
	creg.m[creg.next] = e
	return creg.next
}

func cget(h uint64) *centry {
	creg.Lock()
	defer creg.Unlock()
	return creg.m[h]
}

func ctake(h uint64) *centry {
	creg.Lock()
	defer creg.Unlock()
	e := creg.m[h]
	if e != nil && !e.root {
		delete(creg.m, h)
		return e
	}
	return nil
}

// CParent registers ctx (and the span in it) as the parent of phases that
// C code records through cudaspans.h, and returns the handle to pass to
// the C code and a func that unregisters it once the C call is done. The
// handle also carries ctx's device Session, so device phases count
// towards gpu.total. Phases still open at release keep working.
func CParent(ctx context.Context) (handle uint64, release func()) {
	h := cput(&centry{ctx: ctx, root: true})
	return h, func() {
		creg.Lock()
		delete(creg.m, h)
		creg.Unlock()
	}
}

//export cudaspans_begin
func cudaspans_begin(parent C.uint64_t, name *C.char, stream unsafe.Pointer) C.uint64_t {
	if name == nil {
		return 0
	}
	return C.uint64_t(cBegin(uint64(parent), C.GoString(name), StreamHandle(uintptr(stream))))
}

//export cudaspans_end
func cudaspans_end(h C.uint64_t) { cEnd(uint64(h)) }

//export cudaspans_set_int
func cudaspans_set_int(h C.uint64_t, key *C.char, v C.int64_t) {
	if key != nil {
		cSetAttr(uint64(h), attribute.Int64(C.GoString(key), int64(v)))
	}
}

//export cudaspans_set_double
func cudaspans_set_double(h C.uint64_t, key *C.char, v C.double) {
	if key != nil {
		cSetAttr(uint64(h), attribute.Float64(C.GoString(key), float64(v)))
	}
}

//export cudaspans_set_str
func cudaspans_set_str(h C.uint64_t, key, v *C.char) {
	if key != nil && v != nil {
		cSetAttr(uint64(h), attribute.String(C.GoString(key), C.GoString(v)))
	}
}

// cBegin is cudaspans_begin in Go terms.
func cBegin(parent uint64, name string, stream StreamHandle) uint64 {
	p := cget(parent)
	if p == nil {
		return 0
	}
	if stream != 0 {
		creg.Lock()
		s := creg.streams[stream]
		creg.Unlock()
		if s != nil {
			if op := s.beginPhase(p.ctx, name); op != nil {
				return cput(&centry{ctx: p.ctx, dev: op, s: s})
			}
		}
	}
	tracer := semconv.Tracer(trace.SpanFromContext(p.ctx).TracerProvider())
	ctx, span := tracer.Start(p.ctx, name, trace.WithAttributes(semconv.KeyCUDAClock.String("host")))
	return cput(&centry{ctx: ctx, span: span})
}

// cEnd is cudaspans_end in Go terms.
func cEnd(h uint64) {
	e := ctake(h)
	switch {
	case e == nil:
	case e.dev != nil:
		e.s.endPhase(e.dev)
	case e.span != nil:
		e.span.End()
	}
}

func cSetAttr(h uint64, kv attribute.KeyValue) {
	creg.Lock()
	defer creg.Unlock()
	e := creg.m[h]
	switch {
	case e == nil || e.root:
	case e.dev != nil:
		e.dev.attrs = append(e.dev.attrs, kv)
	case e.span != nil:
		e.span.SetAttributes(kv)
	}
}

// beginPhase records the start event of a C phase on the stream; nil when
// the driver refuses (the phase then falls back to the host clock).
func (s *Stream) beginPhase(ctx context.Context, name string) *pendingOp {
	s.mu.Lock()
	defer s.mu.Unlock()
	start, err := s.begin()
	if err != nil {
		return nil
	}
	s.openPhases++
	return &pendingOp{
		parent: ctx, name: name, start: start, anchor: s.anchor, sess: sessionFrom(ctx),
		attrs: []attribute.KeyValue{
			semconv.KeyCUDAStream.Int(s.id),
			semconv.KeyCUDADeviceOrdinal.Int(s.c.dev.Ordinal),
			semconv.KeyCUDAClock.String("gpu"),
		},
	}
}

// endPhase records the end event and queues the phase's span.
func (s *Stream) endPhase(op *pendingOp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openPhases--
	if s.closed {
		// The stream was destroyed under the open phase: recording an
		// event on it would be undefined; the phase has no device time.
		s.c.putEvents(op.start)
		return
	}
	// The anchor cannot have changed while the phase was open.
	_ = s.finish(op)
}
