// Package device opens the GPU that the kernel benchmark programs
// (msmbench, nttbench) time on. It is apart from benchutil so the CPU
// benchmarks do not link the CUDA bridge.
package device

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// Open returns the primary context of GPU 0, opened with opts (a tracer
// provider, say), and a new stream on it; the caller closes the context.
// Errors are cudaspans.Open's (wrapping cudaspans.ErrNoDevice without a
// GPU) or NewStream's, after which the context is already closed.
func Open(opts ...cudaspans.Option) (*cudaspans.Context, *cudaspans.Stream, error) {
	c, err := cudaspans.Open(0, opts...)
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

// Defines parses one variant of a kernel benchmark's -variants, a kernel
// macro set "K=V,K=V" (the defines of ntt.WithDefines and
// msm.WithDefines): "" and "default" are none, and so is an empty or
// "default" item; an item without "=" or with an empty K is an error
// naming the variant.
func Defines(variant string) (map[string]string, error) {
	d := map[string]string{}
	for _, kv := range strings.Split(variant, ",") {
		if kv = strings.TrimSpace(kv); kv == "" || kv == "default" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("variant %q: want K=V pairs", variant)
		}
		d[k] = v
	}
	return d, nil
}
