package cudaspans

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// HostBuffer is anonymous mmap'd host memory, outside the Go heap, so that
// its release (munmap) is a real, measurable cost as in the C++ provers.
type HostBuffer struct {
	mu   sync.Mutex
	data []byte
}

// NewHostBuffer maps size bytes (size > 0) of zeroed anonymous memory.
// It returns an error naming the size when the kernel refuses the mapping.
func NewHostBuffer(size int) (*HostBuffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("mmap host buffer: size %d must be positive", size)
	}
	data, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap host buffer of %d bytes: %w", size, err)
	}
	return &HostBuffer{data: data}, nil
}

// Bytes returns the mapped memory; it is invalid after Free.
func (b *HostBuffer) Bytes() []byte { return b.data }

// Kind returns "mmap".
func (b *HostBuffer) Kind() string { return "mmap" }

// Size returns the mapped length in bytes.
func (b *HostBuffer) Size() int { return len(b.data) }

// Free unmaps the memory. A second Free is a no-op.
func (b *HostBuffer) Free() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.data == nil {
		return nil
	}
	err := unix.Munmap(b.data)
	b.data = nil
	if err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}
