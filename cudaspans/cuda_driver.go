package cudaspans

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "cs_driver.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// cuDriver is the Driver of a libcuda loaded with dlopen.
type cuDriver struct {
	d       *C.cs_driver
	path    string
	version int
}

var (
	loadOnce   sync.Once
	loadDrv    Driver
	loadDrvErr error
)

// LoadDriver loads libcuda.so.1 once per process and initializes it. When
// the library is missing, older than CUDA 12, or cuInit fails, the error
// wraps ErrNoDevice with the reason.
func LoadDriver() (Driver, error) {
	loadOnce.Do(func() {
		path := "libcuda.so.1"
		loadDrv, loadDrvErr = OpenDriver(path)
	})
	return loadDrv, loadDrvErr
}

// OpenDriver loads the CUDA driver library at path (for example
// "libcuda.so.1" or an absolute path) and initializes it; LoadDriver
// calls it once with "libcuda.so.1". Entry points are looked up with
// cuGetProcAddress for the CUDA 12.0 signatures, which drivers for CUDA 12
// and 13 both provide. Errors wrap ErrNoDevice.
func OpenDriver(path string) (Driver, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var buf [512]C.char
	d := C.cs_load(cpath, &buf[0], C.size_t(len(buf)))
	if d == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoDevice, C.GoString(&buf[0]))
	}
	drv := &cuDriver{d: d, path: path}
	if err := drv.check("cuInit", C.cs_init(d)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDevice, err)
	}
	v, err := drv.Version()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDevice, err)
	}
	if v < 12000 {
		return nil, fmt.Errorf("%w: driver supports CUDA %d.%d, cudaspans needs 12.0 or later", ErrNoDevice, v/1000, v%1000/10)
	}
	drv.version = v
	return drv, nil
}

// check turns a CUresult into nil or an *Error naming the call.
// handle runs a driver call that writes one handle, checked as check does,
// and gives the handle as its Go type.
func handle[H ~uintptr](d *cuDriver, call string, f func(h *C.uintptr_t) C.CUresult) (H, error) {
	var h C.uintptr_t
	if err := d.check(call, f(&h)); err != nil {
		return 0, err
	}
	return H(h), nil
}

func (d *cuDriver) check(call string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	if r&C.CS_SETCURRENT_FAILED != 0 {
		r &^= C.CS_SETCURRENT_FAILED
		call = "cuCtxSetCurrent (before " + call + ")"
	}
	var name, msg *C.char
	C.cs_error_text(d.d, r, &name, &msg)
	e := &Error{Call: call, Code: int(r), Name: "CUDA_ERROR_UNKNOWN_CODE", Message: "unrecognized error code"}
	if name != nil {
		e.Name = C.GoString(name)
	}
	if msg != nil {
		e.Message = C.GoString(msg)
	}
	return e
}

