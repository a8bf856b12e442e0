package cudaspans

import (
	"bytes"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// fakeClock is a host clock that moves only when told, plus a small step
// per read so that successive reads differ, as real ones do.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), step: time.Microsecond}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t = c.t.Add(c.step)
	return t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) advanceTo(t time.Time) {
	c.mu.Lock()
	if t.After(c.t) {
		c.t = t
	}
	c.mu.Unlock()
}

// fakeDriver simulates a device whose clock is the host clock plus skew:
// an operation starts when the host enqueues it or when the stream's
// previous operation ends, whichever is later, and kernels last what
// kernelTime says. Copies run at copyGBps.
type fakeDriver struct {
	mu      sync.Mutex
	clock   *fakeClock
	skew    time.Duration // GPU clock minus host clock
	devices int
	next    uintptr

	events  map[EventHandle]*time.Time // GPU time of the last record
	streams map[StreamHandle]time.Time // GPU time the stream is busy until
	funcs   map[FunctionHandle]string
	modules map[ModuleHandle][]byte
	mem     map[DevicePtr][]byte

	kernelTime map[string]time.Duration
	params     map[string][]ParamInfo // FuncParams per kernel; nil: unknown
	copyGBps   float64
	fail       map[string]error // by method name
	calls      map[string]int
	launches   []fakeLaunch
}

type fakeLaunch struct {
	name        string
	grid, block Dim3
	shared      int
	params      []byte
	offsets     []int
}

func newFakeDriver(clock *fakeClock) *fakeDriver {
	return &fakeDriver{
		clock: clock, devices: 1, next: 0x1000,
		events: map[EventHandle]*time.Time{}, streams: map[StreamHandle]time.Time{},
		funcs: map[FunctionHandle]string{}, modules: map[ModuleHandle][]byte{},
		mem: map[DevicePtr][]byte{}, kernelTime: map[string]time.Duration{},
		params: map[string][]ParamInfo{}, copyGBps: 25, fail: map[string]error{}, calls: map[string]int{},
	}
}

func (d *fakeDriver) enter(name string) error {
	d.calls[name]++
	return d.fail[name]
}

// setSkew moves the GPU clock against the host clock, queued work too.
func (d *fakeDriver) setSkew(skew time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for s, b := range d.streams {
		if !b.IsZero() {
			d.streams[s] = b.Add(skew - d.skew)
		}
	}
	d.skew = skew
}

func (d *fakeDriver) id() uintptr { d.next += 0x10; return d.next }

func (d *fakeDriver) gpuNow() time.Time { return d.clock.now().Add(d.skew) }

// run occupies stream s for dur from max(now, busy) and returns the start.
func (d *fakeDriver) run(s StreamHandle, dur time.Duration) time.Time {
	start := d.gpuNow()
	if b := d.streams[s]; b.After(start) {
		start = b
	}
	d.streams[s] = start.Add(dur)
	return start
}

