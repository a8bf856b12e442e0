package msm

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMSMImportsNoProverPackage checks that package msm reaches no
// package of prover's proof path through the module's own imports
// (non-test files): its BaseSet and Call are prover/backend's, which
// imports no package of the proof path, and a caller passes the key ID and
// span attributes explicitly.
func TestMSMImportsNoProverPackage(t *testing.T) {
	const module = "github.com/otelcuzk/otelcuzk/"
	root := filepath.Join("..", "..", "..")
	forbidden := map[string]bool{module + "prover": true, module + "prover/engine": true}
	seen := map[string]bool{}
	var walk func(pkg string, via []string)
	walk = func(pkg string, via []string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(pkg, module)))
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if !strings.HasPrefix(p, module) {
					continue
				}
				chain := append(append([]string{}, via...), p)
				if forbidden[p] {
					t.Errorf("msm imports %s: %s", p, strings.Join(chain, " -> "))
				}
				walk(p, chain)
			}
		}
	}
	walk(module+"prover/gpu/msm", []string{module + "prover/gpu/msm"})
	if len(seen) < 3 {
		t.Fatalf("walked only %d packages: the walk is broken", len(seen))
	}
}
