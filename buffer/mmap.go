package buffer

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Mmap is anonymous mmap'd host memory (KindMmap), outside the Go heap, so
// that its release (munmap) is a real, measurable cost as in the C++
// provers. Bytes, Size and Free are safe for concurrent use; the memory
// itself is the caller's to synchronize.
type Mmap struct {
	mu   sync.Mutex
	data []byte
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
	return &Mmap{data: data}, nil
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

// Free unmaps the memory. A second Free, and Free of a nil *Mmap, is a
// no-op.
func (b *Mmap) Free() error {
	if b == nil {
		return nil
	}
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
