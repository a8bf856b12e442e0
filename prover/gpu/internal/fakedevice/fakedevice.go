// Package fakedevice is a CUDA device for tests without a GPU, behind
// cudaspans.Driver: a fixed amount of memory held as Go byte slices,
// streams, events, allocation, copies both ways (anywhere inside an
// allocation), modules and launches. Kernels do nothing, so device memory
// stays as copied (an MSM's window sums read back as zeros, the point at
// infinity). Calls it does not implement panic (nil embedded interface),
// so a test that reaches them fails loudly. For the tests of prover/gpu
// and its packages.
package fakedevice

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// Driver is the fake device. Safe for concurrent use.
type Driver struct {
	cudaspans.Driver
	// OnCopy, when set, is called (without the lock) before each
	// host-to-device copy.
	OnCopy func()

	mu       sync.Mutex
	capacity int
	used     int
	next     uint64
	mem      map[cudaspans.DevicePtr][]byte
	copies   int
	handleID uintptr
	funcs    map[cudaspans.FunctionHandle]string
	launches []string
	htod     [][]byte
	fault    error // returned by every Launch and StreamSynchronize once set
	pinned   map[unsafe.Pointer][]byte
	// registered is the host memory registered (HostRegister) and not
	// unregistered, by start address: its length.
	registered map[unsafe.Pointer]int
	regEvents  []string
	// RefuseRegister, when set, is HostRegister's error.
	RefuseRegister error
}

// Fault makes every later Launch and StreamSynchronize fail with err, as a
// device does after a sticky error (an illegal address, an Xid).
func (d *Driver) Fault(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fault = err
}

// New returns a device with room for capacity bytes.
func New(capacity int) *Driver {
	return &Driver{capacity: capacity, next: 1 << 20, mem: map[cudaspans.DevicePtr][]byte{},
		funcs: map[cudaspans.FunctionHandle]string{}}
}

func (d *Driver) handle() uintptr {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.handleID += 16
	return d.handleID
}

func (d *Driver) Version() (int, error)     { return 13000, nil }
func (d *Driver) DeviceCount() (int, error) { return 1, nil }
func (d *Driver) Device(o int) (cudaspans.DeviceInfo, error) {
	return cudaspans.DeviceInfo{Ordinal: o, Name: "fake", TotalMemory: uint64(d.capacity), Major: 9, DriverVersion: 13000}, nil
}
func (d *Driver) PrimaryContext(int) (cudaspans.ContextHandle, error) {
	return cudaspans.ContextHandle(d.handle()), nil
}
func (d *Driver) ReleasePrimaryContext(int) error { return nil }
func (d *Driver) MemInfo(cudaspans.ContextHandle) (uint64, uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return uint64(d.capacity - d.used), uint64(d.capacity), nil
}
func (d *Driver) Synchronize(cudaspans.ContextHandle) error { return nil }
func (d *Driver) StreamCreate(cudaspans.ContextHandle) (cudaspans.StreamHandle, error) {
	return cudaspans.StreamHandle(d.handle()), nil
}
func (d *Driver) StreamDestroy(cudaspans.ContextHandle, cudaspans.StreamHandle) error { return nil }
func (d *Driver) StreamSynchronize(cudaspans.ContextHandle, cudaspans.StreamHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fault
}
func (d *Driver) EventCreate(cudaspans.ContextHandle) (cudaspans.EventHandle, error) {
	return cudaspans.EventHandle(d.handle()), nil
}
func (d *Driver) EventDestroy(cudaspans.ContextHandle, cudaspans.EventHandle) error { return nil }
func (d *Driver) EventRecord(cudaspans.ContextHandle, cudaspans.EventHandle, cudaspans.StreamHandle) error {
	return nil
}
func (d *Driver) EventSynchronize(cudaspans.ContextHandle, cudaspans.EventHandle) error { return nil }
func (d *Driver) EventElapsed(_ cudaspans.ContextHandle, a, b cudaspans.EventHandle) (float32, error) {
	return 0.001, nil
}

func (d *Driver) MemAlloc(_ cudaspans.ContextHandle, n int) (cudaspans.DevicePtr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.used+n > d.capacity {
		return 0, &cudaspans.Error{Call: "cuMemAlloc", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Message: "out of memory"}
	}
	p := cudaspans.DevicePtr(d.next)
	d.next += uint64(n+255) &^ 255
	d.mem[p] = make([]byte, n)
	d.used += n
	return p, nil
}

func (d *Driver) MemFree(_ cudaspans.ContextHandle, p cudaspans.DevicePtr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.mem[p]
	if !ok {
		return fmt.Errorf("fake: free of unknown pointer %#x", p)
	}
	d.used -= len(b)
	delete(d.mem, p)
	return nil
}

// at returns the device bytes [p, p+n) inside one allocation. d.mu is held.
func (d *Driver) at(p cudaspans.DevicePtr, n int) ([]byte, error) {
	for base, b := range d.mem {
		if p >= base && int(p-base)+n <= len(b) {
			return b[p-base : int(p-base)+n], nil
		}
	}
	return nil, fmt.Errorf("fake: copy of %d bytes to %#x outside any allocation", n, p)
}

