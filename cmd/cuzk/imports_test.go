package main

import (
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/internal/depstest"
)

// testPackage reports whether an import path names a test package:
// testing and its sub-packages, or one whose last element says test
// (tracetest, httptest, otlptest, gputest, ...). The standard library's
// internal/testlog and internal/synctest, linked into every binary through
// os and time, are not imports anyone chooses.
func testPackage(imp string) bool {
	if strings.HasPrefix(imp, "internal/") {
		return false
	}
	return imp == "testing" || strings.HasPrefix(imp, "testing/") || strings.Contains(path.Base(imp), "test")
}

// moduleRoot is the folder of go.mod, two levels above this package.
func moduleRoot(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestNoProductionFileImportsATestPackage scans every non-test Go file of
// the module: none imports a test package, except the test-support
// packages themselves (a folder named *test, such as prover/commitmenttest),
// and those are imported by _test.go files only, so no production binary
// links one.
func TestNoProductionFileImportsATestPackage(t *testing.T) {
	root := moduleRoot(t)
	const module = "github.com/otelcuzk/otelcuzk/"
	type use struct{ file, imp string }
	var bad, support []use
	scanned := 0
	for _, p := range depstest.GoFiles(t, root) {
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		scanned++
		rel, _ := filepath.Rel(root, p)
		isTest := strings.HasSuffix(p, "_test.go")
		supportPkg := testPackage(path.Base(filepath.ToSlash(filepath.Dir(rel))))
		for _, im := range f.Imports {
			imp, _ := strconv.Unquote(im.Path.Value)
			if !testPackage(imp) {
				continue
			}
			if strings.HasPrefix(imp, module) && !isTest {
				support = append(support, use{rel, imp})
			}
			if !isTest && !supportPkg {
				bad = append(bad, use{rel, imp})
			}
		}
	}
	if scanned < 100 {
		t.Fatalf("scanned %d Go files under %s: not the module", scanned, root)
	}
	for _, u := range bad {
		t.Errorf("%s imports the test package %s (production code: write the helper, or move it to a _test.go file)", u.file, u.imp)
	}
	// A test-support package imported by another one is fine; by a
	// production file it is not (bad, above, already says so for files
	// outside support packages).
	for _, u := range support {
		if dir := path.Base(filepath.ToSlash(filepath.Dir(u.file))); !testPackage(dir) {
			t.Errorf("%s imports the test-support package %s", u.file, u.imp)
		}
	}
}

// TestCuzkLinksNoTestPackage: the binary users run links no test package,
// whatever its dependencies do.
func TestCuzkLinksNoTestPackage(t *testing.T) {
	deps := depstest.List(t, nil, ".")
	if len(deps) < 50 {
		t.Fatalf("go list -deps listed %d packages: %v", len(deps), deps)
	}
	for _, d := range deps {
		if testPackage(d.ImportPath) {
			t.Errorf("cuzk links the test package %s", d.ImportPath)
		}
	}
}

func TestTestPackageNamesTheTestPackages(t *testing.T) {
	for imp, want := range map[string]bool{
		"testing":           true,
		"testing/fstest":    true,
		"net/http/httptest": true,
		"go.opentelemetry.io/otel/sdk/trace/tracetest":       true,
		"github.com/otelcuzk/otelcuzk/prover/commitmenttest": true,
		"internal/testlog":                      false,
		"net/http":                              false,
		"github.com/otelcuzk/otelcuzk/otelcuzk": false,
	} {
		if got := testPackage(imp); got != want {
			t.Errorf("testPackage(%q) = %v, want %v", imp, got, want)
		}
	}
}
