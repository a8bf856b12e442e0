package prover

import (
	"testing"

	"github.com/otelcuzk/otelcuzk/internal/depstest"
)

// TestCPUProverLinksNoCgo proves that a program proving on the CPU (this
// package, the engine, the server, the buffer package they release
// through) links no cgo package outside the standard library: the CUDA
// bridge (cudaspans) comes in only with prover/gpu, and munmap is a plain
// system call (golang.org/x/sys/unix).
func TestCPUProverLinksNoCgo(t *testing.T) {
	seen := 0
	for _, p := range depstest.List(t, nil, ".", "./engine", "./server", "../buffer") {
		if p.ImportPath == "github.com/otelcuzk/otelcuzk/buffer" {
			seen++
		}
		if p.ImportPath == "github.com/otelcuzk/otelcuzk/cudaspans" {
			t.Errorf("the CPU prover links the CUDA bridge %s", p.ImportPath)
		}
		if !p.Standard && p.CgoFiles != 0 {
			t.Errorf("the CPU prover links %s, a cgo package", p.ImportPath)
		}
	}
	if seen == 0 {
		t.Error("go list did not list the buffer package: the test reads the wrong graph")
	}
}
