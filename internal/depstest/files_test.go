package depstest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// GoFiles lists the Go files the go tool would see, nested folders and
// test files included, and none under the folders it skips.
func TestGoFilesSkipsTheFoldersTheGoToolSkips(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{
		"a.go", "a_test.go", "notes.md", "sub/b.go", "sub/deeper/c.go",
		"testdata/x.go", ".hidden/y.go", "_old/z.go", "node_modules/m.go", "sub/testdata/w.go",
	} {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, p := range GoFiles(t, root) {
		rel, _ := filepath.Rel(root, p)
		got = append(got, filepath.ToSlash(rel))
	}
	want := []string{"a.go", "a_test.go", "sub/b.go", "sub/deeper/c.go"}
	if !slices.Equal(got, want) {
		t.Errorf("GoFiles = %v, want %v", got, want)
	}
}
