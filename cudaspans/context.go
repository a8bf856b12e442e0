package cudaspans

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Devices lists the CUDA devices of this host. Without a usable driver or
// device it returns an error wrapping ErrNoDevice.
func Devices(opts ...Option) ([]DeviceInfo, error) {
	cfg := newConfig(opts)
	d, n, err := cfg.devices()
	if err != nil {
		return nil, err
	}
	out := make([]DeviceInfo, n)
	for i := range out {
		if out[i], err = d.Device(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// devices loads the driver and counts its devices; zero devices is
// ErrNoDevice.
func (c *config) devices() (Driver, int, error) {
	d, err := c.loadDriver()
	if err != nil {
		return nil, 0, err
	}
	n, err := d.DeviceCount()
	if err != nil {
		return nil, 0, err
	}
	if n == 0 {
		return nil, 0, fmt.Errorf("%w: the driver reports 0 devices", ErrNoDevice)
	}
	return d, n, nil
}

func (c *config) loadDriver() (Driver, error) {
	if c.driver != nil {
		return c.driver, nil
	}
	return LoadDriver()
}

// Context is one device's primary context with the streams, events and
// spans of the work on it. Its methods are safe for concurrent use; each
// driver call makes the context current on the calling OS thread first,
// so goroutines need not lock their threads.
type Context struct {
	drv    Driver
	h      ContextHandle
	dev    DeviceInfo
	cfg    config
	tracer trace.Tracer

	mu      sync.Mutex
	closed  bool
	streams []*Stream
	// nextStreamID is the ordinal of the next stream (cuda.stream).
	nextStreamID int
	freeEvents   []EventHandle
	// Per parent span: kernel spans emitted so far (volume control) and
	// device spans clamped into it.
	kernelCount map[trace.SpanID]int
	clamped     map[trace.SpanID]int
}

// Open retains the primary context of the device with the given ordinal.
// Without a usable driver or device it returns an error wrapping
// ErrNoDevice; an ordinal out of range is an error naming the count.
func Open(ordinal int, opts ...Option) (*Context, error) {
	cfg := newConfig(opts)
	d, n, err := cfg.devices()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cudaspans: device ordinal %d out of range (%d devices)", ordinal, n)
	}
	info, err := d.Device(ordinal)
	if err != nil {
		return nil, err
	}
	h, err := d.PrimaryContext(ordinal)
	if err != nil {
		return nil, err
	}
	return &Context{
		drv:         d,
		h:           h,
		dev:         info,
		cfg:         cfg,
		tracer:      semconv.Tracer(cfg.tp),
		kernelCount: map[trace.SpanID]int{},
		clamped:     map[trace.SpanID]int{},
	}, nil
}

// Device describes the context's device.
func (c *Context) Device() DeviceInfo { return c.dev }

// Driver returns the driver the context calls.
func (c *Context) Driver() Driver { return c.drv }

// Handle returns the CUcontext, for C code that calls the driver itself.
func (c *Context) Handle() ContextHandle { return c.h }

// MemInfo returns the free and total device memory in bytes.
func (c *Context) MemInfo() (free, total uint64, err error) { return c.drv.MemInfo(c.h) }

// NewStream creates a non-blocking stream. Streams are numbered from 0 in
// creation order; the number is the cuda.stream attribute of their spans.
func (c *Context) NewStream() (*Stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	h, err := c.drv.StreamCreate(c.h)
	if err != nil {
		return nil, err
	}
	// Ordinals only grow: a closed stream's number is never reused, so
	// cuda.stream names one stream per context.
	s := &Stream{c: c, h: h, id: c.nextStreamID}
	c.nextStreamID++
	c.streams = append(c.streams, s)
	registerStream(s)
	return s, nil
}

var errClosed = errors.New("cudaspans: context is closed")

// Flush synchronizes every stream of the context that has operations
// whose spans are not yet emitted, and emits them.
func (c *Context) Flush(ctx context.Context) error {
	c.mu.Lock()
	streams := append([]*Stream(nil), c.streams...)
	c.mu.Unlock()
	var errs []error
	for _, s := range streams {
		if s.hasPending() {
			errs = append(errs, s.Synchronize(ctx))
		}
	}
	return errors.Join(errs...)
}

// Close synchronizes and destroys the context's streams (emitting their
// pending spans), frees its events and releases the primary context.
// Buffers and modules stay the caller's to free first. A second Close is
// a no-op.
func (c *Context) Close() error {
	err := c.Flush(context.Background())
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	streams := c.streams
	c.streams = nil
	c.mu.Unlock()
	// Lock order is stream, then context (see Stream.Synchronize).
	errs := []error{err}
	for _, s := range streams {
		errs = append(errs, s.destroy())
	}
	c.mu.Lock()
	events := c.freeEvents
	c.freeEvents = nil
	c.mu.Unlock()
	for _, e := range events {
		errs = append(errs, c.drv.EventDestroy(c.h, e))
	}
	errs = append(errs, c.drv.ReleasePrimaryContext(c.dev.Ordinal))
	return errors.Join(errs...)
}

func (c *Context) event() (EventHandle, error) {
	c.mu.Lock()
	if n := len(c.freeEvents); n > 0 {
		e := c.freeEvents[n-1]
		c.freeEvents = c.freeEvents[:n-1]
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	return c.drv.EventCreate(c.h)
}

func (c *Context) putEvents(evs ...EventHandle) {
	c.mu.Lock()
	for _, e := range evs {
		if e != 0 {
			c.freeEvents = append(c.freeEvents, e)
		}
	}
	c.mu.Unlock()
}

// hostSpan runs fn as a span timed on the host clock: allocations, frees
// and registrations are synchronous driver calls, so their host duration is
// their cost.
func (c *Context) hostSpan(ctx context.Context, name string, attrs []attribute.KeyValue, fn func() error) error {
	attrs = append(attrs, semconv.KeyCUDADeviceOrdinal.Int(c.dev.Ordinal), semconv.KeyCUDAClock.String("host"))
	_, span := c.tracer.Start(ctx, name, trace.WithAttributes(attrs...), trace.WithTimestamp(c.cfg.now()))
	err := fn()
	semconv.SetError(span, err)
	span.End(trace.WithTimestamp(c.cfg.now()))
	return err
}

// hostBounds returns the start and, once ended, the end of the span in ctx
// when the SDK exposes them (sdk/trace spans do); zero times otherwise.
func hostBounds(span trace.Span) (start, end time.Time) {
	if ro, ok := span.(interface {
		StartTime() time.Time
		EndTime() time.Time
	}); ok {
		return ro.StartTime(), ro.EndTime()
	}
	return time.Time{}, time.Time{}
}
