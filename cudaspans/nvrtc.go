package cudaspans

/*
#include <stdlib.h>
#include "cs_driver.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// nvrtc is NVRTC loaded with dlopen.
type nvrtc struct {
	n            *C.cs_nvrtc
	path         string
	major, minor int
}

// loadNVRTC opens the first NVRTC library of paths that loads. The error
// wraps ErrNoCompiler and lists every path's reason.
func loadNVRTC(paths []string) (compiler, error) {
	var reasons []string
	for _, p := range paths {
		cp := C.CString(p)
		var buf [512]C.char
		n := C.cs_nvrtc_load(cp, &buf[0], C.size_t(len(buf)))
		C.free(unsafe.Pointer(cp))
		if n == nil {
			reasons = append(reasons, C.GoString(&buf[0]))
			continue
		}
		var major, minor C.int
		C.cs_nvrtc_version(n, &major, &minor)
		return &nvrtc{n: n, path: p, major: int(major), minor: int(minor)}, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrNoCompiler, strings.Join(reasons, "; "))
}

func (n *nvrtc) Compile(name, source string, headers map[string]string, options []string) ([]byte, string, error) {
	var free []unsafe.Pointer
	defer func() {
		for _, p := range free {
			C.free(p)
		}
	}()
	cstr := func(s string) *C.char {
		p := C.CString(s)
		free = append(free, unsafe.Pointer(p))
		return p
	}
	// C arrays of C strings: Go memory may not hold C pointers passed on.
	carray := func(ss []string) **C.char {
		if len(ss) == 0 {
			return nil
		}
		arr := (**C.char)(C.malloc(C.size_t(len(ss)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
		free = append(free, unsafe.Pointer(arr))
		view := unsafe.Slice(arr, len(ss))
		for i, s := range ss {
			view[i] = cstr(s)
		}
		return arr
	}
	var hnames, hsrc []string
	for k, v := range headers {
		hnames = append(hnames, k)
		hsrc = append(hsrc, v)
	}
	wantPTX := 0
	for _, o := range options {
		if strings.HasPrefix(o, "-arch=compute_") || strings.HasPrefix(o, "--gpu-architecture=compute_") {
			wantPTX = 1
		}
	}
	var image, log *C.char
	var imageLen C.size_t
	var failed *C.char
	r := C.cs_nvrtc_compile(n.n, cstr(source), cstr(name+".cu"), C.int(len(hnames)), carray(hsrc), carray(hnames),
		C.int(len(options)), carray(options), C.int(wantPTX), &image, &imageLen, &log, &failed)
	var logText string
	if log != nil {
		logText = strings.TrimRight(C.GoString(log), "\x00\n ")
		C.free(unsafe.Pointer(log))
	}
	var out []byte
	if image != nil {
		out = C.GoBytes(unsafe.Pointer(image), C.int(imageLen))
		C.free(unsafe.Pointer(image))
	}
	if r != 0 {
		return nil, logText, &CompileError{
			Module: name,
			Call:   C.GoString(failed),
			Result: C.GoString(C.cs_nvrtc_error(n.n, r)),
			Log:    logText,
		}
	}
	if len(out) == 0 {
		return nil, logText, errors.New("cudaspans: NVRTC returned an empty image")
	}
	return out, logText, nil
}
