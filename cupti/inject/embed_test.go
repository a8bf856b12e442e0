package inject

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestEmbeddedLibraryIsCurrent fails when the C sources changed without
// `go generate ./cupti/inject` (build.sh) rebuilding the library.
func TestEmbeddedLibraryIsCurrent(t *testing.T) {
	h := sha256.New()
	for _, f := range []string{"csrc/inject.c", "../cz_core.c", "../cz_core.h", "../cuzk_cupti.h", "csrc/exports.map"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.TrimSpace(Sources) {
		t.Fatalf("libcuzkinject.so was built from other sources (run go generate ./cupti/inject)")
	}
}

// CUDA's and NVTX's injection entry points, and nothing else of ours.
func TestLibraryExportsOnlyTheInjectionEntryPoints(t *testing.T) {
	path, err := WriteTo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_BIND(s.Info) == elf.STB_GLOBAL {
			exported = append(exported, s.Name)
		}
	}
	sort.Strings(exported)
	if len(exported) != 2 || exported[0] != "InitializeInjection" || exported[1] != "InitializeInjectionNvtx2" {
		t.Fatalf("exports %v, want InitializeInjection and InitializeInjectionNvtx2 only", exported)
	}
}

func TestWriteToReusesAndReplaces(t *testing.T) {
	dir := t.TempDir()
	p1, err := WriteTo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p1, []byte("truncated"), 0o755); err != nil {
		t.Fatal(err)
	}
	p2, err := WriteTo(dir)
	if err != nil || p2 != p1 {
		t.Fatalf("%q %v", p2, err)
	}
	if b, _ := os.ReadFile(p2); len(b) != len(Library) {
		t.Fatal("a damaged cached library was not replaced")
	}
	if _, err := WriteTo(filepath.Join(p1, "not-a-dir")); err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("unwritable dir: %v", err)
	}
}
