package docs

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/internal/depstest"
)

// packageDocs maps every folder of the repository that holds a Go package
// (non-test .go files) to that package's name and doc comment: the first
// file's package comment that go doc would show, "" when no file has one.
// The folders the go tool skips are skipped (depstest.GoFiles).
func packageDocs(t *testing.T) map[string][2]string {
	t.Helper()
	pkgs := map[string][2]string{}
	for _, p := range depstest.GoFiles(t, root) {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		dir = filepath.ToSlash(dir)
		cur := pkgs[dir]
		cur[0] = f.Name.Name
		if cur[1] == "" && f.Doc != nil {
			cur[1] = f.Doc.Text()
		}
		pkgs[dir] = cur
	}
	return pkgs
}

// TestEveryPackageHasADocComment: every Go package of the repository (the
// root module, e2e and the examples with modules of their own) has a
// package comment in the form go doc expects, "Package name ..." for a
// library and "Command name ..." for a program, so `go doc` says what
// each folder holds.
func TestEveryPackageHasADocComment(t *testing.T) {
	pkgs := packageDocs(t)
	if len(pkgs) < 40 {
		t.Fatalf("found %d Go packages under %s: not the repository", len(pkgs), root)
	}
	for dir, p := range pkgs {
		name, doc := p[0], p[1]
		want := "Package " + name + " "
		if name == "main" {
			want = "Command " + filepath.Base(filepath.FromSlash(dir)) + " "
		}
		switch {
		case doc == "":
			t.Errorf("%s: package %s has no doc comment (add a doc.go: %q)", dir, name, want+"...")
		case !strings.HasPrefix(doc, want):
			t.Errorf("%s: doc comment starts %q, want %q", dir, firstLine(doc), want+"...")
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
