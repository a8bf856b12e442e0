package cudaspans

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// msDuration converts event milliseconds to a Duration (ns resolution).
func msDuration(ms float64) time.Duration { return time.Duration(ms * 1e6) }

// deviceSpan is a device operation mapped to the wall clock.
type deviceSpan struct {
	op         *pendingOp
	start, end time.Time
	gpuMS      float64
	clamped    bool
	cuptiMS    float64 // CUPTI's duration (SetLaunchCorrelation); 0: none
}

// mapToWall places the interval of events (start, end) on the wall clock:
// start = anchor wall time + elapsed(anchor, start); the duration is
// elapsed(start, end), measured directly so it carries no anchor error.
func mapToWall(a anchor, sinceAnchorMS, durationMS float64) (start, end time.Time) {
	start = a.wall.Add(msDuration(sinceAnchorMS))
	return start, start.Add(msDuration(durationMS))
}

// clampInto moves [start, end] inside the host interval [lo, hi]; a zero
// bound is open (hi is zero while the parent span is still running, and
// then it ends after now, after every completed device operation). It
// reports whether anything moved.
func clampInto(start, end, lo, hi time.Time) (time.Time, time.Time, bool) {
	moved := false
	if !lo.IsZero() && start.Before(lo) {
		start, moved = lo, true
		if end.Before(start) {
			end = start
		}
	}
	if !hi.IsZero() && end.After(hi) {
		end, moved = hi, true
		if start.After(end) {
			start = end
		}
	}
	return start, end, moved
}

// aggregate folds the launches of one kernel under one parent beyond the
// volume limit into a single span.
type aggregate struct {
	parent     context.Context
	name       string
	attrs      []attribute.KeyValue
	stats      semconv.AggregateStats
	start, end time.Time
}

func (a *aggregate) add(d deviceSpan) {
	if a.stats.Count == 0 || d.start.Before(a.start) {
		a.start = d.start
	}
	if d.end.After(a.end) {
		a.end = d.end
	}
	a.stats.Add(d.gpuMS)
}

type aggKey struct {
	parent trace.SpanID
	name   string
}

// emit reads the events of completed operations and emits their spans.
// Launches beyond the per-parent limit are folded per kernel name into one
// span each, emitted at the end of the batch.
func (c *Context) emit(ops []*pendingOp, streamID int) error {
	var errs []error
	aggs := map[aggKey]*aggregate{}
	var aggOrder []aggKey
	other, hooked := otherDurations(ops)
	for _, op := range ops {
		d, err := c.resolve(op)
		ms, found := other[op.launch]
		d.cuptiMS = ms
		c.putEvents(op.start, op.end)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if op.sess != nil {
			op.sess.observe(d)
		}
		parent := trace.SpanFromContext(op.parent)
		lo, hi := hostBounds(parent)
		var moved bool
		d.start, d.end, moved = clampInto(d.start, d.end, lo, hi)
		pid := parent.SpanContext().SpanID()
		if moved {
			d.clamped = true
			c.mu.Lock()
			c.clamped[pid]++
			n := c.clamped[pid]
			c.mu.Unlock()
			// Ignored by the SDK once the parent has ended; the clamped
			// span itself carries cuda.clamped either way.
			parent.SetAttributes(semconv.KeyClampedSpans.Int(n))
			if op.sess != nil {
				op.sess.addClamped()
			}
		}
		if op.kernel != "" {
			c.mu.Lock()
			n := c.kernelCount[pid]
			fold := n >= c.cfg.maxKernelSpans
			if !fold {
				c.kernelCount[pid] = n + 1
			}
			c.mu.Unlock()
			if fold {
				k := aggKey{pid, op.kernel}
				a := aggs[k]
				if a == nil {
					a = &aggregate{parent: op.parent, name: op.kernel, attrs: op.attrs}
					aggs[k] = a
					aggOrder = append(aggOrder, k)
				}
				a.add(d)
				continue
			}
			c.endOrHold(d, found, hooked)
			continue
		}
		c.emitOne(d)
	}
	for _, k := range aggOrder {
		c.emitAggregate(aggs[k])
	}
	c.pruneCounts()
	return errors.Join(errs...)
}

// resolve reads an operation's events relative to its stream's anchor.
func (c *Context) resolve(op *pendingOp) (deviceSpan, error) {
	since, err := c.drv.EventElapsed(c.h, op.anchor.ev, op.start)
	if err != nil {
		return deviceSpan{}, err
	}
	dur, err := c.drv.EventElapsed(c.h, op.start, op.end)
	if err != nil {
		return deviceSpan{}, err
	}
	d := deviceSpan{op: op, gpuMS: float64(dur)}
	d.start, d.end = mapToWall(*op.anchor, float64(since), float64(dur))
	return d, nil
}

func (c *Context) emitOne(d deviceSpan) {
	attrs := append([]attribute.KeyValue(nil), d.op.attrs...)
	attrs = append(attrs, semconv.KeyCUDAGPUMS.Float64(d.gpuMS))
	if d.op.bytes > 0 && d.gpuMS > 0 {
		attrs = append(attrs, semconv.KeyCUDAGBPerSecond.Float64(float64(d.op.bytes)/(d.gpuMS*1e6)))
	}
	if d.clamped {
		attrs = append(attrs, semconv.KeyCUDAClamped.Bool(true))
	}
	if d.cuptiMS > 0 {
		attrs = append(attrs, attribute.Float64("cuda.cupti_ms", d.cuptiMS))
	}
	_, span := c.tracer.Start(d.op.parent, d.op.name, trace.WithTimestamp(d.start), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(d.end))
}

func (c *Context) emitAggregate(a *aggregate) {
	attrs := make([]attribute.KeyValue, 0, len(a.attrs)+6)
	for _, kv := range a.attrs {
		// Per-launch shapes differ between folded launches; keep the rest.
		if kv.Key != semconv.KeyCUDAGrid && kv.Key != semconv.KeyCUDABlock && kv.Key != semconv.KeyCUDASharedBytes {
			attrs = append(attrs, kv)
		}
	}
	attrs = append(append(attrs, a.stats.Attributes()...), semconv.KeyCUDAGPUMS.Float64(a.stats.TotalMS))
	_, span := c.tracer.Start(a.parent, a.name, trace.WithTimestamp(a.start), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(a.end))
}

// pruneCounts bounds the per-parent maps of a long-running daemon: parents
// are proof-scoped, so forgetting all of them when many accumulated only
// restarts the volume limit for parents still in flight.
func (c *Context) pruneCounts() {
	const limit = 1 << 14
	c.mu.Lock()
	if len(c.kernelCount) > limit {
		c.kernelCount = map[trace.SpanID]int{}
	}
	if len(c.clamped) > limit {
		c.clamped = map[trace.SpanID]int{}
	}
	c.mu.Unlock()
}
