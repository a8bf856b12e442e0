package cudaspans

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Module is loaded device code (a CUmodule).
type Module struct {
	c         *Context
	h         ModuleHandle
	name      string
	fromCache bool

	mu    sync.Mutex
	funcs map[string]*Function
}

// Function is a kernel of a Module (a CUfunction).
type Function struct {
	m           *Module
	h           FunctionHandle
	name        string
	params      []ParamInfo
	paramsKnown bool
}

// Name returns the module's name: the name given to Compile, or the file
// loaded.
func (m *Module) Name() string { return m.name }

// FromCache reports whether Compile found the module in the kernel cache
// instead of calling NVRTC.
func (m *Module) FromCache() bool { return m.fromCache }

// Function looks up the kernel name (an extern "C" __global__ function, so
// the name is not mangled). A missing kernel is an error naming it and the
// module.
func (m *Module) Function(name string) (*Function, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.funcs[name]; f != nil {
		return f, nil
	}
	h, err := m.c.drv.ModuleFunction(m.c.h, m.h, name)
	if err != nil {
		return nil, fmt.Errorf("cudaspans: kernel %q in module %s: %w", name, m.name, err)
	}
	f := &Function{m: m, h: h, name: name}
	f.params, f.paramsKnown, err = m.c.drv.FuncParams(m.c.h, h)
	if err != nil {
		return nil, fmt.Errorf("cudaspans: parameters of kernel %q: %w", name, err)
	}
	if m.funcs == nil {
		m.funcs = map[string]*Function{}
	}
	m.funcs[name] = f
	return f, nil
}

// Close unloads the module; its Functions become invalid.
func (m *Module) Close() error { return m.c.drv.ModuleUnload(m.c.h, m.h) }

// Name returns the kernel's name (the span name of its launches).
func (f *Function) Name() string { return f.name }

// Params returns the kernel's parameter layout, and false when the driver
// cannot tell (drivers before CUDA 12.4).
func (f *Function) Params() ([]ParamInfo, bool) { return f.params, f.paramsKnown }

// Attribute reads a function attribute (registers, static shared memory...).
func (f *Function) Attribute(a FuncAttr) (int, error) {
	return f.m.c.drv.FuncAttribute(f.m.c.h, f.h, a)
}

// SetMaxDynamicShared lets launches of the kernel use up to bytes of
// dynamic shared memory; above 48 KiB the kernel must opt in this way (up
// to DeviceInfo.SharedMemOptin).
func (f *Function) SetMaxDynamicShared(bytes int) error {
	return f.m.c.drv.FuncSetAttribute(f.m.c.h, f.h, FuncMaxDynamicSharedBytes, bytes)
}

// LoadModule loads a precompiled cubin, fatbin or PTX file (PTX is
// compiled by the driver for the device), for hosts without NVRTC. The
// load is a cuda.module.load span.
func (c *Context) LoadModule(ctx context.Context, path string) (*Module, error) {
	image, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cudaspans: load module: %w", err)
	}
	return c.LoadModuleData(ctx, filepath.Base(path), image)
}

// LoadModuleData loads a cubin, fatbin or PTX image held in memory, named
// name in spans and errors.
func (c *Context) LoadModuleData(ctx context.Context, name string, image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cudaspans: load module %s: empty image", name)
	}
	if isPTX(image) && image[len(image)-1] != 0 {
		// cuModuleLoadData reads PTX as a NUL-terminated string.
		image = append(append([]byte(nil), image...), 0)
	}
	m := &Module{c: c, name: name}
	err := c.hostSpan(ctx, semconv.SpanCUDAModuleLoad, []attribute.KeyValue{
		semconv.KeyCUDAModuleName.String(name), semconv.KeyCUDABytes.Int(len(image)),
	}, func() (err error) {
		m.h, err = c.drv.ModuleLoad(c.h, image)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cudaspans: load module %s: %w", name, err)
	}
	return m, nil
}

// isPTX tells PTX text from ELF (cubin) and fatbin images.
func isPTX(image []byte) bool {
	if bytes.HasPrefix(image, []byte("\x7fELF")) || bytes.HasPrefix(image, []byte{0x50, 0xed, 0x55, 0xba}) {
		return false
	}
	s := string(image[:min(len(image), 4096)])
	return strings.Contains(s, ".version") || strings.Contains(s, ".target")
}
