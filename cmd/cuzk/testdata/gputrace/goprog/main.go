// Command goprog is a Go program under `cuzk gpu-trace` as the tests see
// one (gputrace_test.go): it loads the injection library as the CUDA
// driver does at cuInit and launches through the fake CUPTI
// (cupti/testdata/fakecupti.c), then ends the way Go programs end, through
// the Go runtime's own exit (the exit_group system call: no atexit handler
// runs), with the Go runtime's signal handlers installed:
//
//	goprog return   destroys its CUDA context, then main returns
//	goprog osexit   destroys its CUDA context, then os.Exit(3)
//	goprog alive    os.Exit(4) with its context alive (no flush point)
package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

static void *cupti;

static int start(void) {
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	if (inj) {
		void *h = dlopen(inj, RTLD_NOW);
		int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
		if (!init) return 90;
		init();
	}
	const char *p = getenv("CUZK_CUPTI_PATH");
	cupti = p ? dlopen(p, RTLD_NOW) : NULL;
	return cupti && dlsym(cupti, "fake_launch") && dlsym(cupti, "fake_ctx_destroy") ? 0 : 91;
}

static void launch(const char *name) {
	((void (*)(const char *, uint64_t))dlsym(cupti, "fake_launch"))(name, 1000);
}

static void ctx_destroy(void) { ((void (*)(void))dlsym(cupti, "fake_ctx_destroy"))(); }
*/
import "C"

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: goprog return|osexit|alive")
		os.Exit(2)
	}
	if rc := C.start(); rc != 0 {
		fmt.Fprintln(os.Stderr, "goprog: no injection library or fake CUPTI")
		os.Exit(int(rc))
	}
	mode := os.Args[1]
	C.launch(C.CString("go_" + mode)) // the record keeps the name's pointer: never freed
	switch mode {
	case "return":
		C.ctx_destroy()
	case "osexit":
		C.ctx_destroy()
		os.Exit(3)
	case "alive":
		os.Exit(4)
	default:
		fmt.Fprintln(os.Stderr, "goprog: unknown mode", mode)
		os.Exit(2)
	}
}
