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

// TestTheProveAndItsBackendsDoNotImportThePipelineSide holds the cut
// along the proof path: the prove (groth16), the backend interface, the
// CPU backend and the CUDA backend with its msm and ntt link nothing of
// this package (the Prover, its key cache and requests), so a backend is
// written against prover/backend alone.
func TestTheProveAndItsBackendsDoNotImportThePipelineSide(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range depstest.List(t, nil, "./groth16", "./backend", "./cpu", "./gpu", "./gpu/msm", "./gpu/ntt") {
		seen[p.ImportPath] = true
		if p.ImportPath == "github.com/otelcuzk/otelcuzk/prover" {
			t.Errorf("the prove or a backend links %s", p.ImportPath)
		}
	}
	if !seen["github.com/otelcuzk/otelcuzk/prover/backend"] {
		t.Error("go list did not list prover/backend: the test reads the wrong graph")
	}
}
