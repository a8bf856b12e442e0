package buffer

// Kind is what memory a Buffer holds, the value of its buffer.release
// span's cuzk.buffer.kind attribute.
type Kind string

const (
	// KindMmap is anonymous mmap'd host memory (Mmap): pageable, outside
	// the Go heap, given back with munmap.
	KindMmap Kind = "mmap"
	// KindPinned is page-locked host memory the device reaches by DMA:
	// allocated with cuMemHostAlloc or registered with cuMemHostRegister
	// (cudaspans.PinnedBuffer, cudaspans.Registered).
	KindPinned Kind = "pinned"
	// KindDevice is device memory from cuMemAlloc (cudaspans.DeviceBuffer).
	KindDevice Kind = "device"
)

// Buffer is memory outside the Go heap whose release has a real cost.
// Go heap memory is not a Buffer: the collector frees it, at no cost a
// span could show.
type Buffer interface {
	// Kind says what memory the buffer holds.
	Kind() Kind
	// Size is the length of the buffer in bytes.
	Size() int
	// Free gives the memory back. A Releaser calls it exactly once; a
	// second call must be a no-op.
	Free() error
}
