package cudaspans

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/atomicfile"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// CompileOptions are the NVRTC inputs besides the source. All of them are
// part of the kernel cache key.
type CompileOptions struct {
	// Defines become -D NAME=VALUE (-D NAME for an empty value).
	Defines map[string]string
	// Headers maps include names to their contents, for #include "name"
	// without files on disk.
	Headers map[string]string
	// IncludeDirs become -I DIR.
	IncludeDirs []string
	// Flags are further NVRTC options, e.g. "-std=c++17", "--use_fast_math",
	// "-lineinfo".
	Flags []string
	// Arch overrides the target, e.g. "sm_90"; default the device's own.
	// An sm_XY target yields a cubin, a compute_XY target PTX.
	Arch string
}

// compiler is NVRTC, or a fake in tests.
type compiler interface {
	// Compile returns the cubin (or PTX for compute_XY targets) and the
	// compile log; a failed compile is a *CompileError with the log.
	Compile(name, source string, headers map[string]string, options []string) (image []byte, log string, err error)
}

var compiles atomic.Int64

// CompileCount returns how many times this process has called the
// compiler (NVRTC); kernel cache hits do not count.
func CompileCount() int64 { return compiles.Load() }

var (
	nvrtcOnce sync.Map // key: joined paths -> *nvrtcResult
)

type nvrtcResult struct {
	once sync.Once
	cc   compiler
	err  error
}

func (c *Context) compiler() (compiler, error) {
	if c.cfg.compiler != nil {
		return c.cfg.compiler, nil
	}
	paths := c.cfg.nvrtcPaths
	if len(paths) == 0 {
		paths = defaultNVRTCPaths()
	}
	key := fmt.Sprint(paths)
	v, _ := nvrtcOnce.LoadOrStore(key, &nvrtcResult{})
	r := v.(*nvrtcResult)
	r.once.Do(func() { r.cc, r.err = loadNVRTC(paths) })
	return r.cc, r.err
}

func defaultNVRTCPaths() []string {
	var p []string
	if env := os.Getenv("CUDASPANS_NVRTC"); env != "" {
		p = append(p, env)
	}
	return append(p, "libnvrtc.so.13", "libnvrtc.so.12",
		"/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12",
		"/usr/local/cuda/lib64/libnvrtc.so")
}

// KernelCacheDir returns the directory of compiled kernels: the
// WithKernelCacheDir option, else os.UserCacheDir()/otelcuzk/kernels;
// "" when caching is off or no cache directory is known.
func (c *Context) KernelCacheDir() string {
	switch c.cfg.cacheDir {
	case "-":
		return ""
	case "":
		d, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(d, "otelcuzk", "kernels")
	}
	return c.cfg.cacheDir
}

// compileOptions returns the NVRTC options in a canonical order.
func (c *Context) compileOptions(o CompileOptions) (arch string, opts []string) {
	arch = o.Arch
	if arch == "" {
		arch = c.dev.Arch()
	}
	return arch, nvrtcOptions(arch, o)
}

// nvrtcOptions returns the NVRTC options for arch in a canonical order.
func nvrtcOptions(arch string, o CompileOptions) (opts []string) {
	opts = append(opts, "-arch="+arch)
	names := make([]string, 0, len(o.Defines))
	for k := range o.Defines {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if v := o.Defines[k]; v != "" {
			opts = append(opts, "-D"+k+"="+v)
		} else {
			opts = append(opts, "-D"+k)
		}
	}
	for _, d := range o.IncludeDirs {
		opts = append(opts, "-I"+d)
	}
	return append(opts, o.Flags...)
}

// CompileImage compiles CUDA C++ source with NVRTC without a device or a
// driver: for opts.Arch (required, e.g. "sm_90" for a cubin, "compute_90"
// for PTX), with the first NVRTC of nvrtcPaths that loads (nil: the
// default search, CUDASPANS_NVRTC first). It returns the image and the
// compile log. Uses: checking kernels on a build host without a GPU, and
// precompiled images for hosts without NVRTC (Context.LoadModuleData).
// Errors: no Arch; ErrNoCompiler (wrapped) when no NVRTC loads; a
// *CompileError with the log when the source does not compile.
func CompileImage(nvrtcPaths []string, name, source string, opts CompileOptions) ([]byte, string, error) {
	if opts.Arch == "" {
		return nil, "", errors.New("cudaspans: CompileImage needs an architecture (CompileOptions.Arch)")
	}
	if len(nvrtcPaths) == 0 {
		nvrtcPaths = defaultNVRTCPaths()
	}
	cc, err := loadNVRTC(nvrtcPaths)
	if err != nil {
		return nil, "", fmt.Errorf("cudaspans: compile %s: %w", name, err)
	}
	compiles.Add(1)
	image, log, err := cc.Compile(name, source, opts.Headers, nvrtcOptions(opts.Arch, opts))
	var ce *CompileError
	if errors.As(err, &ce) && ce.Module == "" {
		ce.Module = name
	}
	return image, log, err
}

