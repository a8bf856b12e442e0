package client

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoGnarkNoCgo proves Curio can import this package without pulling in
// gnark or cgo: no github.com/consensys package in its graph, no
// non-standard package with cgo files, and with CGO_ENABLED=0 the graph has
// no runtime/cgo at all. (With cgo enabled the standard library's net
// package links runtime/cgo for the system DNS resolver; that is Go's
// choice, present in any gRPC client, and disappears with CGO_ENABLED=0.)
func TestNoGnarkNoCgo(t *testing.T) {
	list := func(env ...string) []string {
		t.Helper()
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{len .CgoFiles}}", ".")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	for _, line := range list() {
		f := strings.Fields(line)
		if strings.HasPrefix(f[0], "github.com/consensys") {
			t.Errorf("client depends on %s", f[0])
		}
		if f[1] == "false" && f[2] != "0" {
			t.Errorf("client depends on %s, a cgo package", f[0])
		}
	}
	for _, line := range list("CGO_ENABLED=0") {
		if f := strings.Fields(line); f[0] == "runtime/cgo" || strings.HasPrefix(f[0], "github.com/consensys") {
			t.Errorf("with CGO_ENABLED=0 the client still depends on %s", f[0])
		}
	}
}
