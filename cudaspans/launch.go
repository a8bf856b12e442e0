package cudaspans

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Launch runs kernel f on the stream with grid blocks of block threads and
// sharedBytes of dynamic shared memory. args are the kernel's parameters
// by value, in order: DevicePtr, the sized integer and float types, int,
// uint and uintptr (8 bytes), bool (1 byte), and arrays or structs of
// those (their Go layout, which matches C's for these types), such as an
// [N]byte or a field element [4]uint64. Pointers, slices, strings and maps
// are refused with an error naming the argument. When the driver can list
// the kernel's parameters (CUDA 12.4 and later), a count or size mismatch
// is an error before launch.
//
// The launch becomes a span named after the kernel with cuda.kernel.name,
// cuda.grid, cuda.block, cuda.shared_bytes, cuda.stream,
// cuda.device.ordinal and cuda.gpu_ms, emitted at Synchronize.
func (s *Stream) Launch(ctx context.Context, f *Function, grid, block Dim3, sharedBytes int, args ...any) error {
	if f == nil {
		return fmt.Errorf("cudaspans: launch of a nil function")
	}
	grid, block = grid.norm(), block.norm()
	if grid.X == 0 || block.X == 0 {
		return fmt.Errorf("cudaspans: launch %s: empty grid %s or block %s", f.name, grid, block)
	}
	if sharedBytes < 0 {
		return fmt.Errorf("cudaspans: launch %s: %d bytes of shared memory", f.name, sharedBytes)
	}
	buf, offs, sizes, err := packParams(args)
	if err != nil {
		return fmt.Errorf("cudaspans: launch %s: %w", f.name, err)
	}
	if f.paramsKnown {
		if len(f.params) != len(args) {
			return fmt.Errorf("cudaspans: launch %s: %d arguments given, the kernel takes %d", f.name, len(args), len(f.params))
		}
		for i, p := range f.params {
			if p.Size != sizes[i] {
				return fmt.Errorf("cudaspans: launch %s: argument %d (%T) is %d bytes, the kernel's parameter is %d", f.name, i, args[i], sizes[i], p.Size)
			}
		}
	}
	op := &pendingOp{
		name:   f.name,
		kernel: f.name,
		attrs: []attribute.KeyValue{
			semconv.KeyCUDAKernelName.String(f.name),
			semconv.KeyCUDAGrid.String(grid.String()),
			semconv.KeyCUDABlock.String(block.String()),
			semconv.KeyCUDASharedBytes.Int(sharedBytes),
		},
	}
	return s.doLaunch(ctx, op, f, grid, block, sharedBytes, buf, offs)
}

// packParams lays the arguments out one after another, each at its
// natural alignment, and returns where each starts and its size: the
// kernelParams array of cuLaunchKernel points into the buffer.
func packParams(args []any) (buf []byte, offsets, sizes []int, err error) {
	offsets = make([]int, len(args))
	sizes = make([]int, len(args))
	for i, a := range args {
		b, align, err := paramBytes(a)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("argument %d: %w", i, err)
		}
		off := (len(buf) + align - 1) &^ (align - 1)
		for len(buf) < off {
			buf = append(buf, 0)
		}
		offsets[i], sizes[i] = off, len(b)
		buf = append(buf, b...)
	}
	return buf, offsets, sizes, nil
}

func le(v uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b
}

// paramBytes returns a by-value kernel argument's bytes and alignment.
func paramBytes(a any) ([]byte, int, error) {
	switch v := a.(type) {
	case DevicePtr:
		return le(uint64(v), 8), 8, nil
	case uint64:
		return le(v, 8), 8, nil
	case int64:
		return le(uint64(v), 8), 8, nil
	case int:
		return le(uint64(v), 8), 8, nil
	case uint:
		return le(uint64(v), 8), 8, nil
	case uintptr:
		return le(uint64(v), 8), 8, nil
	case float64:
		return le(math.Float64bits(v), 8), 8, nil
	case uint32:
		return le(uint64(v), 4), 4, nil
	case int32:
		return le(uint64(uint32(v)), 4), 4, nil
	case float32:
		return le(uint64(math.Float32bits(v)), 4), 4, nil
	case uint16:
		return le(uint64(v), 2), 2, nil
	case int16:
		return le(uint64(uint16(v)), 2), 2, nil
	case uint8:
		return []byte{v}, 1, nil
	case int8:
		return []byte{byte(v)}, 1, nil
	case bool:
		if v {
			return []byte{1}, 1, nil
		}
		return []byte{0}, 1, nil
	case nil:
		return nil, 0, fmt.Errorf("nil cannot be passed to a kernel (use DevicePtr(0))")
	}
	rv := reflect.ValueOf(a)
	t := rv.Type()
	if err := plainData(t); err != nil {
		return nil, 0, fmt.Errorf("%T cannot be passed by value to a kernel: %w", a, err)
	}
	if t.Size() == 0 {
		return nil, 0, fmt.Errorf("%T has size 0", a)
	}
	// Copy into an addressable value to read its bytes.
	p := reflect.New(t)
	p.Elem().Set(rv)
	b := make([]byte, t.Size())
	copy(b, unsafe.Slice((*byte)(p.UnsafePointer()), t.Size()))
	return b, t.Align(), nil
}

// plainData accepts types whose bytes mean the same on the device: fixed
// size numbers, and arrays and structs of them.
func plainData(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return nil
	case reflect.Array:
		return plainData(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if err := plainData(t.Field(i).Type); err != nil {
				return fmt.Errorf("field %s: %w", t.Field(i).Name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("%s holds a %s (pass device memory as a DevicePtr)", t, t.Kind())
}
