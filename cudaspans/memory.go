package cudaspans

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// DeviceBuffer is device memory from cuMemAlloc. It implements
// buffer.Buffer (buffer.KindDevice), so a buffer.Releaser can free it
// with a buffer.release span.
type DeviceBuffer struct{ allocation[DevicePtr] }

// allocation is one allocation of size bytes at address at (a DevicePtr
// or a host pointer; the zero value once freed), the part that
// DeviceBuffer, PinnedBuffer and Registered share.
type allocation[A comparable] struct {
	c    *Context
	mu   sync.Mutex
	at   A
	size int
}

// addr returns the address; the zero A after free.
func (a *allocation[A]) addr() A {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at
}

// free gives the memory back with release, once: a second call is a
// no-op.
func (a *allocation[A]) free(release func(A) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var freed A
	if a.at == freed {
		return nil
	}
	err := release(a.at)
	a.at = freed
	return err
}

// hostBytes is the host memory at p as a slice of size bytes; nil for a
// nil p.
func hostBytes(p unsafe.Pointer, size int) []byte {
	if p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(p), size)
}

// Alloc allocates bytes (> 0) of device memory as a cuda.malloc span
// (cuzk.buffer.kind device, cuda.bytes). Running out of device memory is
// an error matching ErrOutOfMemory.
func (c *Context) Alloc(ctx context.Context, bytes int) (*DeviceBuffer, error) {
	b := &DeviceBuffer{allocation[DevicePtr]{c: c, size: bytes}}
	if err := b.allocate(ctx, buffer.KindDevice, func() (DevicePtr, error) { return c.drv.MemAlloc(c.h, bytes) }); err != nil {
		return nil, err
	}
	return b, nil
}

// allocate sets a's address to what alloc allocates (a.size bytes of
// kind), as a cuda.malloc span (cuzk.buffer.kind, cuda.bytes); the size
// must be positive. Its errors name the kind and size and wrap alloc's.
func (a *allocation[A]) allocate(ctx context.Context, kind buffer.Kind, alloc func() (A, error)) error {
	if a.size <= 0 {
		return fmt.Errorf("cudaspans: %s allocation of %d bytes", kind, a.size)
	}
	if err := a.c.hostSpan(ctx, semconv.SpanCUDAMalloc, memAttrs(kind, a.size), func() (err error) {
		a.at, err = alloc()
		return err
	}); err != nil {
		return fmt.Errorf("cudaspans: allocate %d %s bytes: %w", a.size, kind, err)
	}
	return nil
}

func memAttrs(kind buffer.Kind, bytes int) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.KeyBufferKind.String(string(kind)), semconv.KeyCUDABytes.Int(bytes)}
}

// Ptr returns the device address; 0 after Free.
func (b *DeviceBuffer) Ptr() DevicePtr { return b.addr() }

// Kind returns buffer.KindDevice.
func (b *DeviceBuffer) Kind() buffer.Kind { return buffer.KindDevice }

// Size returns the allocation's length in bytes.
func (b *DeviceBuffer) Size() int { return b.size }

// Free gives the memory back with cuMemFree, without a span of its own
// (the buffer.Releaser's buffer.release span covers it; Context.Free adds a
// cuda.free span). A second Free is a no-op.
func (b *DeviceBuffer) Free() error {
	return b.free(func(p DevicePtr) error { return b.c.drv.MemFree(b.c.h, p) })
}

// PinnedBuffer is page-locked host memory from cuMemHostAlloc (portable
// to all contexts), which the device reads and writes by DMA, so copies
// from and to it are asynchronous. It implements buffer.Buffer
// (buffer.KindPinned).
type PinnedBuffer struct{ allocation[unsafe.Pointer] }

// AllocPinned allocates bytes (> 0) of pinned host memory as a
// cuda.malloc span (cuzk.buffer.kind pinned).
func (c *Context) AllocPinned(ctx context.Context, bytes int) (*PinnedBuffer, error) {
	b := &PinnedBuffer{allocation[unsafe.Pointer]{c: c, size: bytes}}
	if err := b.allocate(ctx, buffer.KindPinned, func() (unsafe.Pointer, error) { return c.drv.HostAlloc(c.h, bytes) }); err != nil {
		return nil, err
	}
	return b, nil
}

// Bytes returns the memory as a slice; nil after Free.
func (b *PinnedBuffer) Bytes() []byte { return hostBytes(b.addr(), b.size) }

// Ptr returns the host address, for CopyHtoD and CopyDtoH.
func (b *PinnedBuffer) Ptr() unsafe.Pointer { return b.addr() }

// Kind returns buffer.KindPinned.
func (b *PinnedBuffer) Kind() buffer.Kind { return buffer.KindPinned }

// Size returns the allocation's length in bytes.
func (b *PinnedBuffer) Size() int { return b.size }

// Free gives the memory back with cuMemFreeHost. A second Free is a no-op.
func (b *PinnedBuffer) Free() error {
	return b.free(func(p unsafe.Pointer) error { return b.c.drv.HostFree(b.c.h, p) })
}

// Registered is caller-owned host memory pinned with cuMemHostRegister,
// for example a buffer.Mmap that the device should reach by DMA. It
// implements buffer.Buffer (buffer.KindPinned); its Free unpins the memory and
// leaves it to its owner.
type Registered struct{ allocation[unsafe.Pointer] }

// Register pins mem (len > 0) as a cuda.host_register span. mem must stay
// allocated until Free; Go heap memory must not be registered (the
// collector may reuse it), so pass mmap'd or C memory.
func (c *Context) Register(ctx context.Context, mem []byte) (*Registered, error) {
	if len(mem) == 0 {
		return nil, fmt.Errorf("cudaspans: register of an empty buffer")
	}
	err := c.hostSpan(ctx, semconv.SpanCUDAHostRegister, memAttrs(buffer.KindPinned, len(mem)), func() error {
		return c.drv.HostRegister(c.h, unsafe.Pointer(&mem[0]), len(mem))
	})
	if err != nil {
		return nil, fmt.Errorf("cudaspans: register %d host bytes: %w", len(mem), err)
	}
	return &Registered{allocation[unsafe.Pointer]{c: c, at: unsafe.Pointer(&mem[0]), size: len(mem)}}, nil
}

// Bytes returns the registered memory; nil after Free.
func (r *Registered) Bytes() []byte { return hostBytes(r.addr(), r.size) }

// Kind returns buffer.KindPinned.
func (r *Registered) Kind() buffer.Kind { return buffer.KindPinned }

// Size returns the registered length in bytes; 0 after Free.
func (r *Registered) Size() int {
	if r.addr() == nil {
		return 0
	}
	return r.size
}

// Free unpins the memory with cuMemHostUnregister. A second Free is a
// no-op.
func (r *Registered) Free() error {
	return r.free(func(p unsafe.Pointer) error { return r.c.drv.HostUnregister(r.c.h, p) })
}

// Free frees b (a DeviceBuffer, PinnedBuffer, Registered or any
// buffer.Buffer) as a span: cuda.free, or cuda.host_unregister for
// Registered, with cuzk.buffer.kind and cuda.bytes. Use a
// buffer.Releaser instead to choose sync, async or pool release with
// buffer.release spans.
func (c *Context) Free(ctx context.Context, b buffer.Buffer) error {
	if b == nil {
		return nil
	}
	name := semconv.SpanCUDAFree
	if _, ok := b.(*Registered); ok {
		name = semconv.SpanCUDAHostUnregister
	}
	return c.hostSpan(ctx, name, memAttrs(b.Kind(), b.Size()), b.Free)
}
