package cudaspans_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

const scaleSource = `
extern "C" __global__ void scale(unsigned long long *x, unsigned n, unsigned long long k) {
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] *= k;
}`

// Compile a kernel, run it on a vector and read the result back; every
// step is a span under the span in ctx, and gpu.total covers the device
// work of the session.
func Example() {
	ctx := context.Background()
	c, err := cudaspans.Open(0)
	if errors.Is(err, cudaspans.ErrNoDevice) {
		fmt.Println("falling back to the CPU:", err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	mod, err := c.Compile(ctx, "scale", scaleSource, cudaspans.CompileOptions{})
	if err != nil {
		log.Fatal(err)
	}
	scale, err := mod.Function("scale")
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	ctx, sess := c.BeginSession(ctx)
	x := []uint64{1, 2, 3, 4, 5}
	buf, err := c.Alloc(ctx, len(x)*8)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Free(ctx, buf)
	if err := cudaspans.HtoD(ctx, s, buf.Ptr(), x); err != nil {
		log.Fatal(err)
	}
	if err := s.Launch(ctx, scale, cudaspans.D1(1), cudaspans.D1(256), 0, buf.Ptr(), uint32(len(x)), uint64(10)); err != nil {
		log.Fatal(err)
	}
	if err := cudaspans.DtoH(ctx, s, x, buf.Ptr()); err != nil {
		log.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil { // emits the spans
		log.Fatal(err)
	}
	if err := sess.End(); err != nil { // emits gpu.total
		log.Fatal(err)
	}
	fmt.Println(x)
}
