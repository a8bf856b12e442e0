package cudaspans

import (
	"context"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Session is the device work of one prove: the operations launched with
// its context, from the first to the last, become one gpu.total span on
// the GPU clock (cuzk's gpu_total_ms).
type Session struct {
	c      *Context
	parent context.Context

	mu          sync.Mutex
	first, last time.Time
	spans       [][2]time.Time // each operation's device interval
	ops         int
	clamped     int
	ended       bool
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	if s != nil && s.closed() {
		return nil
	}
	return s
}

// BeginSession starts a device session for one prove and returns the
// context to launch its device work with (pass it, or contexts derived
// from it, to the stream operations). The gpu.total span becomes a child
// of the span in ctx. Every stream of c takes a fresh clock anchor at its
// next idle point, so each proof is timed against its own anchor.
func (c *Context) BeginSession(ctx context.Context) (context.Context, *Session) {
	s := &Session{c: c, parent: ctx}
	c.mu.Lock()
	streams := append([]*Stream(nil), c.streams...)
	c.mu.Unlock()
	for _, st := range streams {
		st.Reanchor()
	}
	return context.WithValue(ctx, sessionKey{}, s), s
}

func (s *Session) closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

func (s *Session) observe(d deviceSpan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if s.ops == 0 || d.start.Before(s.first) {
		s.first = d.start
	}
	if s.ops == 0 || d.end.After(s.last) {
		s.last = d.end
	}
	s.spans = append(s.spans, [2]time.Time{d.start, d.end})
	s.ops++
}

func (s *Session) addClamped() {
	s.mu.Lock()
	s.clamped++
	s.mu.Unlock()
}

// GPUTime is the time from the start of the first to the end of the last
// device operation seen so far (after End: of the whole session).
func (s *Session) GPUTime() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last.Sub(s.first)
}

// Ops is the number of device operations the session has seen.
func (s *Session) Ops() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ops
}

// End synchronizes the context's streams that have pending operations
// (emitting their spans) and emits gpu.total, with cuda.gpu_ms,
// cuda.op.count, cuzk.clamped_spans (device spans of the session moved
// into their parents), cuda.gpu_busy_ms (the time some operation of the
// session ran, the union of their intervals) and cuda.gpu_idle_ms
// (cuda.gpu_ms − cuda.gpu_busy_ms: inside gpu.total, the device waited for
// the host). A session without device operations emits nothing.
// A second End is a no-op. It returns the error of synchronizing.
func (s *Session) End() error {
	if s.closed() {
		return nil
	}
	err := s.c.Flush(s.parent)
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return err
	}
	s.ended = true
	first, last, ops, clamped := s.first, s.last, s.ops, s.clamped
	busy := unionLength(s.spans)
	s.spans = nil
	s.mu.Unlock()
	if ops == 0 {
		return err
	}
	parent := trace.SpanFromContext(s.parent)
	lo, hi := hostBounds(parent)
	start, end, moved := clampInto(first, last, lo, hi)
	if moved {
		clamped++
	}
	_, span := s.c.tracer.Start(s.parent, semconv.SpanGPUTotal, trace.WithTimestamp(start))
	span.SetAttributes(
		semconv.KeyCUDAGPUMS.Float64(float64(last.Sub(first))/1e6),
		semconv.KeyCUDAOpCount.Int(ops),
		semconv.KeyCUDADeviceOrdinal.Int(s.c.dev.Ordinal),
		semconv.KeyCUDAClock.String("gpu"),
		semconv.KeyClampedSpans.Int(clamped),
		semconv.KeyCUDABusyMS.Float64(float64(busy)/1e6),
		semconv.KeyCUDAIdleMS.Float64(float64(last.Sub(first)-busy)/1e6),
	)
	span.End(trace.WithTimestamp(end))
	return err
}

// unionLength is the length of the union of the intervals.
func unionLength(iv [][2]time.Time) time.Duration {
	sorted := append([][2]time.Time(nil), iv...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i][0].Before(sorted[j][0]) })
	var total time.Duration
	var cur [2]time.Time
	for i, v := range sorted {
		if i == 0 || v[0].After(cur[1]) {
			if i > 0 {
				total += cur[1].Sub(cur[0])
			}
			cur = v
			continue
		}
		if v[1].After(cur[1]) {
			cur[1] = v[1]
		}
	}
	if len(sorted) > 0 {
		total += cur[1].Sub(cur[0])
	}
	return total
}
