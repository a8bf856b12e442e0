package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// includeRe finds the quoted includes of a C, C++ or CUDA file.
var includeRe = regexp.MustCompile(`(?m)^\s*#\s*include\s+"([^"]+)"`)

// kernelHeaderLinks checks that every kernel header a host test package in
// dir compiles (the headers of kernels/, reached from the package's own .c,
// .cc, .cpp and .h files, directly or through other kernel headers) is
// linked into dir under a .h name. Go's build cache hashes a cgo package's
// .h files but not a folder given with -I, so a header reached only
// through -I can change without the package's tests running again.
// It returns one line per header without such a link.
func kernelHeaderLinks(dir, kernels string) ([]string, error) {
	kabs, err := filepath.Abs(kernels)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	linked := map[string]bool{} // kernel headers linked as .h files in dir
	var sources []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			if filepath.Ext(e.Name()) == ".h" {
				linked[target] = true
			}
			continue
		}
		switch filepath.Ext(e.Name()) {
		case ".c", ".cc", ".cpp", ".h":
			sources = append(sources, p)
		}
	}
	var missing []string
	seen := map[string]bool{}
	var visit func(file, from string) error
	visit = func(file, from string) error {
		src, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		for _, m := range includeRe.FindAllStringSubmatch(string(src), -1) {
			name := m[1]
			// As the compiler searches: the including file's folder (for a
			// link, the folder of the link), then -I kernels.
			local := filepath.Join(from, name)
			var target string
			if _, err := os.Stat(local); err == nil {
				if target, err = filepath.EvalSymlinks(local); err != nil {
					return err
				}
			} else if _, err := os.Stat(filepath.Join(kabs, name)); err == nil {
				target = filepath.Join(kabs, name)
			} else {
				continue // a system or generated header
			}
			if !strings.HasPrefix(target, kabs+string(filepath.Separator)) {
				continue // the package's own header
			}
			if !linked[target] && !seen[target] {
				missing = append(missing, fmt.Sprintf("%s includes %q (kernels/%s) with no .h link to it in %s",
					filepath.Base(file), name, filepath.Base(target), dir))
			}
			if !seen[target] {
				seen[target] = true
				if err := visit(target, from); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, s := range sources {
		if err := visit(s, dir); err != nil {
			return nil, err
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// TestHostPackagesLinkEveryKernelHeaderTheyInclude: each host test package
// under internal/ reaches every kernel header through a link in its own
// folder (issue 13 item 1), so an edit to a header reruns its tests.
func TestHostPackagesLinkEveryKernelHeaderTheyInclude(t *testing.T) {
	dirs, err := filepath.Glob("internal/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no host packages under internal/: %v", err)
	}
	for _, d := range dirs {
		missing, err := kernelHeaderLinks(d, "kernels")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range missing {
			t.Error(m)
		}
	}
}

// The check itself fails on a package that includes a kernel header
// through -I only, or links it under a name Go does not hash.
func TestKernelHeaderLinksFindsAnIncludeWithoutALink(t *testing.T) {
	root := t.TempDir()
	kernels, pkg := filepath.Join(root, "kernels"), filepath.Join(root, "pkg")
	for _, d := range []string{kernels, pkg} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(kernels, "ff.cuh"), "// field\n")
	write(filepath.Join(kernels, "ec.cuh"), "#include \"ff.cuh\"\n")
	write(filepath.Join(pkg, "host.cpp"), "#include \"kernels_ec.h\"\n#include <vector>\n")
	if err := os.Symlink("../kernels/ec.cuh", filepath.Join(pkg, "kernels_ec.h")); err != nil {
		t.Fatal(err)
	}
	missing, err := kernelHeaderLinks(pkg, kernels)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 1 || !strings.Contains(missing[0], "kernels/ff.cuh") {
		t.Fatalf("ec.cuh's own include of ff.cuh, not linked: got %q", missing)
	}
	// A link named .cuh is not hashed by go: still missing.
	if err := os.Symlink("../kernels/ff.cuh", filepath.Join(pkg, "ff.cuh")); err != nil {
		t.Fatal(err)
	}
	if missing, _ = kernelHeaderLinks(pkg, kernels); len(missing) != 1 {
		t.Fatalf("a .cuh link counted as hashed: %q", missing)
	}
	if err := os.Symlink("../kernels/ff.cuh", filepath.Join(pkg, "kernels_ff.h")); err != nil {
		t.Fatal(err)
	}
	if missing, _ = kernelHeaderLinks(pkg, kernels); len(missing) != 0 {
		t.Fatalf("every header linked, yet: %q", missing)
	}
}
