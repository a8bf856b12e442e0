package otelcuzk

import (
	"os/exec"
	"strings"
	"testing"
)

// Curio imports this package: it must not pull in gnark or the cgo bridge
// (DESIGN.md, "Packages").
func TestPackageGraphHasNoGnarkAndNoCgoBridge(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}} {{.Module}} {{len .CgoFiles}}", ".", "./tracefile").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if strings.Contains(line, "github.com/consensys/") {
			t.Errorf("depends on gnark: %s", f[0])
		}
		if strings.HasPrefix(f[0], "github.com/otelcuzk/otelcuzk/") && !strings.HasPrefix(f[0], "github.com/otelcuzk/otelcuzk/otelcuzk") {
			t.Errorf("depends on %s", f[0])
		}
		if strings.HasPrefix(f[0], "github.com/otelcuzk/otelcuzk/") && f[len(f)-1] != "0" {
			t.Errorf("%s uses cgo", f[0])
		}
	}
}
