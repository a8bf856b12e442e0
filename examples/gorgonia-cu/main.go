// Command gorgonia-cu is a CUDA program written on gorgonia.org/cu (the
// package the project's design card names), unchanged by tracing: `cuzk
// gpu-trace` traces it from outside through CUDA's injection mechanism,
// which works for a Go target because the injection library is C.
//
//	cuzk gpu-trace -- ./gorgonia-cu -n 1048576 -iters 10
//
// It scales a vector of floats iters times with a hand-written PTX kernel
// (loaded by the driver's JIT, so no CUDA compiler is needed) and checks
// the result. README.md says how to build it (CUDA 11.8 headers from
// Debian's non-free section) and why it has its own module.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"
)

// scalePTX is scale(float *x, float a, unsigned n): x[i] *= a.
const scalePTX = `
.version 7.0
.target sm_75
.address_size 64

.visible .entry scale(.param .u64 x, .param .f32 a, .param .u32 n)
{
	.reg .pred %p<2>;
	.reg .f32 %f<4>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<5>;
	ld.param.u64 %rd1, [x];
	ld.param.f32 %f1, [a];
	ld.param.u32 %r2, [n];
	mov.u32 %r3, %ctaid.x;
	mov.u32 %r4, %ntid.x;
	mov.u32 %r5, %tid.x;
	mad.lo.s32 %r1, %r3, %r4, %r5;
	setp.ge.u32 %p1, %r1, %r2;
	@%p1 bra DONE;
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd4, %rd2, %rd3;
	ld.global.f32 %f2, [%rd4];
	mul.f32 %f3, %f2, %f1;
	st.global.f32 [%rd4], %f3;
DONE:
	ret;
}
`

func run(n, iters int, keep bool) error {
	// The context is current on the thread that made it: stay on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx, err := cu.Device(0).MakeContext(cu.SchedAuto)
	if err != nil {
		return fmt.Errorf("context: %w", err)
	}
	if !keep {
		defer ctx.Destroy()
	}
	mod, err := cu.LoadData(scalePTX)
	if err != nil {
		return fmt.Errorf("loading the PTX: %w", err)
	}
	fn, err := mod.Function("scale")
	if err != nil {
		return err
	}
	host := make([]float32, n)
	for i := range host {
		host[i] = 1
	}
	bytes := int64(n * 4)
	x, err := cu.MemAlloc(bytes)
	if err != nil {
		return err
	}
	defer cu.MemFree(x)
	if err := cu.MemcpyHtoD(x, unsafe.Pointer(&host[0]), bytes); err != nil {
		return err
	}
	a, un := float32(2), uint32(n)
	params := []unsafe.Pointer{unsafe.Pointer(&x), unsafe.Pointer(&a), unsafe.Pointer(&un)}
	for i := 0; i < iters; i++ {
		if err := fn.Launch((n+255)/256, 1, 1, 256, 1, 1, 0, cu.Stream{}, params); err != nil {
			return fmt.Errorf("launch %d: %w", i, err)
		}
	}
	if err := cu.Synchronize(); err != nil {
		return err
	}
	if err := cu.MemcpyDtoH(unsafe.Pointer(&host[0]), x, bytes); err != nil {
		return err
	}
	if want := float32(math.Pow(2, float64(iters))); host[0] != want || host[n-1] != want {
		return fmt.Errorf("wrong result: %g, want %g", host[0], want)
	}
	return nil
}

func main() {
	n := flag.Int("n", 1<<20, "floats")
	iters := flag.Int("iters", 10, "launches (1..100)")
	keep := flag.Bool("keep-context", false, "end with os.Exit(3) and the context alive (no flush point for a tracer)")
	flag.Parse()
	if *n < 1 || *iters < 1 || *iters > 100 {
		fmt.Fprintln(os.Stderr, "gorgonia-cu: want -n >= 1 and 1 <= -iters <= 100")
		os.Exit(2)
	}
	if err := run(*n, *iters, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "gorgonia-cu:", err)
		os.Exit(1)
	}
	fmt.Printf("gorgonia-cu: %d launches over %d floats: ok\n", *iters, *n)
	if *keep {
		os.Exit(3)
	}
}
