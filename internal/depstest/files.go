package depstest

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// GoFiles returns the .go files under root (test files included) in
// lexical order, skipping the folders the go tool skips in a ./...
// pattern: testdata, and names starting with "." or "_"; node_modules too.
// Nested modules (e2e, examples/gorgonia-cu) are included. It fails t
// when root cannot be walked.
func GoFiles(t testing.TB, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return files
}