func (d *cuDriver) Version() (int, error) {
	var v C.int
	if err := d.check("cuDriverGetVersion", C.cs_driver_version(d.d, &v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

func (d *cuDriver) DeviceCount() (int, error) {
	var n C.int
	if err := d.check("cuDeviceGetCount", C.cs_device_count(d.d, &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// CUdevice_attribute values of cuda.h.
var deviceAttrs = []C.int{
	16, // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	75, // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	76, // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	97, // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
	38, // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
	1,  // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
}

func (d *cuDriver) Device(ordinal int) (DeviceInfo, error) {
	var name [256]C.char
	var total C.size_t
	attrs := make([]C.int, len(deviceAttrs))
	var uuid [16]C.uchar
	r := C.cs_device_info(d.d, C.int(ordinal), &name[0], C.int(len(name)), &total, &attrs[0],
		C.int(len(attrs)), &deviceAttrs[0], &uuid[0])
	if err := d.check("cuDeviceGet*", r); err != nil {
		return DeviceInfo{}, err
	}
	u := C.GoBytes(unsafe.Pointer(&uuid[0]), 16)
	return DeviceInfo{
		Ordinal:            ordinal,
		Name:               C.GoString(&name[0]),
		UUID:               fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]),
		TotalMemory:        uint64(total),
		Multiprocessors:    int(attrs[0]),
		Major:              int(attrs[1]),
		Minor:              int(attrs[2]),
		SharedMemOptin:     int(attrs[3]),
		L2CacheBytes:       int(attrs[4]),
		MaxThreadsPerBlock: int(attrs[5]),
		DriverVersion:      d.version,
	}, nil
}

func (d *cuDriver) PrimaryContext(ordinal int) (ContextHandle, error) {
	return handle[ContextHandle](d, "cuDevicePrimaryCtxRetain", func(h *C.uintptr_t) C.CUresult { return C.cs_primary_retain(d.d, C.int(ordinal), h) })
}

func (d *cuDriver) ReleasePrimaryContext(ordinal int) error {
	return d.check("cuDevicePrimaryCtxRelease", C.cs_primary_release(d.d, C.int(ordinal)))
}

func cx(c ContextHandle) C.uintptr_t { return C.uintptr_t(c) }

func (d *cuDriver) MemInfo(c ContextHandle) (uint64, uint64, error) {
	var free, total C.size_t
	if err := d.check("cuMemGetInfo", C.cs_mem_info(d.d, cx(c), &free, &total)); err != nil {
		return 0, 0, err
	}
	return uint64(free), uint64(total), nil
}

func (d *cuDriver) Synchronize(c ContextHandle) error {
	return d.check("cuCtxSynchronize", C.cs_ctx_sync(d.d, cx(c)))
}

func (d *cuDriver) StreamCreate(c ContextHandle) (StreamHandle, error) {
	return handle[StreamHandle](d, "cuStreamCreate", func(h *C.uintptr_t) C.CUresult { return C.cs_stream_create(d.d, cx(c), h) })
}

func (d *cuDriver) StreamDestroy(c ContextHandle, s StreamHandle) error {
	return d.check("cuStreamDestroy", C.cs_stream_destroy(d.d, cx(c), C.uintptr_t(s)))
}

func (d *cuDriver) StreamSynchronize(c ContextHandle, s StreamHandle) error {
	return d.check("cuStreamSynchronize", C.cs_stream_sync(d.d, cx(c), C.uintptr_t(s)))
}

func (d *cuDriver) EventCreate(c ContextHandle) (EventHandle, error) {
	return handle[EventHandle](d, "cuEventCreate", func(h *C.uintptr_t) C.CUresult { return C.cs_event_create(d.d, cx(c), h) })
}

func (d *cuDriver) EventDestroy(c ContextHandle, e EventHandle) error {
	return d.check("cuEventDestroy", C.cs_event_destroy(d.d, cx(c), C.uintptr_t(e)))
}

func (d *cuDriver) EventRecord(c ContextHandle, e EventHandle, s StreamHandle) error {
	return d.check("cuEventRecord", C.cs_event_record(d.d, cx(c), C.uintptr_t(e), C.uintptr_t(s)))
}

func (d *cuDriver) EventSynchronize(c ContextHandle, e EventHandle) error {
	return d.check("cuEventSynchronize", C.cs_event_sync(d.d, cx(c), C.uintptr_t(e)))
}

func (d *cuDriver) EventElapsed(c ContextHandle, a, b EventHandle) (float32, error) {
	var ms C.float
	if err := d.check("cuEventElapsedTime", C.cs_event_elapsed(d.d, cx(c), C.uintptr_t(a), C.uintptr_t(b), &ms)); err != nil {
		return 0, err
	}
	return float32(ms), nil
}

func (d *cuDriver) MemAlloc(c ContextHandle, bytes int) (DevicePtr, error) {
	var p C.CUdeviceptr
	if err := d.check("cuMemAlloc", C.cs_mem_alloc(d.d, cx(c), C.size_t(bytes), &p)); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

func (d *cuDriver) MemFree(c ContextHandle, p DevicePtr) error {
	return d.check("cuMemFree", C.cs_mem_free(d.d, cx(c), C.CUdeviceptr(p)))
}

func (d *cuDriver) HostAlloc(c ContextHandle, bytes int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	if err := d.check("cuMemHostAlloc", C.cs_host_alloc(d.d, cx(c), C.size_t(bytes), &p)); err != nil {
		return nil, err
	}
	return p, nil
}

func (d *cuDriver) HostFree(c ContextHandle, p unsafe.Pointer) error {
	return d.check("cuMemFreeHost", C.cs_host_free(d.d, cx(c), p))
}

func (d *cuDriver) HostRegister(c ContextHandle, p unsafe.Pointer, bytes int) error {
	return d.check("cuMemHostRegister", C.cs_host_register(d.d, cx(c), p, C.size_t(bytes)))
}

func (d *cuDriver) HostUnregister(c ContextHandle, p unsafe.Pointer) error {
	return d.check("cuMemHostUnregister", C.cs_host_unregister(d.d, cx(c), p))
}

func (d *cuDriver) CopyHtoD(c ContextHandle, dst DevicePtr, src unsafe.Pointer, bytes int, s StreamHandle) error {
	return d.check("cuMemcpyHtoDAsync", C.cs_htod(d.d, cx(c), C.CUdeviceptr(dst), src, C.size_t(bytes), C.uintptr_t(s)))
}

func (d *cuDriver) CopyDtoH(c ContextHandle, dst unsafe.Pointer, src DevicePtr, bytes int, s StreamHandle) error {
	return d.check("cuMemcpyDtoHAsync", C.cs_dtoh(d.d, cx(c), dst, C.CUdeviceptr(src), C.size_t(bytes), C.uintptr_t(s)))
}

func (d *cuDriver) CopyDtoD(c ContextHandle, dst, src DevicePtr, bytes int, s StreamHandle) error {
	return d.check("cuMemcpyDtoDAsync", C.cs_dtod(d.d, cx(c), C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(bytes), C.uintptr_t(s)))
}

func (d *cuDriver) MemsetD8(c ContextHandle, dst DevicePtr, v byte, bytes int, s StreamHandle) error {
	return d.check("cuMemsetD8Async", C.cs_memset8(d.d, cx(c), C.CUdeviceptr(dst), C.uchar(v), C.size_t(bytes), C.uintptr_t(s)))
}

func (d *cuDriver) ModuleLoad(c ContextHandle, image []byte) (ModuleHandle, error) {
	// The driver parses the image during the call; a C copy keeps Go
	// memory out of the driver's hands.
	cimg := C.CBytes(image)
	defer C.free(cimg)
	return handle[ModuleHandle](d, "cuModuleLoadData", func(h *C.uintptr_t) C.CUresult { return C.cs_module_load(d.d, cx(c), cimg, h) })
}

func (d *cuDriver) ModuleUnload(c ContextHandle, m ModuleHandle) error {
	return d.check("cuModuleUnload", C.cs_module_unload(d.d, cx(c), C.uintptr_t(m)))
}

func (d *cuDriver) ModuleFunction(c ContextHandle, m ModuleHandle, name string) (FunctionHandle, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return handle[FunctionHandle](d, "cuModuleGetFunction", func(h *C.uintptr_t) C.CUresult { return C.cs_module_function(d.d, cx(c), C.uintptr_t(m), cname, h) })
}

func (d *cuDriver) FuncAttribute(c ContextHandle, f FunctionHandle, a FuncAttr) (int, error) {
	var v C.int
	if err := d.check("cuFuncGetAttribute", C.cs_func_attr(d.d, cx(c), C.uintptr_t(f), C.int(a), &v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

func (d *cuDriver) FuncSetAttribute(c ContextHandle, f FunctionHandle, a FuncAttr, v int) error {
	return d.check("cuFuncSetAttribute", C.cs_func_set_attr(d.d, cx(c), C.uintptr_t(f), C.int(a), C.int(v)))
}

func (d *cuDriver) FuncParams(c ContextHandle, f FunctionHandle) ([]ParamInfo, bool, error) {
	const max = 512
	offs := make([]C.size_t, max)
	sizes := make([]C.size_t, max)
	var n C.int
	if err := d.check("cuFuncGetParamInfo", C.cs_func_params(d.d, cx(c), C.uintptr_t(f), &offs[0], &sizes[0], max, &n)); err != nil {
		return nil, false, err
	}
	if n < 0 {
		return nil, false, nil
	}
	out := make([]ParamInfo, n)
	for i := range out {
		out[i] = ParamInfo{Offset: int(offs[i]), Size: int(sizes[i])}
	}
	return out, true, nil
}

// launchArgs are Launch's arguments as cs_launch takes them: the grid and
// block shapes, the parameter offsets (one spare entry, so the array is
// never empty) and the parameter bytes (nil when there are none).
func launchArgs(grid, block Dim3, params []byte, offsets []int) ([6]C.uint, []C.size_t, *C.uchar) {
	dims := [6]C.uint{C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z), C.uint(block.X), C.uint(block.Y), C.uint(block.Z)}
	coffs := make([]C.size_t, len(offsets)+1)
	for i, o := range offsets {
		coffs[i] = C.size_t(o)
	}
	var p *C.uchar
	if len(params) > 0 {
		p = (*C.uchar)(unsafe.Pointer(&params[0]))
	}
	return dims, coffs, p
}

func (d *cuDriver) Launch(c ContextHandle, f FunctionHandle, grid, block Dim3, shared int, s StreamHandle, params []byte, offsets []int) error {
	dims, coffs, p := launchArgs(grid, block, params, offsets)
	return d.check("cuLaunchKernel", C.cs_launch(d.d, cx(c), C.uintptr_t(f), &dims[0], C.uint(shared), C.uintptr_t(s), p, &coffs[0], C.int(len(offsets))))
}

// LaunchTimed records start, launches and records end in one cgo call;
// launch is the id the launch hook gets.
func (d *cuDriver) LaunchTimed(c ContextHandle, f FunctionHandle, grid, block Dim3, shared int, s StreamHandle, params []byte, offsets []int, start, end EventHandle, launch uint64) error {
	dims, coffs, p := launchArgs(grid, block, params, offsets)
	var failed C.int
	r := C.cs_launch_timed(d.d, cx(c), C.uintptr_t(f), &dims[0], C.uint(shared), C.uintptr_t(s), p, &coffs[0],
		C.int(len(offsets)), C.uintptr_t(start), C.uintptr_t(end), C.uint64_t(launch), &failed)
	return d.check([...]string{"cuEventRecord", "cuLaunchKernel", "cuEventRecord"}[failed], r)
}
