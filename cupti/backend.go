package cupti

/*
#cgo LDFLAGS: -ldl -lpthread
#include <stdio.h>
#include <stdlib.h>
#include <dlfcn.h>
#include "cz_core.h"

// cz_loads dlopens name and closes it again; 0 when it loaded, else
// dlerror's text in buf.
static int cz_loads(const char *name, char *buf, size_t n) {
	void *h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(buf, n, "%s", e ? e : "dlopen failed");
		return -1;
	}
	dlclose(h);
	return 0;
}

static void cz_call_h(uint64_t parent, uintptr_t fn, uintptr_t arg) {
	cz_call(parent, (void (*)(void *))fn, (void *)arg);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

// backend is CUPTI as the capture sees it: the real library through
// cz_core.c, or the tests' fake. Frames come back through take.
type backend interface {
	// open loads the first library of paths that loads; it returns the
	// file loaded and cuptiGetVersion.
	open(paths []string) (path string, version uint32, err error)
	// start subscribes and enables the activity kinds; code is CUPTI's
	// result on failure.
	start(flags uint32) (code int, err error)
	flush(forced bool)
	calibrate(n int)
	take() []byte
	stop()
	// cudaspansHooks returns the C functions cudaspans calls around a
	// launch (nil, nil for a fake).
	cudaspansHooks() (push, pop unsafe.Pointer)
	// cudaspansDurations takes CUPTI's durations (ms) of cudaspans'
	// launches ids from what has been delivered, matched on the C side
	// (cz_cudaspans_take); ok false: this backend does not match them, the
	// builder must (a fake). With no ids it only says which.
	cudaspansDurations(ids []uint64) (ms map[uint64]float64, ok bool)
}

// Start flags (cz_core.h).
const (
	startNVTX   = C.CZ_START_NVTX
	startMemcpy = C.CZ_START_MEMCPY
	startMemset = C.CZ_START_MEMSET
	startSync   = C.CZ_START_SYNC
)

// cuptiMultipleSubscribers is CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED.
const cuptiMultipleSubscribers = 39

// cBackend is libcupti loaded with dlopen. CUPTI is per process, so there
// is one.
type cBackend struct{}

var (
	openMu   sync.Mutex
	openPath string
	openVer  uint32
)

func (cBackend) open(paths []string) (string, uint32, error) {
	openMu.Lock()
	defer openMu.Unlock()
	if openPath != "" {
		// One CUPTI per process: the loaded one serves a request that
		// names it or a bare library name; another file cannot be loaded.
		for _, p := range paths {
			if p == openPath || !strings.Contains(p, "/") {
				return openPath, openVer, nil
			}
		}
		return "", 0, fmt.Errorf("%w: %s is already loaded in this process, so none of %s can be", ErrNoCUPTI, openPath, strings.Join(paths, ", "))
	}
	p, v, err := firstLibrary(paths, func(p string) (string, uint32, error) {
		if err := cError(p, func(cp, errBuf *C.char, n C.size_t) bool { return C.cz_open(cp, errBuf, n) == 0 }); err != nil {
			return "", 0, err
		}
		return C.GoString(C.cz_loaded_path()), uint32(C.cz_version()), nil
	})
	if err == nil {
		openPath, openVer = p, v
	}
	return p, v, err
}

// probe is Locate's look at the libraries of paths, without loading one
// for capture.
func probe(paths []string) (string, uint32, error) {
	return firstLibrary(paths, func(p string) (string, uint32, error) {
		var out [4096]C.char
		var v C.uint32_t
		if err := cError(p, func(cp, errBuf *C.char, n C.size_t) bool {
			return C.cz_probe(cp, &out[0], C.size_t(len(out)), &v, errBuf, n) == 0
		}); err != nil {
			return "", 0, err
		}
		return C.GoString(&out[0]), uint32(v), nil
	})
}

// firstLibrary returns what load returns for the first of paths that it
// loads: the library's file and CUPTI version. When none loads, the error
// is noLibrary's, with every path's reason.
func firstLibrary(paths []string, load func(path string) (string, uint32, error)) (string, uint32, error) {
	var reasons []string
	for _, p := range paths {
		file, v, err := load(p)
		if err == nil {
			return file, v, nil
		}
		reasons = append(reasons, err.Error())
	}
	return "", 0, noLibrary(paths, reasons)
}

// cError calls f with s as a C string and a buffer of n bytes for the C
// side's error text; when f reports failure (false), it returns that text
// as the error.
func cError(s string, f func(cs, errBuf *C.char, n C.size_t) bool) error {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	var buf [512]C.char
	if !f(cs, &buf[0], C.size_t(len(buf))) {
		return errors.New(C.GoString(&buf[0]))
	}
	return nil
}

// DriverLibrary is the CUDA driver's library, which CUPTI and every CUDA
// program load.
const DriverLibrary = "libcuda.so.1"

// LibraryLoads dlopens the shared library name (a file, or a name the
// dynamic loader searches for), closes it again and returns nil, or an
// error with dlerror's text. LibraryLoads(DriverLibrary) says whether
// this host has a CUDA driver: without one there is nothing to trace.
func LibraryLoads(name string) error {
	return cError(name, func(cn, errBuf *C.char, n C.size_t) bool { return C.cz_loads(cn, errBuf, n) == 0 })
}

// noLibrary is ErrNoCUPTI in one line: the paths tried and the most
// telling reason (a library that is there but is not CUPTI beats "cannot
// open shared object").
func noLibrary(paths, reasons []string) error {
	why := ""
	for _, r := range reasons {
		if why == "" || !strings.Contains(r, "No such file") {
			why = r
		}
		if !strings.Contains(r, "No such file") {
			break
		}
	}
	return fmt.Errorf("%w: none of %s loads (%s)", ErrNoCUPTI, strings.Join(paths, ", "), why)
}

func (cBackend) start(flags uint32) (int, error) {
	var buf [512]C.char
	r := C.cz_start(C.uint32_t(flags), &buf[0], C.size_t(len(buf)))
	if r != 0 {
		return int(r), errors.New(C.GoString(&buf[0]))
	}
	return 0, nil
}

func (cBackend) flush(forced bool) {
	f := C.int(0)
	if forced {
		f = 1
	}
	C.cz_flush(f)
}

func (cBackend) calibrate(n int) { C.cz_calibrate(C.int(n)) }

func (cBackend) take() []byte {
	var n C.size_t
	p := C.cz_take(&n)
	if p == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(p))
	return C.GoBytes(unsafe.Pointer(p), C.int(n))
}

func (cBackend) stop() { C.cz_stop() }

func (cBackend) cudaspansHooks() (unsafe.Pointer, unsafe.Pointer) {
	return unsafe.Pointer(C.cz_cudaspans_push), unsafe.Pointer(C.cz_cudaspans_pop)
}

func (cBackend) cudaspansDurations(ids []uint64) (map[uint64]float64, bool) {
	if len(ids) == 0 {
		return nil, true
	}
	ms := make([]float64, len(ids))
	out := map[uint64]float64{}
	if C.cz_cudaspans_take((*C.uint64_t)(unsafe.Pointer(&ids[0])), (*C.double)(unsafe.Pointer(&ms[0])), C.int(len(ids))) == 0 {
		return out, true
	}
	for i, id := range ids {
		if ms[i] >= 0 {
			out[id] = ms[i]
		}
	}
	return out, true
}

// callC is cz_call: fn(arg) with parent as the thread's external
// correlation id, in one cgo call.
func callC(parent uint64, fn, arg unsafe.Pointer) {
	C.cz_call_h(C.uint64_t(parent), C.uintptr_t(uintptr(fn)), C.uintptr_t(uintptr(arg)))
}

// loadedSymbol is a symbol of the loaded CUPTI library, nil when absent:
// the tests reach the functions of their fake libcupti through it.
func loadedSymbol(name string) unsafe.Pointer {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return C.cz_sym(cn)
}
