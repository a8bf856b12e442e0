package buffer

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mmap is anonymous mmap'd host memory (KindMmap), outside the Go heap, so
// that its release (munmap) is a real, measurable cost as in the C++
// provers. Bytes, Size and Free are safe for concurrent use; the memory
// itself is the caller's to synchronize.
type Mmap struct {
	mu      sync.Mutex
	data    []byte
	onUnmap []func(context.Context)
}

// live indexes the mapped Mmaps by the address of their first byte, with
// their length, for MmapHolding.
var live struct {
	mu sync.Mutex
	m  map[uintptr]liveMmap
}

type liveMmap struct {
	m    *Mmap
	size uintptr
}

// MmapHolding returns the mapped Mmap whose memory holds all of p, or nil
// when none does (p empty, on the Go heap, or in memory already unmapped).
// A device backend uses it to find the whole buffer that a vector it is
// given lies in (OnUnmap). Cost: linear in the number of live Mmaps.
func MmapHolding(p []byte) *Mmap {
	if len(p) == 0 {
		return nil
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	hi := lo + uintptr(len(p))
	live.mu.Lock()
	defer live.mu.Unlock()
	for base, l := range live.m {
		if base <= lo && hi <= base+l.size {
			return l.m
		}
	}
	return nil
}

// NewMmap maps size bytes (size > 0) of zeroed anonymous memory. It
// returns an error naming the size when the kernel refuses the mapping.
func NewMmap(size int) (*Mmap, error) {
	if size <= 0 {
		return nil, fmt.Errorf("mmap host buffer: size %d must be positive", size)
	}
	data, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap host buffer of %d bytes: %w", size, err)
	}
	m := &Mmap{data: data}
	live.mu.Lock()
	if live.m == nil {
		live.m = map[uintptr]liveMmap{}
	}
	live.m[uintptr(unsafe.Pointer(unsafe.SliceData(data)))] = liveMmap{m, uintptr(size)}
	live.mu.Unlock()
	return m, nil
}

// OnUnmap adds f to the functions that Free (FreeContext) calls, in the
// order added, with the memory still mapped, just before it unmaps it: a
// device backend that registered the memory with its driver
// (cuMemHostRegister) drops the registration there. It reports false, and
// keeps no f, when the memory is already unmapped (or b is nil). f gets
// FreeContext's context (for its spans); MmapHolding no longer finds b
// and Bytes is nil by then.
func (b *Mmap) OnUnmap(f func(context.Context)) bool {
	if b == nil || f == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.data == nil {
		return false
	}
	b.onUnmap = append(b.onUnmap, f)
	return true
}

// Bytes returns the mapped memory; nil after Free and for a nil *Mmap.
func (b *Mmap) Bytes() []byte {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.data
}

// Kind returns KindMmap.
func (b *Mmap) Kind() Kind { return KindMmap }

// Size returns the mapped length in bytes; 0 after Free and for a nil
// *Mmap.
func (b *Mmap) Size() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.data)
}

// Free unmaps the memory: FreeContext without a context for the OnUnmap
// functions' spans.
func (b *Mmap) Free() error { return b.FreeContext(context.Background()) }

// FreeContext unmaps the memory, after calling the OnUnmap functions with
// ctx. Bytes and Size return nil and 0 from the start of the call. A
// second call, and a call on a nil *Mmap, is a no-op.
func (b *Mmap) FreeContext(ctx context.Context) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	data, hooks := b.data, b.onUnmap
	b.data, b.onUnmap = nil, nil
	b.mu.Unlock()
	if data == nil {
		return nil
	}
	live.mu.Lock()
	delete(live.m, uintptr(unsafe.Pointer(unsafe.SliceData(data))))
	live.mu.Unlock()
	for _, f := range hooks {
		f(ctx)
	}
	err := unix.Munmap(data)
	if err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}
