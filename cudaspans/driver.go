package cudaspans

import (
	"fmt"
	"unsafe"
)

// DevicePtr is a device memory address (CUdeviceptr). Pass it to Launch as
// a kernel pointer parameter (8 bytes).
type DevicePtr uint64

// Add returns the address bytes past p, for sub-ranges of a buffer.
func (p DevicePtr) Add(bytes int) DevicePtr { return p + DevicePtr(bytes) }

// Dim3 is a grid (blocks) or block (threads) shape. A zero Y or Z counts
// as 1.
type Dim3 struct{ X, Y, Z uint32 }

// D1 is the one-dimensional shape (x, 1, 1).
func D1(x int) Dim3 { return Dim3{X: uint32(x), Y: 1, Z: 1} }

func (d Dim3) norm() Dim3 {
	if d.Y == 0 {
		d.Y = 1
	}
	if d.Z == 0 {
		d.Z = 1
	}
	return d
}

// String formats the shape as "x,y,z", the form of cuda.grid and cuda.block.
func (d Dim3) String() string {
	d = d.norm()
	return fmt.Sprintf("%d,%d,%d", d.X, d.Y, d.Z)
}

// Opaque driver handles. They hold C pointers owned by the driver, never Go
// memory.
type (
	// ContextHandle is a CUcontext.
	ContextHandle uintptr
	// StreamHandle is a CUstream; 0 is the legacy default stream.
	StreamHandle uintptr
	// EventHandle is a CUevent.
	EventHandle uintptr
	// ModuleHandle is a CUmodule.
	ModuleHandle uintptr
	// FunctionHandle is a CUfunction.
	FunctionHandle uintptr
)

// DeviceInfo describes one CUDA device, as the driver reports it.
type DeviceInfo struct {
	Ordinal            int    // device ordinal, 0-based
	Name               string // e.g. "NVIDIA H200"
	UUID               string // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it
	TotalMemory        uint64 // bytes of device memory
	Major, Minor       int    // compute capability, e.g. 9, 0
	Multiprocessors    int    // streaming multiprocessor count
	SharedMemOptin     int    // bytes of shared memory a block may opt in to
	L2CacheBytes       int    // bytes of L2 cache
	DriverVersion      int    // CUDA version of the driver, 1000*major + 10*minor (13000 = 13.0)
	MaxThreadsPerBlock int    // threads per block limit
}

// Arch is the NVRTC/PTX architecture name of the device, e.g. "sm_90".
func (d DeviceInfo) Arch() string { return fmt.Sprintf("sm_%d%d", d.Major, d.Minor) }

// Driver is the Go side of the CUDA driver calls cudaspans uses. The real
// implementation loads libcuda.so.1 at run time (LoadDriver); tests use a
// fake behind the same interface. Every call that acts on a context takes
// it explicitly and makes it current on the calling OS thread first, so
// callers need no runtime.LockOSThread. Methods return *Error for driver
// failures and are safe for concurrent use.
type Driver interface {
	// Version is cuDriverGetVersion: 1000*major + 10*minor.
	Version() (int, error)
	// DeviceCount is cuDeviceGetCount.
	DeviceCount() (int, error)
	// Device describes the device with the given ordinal.
	Device(ordinal int) (DeviceInfo, error)
	// PrimaryContext retains the device's primary context.
	PrimaryContext(ordinal int) (ContextHandle, error)
	// ReleasePrimaryContext releases what PrimaryContext retained.
	ReleasePrimaryContext(ordinal int) error
	// MemInfo is cuMemGetInfo: free and total device memory, bytes.
	MemInfo(c ContextHandle) (free, total uint64, err error)
	// Synchronize is cuCtxSynchronize.
	Synchronize(c ContextHandle) error

	// StreamCreate creates a non-blocking stream.
	StreamCreate(c ContextHandle) (StreamHandle, error)
	StreamDestroy(c ContextHandle, s StreamHandle) error
	StreamSynchronize(c ContextHandle, s StreamHandle) error

	// EventCreate creates an event with timing enabled.
	EventCreate(c ContextHandle) (EventHandle, error)
	EventDestroy(c ContextHandle, e EventHandle) error
	EventRecord(c ContextHandle, e EventHandle, s StreamHandle) error
	EventSynchronize(c ContextHandle, e EventHandle) error
	// EventElapsed is cuEventElapsedTime: milliseconds from start to end
	// on the GPU clock (about 0.5 µs resolution), negative when end
	// precedes start.
	EventElapsed(c ContextHandle, start, end EventHandle) (float32, error)

	MemAlloc(c ContextHandle, bytes int) (DevicePtr, error)
	MemFree(c ContextHandle, p DevicePtr) error
	// HostAlloc is cuMemHostAlloc with CU_MEMHOSTALLOC_PORTABLE.
	HostAlloc(c ContextHandle, bytes int) (unsafe.Pointer, error)
	HostFree(c ContextHandle, p unsafe.Pointer) error
	// HostRegister is cuMemHostRegister with CU_MEMHOSTREGISTER_PORTABLE.
	HostRegister(c ContextHandle, p unsafe.Pointer, bytes int) error
	HostUnregister(c ContextHandle, p unsafe.Pointer) error

	CopyHtoD(c ContextHandle, dst DevicePtr, src unsafe.Pointer, bytes int, s StreamHandle) error
	CopyDtoH(c ContextHandle, dst unsafe.Pointer, src DevicePtr, bytes int, s StreamHandle) error
	CopyDtoD(c ContextHandle, dst, src DevicePtr, bytes int, s StreamHandle) error
	MemsetD8(c ContextHandle, dst DevicePtr, value byte, bytes int, s StreamHandle) error

	// ModuleLoad loads a cubin, fatbin or NUL-free PTX image.
	ModuleLoad(c ContextHandle, image []byte) (ModuleHandle, error)
	ModuleUnload(c ContextHandle, m ModuleHandle) error
	ModuleFunction(c ContextHandle, m ModuleHandle, name string) (FunctionHandle, error)
	// FuncAttribute is cuFuncGetAttribute; FuncSetAttribute is cuFuncSetAttribute.
	FuncAttribute(c ContextHandle, f FunctionHandle, attr FuncAttr) (int, error)
	FuncSetAttribute(c ContextHandle, f FunctionHandle, attr FuncAttr, value int) error
	// FuncParams lists the byte offset and size of each kernel parameter
	// (cuFuncGetParamInfo, drivers for CUDA 12.4 and later); ok is false
	// when the driver cannot tell.
	FuncParams(c ContextHandle, f FunctionHandle) (params []ParamInfo, ok bool, err error)
	// Launch is cuLaunchKernel. params holds the packed argument bytes and
	// offsets the start of each argument in it (kernelParams[i] points at
	// params[offsets[i]]).
	Launch(c ContextHandle, f FunctionHandle, grid, block Dim3, sharedBytes int, s StreamHandle, params []byte, offsets []int) error
}

// FuncAttr is a CUfunction_attribute.
type FuncAttr int

// Function attributes (CUfunction_attribute values of cuda.h).
const (
	FuncMaxThreadsPerBlock      FuncAttr = 0
	FuncSharedSizeBytes         FuncAttr = 1
	FuncNumRegs                 FuncAttr = 4
	FuncMaxDynamicSharedBytes   FuncAttr = 8
	FuncPreferredSharedCarveout FuncAttr = 9
)

// ParamInfo is one kernel parameter's place in the parameter buffer.
type ParamInfo struct{ Offset, Size int }