// cacheKey is the SHA-256 of everything that determines the compiled
// image: source, headers, options (with the architecture) and the driver
// version (PTX is compiled by the driver). The NVRTC version is left out
// so that hosts without NVRTC still hit the cache.
func cacheKey(source string, headers map[string]string, opts []string, driverVersion int) string {
	h := sha256.New()
	field := func(s string) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	field("cudaspans kernel cache v1")
	field(source)
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		field(k)
		field(headers[k])
	}
	for _, o := range opts {
		field(o)
	}
	field(strconv.Itoa(driverVersion))
	return hex.EncodeToString(h.Sum(nil))
}

// Compile compiles CUDA C++ source with NVRTC for the device's own
// architecture (-arch=sm_XY, so the result is a cubin) and loads it, as a
// cuda.compile span with cuda.kernel_cache.hit. The image is cached on
// disk (KernelCacheDir) under the SHA-256 of source, headers, options,
// architecture and driver version, so a later start with the same inputs
// compiles nothing. Kernels should be extern "C" so Function finds them
// by name. A failed compile is a *CompileError carrying the log; no NVRTC
// and no cached image is an error wrapping ErrNoCompiler.
func (c *Context) Compile(ctx context.Context, name, source string, opts CompileOptions) (*Module, error) {
	arch, options := c.compileOptions(opts)
	key := cacheKey(source, opts.Headers, options, c.dev.DriverVersion)
	ctx, span := c.tracer.Start(ctx, semconv.SpanCUDACompile, trace.WithAttributes(
		semconv.KeyCUDAModuleName.String(name), semconv.KeyCUDAArch.String(arch),
		semconv.KeyCUDADeviceOrdinal.Int(c.dev.Ordinal)))
	defer span.End()
	m, hit, err := c.compile(ctx, name, source, opts.Headers, options, key)
	span.SetAttributes(semconv.KeyCUDACacheHit.Bool(hit))
	if err != nil {
		semconv.SetError(span, err)
		return nil, err
	}
	return m, nil
}

func (c *Context) compile(ctx context.Context, name, source string, headers map[string]string, options []string, key string) (*Module, bool, error) {
	dir := c.KernelCacheDir()
	var file string
	if dir != "" {
		file = filepath.Join(dir, key+".bin")
		if image, err := os.ReadFile(file); err == nil {
			m, err := c.LoadModuleData(ctx, name, image)
			if err == nil {
				m.fromCache = true
				return m, true, nil
			}
			// A damaged entry is recompiled and replaced.
			_ = os.Remove(file)
		}
	}
	image, err := c.nvrtc(ctx, name, source, headers, options, key, file)
	if err != nil {
		return nil, false, err
	}
	m, err := c.LoadModuleData(ctx, name, image)
	if err != nil {
		return nil, false, err
	}
	return m, false, nil
}

// nvrtc compiles with NVRTC and writes the image to the kernel cache file
// (when not ""), as a cuda.nvrtc.compile span (module, options, cache key).
func (c *Context) nvrtc(ctx context.Context, name, source string, headers map[string]string, options []string, key, file string) (image []byte, err error) {
	ctx, span := c.tracer.Start(ctx, semconv.SpanCUDANVRTC, trace.WithAttributes(
		semconv.KeyCUDAModuleName.String(name), semconv.KeyCUDANVRTCOpts.StringSlice(options),
		semconv.KeyCUDACacheKey.String(key), semconv.KeyCUDADeviceOrdinal.Int(c.dev.Ordinal)))
	defer func() {
		semconv.SetError(span, err)
		span.End()
	}()
	cc, err := c.compiler()
	if err != nil {
		return nil, fmt.Errorf("cudaspans: compile %s: %w", name, err)
	}
	compiles.Add(1)
	image, _, err = cc.Compile(name, source, headers, options)
	if err != nil {
		var ce *CompileError
		if errors.As(err, &ce) && ce.Module == "" {
			ce.Module = name
		}
		return nil, err
	}
	if file != "" {
		if err := writeAtomic(file, image); err != nil {
			span.AddEvent("kernel cache write failed",
				trace.WithAttributes(attribute.String("error", err.Error())))
		}
	}
	return image, nil
}

// writeAtomic writes through a temporary file and a rename, so concurrent
// starts never read a half-written image.
func writeAtomic(file string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteBytes(file, 0o600, data)
}
