// Package device opens the GPU that the kernel benchmark programs
// (msmbench, nttbench) time on. It is apart from benchutil so the CPU
// benchmarks do not link the CUDA bridge.
package device

import (
	"fmt"
	"runtime"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// Open returns the primary context of GPU 0 and a new stream on it; the
// caller closes the context. Errors are cudaspans.Open's (wrapping
// cudaspans.ErrNoDevice without a GPU) or NewStream's, after which the
// context is already closed.
func Open() (*cudaspans.Context, *cudaspans.Stream, error) {
	c, err := cudaspans.Open(0)
	if err != nil {
		return nil, nil, err
	}
	s, err := c.NewStream()
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, s, nil
}

// Line is the first line of a kernel benchmark's report: "device: NAME
// (ARCH, N SMs); host: N cores (GOMAXPROCS M)".
func Line(c *cudaspans.Context) string {
	dev := c.Device()
	return fmt.Sprintf("device: %s (%s, %d SMs); host: %d cores (GOMAXPROCS %d)",
		dev.Name, dev.Arch(), dev.Multiprocessors, runtime.NumCPU(), runtime.GOMAXPROCS(0))
}