func (d *fakeDriver) Version() (int, error) { return 13000, nil }
func (d *fakeDriver) DeviceCount() (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.devices, d.enter("DeviceCount")
}
func (d *fakeDriver) Device(o int) (DeviceInfo, error) {
	return DeviceInfo{Ordinal: o, Name: "Fake H200", Major: 9, Minor: 0, Multiprocessors: 132,
		TotalMemory: 141 << 30, DriverVersion: 13000, UUID: "GPU-fake"}, nil
}
func (d *fakeDriver) PrimaryContext(int) (ContextHandle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return ContextHandle(d.id()), d.enter("PrimaryContext")
}
func (d *fakeDriver) ReleasePrimaryContext(int) error { return nil }
func (d *fakeDriver) MemInfo(ContextHandle) (uint64, uint64, error) {
	return 100 << 30, 141 << 30, nil
}
func (d *fakeDriver) Synchronize(ContextHandle) error { return nil }
func (d *fakeDriver) StreamCreate(ContextHandle) (StreamHandle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := StreamHandle(d.id())
	d.streams[s] = time.Time{}
	return s, d.enter("StreamCreate")
}
func (d *fakeDriver) StreamDestroy(ContextHandle, StreamHandle) error { return nil }
func (d *fakeDriver) StreamSynchronize(_ ContextHandle, s StreamHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	// The host waits until the stream's work is done.
	d.clock.advanceTo(d.streams[s].Add(-d.skew))
	return d.enter("StreamSynchronize")
}
func (d *fakeDriver) EventCreate(ContextHandle) (EventHandle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := EventHandle(d.id())
	d.events[e] = nil
	return e, d.enter("EventCreate")
}
func (d *fakeDriver) EventDestroy(_ ContextHandle, e EventHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.events, e)
	return nil
}
func (d *fakeDriver) EventRecord(_ ContextHandle, e EventHandle, s StreamHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter("EventRecord"); err != nil {
		return err
	}
	if _, ok := d.events[e]; !ok {
		return &Error{Call: "cuEventRecord", Code: 400, Name: "CUDA_ERROR_INVALID_HANDLE", Message: "invalid resource handle"}
	}
	t := d.run(s, 0)
	d.events[e] = &t
	return nil
}
func (d *fakeDriver) EventSynchronize(ContextHandle, EventHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.enter("EventSynchronize")
}
func (d *fakeDriver) EventElapsed(_ ContextHandle, a, b EventHandle) (float32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter("EventElapsed"); err != nil {
		return 0, err
	}
	ta, tb := d.events[a], d.events[b]
	if ta == nil || tb == nil {
		return 0, &Error{Call: "cuEventElapsedTime", Code: 600, Name: "CUDA_ERROR_NOT_READY", Message: "device not ready"}
	}
	return float32(tb.Sub(*ta).Seconds() * 1e3), nil
}
func (d *fakeDriver) MemAlloc(_ ContextHandle, n int) (DevicePtr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter("MemAlloc"); err != nil {
		return 0, err
	}
	p := DevicePtr(d.id() << 20)
	d.mem[p] = make([]byte, n)
	d.clock.advance(50 * time.Microsecond)
	return p, nil
}
func (d *fakeDriver) MemFree(_ ContextHandle, p DevicePtr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.mem[p]; !ok {
		return &Error{Call: "cuMemFree", Code: 1, Name: "CUDA_ERROR_INVALID_VALUE", Message: "invalid argument"}
	}
	delete(d.mem, p)
	d.clock.advance(20 * time.Microsecond)
	return d.enter("MemFree")
}
func (d *fakeDriver) HostAlloc(_ ContextHandle, n int) (unsafe.Pointer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter("HostAlloc"); err != nil {
		return nil, err
	}
	b := make([]byte, n)
	d.clock.advance(100 * time.Microsecond)
	return unsafe.Pointer(&b[0]), nil
}
func (d *fakeDriver) HostFree(ContextHandle, unsafe.Pointer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clock.advance(30 * time.Microsecond)
	return d.enter("HostFree")
}
func (d *fakeDriver) HostRegister(ContextHandle, unsafe.Pointer, int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.enter("HostRegister")
}
func (d *fakeDriver) HostUnregister(ContextHandle, unsafe.Pointer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.enter("HostUnregister")
}
func (d *fakeDriver) copyTime(n int) time.Duration {
	return time.Duration(float64(n) / (d.copyGBps * 1e9) * 1e9)
}
func (d *fakeDriver) CopyHtoD(_ ContextHandle, dst DevicePtr, src unsafe.Pointer, n int, s StreamHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter("CopyHtoD"); err != nil {
		return err
	}
	copy(d.mem[dst], unsafe.Slice((*byte)(src), n))
	d.run(s, d.copyTime(n))
	return nil
}
func (d *fakeDriver) CopyDtoH(_ ContextHandle, dst unsafe.Pointer, src DevicePtr, n int, s StreamHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter("CopyDtoH"); err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(dst), n), d.mem[src])
	d.run(s, d.copyTime(n))
	return nil
}
func (d *fakeDriver) CopyDtoD(_ ContextHandle, dst, src DevicePtr, n int, s StreamHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	copy(d.mem[dst], d.mem[src][:n])
	d.run(s, d.copyTime(2*n))
	return d.enter("CopyDtoD")
}
func (d *fakeDriver) MemsetD8(_ ContextHandle, dst DevicePtr, v byte, n int, s StreamHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.mem[dst][:n] {
		d.mem[dst][i] = v
	}
	d.run(s, d.copyTime(n))
	return d.enter("MemsetD8")
}
func (d *fakeDriver) ModuleLoad(_ ContextHandle, image []byte) (ModuleHandle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter("ModuleLoad"); err != nil {
		return 0, err
	}
	if !bytes.HasPrefix(image, []byte("\x7fELF")) {
		return 0, &Error{Call: "cuModuleLoadData", Code: 200, Name: "CUDA_ERROR_INVALID_IMAGE", Message: "device kernel image is invalid"}
	}
	m := ModuleHandle(d.id())
	d.modules[m] = image
	return m, nil
}
func (d *fakeDriver) ModuleUnload(_ ContextHandle, m ModuleHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.modules, m)
	return nil
}
func (d *fakeDriver) ModuleFunction(_ ContextHandle, m ModuleHandle, name string) (FunctionHandle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !bytes.Contains(d.modules[m], []byte(name)) {
		return 0, &Error{Call: "cuModuleGetFunction", Code: 500, Name: "CUDA_ERROR_NOT_FOUND", Message: "named symbol not found"}
	}
	f := FunctionHandle(d.id())
	d.funcs[f] = name
	return f, nil
}
func (d *fakeDriver) FuncAttribute(ContextHandle, FunctionHandle, FuncAttr) (int, error) {
	return 32, nil
}
func (d *fakeDriver) FuncSetAttribute(ContextHandle, FunctionHandle, FuncAttr, int) error {
	return nil
}
func (d *fakeDriver) FuncParams(_ ContextHandle, f FunctionHandle) ([]ParamInfo, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.params[d.funcs[f]]
	return p, ok, nil
}
func (d *fakeDriver) Launch(_ ContextHandle, f FunctionHandle, grid, block Dim3, shared int, s StreamHandle, params []byte, offsets []int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enter("Launch"); err != nil {
		return err
	}
	name, ok := d.funcs[f]
	if !ok {
		return fmt.Errorf("fake: unknown function %#x", f)
	}
	d.launches = append(d.launches, fakeLaunch{name, grid, block, shared, append([]byte(nil), params...), append([]int(nil), offsets...)})
	d.run(s, d.kernelTime[name])
	return nil
}

// fakeCompiler "compiles" by wrapping the source in an ELF-looking image.
type fakeCompiler struct {
	mu    sync.Mutex
	calls int
	last  []string
}

func (f *fakeCompiler) Compile(name, source string, headers map[string]string, opts []string) ([]byte, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.last = opts
	if bytes.Contains([]byte(source), []byte("#error")) {
		return nil, "fake.cu(1): error: #error directive", &CompileError{Call: "nvrtcCompileProgram", Result: "NVRTC_ERROR_COMPILATION", Log: "fake.cu(1): error: #error directive"}
	}
	return append([]byte("\x7fELF"), []byte(source)...), "", nil
}