func (d *Driver) CopyHtoD(_ cudaspans.ContextHandle, dst cudaspans.DevicePtr, src unsafe.Pointer, n int, _ cudaspans.StreamHandle) error {
	if d.OnCopy != nil {
		d.OnCopy()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.at(dst, n)
	if err != nil {
		return err
	}
	copy(b, unsafe.Slice((*byte)(src), n))
	d.copies++
	d.htod = append(d.htod, append([]byte(nil), b...))
	return nil
}

func (d *Driver) CopyDtoH(_ cudaspans.ContextHandle, dst unsafe.Pointer, src cudaspans.DevicePtr, n int, _ cudaspans.StreamHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.at(src, n)
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(dst), n), b)
	return nil
}

// CopyDtoD copies n bytes between two allocations (both must hold their
// ranges).
func (d *Driver) CopyDtoD(_ cudaspans.ContextHandle, dst, src cudaspans.DevicePtr, n int, _ cudaspans.StreamHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	from, err := d.at(src, n)
	if err != nil {
		return err
	}
	to, err := d.at(dst, n)
	if err != nil {
		return err
	}
	copy(to, from)
	return nil
}

func (d *Driver) ModuleLoad(cudaspans.ContextHandle, []byte) (cudaspans.ModuleHandle, error) {
	return cudaspans.ModuleHandle(d.handle()), nil
}
func (d *Driver) ModuleUnload(cudaspans.ContextHandle, cudaspans.ModuleHandle) error { return nil }
func (d *Driver) ModuleFunction(_ cudaspans.ContextHandle, _ cudaspans.ModuleHandle, name string) (cudaspans.FunctionHandle, error) {
	h := cudaspans.FunctionHandle(d.handle())
	d.mu.Lock()
	d.funcs[h] = name
	d.mu.Unlock()
	return h, nil
}
func (d *Driver) FuncParams(cudaspans.ContextHandle, cudaspans.FunctionHandle) ([]cudaspans.ParamInfo, bool, error) {
	return nil, false, nil
}
func (d *Driver) Launch(_ cudaspans.ContextHandle, f cudaspans.FunctionHandle, _, _ cudaspans.Dim3, _ int, _ cudaspans.StreamHandle, _ []byte, _ []int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fault != nil {
		return d.fault
	}
	d.launches = append(d.launches, d.funcs[f])
	return nil
}

// HostAlloc returns "pinned" host memory: Go memory the driver holds
// until HostFree (nothing is page-locked; copies from it are synchronous,
// as every copy of the fake is).
func (d *Driver) HostAlloc(_ cudaspans.ContextHandle, n int) (unsafe.Pointer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pinned == nil {
		d.pinned = map[unsafe.Pointer][]byte{}
	}
	b := make([]byte, n)
	p := unsafe.Pointer(&b[0])
	d.pinned[p] = b
	return p, nil
}

// HostFree frees memory from HostAlloc; other pointers are an error.
func (d *Driver) HostFree(_ cudaspans.ContextHandle, p unsafe.Pointer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.pinned[p]; !ok {
		return fmt.Errorf("fakedevice: HostFree of %p, not from HostAlloc", p)
	}
	delete(d.pinned, p)
	return nil
}

// HostRegister records p as registered (nothing is page-locked), or
// returns RefuseRegister when set. A range that overlaps one registered
// already is refused, as cuMemHostRegister refuses it
// (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED).
func (d *Driver) HostRegister(_ cudaspans.ContextHandle, p unsafe.Pointer, n int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.RefuseRegister != nil {
		return d.RefuseRegister
	}
	lo, hi := uintptr(p), uintptr(p)+uintptr(n)
	for q, m := range d.registered {
		if uintptr(q) < hi && lo < uintptr(q)+uintptr(m) {
			return fmt.Errorf("fakedevice: HostRegister of %p+%d overlaps %p+%d", p, n, q, m)
		}
	}
	if d.registered == nil {
		d.registered = map[unsafe.Pointer]int{}
	}
	d.registered[p] = n
	d.regEvents = append(d.regEvents, fmt.Sprintf("register %p %d", p, n))
	return nil
}

// HostUnregister ends a HostRegister; other pointers are an error.
func (d *Driver) HostUnregister(_ cudaspans.ContextHandle, p unsafe.Pointer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, ok := d.registered[p]
	if !ok {
		return fmt.Errorf("fakedevice: HostUnregister of %p, not registered", p)
	}
	delete(d.registered, p)
	d.regEvents = append(d.regEvents, fmt.Sprintf("unregister %p %d", p, n))
	return nil
}

// Registered returns the host memory registered and not unregistered:
// its start addresses and their lengths.
func (d *Driver) Registered() map[unsafe.Pointer]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[unsafe.Pointer]int, len(d.registered))
	for p, n := range d.registered {
		out[p] = n
	}
	return out
}

// RegisterEvents returns the registrations and unregistrations so far, in
// order, as "register ADDR BYTES" and "unregister ADDR BYTES".
func (d *Driver) RegisterEvents() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.regEvents...)
}

// Pinned returns the bytes of pinned host memory allocated and not freed.
func (d *Driver) Pinned() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, b := range d.pinned {
		n += len(b)
	}
	return n
}

// Stats returns the bytes allocated, the live allocations and the
// host-to-device copies so far.
func (d *Driver) Stats() (used, allocations, copies int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.used, len(d.mem), d.copies
}

// Launches returns the names of the kernels launched, in order.
func (d *Driver) Launches() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.launches...)
}

// HtoD returns the bytes of every host-to-device copy, in order.
func (d *Driver) HtoD() [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]byte(nil), d.htod...)
}

// Memory returns a copy of the allocation that starts at p (nil if none).
func (d *Driver) Memory(p cudaspans.DevicePtr) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]byte(nil), d.mem[p]...)
}
