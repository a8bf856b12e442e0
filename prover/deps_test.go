package prover

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCPUProverLinksNoCgo proves that a program proving on the CPU (this
// package, the engine, the server, the buffer package they release
// through) links no cgo package outside the standard library: the CUDA
// bridge (cudaspans) comes in only with prover/gpu, and munmap is a plain
// system call (golang.org/x/sys/unix).
func TestCPUProverLinksNoCgo(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{len .CgoFiles}}",
		".", "./engine", "./server", "../buffer").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("go list line %q", line)
		}
		if f[0] == "github.com/otelcuzk/otelcuzk/buffer" {
			seen++
		}
		if f[0] == "github.com/otelcuzk/otelcuzk/cudaspans" {
			t.Errorf("the CPU prover links the CUDA bridge %s", f[0])
		}
		if f[1] == "false" && f[2] != "0" {
			t.Errorf("the CPU prover links %s, a cgo package", f[0])
		}
	}
	if seen == 0 {
		t.Error("go list did not list the buffer package: the test reads the wrong graph")
	}
}
