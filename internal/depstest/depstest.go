// Package depstest lists a package graph with `go list -deps`, for the
// tests that keep a package free of another (gnark, cgo, the CUDA bridge,
// a test package): Curio imports the client and otelcuzk, and cuzk must
// link no test package. GoFiles lists the Go files of the tree, for the
// tests that read every file (imports, package docs).
package depstest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Package is one package of a graph, as go list describes it.
type Package struct {
	ImportPath string
	Module     string // the module path, "" for the standard library
	Standard   bool   // part of the standard library
	CgoFiles   int    // files that import "C"
}

// List returns the packages pkgs (patterns as go list takes them, relative
// to the test's folder) depend on, themselves included, in go list's
// order, with env (KEY=VALUE) added to the environment, such as
// CGO_ENABLED=0. It skips t where there is no go tool and fails it when
// go list fails.
func List(t testing.TB, env []string, pkgs ...string) []Package {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{len .CgoFiles}} {{with .Module}}{{.Path}}{{end}}"}, pkgs...)
	cmd := exec.Command(goBin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var list []Package
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Fatalf("go list line %q", line)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatalf("go list line %q: %v", line, err)
		}
		p := Package{ImportPath: f[0], Standard: f[1] == "true", CgoFiles: n}
		if len(f) > 3 {
			p.Module = f[3]
		}
		list = append(list, p)
	}
	return list
}
