// Package ctest links a small C program against cudaspans.h, to test the
// C API as C code sees it (cgo is not allowed in _test.go files).
package ctest

/*
#include <stdint.h>
int ctest_prove(uint64_t parent, void *stream, long sort_us, long reduce_us);
int ctest_scoped(uint64_t parent, int early);
// A CUstream is a C pointer; it travels through Go as an integer.
static int ctest_prove_h(uint64_t parent, uintptr_t stream, long sort_us, long reduce_us) {
	return ctest_prove(parent, (void *)stream, sort_us, reduce_us);
}
*/
import "C"

import (
	"time"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// Prove runs the C program under the parent handle; stream (a CUstream
// from cudaspans, or 0) adds a device-clock phase. It returns how many of
// the C program's begins got a handle.
func Prove(parent uint64, stream cudaspans.StreamHandle, sort, reduce time.Duration) int {
	return int(C.ctest_prove_h(C.uint64_t(parent), C.uintptr_t(stream), C.long(sort.Microseconds()), C.long(reduce.Microseconds())))
}

// Scoped runs the C++ scope program (scope.cpp): cpp.outer > cpp.inner,
// returning from inside the inner scope when early is true.
func Scoped(parent uint64, early bool) int {
	e := 0
	if early {
		e = 1
	}
	return int(C.ctest_scoped(C.uint64_t(parent), C.int(e)))
}
